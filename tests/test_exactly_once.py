"""Exactly once on pages that break the usual assumptions, in real Chromium: a chat whose DOM lists the
newest message first, a chat that forgets on reload, a busy marker whose class a build renamed.

Every message is typed once (the lab records what the agent received); a message is typed again only
on evidence that it did not arrive, and a reopened empty chat is evidence only where the run saw the
chat keep its messages.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from drivers.base import NotResent, SendJournal
from drivers.observed import MARKER_REPLIES, Observed
from drivers.profile import Profile
from drivers.recovery import Recovery
from drivers.resilient import ResilientDriver
from persona.state import RunStore
from tests.conftest import NO_TRACE
from tests.support.chat_lab import ChatLab, LabScenario
from tests.support.play import play
from tests.support.tiny import TINY

pytestmark = pytest.mark.usefixtures("chromium")


def agent_of(profile: Profile) -> dict[str, Any]:
    """A profile as config.jsonc's `agent` block of the generic driver, as a user would write it."""
    data = profile.model_dump(exclude_none=True, exclude={"name"})
    return {"driver": "generic", "url": data.pop("url"), "selectors": data.pop("selectors"), "options": data}


def test_a_chat_listing_the_newest_message_first_plays_a_run_with_each_message_once(tmp_path, write_bench):
    with ChatLab(LabScenario(newest_first=True, chunk_ms=5)) as lab:
        outcome, state = play(tmp_path, browser=NO_TRACE, benchmark=write_bench(TINY), agent=agent_of(lab.profile()))
        assert outcome.status == "finished", outcome.error
        transcript = RunStore(tmp_path / "results" / "r").transcript()
        assert lab.received == [ex.sent for ex in transcript] and len(set(lab.received)) == len(lab.received)
        assert [ex.reply for ex in transcript] == [[f"echo: {ex.sent}"] for ex in transcript]  # each its own reply
        assert state.sends.resent == [] and state.turn == len(lab.received)


def test_replies_in_a_newest_first_chat_are_read_in_the_order_a_reader_sees(harness, tmp_path):
    with ChatLab(LabScenario(newest_first=True, bubbles=2, chunk_ms=5, welcome="Hi there")) as lab:
        replies = harness.chat(lab.profile(), tmp_path, ["first", "second", "third"])
    assert [r.bubbles for r in replies] == [[f"part {i} of 2: {m}" for i in (1, 2)] for m in ("first", "second", "third")]
    assert lab.received == ["first", "second", "third"]


class Turns(SendJournal):
    """A journal without a turn of its own: the resilient driver gives each message one."""

    def __init__(self) -> None:
        self.typed = 0

    async def submitting(self) -> None:
        self.typed += 1


async def _resilient(harness, lab: ChatLab, tmp_path, observed: Observed, events: list[str]) -> ResilientDriver:
    """The lab's chat through the resilient driver (short reply limits, backoff not slept), chat opened."""
    profile = lab.profile(completion={"first_bubble_timeout_s": 1.5, "timeout_s": 4})
    driver = await harness.driver(profile, tmp_path, observed=observed)

    async def no_sleep(seconds: float) -> None:
        pass

    return ResilientDriver(driver, Recovery(attempts=3, backoff_s=0.05), sleep=no_sleep, on_event=events.append)


def test_a_first_reply_lost_in_a_chat_that_forgets_on_reload_is_not_typed_again_on_a_guess(harness, tmp_path):
    """The reply to the first message comes late; the reopened chat shows nothing, as it would had the
    message never arrived. Nothing in this run showed whether the chat keeps its messages: it stops."""
    with ChatLab(LabScenario(forgets_on_reload=True, at_message={1: "late"}, late_ms=5000)) as lab:
        events: list[str] = []
        journal = Turns()

        async def go() -> None:
            driver = await _resilient(harness, lab, tmp_path, Observed(), events)
            with pytest.raises(NotResent, match="whether it keeps its messages when reopened is not known"):
                await driver.send("My cat is called Pixel", journal)

        harness.run(go())
        assert lab.received == ["My cat is called Pixel"] and journal.typed == 1


@pytest.mark.parametrize("forgets", [False, True], ids=["keeps", "forgets"])
def test_the_first_reopening_after_a_confirmed_reply_shows_whether_the_chat_keeps_its_messages(
        harness, tmp_path, forgets):
    with ChatLab(LabScenario(forgets_on_reload=forgets, chunk_ms=5)) as lab:
        events: list[str] = []
        observed = Observed(on_event=events.append)

        async def go() -> None:
            driver = await harness.driver(lab.profile(), tmp_path, observed=observed)
            await driver.send("My cat is called Pixel")
            assert observed.keeps_history is None  # nothing reopened yet
            await driver.open(driver.session_url)
            await driver.close()

        harness.run(go())
    assert observed.keeps_history is (not forgets)
    assert events == [f"the chat {'does not keep' if forgets else 'keeps'} its messages when reopened: "
                      f"{observed.history_why}"]


def test_a_message_typed_again_keeps_its_turn_in_the_log(harness, tmp_path, caplog):
    """An error bubble for the first message: it is typed again, and every line about it says turn 1."""
    with ChatLab(LabScenario(at_message={1: "error"}, chunk_ms=5)) as lab:
        events: list[str] = []

        async def go() -> None:
            driver = await _resilient(harness, lab, tmp_path, Observed(), events)
            await driver.send("hello", Turns())

        with caplog.at_level(logging.INFO, logger="drivers"):
            harness.run(go())
        assert lab.received == ["hello", "hello"]
    turns = {m.split(":")[0] for m in (r.getMessage() for r in caplog.records) if m.startswith("turn ")}
    assert turns == {"turn 1"}, caplog.text


def test_a_busy_marker_renamed_by_a_build_is_said_after_the_first_replies(harness, tmp_path):
    """The profile names the stop button by a class with a counter (stopButton-149) that this deploy
    renders as another: replies still complete by their text alone, and that is said once."""
    with ChatLab(LabScenario(stop_class_counter=True, chunk_ms=5)) as lab:
        events: list[str] = []
        observed = Observed(on_event=events.append)
        profile = lab.profile(selectors={"busy": ".stopButton-149"}, completion={"quiet_ms": 300})
        messages = [f"message {i}" for i in range(MARKER_REPLIES + 1)]
        replies = harness.chat(profile, tmp_path, messages, observed=observed)
    assert [r.bubbles for r in replies] == [[f"echo: {m}"] for m in messages]
    assert len(events) == 1 and "'.stopButton-149' (selectors.busy) showed on none of the first 3 replies" in events[0]


def test_what_a_run_saw_of_the_page_is_in_its_report(tmp_path, write_bench):
    """A run whose profile names a busy marker the page no longer has: said in the run log and in the
    report's own line, once."""
    with ChatLab(LabScenario(stop_class_counter=True, chunk_ms=5)) as lab:
        profile = lab.profile(selectors={"busy": ".stopButton-149"}, completion={"quiet_ms": 300})
        outcome, state = play(tmp_path, browser=NO_TRACE, benchmark=write_bench(TINY), agent=agent_of(profile))
    assert outcome.status == "finished", outcome.error
    [finding] = state.page_findings
    assert "'.stopButton-149' (selectors.busy) showed on none of the first 3 replies" in finding
    assert sum(finding in line for line in state.log) == 1
    report = (tmp_path / "results" / "report.md").read_text()
    assert "- **The chat page, as the run saw it:**\n  - ` the busy marker '.stopButton-149'" in report
