"""Keeping secrets out of trace.zip files: a trace records every request's headers and cookies.

A trace of a logged-in chat would carry the session cookie (and, if the page shows one, a token)
to wherever the trace is shared. `scrub_trace` rewrites a trace in place: the values of cookie and
credential headers and of all recorded cookies become "[redacted]", and any known secret value
(those of the login's storage state, what the agent's page stored in this context, and keys registered
in persona.secrets) is replaced wherever it appears in the trace's text.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext
from playwright.async_api import Error as PlaywrightError

from .files import atomic_path

REDACTED = "[redacted]"
SENSITIVE_HEADERS = frozenset({"cookie", "set-cookie", "authorization", "proxy-authorization", "x-api-key",
                               "x-auth-token", "x-csrf-token", "x-xsrf-token"})
MIN_SECRET_LEN = 6  # shorter values ("1", "true", "en") are settings, and would redact half the trace
_BINARY_SUFFIXES = (".jpeg", ".jpg", ".png", ".webp", ".gif", ".woff", ".woff2", ".ttf", ".ico")


def _scrub_http(part: dict[str, Any]) -> None:
    for header in part.get("headers") or []:
        if str(header.get("name", "")).lower() in SENSITIVE_HEADERS:
            header["value"] = REDACTED
    for cookie in part.get("cookies") or []:
        cookie["value"] = REDACTED


def _scrub_network(text: str) -> str:
    lines = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            lines.append(line)
            continue
        snapshot = event.get("snapshot") if isinstance(event, dict) else None
        if isinstance(snapshot, dict):
            for key in ("request", "response"):
                if isinstance(snapshot.get(key), dict):
                    _scrub_http(snapshot[key])
        lines.append(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def _literal_forms(secrets: Iterable[str]) -> list[str]:
    """Each secret as written raw and as it reads inside a JSON string; longest first."""
    forms = set()
    for s in secrets:
        if len(s) >= MIN_SECRET_LEN:
            forms |= {s, json.dumps(s, ensure_ascii=False)[1:-1], json.dumps(s)[1:-1]}
    return sorted(forms, key=len, reverse=True)


def scrub_trace(path: Path, secrets: Iterable[str] = ()) -> None:
    """Rewrite the trace at `path` with credentials and the given secret values redacted."""
    forms = _literal_forms(secrets)
    with atomic_path(path, durable=False) as tmp:
        with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                data = src.read(info)
                if not info.filename.lower().endswith(_BINARY_SUFFIXES):
                    try:
                        text = data.decode("utf-8")
                    except UnicodeDecodeError:
                        text = None
                    if text is not None:
                        if info.filename.endswith(".network"):
                            text = _scrub_network(text)
                        for form in forms:
                            text = text.replace(form, REDACTED)
                        data = text.encode("utf-8")
                dst.writestr(info, data)


async def storage_secrets(context: BrowserContext) -> list[str]:
    """Cookie and local-storage values the agent's page set in this context: its session, when logged in."""
    try:
        state = await context.storage_state()
    except PlaywrightError:
        return []  # the context is gone; header and cookie masking still apply
    values = [c.get("value", "") for c in state.get("cookies", [])]
    values += [item.get("value", "") for origin in state.get("origins", []) for item in origin.get("localStorage", [])]
    return [v for v in values if len(v) >= MIN_SECRET_LEN]
