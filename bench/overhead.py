"""Per-turn overhead and completion-detection delay, on the instrumented chat page (chat_page.py).

Every contender chats on its own page of the same server, whose replies take a known time. The
page's own clock says when our message appeared and when the last chunk of the reply landed, so:

- agent time  = last chunk - our bubble (what the agent itself took, the same for everyone)
- overhead    = the turn's wall time - agent time (typing, sending, noticing the end, reading it)
- delay       = the moment send() returned - the last chunk (page clock, mapped onto ours)

Contenders take turns in rounds, in a rotating order, so load from elsewhere on the machine falls
on all of them alike.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from playwright.async_api import Browser, Page

from bench.promptfoo import PromptfooSession
from drivers.demo import PROFILE as DEMO_PROFILE
from drivers.generic import PlaywrightDriver
from drivers.profile import Profile

LAST_TURN_JS = """() => { const t = window.__bench.turns; const r = document.querySelectorAll('.msg.assistant');
  return {turn: t[t.length - 1], text: r.length ? r[r.length - 1].textContent : ''}; }"""
CLOCK_JS = "() => performance.timeOrigin + performance.now()"
DONE_COUNT_JS = "(n) => document.querySelectorAll(\".msg.assistant[data-done='1']\").length > n"


@dataclass
class Sample:
    wall_ms: float
    agent_ms: float
    delay_ms: float | None  # None where the contender's end can't be put on the page clock
    complete: bool  # the text returned is the whole reply
    watch_ms: float | None = None  # our driver: what the reply watch's checks took inside the page
    watch_checks: int | None = None  # our driver: how many checks that was

    @property
    def overhead_ms(self) -> float:
        return self.wall_ms - self.agent_ms


@dataclass
class Results:
    name: str
    samples: list[Sample] = field(default_factory=list)
    note: str = ""


class Contender(Protocol):
    name: str
    note: str

    async def turn(self, text: str) -> Sample: ...

    async def close(self) -> None: ...


def message(i: int) -> str:
    return (f"Turn {i}: my partner Jonas is a carpenter, his birthday is on 9 April, and on my long run last "
            f"Sunday I ran {10 + i % 7} km along the river.")


async def clock_offset(page: Page) -> float:
    """page clock - our clock (epoch ms), from the round trip with the least delay."""
    best: tuple[float, float] | None = None
    for _ in range(7):
        a = time.time() * 1000
        p = await page.evaluate(CLOCK_JS)
        b = time.time() * 1000
        if best is None or b - a < best[0]:
            best = (b - a, p - (a + b) / 2)
    assert best is not None
    return best[1]


async def _page_sample(page: Page, wall_ms: float, returned_ms: float, offset: float, got: str) -> Sample:
    info = await page.evaluate(LAST_TURN_JS)
    t = info["turn"]
    return Sample(wall_ms=wall_ms, agent_ms=t["last"] - t["user"], delay_ms=returned_ms + offset - t["last"],
                  complete=" ".join(got.split()) == " ".join(info["text"].split()))


class OurDriver:
    """drivers/generic.py's PlaywrightDriver with a given profile, as a run uses it."""

    def __init__(self, name: str, profile: Profile, trace: str = "off", note: str = ""):
        self.name, self.profile, self.trace, self.note = name, profile, trace, note

    async def start(self, browser: Browser, url: str) -> OurDriver:
        self._tmp = tempfile.TemporaryDirectory(prefix="mmb-bench-")
        context = await browser.new_context()
        self.driver = PlaywrightDriver(self.profile, context, base_url=url, artifacts=Path(self._tmp.name),
                                       trace=self.trace, screenshot_on_failure=False)  # type: ignore[arg-type]
        await self.driver.open(None)
        self.offset = await clock_offset(self.driver._page())
        return self

    async def turn(self, text: str) -> Sample:
        started = time.perf_counter()
        reply = await self.driver.send(text)
        wall = (time.perf_counter() - started) * 1000
        sample = await _page_sample(self.driver._page(), wall, time.time() * 1000, self.offset, reply.text)
        sample.watch_ms, sample.watch_checks = reply.watch_ms, reply.watch_checks
        return sample

    async def close(self) -> None:
        await self.driver.close()
        self._tmp.cleanup()


