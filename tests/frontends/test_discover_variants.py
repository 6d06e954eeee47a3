"""`mmb discover` across many generated pages (slow set): every pair of values of frame, launcher, shadow
roots, shared classes, busy marker and new-chat kind that a chat UI takes, each with class names from
a fresh random seed (printed, to replay a failure), and the demo agent's own page; then the shapes of
a turn: the agent's work before its answer (in its bubble or beside it, as <details>, toggles or
labelled blocks, with or without a busy marker in a tool's pause), sides told only by their authors
or by inline styles, newest-first lists, chats that forget on reload, class counters that change with
each load. Each discovered profile plays the tiny benchmark with nothing typed twice and every reply
read as the agent's answer."""

from __future__ import annotations

import random

import pytest

from drivers.deep_dom import in_page
from drivers.profile import profile_from_dict
from tests.support.chat_lab import ChatLab, LabScenario
from tests.support.variant_lab import Variant
from tests.test_discover import discover, play_discovered

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("chromium")]

# Every pair of values of frame x launcher x shadow x shared_class meets in at least one shape (pairwise).
SHAPES = [dict(zip(("frame", "launcher", "shadow", "shared_class"), combo, strict=True)) for combo in [
    ("none", False, "none", False), ("none", True, "nested", True), ("same-origin", False, "nested", True),
    ("same-origin", True, "none", False), ("cross-origin", False, "none", True), ("cross-origin", True, "nested", False),
    ("none", True, "none", True), ("same-origin", True, "nested", False), ("cross-origin", False, "nested", True),
    ("cross-origin", True, "none", True)]]
STYLES = [{"busy": "stop", "labels": True}, {"busy": "dots", "labels": False, "send": "enter"},
          {"busy": "none", "labels": True, "new_chat": "storage"}]


# The shapes of a turn (issues 31, 32, 36), each value met at least twice and mixed with the shapes above.
# (A chat told apart by its authors that greets every new chat has welcome=None: the run's reset check counts
# the welcome among the messages that should be gone.)
TOOL = {"work": ["tool"], "work_ms": 2500}
TURN_SHAPES = {
    "tool details in the bubble, nothing busy": dict(TOOL, work_place="in-bubble", work_form="details", work_busy=False,
                                                     busy="none"),
    "status, tool, thought toggles beside, dots gone in the pause, newest first": dict(
        work=["status", "tool", "thought"], work_ms=3000, work_place="beside", work_form="toggle", work_busy=False,
        busy="dots", newest_first=True),
    "labelled thought and tool beside, a working row, counters": dict(
        work=["thought", "tool"], work_ms=2500, work_place="beside", work_form="labelled", busy="working", counters=True),
    "status and tool toggles in the bubble, input disabled, sides by style": dict(
        work=["status", "tool"], work_ms=2000, work_place="in-bubble", work_form="toggle", busy="input", sides="style"),
    "authors by name, counters, same-origin widget": dict(sides="name", welcome=None, counters=True, frame="same-origin"),
    "authors once per group, a working row of the rows' own class": dict(sides="name-once", welcome=None, busy="working"),
    "authors once per group in nested roots, a tool beside": dict(TOOL, sides="name-once", shadow="nested", welcome=None,
                                                                  busy="working", work_place="beside", work_busy=False,
                                                                  meta=True),
    "an avatar and a time in each bubble, a tool in it": dict(TOOL, meta=True, work_place="in-bubble", work_busy=False,
                                                              busy="none", shared_class=True),
    "avatars, input disabled, newest first, forgets on reload": dict(sides="avatar", welcome=None, busy="input",
                                                                      newest_first=True, forgets_on_reload=True),
    "style sides in nested roots, newest first, counters, bare": dict(sides="style", shadow="nested", newest_first=True,
                                                                      counters=True, labels=False),
    "forgets on reload, counters, cross-origin widget behind a launcher": dict(
        forgets_on_reload=True, counters=True, labels=False, frame="cross-origin", launcher=True),
    "newest first, one class, a working row, forgets on reload": dict(newest_first=True, shared_class=True,
                                                                       busy="working", forgets_on_reload=True),
}


