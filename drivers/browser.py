"""Getting a browser and a context per chat: launched, connected to, or on a saved login.

* Launch: a system Chromium where there is one, else Playwright's own (installed on demand).
  Machines without network can't `playwright install`, but have Debian's chromium.
* Connect (`browser.connect`): a running Playwright server (`playwright run-server`) or a
  Chromium with a remote-debugging port (CDP), instead of launching.
* A login (`agent.auth`, see auth.py): storage state loaded into the context, or a persistent
  profile, which runs in a Chromium of its own.
* Video: Playwright records with its own ffmpeg; where it has none, a local browsers folder of
  symlinks to the system ffmpeg stands in (playwright_home.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from playwright.async_api import Browser, BrowserContext, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from .auth import SavedLogin
from .playwright_home import find_ffmpeg, has_playwright_ffmpeg, linked_browsers_path
from .settings import BrowserConfig

log = logging.getLogger(__name__)

# Quiet, offline-friendly flags: without the networking ones Chromium keeps dialling Google.
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
SYSTEM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Headless runs take Chromium's headless shell where it is installed (Debian: chromium-headless-shell),
# as Playwright does with its own downloads: the same engine without the browser's UI, and about a
# third less CPU for a whole run on this project's bench.
HEADLESS_CANDIDATES = ("chromium-headless-shell",)
LOCAL_BROWSERS_DIR = ".ms-playwright"  # under the config's folder; git-ignored


class BrowserStartError(RuntimeError):
    pass


def find_system_chromium(explicit: str | None = None, *, headless: bool = False) -> str | None:
    """The Chromium to use: config, then $MMB_CHROMIUM, then one on PATH (for a headless browser its
    headless shell first); None means Playwright's own."""
    for candidate in (explicit, os.environ.get("MMB_CHROMIUM")):
        if candidate:
            found = shutil.which(candidate) or (candidate if os.path.exists(candidate) else None)
            if not found:
                raise BrowserStartError(f"Chromium not found at {candidate!r}")
            return found
    names = (HEADLESS_CANDIDATES if headless else ()) + SYSTEM_CANDIDATES
    return next((p for name in names if (p := shutil.which(name))), None)


