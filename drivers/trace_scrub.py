"""Secrets out of Playwright traces: a trace records every request's headers and cookies, and any
string the page or a script handled, so a logged-in chat's session would ride along in trace.zip.

Sensitive headers (Cookie, Set-Cookie, Authorization...) and HAR cookie values are masked in
trace.network, and every known secret value (the context's cookies and local storage, plus keys
registered in persona.secrets) is masked in every text entry. Screenshots stay as they are.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext
from playwright.async_api import Error as PlaywrightError

from persona.secrets import MASK, MIN_LENGTH, known_secrets

SENSITIVE_HEADERS = {"cookie", "set-cookie", "authorization", "proxy-authorization", "x-api-key", "api-key"}
_BINARY = (".jpeg", ".jpg", ".png", ".webp", ".gif", ".woff", ".woff2", ".ttf", ".ico", ".webm", ".mp4")


async def storage_secrets(context: BrowserContext) -> list[str]:
    """Cookie and local-storage values the agent's page set: its session, in a logged-in UI."""
    try:
        state = await context.storage_state()
    except PlaywrightError:
        return []  # the context is gone; header masking still applies
    values = [c.get("value", "") for c in state.get("cookies", [])]
    values += [item.get("value", "") for origin in state.get("origins", []) for item in origin.get("localStorage", [])]
    return [v for v in values if len(v) >= MIN_LENGTH]


def scrub_trace(path: Path, secrets: Iterable[str] = ()) -> None:
    """Rewrite trace.zip in place with secrets masked; atomic, so a crash leaves the old or the new one."""
    values = sorted({*secrets, *known_secrets()}, key=len, reverse=True)
    forms = [(v.encode(), MASK.encode()) for v in values]
    forms += [(json.dumps(v)[1:-1].encode(), MASK.encode()) for v in values if json.dumps(v)[1:-1] != v]
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                data = src.read(info)
                if not info.filename.lower().endswith(_BINARY):
                    if info.filename.endswith(".network"):
                        data = _mask_network(data)
                    for secret, mask in forms:
                        data = data.replace(secret, mask)
                dst.writestr(info, data)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _mask_network(data: bytes) -> bytes:
    """trace.network is JSON lines of HAR entries: mask sensitive headers and every cookie value."""
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        _mask(event)
        out.append(json.dumps(event, ensure_ascii=False))
    return ("\n".join(out) + ("\n" if data.endswith(b"\n") else "")).encode()


def _mask(node: Any) -> None:
    if isinstance(node, dict):
        if "headers" in node and isinstance(node["headers"], list):
            for h in node["headers"]:
                if isinstance(h, dict) and str(h.get("name", "")).lower() in SENSITIVE_HEADERS:
                    h["value"] = MASK
        if "cookies" in node and isinstance(node["cookies"], list):
            for c in node["cookies"]:
                if isinstance(c, dict) and "value" in c:
                    c["value"] = MASK
        for value in node.values():
            _mask(value)
    elif isinstance(node, list):
        for value in node:
            _mask(value)
