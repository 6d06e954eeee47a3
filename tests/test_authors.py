"""Chats that tell our bubbles from the agent's only by who wrote them, in real Chromium: every bubble is
the same element, with the author's name in it, the name only on the first bubble of a group (as
messengers show it), or an avatar whose alt text names the author. Replies, exactly once, new chat
and its reset check work as with a selector for each side."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from drivers.profile import profile_from_dict
from persona.state import RunStore
from tests.conftest import NO_TRACE
from tests.support.chat_lab import AGENT_NAME, ChatLab, LabScenario
from tests.support.play import play
from tests.support.tiny import TINY
from tests.test_exactly_once import agent_of

pytestmark = pytest.mark.usefixtures("chromium")


@pytest.fixture
def lab() -> Iterator[ChatLab]:
    with ChatLab() as lab:
        yield lab


@pytest.mark.parametrize("authors", ["name", "name-once", "avatar"])
def test_replies_of_several_bubbles_are_read_by_their_author(harness, lab, tmp_path, authors):
    lab.scenario = LabScenario(authors=authors, bubbles=3, bubble_gap_ms=100, chunk_ms=5, welcome="Hello, I am Memo")
    replies = harness.chat(lab.profile(), tmp_path, ["first", "second"])
    assert [r.bubbles for r in replies] == [[f"part {i} of 3: {m}" for i in (1, 2, 3)] for m in ("first", "second")]
    assert lab.received == ["first", "second"]


@pytest.mark.parametrize("parts_in_roots", [False, True], ids=["light", "parts-in-roots"])
def test_a_reply_keeps_the_authors_names_and_the_time_it_says(harness, lab, tmp_path, parts_in_roots):
    """The name and the time are left out where they stand, not wherever their words come last in the text:
    a reply that says "Memo", "User" and "12:00" keeps them. With parts_in_roots every word of a bubble is
    in nested shadow roots, as in Panel (no word in any bubble's innerText)."""
    lab.scenario = LabScenario(authors="name", parts_in_roots=parts_in_roots, bubbles=2, chunk_ms=5, welcome="Hi, I am Memo")
    said = "Memo, User here: meet me at 12:00"
    [reply] = harness.chat(lab.profile(), tmp_path, [said])
    assert reply.bubbles == [f"part {i} of 2: {said}" for i in (1, 2)]
    assert lab.received == [said]


@pytest.mark.parametrize("named", [{"agent": AGENT_NAME}, {"user": "user"}, {"agent": "m.m.", "user": "USER"}],
                         ids=["agent", "user", "both"])
def test_either_side_or_both_may_be_named(harness, lab, tmp_path, named):
    """Ours may be named alone (the logged-in user's name): the agent is every other author. Names are
    matched whole, case-insensitively."""
    lab.scenario = LabScenario(authors="name-once", bubbles=2, chunk_ms=5)
    [reply] = harness.chat(lab.profile(authors=named), tmp_path, ["hello"])
    assert reply.bubbles == ["part 1 of 2: hello", "part 2 of 2: hello"]


def test_a_name_matched_in_part_is_not_the_author(harness, lab, tmp_path):
    """`Mem` is not `Memo`: no bubble is the agent's, and the wait says how the profile looked for them."""
    lab.scenario = LabScenario(authors="name", chunk_ms=5)
    profile = lab.profile(authors={"agent": "Mem", "user": "User"}, completion={"first_bubble_timeout_s": 1})
    with pytest.raises(Exception, match=r"nothing matched message '#log \.msg' whose author '\.name' is authors\.agent 'Mem'"):
        harness.chat(profile, tmp_path, ["hello"])


@pytest.mark.parametrize(("authors", "parts_in_roots"), [("name-once", False), ("avatar", False), ("name", True)],
                         ids=["name-once", "avatar", "parts-in-roots"])
def test_a_run_by_authors_types_each_message_once_and_its_new_chat_resets(tmp_path, write_bench, authors,
                                                                           parts_in_roots):
    with ChatLab(LabScenario(authors=authors, parts_in_roots=parts_in_roots, chunk_ms=5)) as lab:
        outcome, state = play(tmp_path, browser=NO_TRACE, benchmark=write_bench(TINY), agent=agent_of(lab.profile()))
        assert outcome.status == "finished", outcome.error
        transcript = RunStore(tmp_path / "results" / "r").transcript()
        assert lab.received == [ex.sent for ex in transcript] and len(set(lab.received)) == len(lab.received)
        assert [ex.reply for ex in transcript] == [[f"echo: {ex.sent}"] for ex in transcript]
        assert len(state.sessions) == 2 and "no messages left" in state.sessions[1].reset_sign


@pytest.mark.parametrize(("selectors", "options", "error"), [
    ({"message": ".msg"}, {"authors": {"agent": "Bot"}}, "message needs author"),
    ({"message": ".msg", "author": ".name"}, {}, "options.authors must say"),
    ({"message": ".msg", "author": ".name", "assistant_message": ".bot"}, {"authors": {"agent": "Bot"}},
     "leave assistant_message and user_message out"),
    ({"message": ".msg", "author": ".name"}, {"authors": {}}, "name the agent's author, ours, or both"),
    ({"message": ".msg", "author": ".name"}, {"authors": {"agent": "(Bot"}}, "not a regular expression"),
    ({}, {}, "assistant_message is required"),
])
def test_a_profile_by_authors_names_what_is_missing(selectors, options, error):
    with pytest.raises(ValueError, match=error):
        profile_from_dict({"name": "x", "selectors": {"input": "textarea", **selectors}, **options})


@pytest.mark.parametrize("navigates", [True, False], ids=["new-address", "cleared-in-place"])
def test_a_new_chat_that_greets_in_the_agent_s_name_is_a_reset(harness, lab, tmp_path, navigates):
    """Every bubble is `.msg`, the agent's welcome too: the reset check counts our bubbles by their author,
    so the welcome of the new chat is no message left over from the old one."""
    lab.scenario = LabScenario(authors="name", chunk_ms=5, welcome="Hello, I am Memo", new_chat_navigates=navigates)

    async def go() -> str:
        driver = await harness.driver(lab.profile(reset_timeout_s=5), tmp_path)
        await driver.send("remember: my cat is Tom")
        info = await driver.new_session()
        await driver.close()
        return info.reset_sign

    assert "no messages left (1 before)" in harness.run(go())
