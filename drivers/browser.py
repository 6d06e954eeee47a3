"""Starting Chromium: a system Chromium where there is one, else Playwright's own (installed on demand).

Machines without network can't run `playwright install`, but have Debian's chromium; machines with
network and no system browser get Playwright's build downloaded once.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys

from playwright.async_api import Browser, Playwright
from playwright.async_api import Error as PlaywrightError

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


class BrowserStartError(RuntimeError):
    pass


def find_system_chromium(explicit: str | None = None) -> str | None:
    """The Chromium to use: config, then $MMB_CHROMIUM, then one on PATH; None means Playwright's own."""
    for candidate in (explicit, os.environ.get("MMB_CHROMIUM")):
        if candidate:
            found = shutil.which(candidate) or (candidate if os.path.exists(candidate) else None)
            if not found:
                raise BrowserStartError(f"Chromium not found at {candidate!r}")
            return found
    return next((p for name in SYSTEM_CANDIDATES if (p := shutil.which(name))), None)


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


async def launch_chromium(pw: Playwright, *, headless: bool = True, slow_mo_ms: int = 0,
                          executable_path: str | None = None) -> Browser:
    _check_display(headless)
    exe = find_system_chromium(executable_path)
    kwargs = dict(headless=headless, slow_mo=slow_mo_ms, args=CHROMIUM_ARGS)
    try:
        return await pw.chromium.launch(executable_path=exe, **kwargs)
    except PlaywrightError as e:
        if exe is not None or "Executable doesn't exist" not in str(e):
            raise BrowserStartError(f"Chromium did not start: {str(e).splitlines()[0]}") from None
    _install_playwright_chromium()
    return await pw.chromium.launch(**kwargs)
