"""Secrets in a chat URL, kept out of config.jsonc, logs and traces.

Some web chats take their login in the URL, e.g. OpenClaw's gateway token as a fragment
(`http://127.0.0.1:18789/#token=...`). Written as `#token=${OPENCLAW_GATEWAY_TOKEN}`, the value
comes from the environment when the page is opened; the driver shows the URL only with the
placeholder and hands the value to the trace scrubber.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand(url: str, env: Mapping[str, str] | None = None) -> tuple[str, tuple[str, ...]]:
    """The URL with every `${NAME}` replaced from the environment, and the values put in.

    Raises ValueError naming the variables that are not set (an empty value counts as not set).
    """
    env = os.environ if env is None else env
    names = _REF.findall(url)
    missing = sorted({n for n in names if not env.get(n)})
    if missing:
        raise ValueError(f"the chat URL needs the environment variable(s) {', '.join(missing)}")
    return _REF.sub(lambda m: env[m.group(1)], url), tuple(env[n] for n in dict.fromkeys(names))


def fragment(url: str) -> str:
    """The '#...' part of a URL, or ''."""
    return url[url.index("#"):] if "#" in url else ""


def without_fragment(url: str) -> str:
    return url.split("#", 1)[0]
