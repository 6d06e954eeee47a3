"""What the reply watch's features cost per turn as a chat grows: our driver on the chat lab
(tests/support/chat_lab.py) opened with 10 and with 2,000 earlier bubbles, once per feature, turns
interleaved, in one run (`python -m bench.run --only watch`, section 2c).

Each feature changes what a check of the watch (drivers/reply_watch.py's WATCH_JS, run in the page
on every DOM change) has to do: collect the turn's work and read bubbles without it; tell the sides
by their authors' names; read text through nested shadow roots; read a newest-first list in reverse.
The plain lab profile, measured beside them, is the baseline: its checks look only at what follows
our message. The earlier bubbles are built as the feature shows them (the work of earlier turns,
names once per group of bubbles, parts in shadow roots), so a check that walked the whole chat
would show here as growth from 10 to 2,000. The watch reports its own time in the page (arming it
and every check); Chromium's counters give each page's style and layout time per turn, and a
hand-written floor on the page where the page's own rendering is large tells the two apart.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page

from bench.long_chat import PageCost, play_measured
from bench.overhead import Contender, Results, Sample
from bench.stats import median, ratio, table
from drivers.generic import PlaywrightDriver
from tests.support.chat_lab import ChatLab, LabScenario

SIZES = (10, 2000)
PLAIN = "plain"
# A lab reply streams like the bench page's: ~35 chunks of 4 characters, 10 ms apart, a stop button
# while busy, a done marker on the finished bubble.
TIMING: dict[str, Any] = {"chunk_chars": 4, "chunk_ms": 10, "done": "attr", "busy": "stop-button"}
WORK: dict[str, Any] = {"work": ["status", "thought", "tool"], "work_ms": 100}
REPLY_DONE = "#log .bubble.bot[data-done='1']"  # the lab's finished replies (without authors)


@dataclass(frozen=True)
class Feature:
    name: str
    scenario: dict[str, Any]  # LabScenario fields beyond TIMING
    floor: bool = False  # also played by the floor: how much of the page's own rendering is the page's


FEATURES = [
    Feature(PLAIN, {}),
    Feature("work in the bubble", WORK, floor=True),
    Feature("work beside", {**WORK, "work_place": "beside"}),
    Feature("authors: name", {"authors": "name"}),
    Feature("authors: name once per group", {"authors": "name-once"}),
    Feature("authors: avatar", {"authors": "avatar"}),
    Feature("newest first", {"newest_first": True}),
    Feature("newest first, authors: name once per group", {"newest_first": True, "authors": "name-once"}),
    Feature("parts in shadow roots", {"parts_in_roots": True}),
    Feature("parts in shadow roots, authors: name", {"parts_in_roots": True, "authors": "name"}),
]


def name(feature: str, bubbles: int, floor: bool = False) -> str:
    return f"{'floor' if floor else 'ours'}, {feature}, {bubbles} bubbles"


def history(feature: Feature, n: int) -> list[dict[str, Any]]:
    """n earlier bubbles, ours and the agent's by turns, as the feature shows them: with the work of
    each earlier turn (its thought and tool card, the status line gone), and where names are shown
    once per group, the agent answering in two bubbles (the second without a name)."""
    s = feature.scenario
    words = "some words of an old turn " * 4
    pattern = ("me", "bot", "bot") if s.get("authors") == "name-once" else ("me", "bot")
    out: list[dict[str, Any]] = []
    for i in range(n):
        role = pattern[i % len(pattern)]
        m: dict[str, Any] = {"role": role, "text": f"Earlier message {i}: {words}"}
        if s.get("work") and role == "bot" and out and out[-1]["role"] != "bot":
            work = [{"kind": "thought", "title": "💭 Thought for 1 second", "body": "Choosing what to tell them."},
                    {"kind": "tool", "title": "🔧 Used tool memory_search", "body": f"memory_search result: {i}"}]
            if s.get("work_place") == "beside":
                out += [{"role": "work", **x} for x in work]
            else:
                m["work"] = work
        out.append(m)
    return out


class LabDriver:
    """Our driver (generic.PlaywrightDriver with the lab's profile, trace off) on a lab chat."""

    def __init__(self, label: str, lab: ChatLab, conv: str):
        self.name, self.lab, self.conv, self.note = label, lab, conv, ""

    async def start(self, browser: Browser) -> LabDriver:
        self._tmp = tempfile.TemporaryDirectory(prefix="mmb-bench-")
        context = await browser.new_context()
        profile = self.lab.profile(name=self.name, selectors={"ready": "#log[data-ready='1']"})
        self.driver = PlaywrightDriver(profile, context, base_url=f"{self.lab.url}/c/{self.conv}",
                                       artifacts=Path(self._tmp.name), trace="off", screenshot_on_failure=False)
        await self.driver.open(None)
        self.page = self.driver._page()
        return self

    async def turn(self, text: str) -> Sample:
        started = time.perf_counter()
        reply = await self.driver.send(text)
        wall = (time.perf_counter() - started) * 1000
        # The lab keeps no clock of the agent's own (no overhead here): the watch's cost is the measure.
        return Sample(wall_ms=wall, agent_ms=float("nan"), delay_ms=None, complete=reply.text == f"echo: {text}",
                      watch_ms=reply.watch_ms, watch_checks=reply.watch_checks)

    async def close(self) -> None:
        await self.driver.close()
        self._tmp.cleanup()


class LabFloor:
    """The least a Playwright script does on the lab: fill, click, wait (every frame) for one more
    finished reply, read its text. Its page's rendering is the page's own."""

    note = "hand-written fill / click / wait for the done marker / inner_text"

    def __init__(self, label: str, lab: ChatLab, conv: str):
        self.name, self.lab, self.conv = label, lab, conv

    async def start(self, browser: Browser) -> LabFloor:
        self.context = await browser.new_context()
        self.page = await self.context.new_page()
        await self.page.goto(f"{self.lab.url}/c/{self.conv}")
        await self.page.wait_for_selector("#log[data-ready='1']", state="attached")
        return self

    async def turn(self, text: str) -> Sample:
        page = self.page
        started = time.perf_counter()
        done = await page.locator(REPLY_DONE).count()
        await page.fill("#box", text)
        await page.click("#send")
        await page.wait_for_function("([sel, n]) => document.querySelectorAll(sel).length > n", arg=[REPLY_DONE, done],
                                     polling="raf")
        got = await page.locator(REPLY_DONE).nth(done).locator(".text").inner_text()
        wall = (time.perf_counter() - started) * 1000
        return Sample(wall_ms=wall, agent_ms=float("nan"), delay_ms=None, complete=got == f"echo: {text}")

    async def close(self) -> None:
        await self.context.close()


@dataclass
class WatchCost:
    results: list[Results]
    costs: dict[str, PageCost] = field(default_factory=dict)
    sizes: tuple[int, ...] = SIZES


async def measure(browser: Browser, rounds: int, turns: int, features: list[Feature] = FEATURES,
                  sizes: tuple[int, ...] = SIZES) -> WatchCost:
    """Every feature at each size (10 and 2,000 bubbles; and the floor where the feature asks), turns interleaved."""
    labs = [ChatLab(LabScenario(**TIMING, **f.scenario)) for f in features]
    contenders: list[Contender] = []
    pages: dict[str, Page] = {}
    try:
        for f, lab in zip(features, labs, strict=True):
            lab.start()
            for n in sizes:
                for floor in (False, True) if f.floor else (False,):
                    conv = lab.new_conversation()
                    lab.conversations[conv] = history(f, n)
                    label = name(f.name, n, floor)
                    c = await (LabFloor if floor else LabDriver)(label, lab, conv).start(browser)
                    contenders.append(c)
                    pages[label] = c.page
        results, costs = await play_measured(contenders, pages, rounds, turns)
    finally:
        for c in contenders:
            await c.close()
        for lab in labs:
            lab.stop()
    return WatchCost(results, costs, sizes)


def _samples(found: WatchCost, label: str) -> list[Sample]:
    return next(r.samples for r in found.results if r.name == label)


def watch(found: WatchCost, label: str) -> float:
    """The watch's time in the page per turn (arming it and every check), median."""
    return median([s.watch_ms for s in _samples(found, label) if s.watch_ms is not None])


def checks(found: WatchCost, label: str) -> float:
    return median([s.watch_checks for s in _samples(found, label) if s.watch_checks is not None])


def per_check(found: WatchCost, label: str) -> float:
    return median([s.watch_ms / s.watch_checks for s in _samples(found, label) if s.watch_ms is not None and s.watch_checks])


def wall(found: WatchCost, label: str) -> float:
    return median([s.wall_ms for s in _samples(found, label)])


def section(found: WatchCost, rounds: int, turns: int, summary: list[str]) -> list[str]:
    """The bench's section 2c: the rows, the ratios, and the summary line (appended to `summary`)."""
    rows = []
    for r in found.results:
        c, ours = found.costs[r.name], r.name.startswith("ours")
        rows.append([r.name, len(r.samples), f"{watch(found, r.name):.1f}" if ours else "—",
                     f"{checks(found, r.name):.0f}" if ours else "—", f"{per_check(found, r.name):.3f}" if ours else "—",
                     f"{c.style_ms:.1f}", f"{c.layout_ms:.1f}", f"{wall(found, r.name):.0f}",
                     f"{sum(x.complete for x in r.samples)}/{len(r.samples)}"])
    small, big = found.sizes[0], found.sizes[-1]
    features = [f for f in FEATURES if any(r.name == name(f.name, big) for r in found.results)]
    base = features[0].name  # the plain profile, when it was measured
    plain = {n: watch(found, name(base, n)) for n in (small, big)}
    ratios = []
    for f in features:
        at = {n: watch(found, name(f.name, n)) for n in (small, big)}
        ratios.append([f.name, f"**{ratio(at[big], at[small]):.2f}x**",
                       f"{ratio(per_check(found, name(f.name, big)), per_check(found, name(f.name, small))):.2f}x",
                       f"{ratio(at[small], plain[small]):.2f}x", f"{ratio(at[big], plain[big]):.2f}x"])
    grows = {f.name: ratio(watch(found, name(f.name, big)), watch(found, name(f.name, small))) for f in features}
    others = [n for n in grows if n != base] or [base]
    worst = max(others, key=grows.__getitem__)
    summary.append(f"- reply watch, time in the page per turn with {big} bubbles / with {small}: {base} profile "
                   f"**{grows[base]:.2f}x**; with a feature {min(grows[n] for n in others):.2f}x to **{grows[worst]:.2f}x** "
                   f"({worst}); per check at {big} bubbles at most "
                   f"{max(per_check(found, name(f.name, big)) for f in features):.2f} ms (no target; section 2c)")
    return [f"## 2c. The reply watch's features with {small} and {big:,} bubbles", "",
            f"The chat lab (tests/support/chat_lab.py) opened with {small} and with {big} earlier bubbles, once per "
            "feature of the reply watch, the earlier bubbles built as the feature shows them (earlier turns' work, "
            "names once per group of two replies, parts in shadow roots); our driver with the lab's profile (trace "
            f"off), {rounds} rounds of {turns} turns each, interleaved. 'watch' = what the reply watch took inside the "
            "page per turn (arming it, and every check: at each DOM change and every poll_ms), medians; 'checks' per "
            "turn; style and layout = Chromium's main-thread time per turn on that page (CDP Performance.getMetrics), "
            "which includes what a check made the page work out early (a visibility test needs its styles). The "
            "floor (fill, click, wait every frame for one more finished reply, read it) shows the page's own "
            "rendering where it is large.", "",
            table(["contender", "turns", "watch ms", "checks", "ms per check", "style ms", "layout ms", "wall ms",
                   "complete"], rows), "",
            table(["feature", f"watch {big} / {small}", f"per check {big} / {small}", f"vs {base}, {small}",
                   f"vs {base}, {big}"], ratios), "", summary[-1], ""]
