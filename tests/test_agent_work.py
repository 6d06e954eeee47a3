"""An agent that shows its work (tool cards, thoughts, status lines) before answering, in real Chromium.

The chat lab shows each step of the work in the reply's bubble or beside it, a tool's result
holding the answer's words, with a pause while the tool runs. The reply recorded must be the
answer alone, the work kept as the turn's activity, and the wait must not end at the tool's pause
whether or not a busy marker shows meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from drivers.profile import Selectors
from tests.support.chat_lab import ChatLab, LabScenario

ANSWER = "echo: where do I live?"


@pytest.fixture
def lab() -> Iterator[ChatLab]:
    with ChatLab() as lab:
        yield lab


@pytest.mark.parametrize("place", ["in-bubble", "beside"])
@pytest.mark.parametrize("rerender", [False, True], ids=["kept-nodes", "re-rendered"])
def test_the_answer_is_recorded_without_the_work_and_the_work_as_activity(harness, lab, tmp_path, place, rerender):
    lab.scenario = LabScenario(work=["status", "tool", "thought"], work_ms=600, work_place=place, rerender=rerender,
                               chunk_ms=20)
    [reply] = harness.chat(lab.profile(), tmp_path, ["where do I live?"])
    assert reply.bubbles == [ANSWER]
    assert [a.kind for a in reply.activity] == ["status", "tool", "thought"]
    status, tool, thought = reply.activity
    assert status.title == "Searching memory…"  # removed from the page once the answer began, still the turn's
    assert tool.title == "🔧 Used tool memory_search"  # as it ended, not as it started
    assert f"memory_search result: {ANSWER}" in tool.text
    assert thought.title.startswith("💭 Thought for")
    assert "work(3)" in reply.signal


def test_a_tool_pause_with_no_busy_marker_does_not_end_the_reply(harness, lab, tmp_path):
    """The page shows nothing busy while the tool runs: the turn's work, with no answer yet, holds the wait."""
    lab.scenario = LabScenario(work=["tool"], work_ms=2500, work_busy=False, busy="none", work_place="beside")
    profile = lab.profile(completion={"quiet_ms": 400})
    [reply] = harness.chat(profile, tmp_path, ["where do I live?"])
    assert reply.bubbles == [ANSWER]
    assert reply.seconds >= 2.5
    assert [a.title for a in reply.activity] == ["🔧 Used tool memory_search"]


def test_without_work_selectors_the_tool_card_would_be_taken_for_the_answer(harness, lab, tmp_path):
    """What the selectors are for: the same page read with a bubble selector alone mixes the work in."""
    lab.scenario = LabScenario(work=["tool"], work_ms=300, work_place="in-bubble")
    profile = lab.profile()
    bare = profile.model_copy(update={"selectors": Selectors(**{**profile.selectors.model_dump(),
                                                                  "tool": None, "thought": None, "status": None})})
    [reply] = harness.chat(bare, tmp_path, ["where do I live?"])
    assert "memory_search result" in reply.text and not reply.activity


def test_work_after_the_answer_is_waited_out_before_the_reply_is_complete(harness, lab, tmp_path):
    """A note written once it answered: a tool card after the answer's last words, running a while with
    no busy marker, then its result; the reply is taken once that work is over and quiet."""
    lab.scenario = LabScenario(work=["tool"], work_ms=1500, work_after_answer=True, work_busy=False, busy="none",
                               work_place="beside")
    profile = lab.profile(completion={"quiet_ms": 300, "activity_quiet_ms": 2000})
    [reply] = harness.chat(profile, tmp_path, ["where do I live?"])
    assert reply.bubbles == [ANSWER]
    assert [a.title for a in reply.activity] == ["🔧 Used tool memory_search"]


def test_a_bubble_that_is_all_work_never_counts_as_the_answer(harness, lab, tmp_path):
    """The bubble selector also matches the work's own element (one class for every row of the chat)."""
    lab.scenario = LabScenario(work=["thought", "tool"], work_ms=500, work_place="beside")
    profile = lab.profile(selectors={"assistant_message": "#log .bubble.bot, #log .work"})
    [reply] = harness.chat(profile, tmp_path, ["where do I live?"])
    assert reply.bubbles == [ANSWER]
    assert [a.kind for a in reply.activity] == ["thought", "tool"]
