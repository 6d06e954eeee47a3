"""One real headless Chromium on one event loop, shared by a test module's async driver tests.

Playwright's async objects belong to the loop that made them, so the module keeps a loop of its
own and each test runs its coroutine on it: `harness.run(coro)`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from playwright.async_api import Browser, Playwright, async_playwright

from drivers.base import Reply
from drivers.browser import CHROMIUM_ARGS
from drivers.generic import PlaywrightDriver
from drivers.profile import Profile

T = TypeVar("T")


class BrowserHarness:
    def __init__(self, chromium: str):
        self.loop = asyncio.new_event_loop()
        self.pw: Playwright = self.run(async_playwright().start())
        self.browser: Browser = self.run(self.pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.run(self.browser.close())
        self.run(self.pw.stop())
        self.loop.close()

    async def driver(self, profile: Profile, artifacts: Path, **kw: Any) -> PlaywrightDriver:
        """A driver on a fresh context, its chat opened."""
        driver = PlaywrightDriver(profile, await self.browser.new_context(), artifacts=artifacts, **kw)
        await driver.open(None)
        return driver

    def chat(self, profile: Profile, artifacts: Path, messages: list[str], **kw: Any) -> list[Reply]:
        """Open a chat, send each message, return the replies; the context is closed afterwards."""

        async def go() -> list[Reply]:
            driver = await self.driver(profile, artifacts, **kw)
            try:
                return [await driver.send(m) for m in messages]
            finally:
                await driver.close()

        return self.run(go())
