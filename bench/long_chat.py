"""Does a long chat cost more per turn? Our driver and the floor on the instrumented page opened with
10 and with 2,000 earlier bubbles, turns interleaved, in one run.

Two pages of 2,000 bubbles: one whose own layout stays flat (the earlier bubbles sit in a block the
browser skips, `?contained=1`), where any growth is the driver's, and the plain one, where every
frame lays out the whole chat; Chromium's own counters (CDP Performance.getMetrics) tell the page's
layout time per turn apart from the rest, and the watch reports what its checks cost inside the page.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from playwright.async_api import Browser, CDPSession, Page

from bench.overhead import Contender, Floor, OurDriver, Results, play_rounds
from bench.stats import median
from drivers.demo import PROFILE as DEMO_PROFILE

SIZES = (10, 2000)
TARGET = 1.2  # overhead with 2,000 bubbles (the page laying them all out) / with 10, our driver


@dataclass
class PageCost:
    """Chromium's main-thread time on a contender's page, per turn (ms)."""

    layout_ms: float = 0.0
    style_ms: float = 0.0
    script_ms: float = 0.0


@dataclass
class LongChat:
    results: list[Results]
    costs: dict[str, PageCost] = field(default_factory=dict)


def name(kind: str, bubbles: int, contained: bool) -> str:
    return f"{kind}, {bubbles} bubbles" + ("" if contained else ", page lays out the whole chat")


def _metrics(values: dict) -> dict[str, float]:
    return {m["name"]: m["value"] for m in values["metrics"]}


async def play_measured(contenders: list[Contender], pages: dict[str, Page], rounds: int,
                        turns: int) -> tuple[list[Results], dict[str, PageCost]]:
    """play_rounds, with Chromium's main-thread time per turn on each contender's page (by name)."""
    sessions: dict[str, CDPSession] = {}
    for label, page in pages.items():
        sessions[label] = await page.context.new_cdp_session(page)
        await sessions[label].send("Performance.enable")
    before = {label: _metrics(await s.send("Performance.getMetrics")) for label, s in sessions.items()}
    results = await play_rounds(contenders, rounds, turns)
    costs = {}
    for r in results:
        after = _metrics(await sessions[r.name].send("Performance.getMetrics"))
        n = len(r.samples) + 1  # the warm-up turn too

        def per_turn(key: str, r=r, after=after, n=n) -> float:
            return (after[key] - before[r.name][key]) * 1000 / n

        costs[r.name] = PageCost(per_turn("LayoutDuration"), per_turn("RecalcStyleDuration"), per_turn("ScriptDuration"))
    return results, costs


async def measure(browser: Browser, url: str, rounds: int, turns: int) -> LongChat:
    """Ours and the floor at 10 and 2,000 bubbles (layout flat), and ours at 2,000 on the plain page."""
    plan = [(kind, n, True) for n in SIZES for kind in ("ours", "floor")] + [("ours", SIZES[-1], False)]
    contenders: list[Contender] = []
    pages: dict[str, Page] = {}
    try:
        for kind, n, contained in plan:
            at = f"{url}?history={n}" + ("&contained=1" if contained else "")
            label = name(kind, n, contained)
            if kind == "ours":
                c = await OurDriver(label, DEMO_PROFILE).start(browser, at)
                pages[label] = c.driver._page()
            else:
                c = await Floor(tight=True).start(browser, at)
                c.name = label
                pages[label] = c.page
            contenders.append(c)
        results, costs = await play_measured(contenders, pages, rounds, turns)
    finally:
        for c in contenders:
            await c.close()
    return LongChat(results, costs)


def overhead(results: LongChat, label: str) -> float:
    return median([s.overhead_ms for r in results.results if r.name == label for s in r.samples])


def watch(results: LongChat, label: str) -> float:
    return median([s.watch_ms for r in results.results if r.name == label for s in r.samples if s.watch_ms is not None])