def _install_playwright_chromium() -> None:
    log.warning("no Chromium found; running `playwright install chromium` (needs network, once)")
    done = subprocess.run([sys.executable, "-m", "playwright", "install", "chromium"], capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise BrowserStartError(
            "no Chromium: install one (Debian/Ubuntu: apt-get install chromium) or let Playwright download "
            f"its own with `playwright install chromium` (which failed here: {tail[0]})"
        )


def _check_display(headless: bool) -> None:
    if not headless and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        raise BrowserStartError("headed mode needs a display: run under `xvfb-run -a mmb ...` or set DISPLAY")


def launch_options(config: BrowserConfig) -> dict[str, Any]:
    """What `chromium.launch` (or `launch_persistent_context`) gets for this config."""
    return dict(headless=config.headless, slow_mo=config.slow_mo_ms, args=list(CHROMIUM_ARGS),
                executable_path=find_system_chromium(config.executable_path, headless=config.headless))


def context_options(config: BrowserConfig, *, video_dir: Path | None = None) -> dict[str, Any]:
    """What each chat's context gets: the viewport, and a video of the same size when recording."""
    viewport = {"width": config.viewport[0], "height": config.viewport[1]}
    options: dict[str, Any] = {"viewport": viewport}
    if video_dir is not None:
        options |= {"record_video_dir": str(video_dir), "record_video_size": viewport}
    return options


def prepare_video(config: BrowserConfig, base_dir: Path) -> None:
    """Give Playwright an ffmpeg before it starts: its own if installed, else a symlinked system one."""
    if has_playwright_ffmpeg():
        return
    ffmpeg = find_ffmpeg()
    if ffmpeg is None:
        raise BrowserStartError("--video needs ffmpeg: apt-get install ffmpeg, pip install imageio-ffmpeg, "
                                "or `playwright install ffmpeg`")
    root = linked_browsers_path(base_dir / LOCAL_BROWSERS_DIR, chromium=find_system_chromium(config.executable_path),
                                headless_shell=find_system_chromium(config.executable_path, headless=True), ffmpeg=ffmpeg)
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(root)
    log.info("video: Playwright uses %s through %s", ffmpeg, root)


async def launch_chromium(pw: Playwright, config: BrowserConfig | None = None, *, headless: bool = True,
                          slow_mo_ms: int = 0, executable_path: str | None = None) -> Browser:
    """Chromium launched for `config` (or for the keyword settings, when there is no config)."""
    config = config or BrowserConfig(headless=headless, slow_mo_ms=slow_mo_ms, executable_path=executable_path)
    _check_display(config.headless)
    options = launch_options(config)
    try:
        return await pw.chromium.launch(**options)
    except PlaywrightError as e:
        if options["executable_path"] is not None or "Executable doesn't exist" not in str(e):
            raise BrowserStartError(f"Chromium did not start: {str(e).splitlines()[0]}") from None
    _install_playwright_chromium()
    return await pw.chromium.launch(**{**options, "executable_path": None})


def safe_endpoint(url: str) -> str:
    """An endpoint fit for logs: hosted browsers put tokens in the query or the user part."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "…" if parts.query else "", ""))


async def connect_browser(pw: Playwright, config: BrowserConfig) -> Browser:
    c = config.connect
    assert c is not None
    where = safe_endpoint(c.ws_endpoint or c.cdp_url or "")
    try:
        if c.ws_endpoint:
            return await pw.chromium.connect(c.ws_endpoint, timeout=c.timeout_s * 1000, slow_mo=config.slow_mo_ms,
                                             headers=c.headers or None)
        return await pw.chromium.connect_over_cdp(c.cdp_url or "", timeout=c.timeout_s * 1000,
                                                  slow_mo=config.slow_mo_ms, headers=c.headers or None)
    except PlaywrightError as e:
        kind = "the Playwright server" if c.ws_endpoint else "the Chromium debugging port"
        reason = str(e).splitlines()[0].replace(c.ws_endpoint or c.cdp_url or "", where)
        raise BrowserStartError(f"cannot connect to {kind} at {where}: {reason}") from None


@dataclass
class ChatContext:
    """A browser context for one chat, and the secret values its traces must not show."""

    context: BrowserContext
    secrets: tuple[str, ...] = ()


class BrowserHost:
    """The browser that runs share (each gets a context of its own), started on first use, and started
    again when it dies under them (its processes killed, out of memory): each run's next context comes
    from the new one, so a crash costs every run a reopened chat, never the run."""

    def __init__(self, pw: Playwright, config: BrowserConfig):
        self.pw = pw
        self.config = config
        self._browser: Browser | None = None
        self._starting = asyncio.Lock()  # runs start together: without it each would launch a browser
        self.generation = 0  # browsers started so far: a run whose context is of an older one saw it die

    async def browser(self) -> Browser:
        async with self._starting:
            return await self._start()

    async def _start(self) -> Browser:
        if self._browser is not None and not self._browser.is_connected():
            log.warning("browser: the browser died (its connection closed); starting another")
            self._browser = None
        if self._browser is None:
            self.generation += 1
            if self.config.connect is not None:
                self._browser = await connect_browser(self.pw, self.config)
                log.info("browser: connected to %s (%s %s)",
                         safe_endpoint(self.config.connect.ws_endpoint or self.config.connect.cdp_url or ""),
                         self._browser.browser_type.name, self._browser.version)
            else:
                self._browser = await launch_chromium(self.pw, self.config)
                log.info("browser: Chromium %s, %s%s", self._browser.version,
                         "headless" if self.config.headless else "headed",
                         f", slow-mo {self.config.slow_mo_ms} ms" if self.config.slow_mo_ms else "")
        return self._browser

    @property
    def version(self) -> str | None:
        """The running browser's name and version, e.g. "chromium 140.0.7339.185"; None before it starts."""
        b = self._browser
        return f"{b.browser_type.name} {b.version}" if b is not None else None

    async def new_context(self, *, login: SavedLogin | None = None, video_dir: Path | None = None) -> ChatContext:
        options = context_options(self.config, video_dir=video_dir)
        if login is not None and login.kind == "profile":
            return await self._persistent(login, options)
        if login is not None:
            options["storage_state"] = str(login.path)
        for attempt in (1, 2):
            browser = await self.browser()
            try:
                context = await browser.new_context(**options)
                break
            except PlaywrightError as e:
                if attempt == 2 or not await _dead(browser):
                    raise BrowserStartError(f"cannot open a browser context: {str(e).splitlines()[0]}") from None
        return ChatContext(context, login.secrets() if login else ())

    async def _persistent(self, login: SavedLogin, options: dict[str, Any]) -> ChatContext:
        if self.config.connect is not None:
            raise BrowserStartError(f"login {login.name!r} is a browser profile, which needs a local Chromium, "
                                    "not browser.connect; save it as storage state (mmb login --kind storage)")
        _check_display(self.config.headless)
        try:
            context = await self.pw.chromium.launch_persistent_context(str(login.path), **launch_options(self.config),
                                                                      **options)
        except PlaywrightError as e:
            raise BrowserStartError(f"Chromium did not start on profile {login.path}: {str(e).splitlines()[0]}") from None
        secrets = tuple(c["value"] for c in await context.cookies() if c.get("value"))
        return ChatContext(context, secrets)

    async def close(self) -> None:
        browser, self._browser = self._browser, None
        if browser is not None:
            await browser.close()


async def _dead(browser: Browser, within_s: float = 3.0) -> bool:
    """Whether `browser` is gone: an action failed as it died, and Playwright hears of its death a moment later."""
    deadline = asyncio.get_running_loop().time() + within_s
    while browser.is_connected():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


@contextlib.asynccontextmanager
async def browser_host(config: BrowserConfig, base_dir: Path) -> AsyncIterator[BrowserHost]:
    """Playwright started (with an ffmpeg when recording video) and a host for the runs' contexts."""
    if config.video and config.connect is None:
        prepare_video(config, base_dir)
    async with async_playwright() as pw:
        host = BrowserHost(pw, config)
        try:
            yield host
        finally:
            await host.close()
