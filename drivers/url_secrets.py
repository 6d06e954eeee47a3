"""Secrets in a chat URL, kept out of config.jsonc, the state, reports, logs and traces.

Some web chats take their login in the URL, e.g. OpenClaw's gateway token as a fragment
(`http://127.0.0.1:18789/#token=...`). Written as `#token=${OPENCLAW_GATEWAY_TOKEN}`, the value
comes from the environment when the page is opened. Every URL the driver shows or saves (the
address of a chat session, the sign that a new chat opened, an error naming the page) passes
through `ChatUrl.hide`, which puts the placeholders back; a saved address is filled in again only
to reopen it at the same origin. The values also go to the trace scrubber.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import quote, quote_plus, urljoin, urlsplit

_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ChatUrl:
    """A chat URL as configured (`template`, with `${NAME}` placeholders) and as opened (`opened`)."""

    def __init__(self, template: str, env: Mapping[str, str] | None = None):
        """Raises ValueError naming the variables that are not set (an empty value counts as not set)."""
        env = os.environ if env is None else env
        names = list(dict.fromkeys(_REF.findall(template)))
        missing = sorted(n for n in names if not env.get(n))
        if missing:
            raise ValueError(f"the chat URL needs the environment variable(s) {', '.join(missing)}")
        self.template = template
        self.values = {name: env[name] for name in names}
        self.opened = self.fill(template)
        # Longest first (one value may hold another), with the forms a browser may write it in.
        forms = {(form, f"${{{name}}}") for name, value in self.values.items()
                 for form in (value, quote(value, safe=""), quote(value), quote_plus(value))}
        self._forms = sorted(forms, key=lambda f: len(f[0]), reverse=True)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every form of every value, for the trace scrubber."""
        return tuple(dict.fromkeys(form for form, _ in self._forms))

    def fill(self, url: str) -> str:
        """`url` with this URL's own placeholders filled in (other `${...}` stay as they are)."""
        return _REF.sub(lambda m: self.values.get(m.group(1), m.group(0)), url)

    def hide(self, text: str) -> str:
        """`text` (a URL, or a message naming one) with each value put back as its `${NAME}`."""
        for form, placeholder in self._forms:
            text = text.replace(form, placeholder)
        return text

    def reopen(self, saved: str) -> str:
        """The address to open for a saved (hidden) chat address: filled in only when it leads to the
        origin the URL was made for, so a page that sent us elsewhere never receives the secrets."""
        filled = self.fill(saved)
        return filled if _origin(urljoin(self.opened, filled)) == _origin(self.opened) else saved


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def expand(url: str, env: Mapping[str, str] | None = None) -> tuple[str, tuple[str, ...]]:
    """The URL with every `${NAME}` replaced from the environment, and the values put in."""
    chat = ChatUrl(url, env)
    return chat.opened, tuple(chat.values.values())


def fragment(url: str) -> str:
    """The '#...' part of a URL, or ''."""
    return url[url.index("#"):] if "#" in url else ""


def without_fragment(url: str) -> str:
    return url.split("#", 1)[0]