@pytest.mark.parametrize("shape", list(TURN_SHAPES))
def test_discovery_on_a_generated_turn(shape, tmp_path, write_bench, harness):
    discover_and_play(Variant(seed=random.randrange(1_000_000), **TURN_SHAPES[shape]), tmp_path, write_bench, harness)


# Pages a random seed once failed on, kept: every class telling the sides apart ended in a digit (xnmpuk0),
# which discovery took for an identity (row3); the bubbles' selector took the rows' class, which the
# "… is working" row shares, so the run read that row as our message.
MET = {"names ending in digits": Variant(seed=484160, busy="none", new_chat="storage"),
       "a working row of the rows' class": Variant(seed=302, sides="name-once", busy="working", welcome=None)}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_discovery_on_a_generated_page(shape, tmp_path, write_bench, harness):
    seed = random.randrange(1_000_000)
    style = STYLES[seed % len(STYLES)]
    discover_and_play(Variant(seed=seed, **shape, **style), tmp_path, write_bench, harness)


@pytest.mark.parametrize("page", list(MET))
def test_discovery_on_a_page_a_seed_once_failed_on(page, tmp_path, write_bench, harness):
    discover_and_play(MET[page], tmp_path, write_bench, harness)


def discover_and_play(v: Variant, tmp_path, write_bench, harness) -> None:
    print(f"\nvariant: {v.model_dump()}")  # to replay: Variant(**that)
    with ChatLab(LabScenario(variant=v, chunk_ms=10)) as lab:
        done, agent = discover(lab.url + "/", tmp_path)
        print(done.stderr.splitlines()[-1] if done.stderr else "", agent)
        assert done.returncode == 0, done.stderr
        if v.busy in ("working", "dots") and v.frame == "none" and "busy" in agent["selectors"]:
            assert bubbles_matching_busy(harness, agent, tmp_path) == 0, agent
        received, state = play_discovered(lab, agent, tmp_path, write_bench)
    assert len(received) == state.turn == state.sends.typed and len(set(received)) == len(received), received
    assert state.sends.resent == [] and len(state.sessions) == 2


# Watches every change of the page: how often a busy element was there, and how often a bubble selector matched one.
WATCH_BUSY = in_page("""([busy, bubbles]) => {
  const seen = (window.__busyWatch = {busy: 0, bubble: 0});
  Q.observe(() => { for (const b of Q.all(busy)) { seen.busy++; if (bubbles.some((s) => b.matches(s))) seen.bubble++; } });
}""")


def bubbles_matching_busy(harness, agent: dict, tmp_path) -> int:
    """While the busy marker is in the page (a row of the list, maybe for a few milliseconds), how often a
    bubble selector matched it: a run would read that row as a bubble (ours, where the author is named once
    per group). The chat is opened and the message sent the run's way; every change of the page is looked at."""
    selectors = agent["selectors"]
    bubbles = [selectors[k] for k in ("message", "assistant_message", "user_message") if k in selectors]
    profile = profile_from_dict({"name": "discovered", "url": agent["url"], "selectors": selectors, **agent.get("options", {})})

    async def go() -> dict[str, int]:
        driver = await harness.driver(profile, tmp_path)
        try:
            await driver.page.evaluate(WATCH_BUSY, [selectors["busy"], bubbles])
            await driver.send("hello")
            return await driver.page.evaluate("window.__busyWatch")
        finally:
            await driver.close()

    seen = harness.run(go())
    assert seen["busy"], f"the busy marker {selectors['busy']!r} never showed"
    return seen["bubble"]


def test_discovery_on_the_demo_agents_page(tmp_path, write_bench):
    """DemoMind's own chat (placeholders, several bubbles a reply, a done marker): discovered and played;
    the agent's memory file says what it took in."""
    from demo_agent.web import DemoChatServer

    server = DemoChatServer(tmp_path / "memory")
    url = server.start() + "/"
    try:
        done, agent = discover(url, tmp_path)
        assert done.returncode == 0, done.stderr
        from tests.support.play import play
        from tests.support.tiny import TINY

        outcome, state = play(tmp_path, browser={"trace": "off"}, benchmark=write_bench(TINY), agent=agent)
    finally:
        server.stop()
    assert outcome.status == "finished", outcome.error
    assert state.sends.typed == state.turn and state.sends.resent == [] and len(state.sessions) == 2
