"""What the reply watch's features cost per turn as a chat grows: our driver on the chat lab
(tests/support/chat_lab.py) opened with 10 and with 2,000 earlier bubbles, once per feature, turns
interleaved, in one run.

Each feature changes what a check of the watch (drivers/reply_watch.py's WATCH_JS, run in the page
on every DOM change) has to do: collect the turn's work and read bubbles without it; tell the sides
by their authors' names; read text through nested shadow roots; read a newest-first list in reverse.
The plain lab profile, measured beside them, is the baseline: its checks look only at what follows
our message. The earlier bubbles are built as the feature shows them (the work of earlier turns,
names once per group of bubbles, parts in shadow roots), so a check that walked the whole chat
would show here as growth from 10 to 2,000.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import Browser

from bench.overhead import Results, Sample, play_rounds
from bench.stats import median
from drivers.generic import PlaywrightDriver
from drivers.profile import Profile
from tests.support.chat_lab import ChatLab, LabScenario

SIZES = (10, 2000)
PLAIN = "plain"
# A lab reply streams like the bench page's: ~35 chunks of 4 characters, 10 ms apart; a done marker.
TIMING: dict[str, Any] = {"chunk_chars": 4, "chunk_ms": 10, "done": "attr", "busy": "stop-button"}


@dataclass(frozen=True)
class Feature:
    name: str
    scenario: dict[str, Any]  # LabScenario fields beyond TIMING
    what: str  # what a check does more than the plain profile's


FEATURES = [
    Feature(PLAIN, {}, "the baseline: the bubbles after our message"),
    Feature("work in the bubble", {"work": ["status", "thought", "tool"], "work_ms": 100},
            "collects the turn's work (tool / thought / status), reads bubbles without it"),
    Feature("work beside", {"work": ["status", "thought", "tool"], "work_ms": 100, "work_place": "beside"},
            "the same, the work as elements of their own between the bubbles"),
    Feature("authors: name", {"authors": "name"}, "every bubble's side from its author's name"),
    Feature("authors: name once per group", {"authors": "name-once"},
            "the same; a bubble without a name is by the author of the one before"),
    Feature("authors: avatar", {"authors": "avatar"}, "the same, from an avatar's alt"),
    Feature("newest first", {"newest_first": True}, "reading order learned from geometry, lists read reversed"),
    Feature("parts in shadow roots", {"parts_in_roots": True}, "text read through the bubble's nested shadow roots"),
    Feature("parts in shadow roots, authors: name", {"parts_in_roots": True, "authors": "name"},
            "both: names and text in shadow roots (Panel)"),
]


def name(feature: str, bubbles: int) -> str:
    return f"{feature}, {bubbles} bubbles"


def history(feature: Feature, n: int) -> list[dict[str, Any]]:
    """n earlier bubbles, ours and the agent's by turns, as the feature shows them."""
    s = feature.scenario
    words = "some words of an old turn " * 4
    out: list[dict[str, Any]] = []
    # names once per group: the agent answers in two bubbles, the second showing no name
    pattern = ("me", "bot", "bot") if s.get("authors") == "name-once" else ("me", "bot")
    for i in range(n):
        role = pattern[i % len(pattern)]
        m: dict[str, Any] = {"role": role, "text": f"Earlier message {i}: {words}"}
        if s.get("work") and role == "bot" and out and out[-1]["role"] != "bot":
            done = [{"kind": "thought", "title": "💭 Thought for 1 second", "body": "Choosing what to tell them."},
                    {"kind": "tool", "title": "🔧 Used tool memory_search", "body": f"memory_search result: {i}"}]
            if s.get("work_place") == "beside":
                out += [{"role": "work", **x} for x in done]
            else:
                m["work"] = done
        out.append(m)
    return out


class LabDriver:
    """Our driver (generic.PlaywrightDriver, trace off) on a lab chat opened with its history."""

    def __init__(self, label: str, lab: ChatLab, conv: str):
        self.name, self.lab, self.conv, self.note = label, lab, conv, ""

    async def start(self, browser: Browser) -> LabDriver:
        self._tmp = tempfile.TemporaryDirectory(prefix="mmb-bench-")
        context = await browser.new_context()
        profile: Profile = self.lab.profile(name=self.name, selectors={"ready": "#log[data-ready='1']"})
        self.driver = PlaywrightDriver(profile, context, base_url=f"{self.lab.url}/c/{self.conv}",
                                       artifacts=Path(self._tmp.name), trace="off", screenshot_on_failure=False)
        await self.driver.open(None)
        return self

    async def turn(self, text: str) -> Sample:
        started = time.perf_counter()
        reply = await self.driver.send(text)
        wall = (time.perf_counter() - started) * 1000
        # The lab keeps no clock of the agent's own: no overhead here, the watch's cost is the measure.
        return Sample(wall_ms=wall, agent_ms=float("nan"), delay_ms=None, complete=reply.text == f"echo: {text}",
                      watch_ms=reply.watch_ms, watch_checks=reply.watch_checks)

    async def close(self) -> None:
        await self.driver.close()
        self._tmp.cleanup()


@dataclass
class WatchCost:
    results: list[Results]
    load_s: dict[str, float] = field(default_factory=dict)


async def measure(browser: Browser, rounds: int, turns: int, features: list[Feature] = FEATURES) -> WatchCost:
    labs = [ChatLab(LabScenario(**TIMING, **f.scenario)) for f in features]
    contenders: list[LabDriver] = []
    found = WatchCost([])
    try:
        for f, lab in zip(features, labs, strict=True):
            lab.start()
            for n in SIZES:
                conv = lab.new_conversation()
                lab.conversations[conv] = history(f, n)
                t = time.perf_counter()
                contenders.append(await LabDriver(name(f.name, n), lab, conv).start(browser))
                found.load_s[name(f.name, n)] = time.perf_counter() - t
        found.results = await play_rounds(contenders, rounds, turns)
    finally:
        for c in contenders:
            await c.close()
        for lab in labs:
            lab.stop()
    return found


def watch(found: WatchCost, label: str) -> float:
    return median([s.watch_ms for r in found.results if r.name == label for s in r.samples if s.watch_ms is not None])


def per_check(found: WatchCost, label: str) -> float:
    return median([s.watch_ms / s.watch_checks for r in found.results if r.name == label for s in r.samples
                   if s.watch_ms is not None and s.watch_checks])