class Floor:
    """The least a Playwright script can do: fill, click, wait for the reply's done marker, read it.

    `tight` waits with a function polled on every animation frame; otherwise with the idiomatic
    locator.wait_for(), whose polling backs off (up to 500 ms between checks).
    """

    def __init__(self, tight: bool):
        self.tight = tight
        self.name = "floor, tight (wait_for_function, raf)" if tight else "floor, idiomatic (locator.wait_for)"
        self.note = "hand-written fill / click / wait for the done marker / inner_text"

    async def start(self, browser: Browser, url: str) -> Floor:
        self.context = await browser.new_context()
        self.page = await self.context.new_page()
        await self.page.goto(url)
        self.offset = await clock_offset(self.page)
        self.replies = await self.page.locator(".msg.assistant[data-done='1']").count()  # a chat with history
        return self

    async def turn(self, text: str) -> Sample:
        page = self.page
        started = time.perf_counter()
        await page.fill("#prompt", text)
        await page.click("#send")
        done = page.locator(".msg.assistant[data-done='1']").nth(self.replies)
        if self.tight:
            await page.wait_for_function(DONE_COUNT_JS, arg=self.replies, polling="raf")
        else:
            await done.wait_for()
        got = await done.inner_text()
        wall = (time.perf_counter() - started) * 1000
        self.replies += 1
        return await _page_sample(page, wall, time.time() * 1000, self.offset, got)

    async def close(self) -> None:
        await self.context.close()


class Promptfoo:
    name = "promptfoo browser provider"

    def __init__(self, wait_ms: int, chromium: str):
        self.wait_ms, self.chromium = wait_ms, chromium
        self.note = f"steps navigate (once) / type + Enter / wait {wait_ms} ms / extract; persistSession over CDP"

    async def start(self, url: str) -> Promptfoo:
        self.session = PromptfooSession(url, self.wait_ms, self.chromium).__enter__()
        await self.turn("warm-up")  # the first call attaches and navigates
        return self

    async def turn(self, text: str) -> Sample:
        result: dict[str, Any] = await asyncio.to_thread(self.session.turn, text)
        if result["error"] or not result["output"]:
            raise RuntimeError(f"promptfoo: {result['error']}")
        out = result["output"]
        t = out["turn"]
        return Sample(wall_ms=result["ms"], agent_ms=t["last"] - t["user"], delay_ms=out["extractedAt"] - t["last"],
                      complete=bool(out["done"]))

    async def close(self) -> None:
        await asyncio.to_thread(self.session.__exit__)


async def play_rounds(contenders: list[Contender], rounds: int, turns: int) -> list[Results]:
    """One warm-up turn each, then `rounds` rounds of `turns` turns, the order rotating every round."""
    results = {c.name: Results(c.name, note=c.note) for c in contenders}
    for c in contenders:
        await c.turn(message(0))
    i = 1
    for r in range(rounds):
        shift = r % len(contenders)
        for c in contenders[shift:] + contenders[:shift]:
            for _ in range(turns):
                results[c.name].samples.append(await c.turn(message(i)))
                i += 1
    return [results[c.name] for c in contenders]


def detection_profiles() -> list[tuple[str, Profile]]:
    """The demo profile with its markers, and with them taken away one by one."""
    return [
        ("busy + done markers", DEMO_PROFILE),
        ("busy marker only", DEMO_PROFILE.with_overrides({"done": None}, {})),
        ("done marker only", DEMO_PROFILE.with_overrides({"busy": None}, {})),
        ("no markers (text stability)", DEMO_PROFILE.with_overrides({"busy": None, "done": None}, {})),
    ]
