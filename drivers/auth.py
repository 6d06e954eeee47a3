"""Logins for chat UIs that need one, saved once by `mmb login` and used by runs: a secret.

Two kinds, both under the auth folder (default `.auth/`, git-ignored, mode 0700):

* `storage`: `<name>.json`, Playwright's storage state with IndexedDB (cookies, localStorage,
  IndexedDB: Telegram Web keeps its session there), mode 0600; a run's context starts from it.
* `profile`: `<name>.profile/`, a whole Chromium user-data folder (a persistent context); a run
  launches its own Chromium on it.

A login never goes into results: runs read it in place, traces are scrubbed of its values
(`secrets`), and nothing logs its content.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from .files import atomic_write

log = logging.getLogger(__name__)

LoginKind = Literal["storage", "profile"]
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class AuthError(Exception):
    pass


@dataclass(frozen=True)
class SavedLogin:
    name: str
    kind: LoginKind
    path: Path

    def secrets(self) -> tuple[str, ...]:
        """The values a trace must never show: every cookie, storage and IndexedDB value of the login."""
        if self.kind != "storage":
            return ()
        return tuple(sorted(set(_strings(json.loads(self.path.read_text(encoding="utf-8"))))))


def _strings(node: Any, key: str = "") -> list[str]:
    """Every string value in a storage state, except the names and places that are not secret."""
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in _strings(v, k)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v, key)]
    if isinstance(node, str) and key not in {"name", "domain", "path", "origin", "sameSite", "keyPath", "type"}:
        return [node]
    return []


def check_name(name: str) -> str:
    if not NAME_PATTERN.match(name):
        raise AuthError(f"login name {name!r} must be letters, digits, '.', '_' or '-' (at most 64)")
    return name


def storage_path(folder: Path, name: str) -> Path:
    return folder / f"{check_name(name)}.json"


def profile_path(folder: Path, name: str) -> Path:
    return folder / f"{check_name(name)}.profile"


def find_login(folder: Path, name: str) -> SavedLogin:
    """The login saved under `name`; AuthError says how to make it when there is none."""
    storage, profile = storage_path(folder, name), profile_path(folder, name)
    if storage.is_file():
        return SavedLogin(name, "storage", storage)
    if profile.is_dir():
        return SavedLogin(name, "profile", profile)
    raise AuthError(f"no login named {name!r} in {folder} (make it with `mmb login PROFILE --name {name}`)")


def secure_folder(folder: Path) -> Path:
    """The auth folder, owner-only (0700) whether it is new or not."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


def write_secret_json(path: Path, data: Any) -> None:
    """Write JSON readable by the owner only (0600), atomically: never a half-written login."""
    secure_folder(path.parent)
    atomic_write(path, json.dumps(data), mode=0o600)


async def save_storage(context: BrowserContext, path: Path) -> None:
    write_secret_json(path, await context.storage_state(indexed_db=True))


# -- waiting for the user ---------------------------------------------------------------------


def _enter_pressed(loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
    """A future that resolves when Enter is pressed in the terminal (a daemon thread reads stdin)."""
    done: asyncio.Future[None] = loop.create_future()

    def read() -> None:
        try:
            input()
        except EOFError:
            pass
        loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))

    threading.Thread(target=read, daemon=True, name="login-enter").start()
    return done


async def wait_for_login(page: Page, *, wait_for: str | None, timeout_s: float | None, interactive: bool) -> str:
    """Until the user is logged in: `wait_for` shows, Enter is pressed, or the window is closed.

    Returns how it ended: "selector", "enter", "closed" or "timeout".
    """
    loop = asyncio.get_running_loop()
    waits: dict[str, asyncio.Future[Any]] = {
        "closed": asyncio.ensure_future(page.wait_for_event("close", timeout=0)),
    }
    if wait_for:
        waits["selector"] = asyncio.ensure_future(page.locator(wait_for).first.wait_for(state="visible", timeout=0))
    if interactive:
        waits["enter"] = _enter_pressed(loop)
    try:
        done, _ = await asyncio.wait(waits.values(), timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits.values():
            if not w.done():
                w.cancel()
    for how, w in waits.items():
        if w in done:
            if w.exception() is not None and how == "selector":
                raise AuthError(f"waiting for {wait_for!r} failed: {str(w.exception()).splitlines()[0]}")
            return how
    return "timeout"


async def run_login(context: BrowserContext, *, url: str, login: SavedLogin, wait_for: str | None,
                    timeout_s: float | None, interactive: bool, say=print) -> str:
    """Open `url` in `context`, let the user log in, save the login; returns how the wait ended."""
    page = context.pages[0] if context.pages else await context.new_page()
    try:
        await page.goto(url, wait_until="domcontentloaded")
    except PlaywrightError as e:
        raise AuthError(f"cannot open {url}: {str(e).splitlines()[0]}") from None
    if interactive:
        say("Log in in the browser window, then press Enter here"
            + (" (or close the window)" if login.kind == "profile" else "") + ".")
    try:
        how = await wait_for_login(page, wait_for=wait_for, timeout_s=timeout_s, interactive=interactive)
    except PlaywrightTimeout:
        how = "timeout"
    if how == "timeout" and wait_for:
        raise AuthError(f"{wait_for!r} did not show within {timeout_s:g} s: not logged in, nothing saved")
    if login.kind == "storage":
        if how == "closed":
            raise AuthError("the window was closed before the login was saved: run again and press Enter instead")
        await save_storage(context, login.path)
    return how
