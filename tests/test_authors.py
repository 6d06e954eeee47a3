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


SIDES_PAGE = """<!doctype html><html><body><div id="log"></div><script>
  // Who wrote each bubble, worked out from scratch: its name, else the one before's (an empty name is none).
  window.reference = () => {
    let side = null;
    const users = [];
    for (const m of document.querySelectorAll('#log .msg')) {
      const name = ((m.querySelector('.name') || {}).textContent || '').trim();
      side = name ? (/^memo$/i.test(name) ? 'agent' : 'user') : side;
      if (side === 'user') users.push(m);
    }
    return {users: users.length, last: users.length ? users[users.length - 1].querySelector('.text').textContent : null};
  };
</script></body></html>"""

CHANGE_JS = """(seed) => {
  let s = seed;
  const rnd = (n) => { s = (s * 1103515245 + 12345) % 2147483648; return Math.floor(s / 65536) % n; };
  window.__step = (window.__step || 0) + 1;
  const log = document.getElementById('log'), msgs = [...log.querySelectorAll('.msg')];
  const pick = msgs[rnd(msgs.length)];
  const bubble = (name) => {
    const m = document.createElement('div');
    m.className = 'msg';
    if (name !== null) m.append(Object.assign(document.createElement('span'), {className: 'name', textContent: name}));
    m.append(Object.assign(document.createElement('span'), {className: 'text', textContent: 'words ' + window.__step}));
    return m;
  };
  const someone = () => (rnd(2) ? 'Memo' : 'User');
  const kind = rnd(8);
  if (kind === 0) log.append(bubble(someone()));
  else if (kind === 1) log.append(bubble(null));
  else if (kind === 2 && pick) log.insertBefore(bubble(rnd(2) ? someone() : null), pick);
  else if (kind === 3 && pick) pick.remove();
  else if (kind === 4 && pick && !pick.querySelector('.name')) pick.prepend(Object.assign(document.createElement('span'), {className: 'name', textContent: someone()}));
  else if (kind === 5) log.append(bubble(''));
  else if (kind === 6) { const empty = [...log.querySelectorAll('.name')].find((n) => !n.textContent); if (empty) empty.textContent = someone(); }
  else if (kind === 7 && pick) pick.querySelector('.text').textContent += ' more';
  return kind;
}"""


def test_the_sides_worked_out_step_by_step_equal_those_worked_out_from_scratch(harness):
    """The watch keeps each bubble's side and works them out again only from the first bubble that may
    have changed: after each of many random changes (bubbles added at the end or before others, with a
    name, none, or an empty one filled later; removed; a name put into a bubble that had none; words
    streamed) our bubbles it finds are those a look at every bubble finds."""
    from drivers.deep_dom import SHADOW_HOOK_JS
    from drivers.profile import Authors, Profile, Selectors
    from drivers.reply_watch import WATCH_JS, ReplyWatch

    profile = Profile(name="sides", url="http://sides.test/", authors=Authors(agent="Memo"),
                      selectors=Selectors(input="#box", message="#log .msg", author=".name"))
    cfg = ReplyWatch(None, profile).cfg  # type: ignore[arg-type]  # the scope is for calls made from Python

    async def go():
        page = await harness.browser.new_page()
        try:
            await page.add_init_script(SHADOW_HOOK_JS)
            await page.route("http://sides.test/", lambda route: route.fulfill(body=SIDES_PAGE, content_type="text/html"))
            await page.goto("http://sides.test/")
            wrong = []
            for step in range(250):
                kind = await page.evaluate(CHANGE_JS, 1000 + step * 7919)
                if step % 4 == 3:
                    continue  # several changes between two looks, sometimes
                got = await page.evaluate(WATCH_JS, {"op": "ours", "cfg": cfg, "limits": None})
                want = await page.evaluate("reference()")
                if got != want:
                    wrong.append((step, kind, got, want))
            return wrong
        finally:
            await page.close()

    assert harness.run(go()) == []
