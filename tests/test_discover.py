"""`mmb discover`: a profile from the URL alone, on pages no profile was written for (random class
names, no ids, shared classes, nested shadow roots, a cross-origin widget behind a launcher, a
conversation kept in storage, the agent's work shown before its answer, sides told only by their
authors' names or by inline styles, a newest-first list, a chat that forgets on reload, class names
whose counters change with each load), verified the run's way and then played with nothing typed
twice and every reply read as the agent's answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from drivers.discover_reading import build_made, regex_literal, sides, work
from persona.state import RunStore
from tests.conftest import NO_TRACE, mmb
from tests.support.chat_lab import ChatLab, LabScenario
from tests.support.play import play
from tests.support.tiny import TINY
from tests.support.variant_lab import Variant

pytestmark = pytest.mark.usefixtures("chromium")

# Pages that share nothing a profile could have been tuned to (the slow set plays more, and plays the
# frame's profile too: here it is discovered and verified by a round trip, which is most of the time).
PAGES = {
    "bare icons, typing dots, Enter": Variant(seed=101, labels=False, busy="dots", send="enter"),
    "cross-origin widget behind a launcher": Variant(seed=102, frame="cross-origin", launcher=True, labels=False),
    "nested shadow roots, one class, storage": Variant(seed=103, shadow="nested", shared_class=True, launcher=True,
                                                       new_chat="storage", busy="none"),
    # The agent's work in its bubble (a status line, a tool card, a thought, each a toggle), nothing busy
    # during the tool's pause of 1.6 s: a discovery that takes the tool block for the answer cuts every reply there.
    "tool cards in the bubble, nothing busy in a tool's pause": Variant(
        seed=105, work=["status", "tool", "thought"], work_ms=1600, work_busy=False, busy="none", work_place="in-bubble",
        work_form="toggle"),
    # Every bubble the same element in its own shadow root, its author named once per group, an avatar and
    # a time beside its words (Panel's chat looks so), and an "… is working" row in the list meanwhile.
    "authors named once per group, in nested shadow roots": Variant(seed=106, sides="name-once", shadow="nested",
                                                                    busy="working", welcome=None, meta=True),
    # No class, role or attribute tells the sides apart, only inline styles; the newest message first in
    # the DOM; an empty chat on every load; every class with a counter that changes with each load; our
    # message drawn "unsent" until the server took it (a messenger's way), which is no busy marker of the agent.
    "newest first, sides by style, counters, forgets on reload": Variant(
        seed=107, labels=False, sides="style", newest_first=True, counters=True, forgets_on_reload=True, pending=True),
}
NOT_PLAYED = {"cross-origin widget behind a launcher"}
# The default suite discovers and plays two of them (issue 36's page and issue 32's); the others take 12-40 s
# each and go to the slow set, beside its sweep of random pages (tests/frontends/test_discover_variants.py).
DEFAULT_SUITE = {"newest first, sides by style, counters, forgets on reload",
                 "authors named once per group, in nested shadow roots"}
AUTHORS = ("name", "name-once", "avatar")


def discover(url: str, tmp_path: Path, *args: str):
    done = mmb("discover", url, "--out", str(tmp_path / "discover"), *args, timeout=120)
    return done, json.loads(done.stdout) if done.stdout.strip() else None


def play_discovered(lab: ChatLab, agent: dict, tmp_path: Path, write_bench) -> tuple[list[str], object]:
    """The tiny benchmark through the discovered profile: what the agent received, and the run's state;
    every reply recorded is the agent's answer to the message (the lab echoes it), not its work."""
    sent_before = len(lab.received)
    outcome, state = play(tmp_path, browser=NO_TRACE, benchmark=write_bench(TINY), agent=agent)
    assert outcome.status == "finished", outcome.error
    transcript = RunStore(tmp_path / "results" / "r").transcript()
    assert [ex.reply for ex in transcript] == [[f"echo: {ex.sent}"] for ex in transcript], agent
    return lab.received[sent_before:], state


def loaded_twice(harness, url: str, selectors: dict[str, str]) -> list[dict[str, object]]:
    """Each CSS selector's matches on two fresh loads of the page, and the classes of its send button."""
    async def go():
        out = []
        for _ in range(2):
            context = await harness.browser.new_context()
            page = await context.new_page()
            await page.goto(url)
            await page.locator(selectors["input"]).wait_for()
            counts = {k: await page.locator(s).count() for k, s in selectors.items() if k in ("input", "send", "new_chat")}
            out.append({"counts": counts, "classes": await page.locator("button").first.get_attribute("class")})
            await context.close()
        return out

    return harness.run(go())


@pytest.mark.parametrize("page", [pytest.param(p, marks=() if p in DEFAULT_SUITE else pytest.mark.slow) for p in PAGES])
def test_a_discovered_profile_plays_a_benchmark_with_nothing_typed_twice(page, tmp_path, write_bench, harness):
    v = PAGES[page]
    with ChatLab(LabScenario(variant=v, chunk_ms=5)) as lab:
        url = lab.url + "/"
        done, agent = discover(url, tmp_path)
        assert done.returncode == 0, done.stderr
        probes = list(lab.received)
        if v.counters:  # another load numbers every class anew: the selectors still find their element
            loads = loaded_twice(harness, url, agent["selectors"])
            assert loads[0]["classes"] != loads[1]["classes"] and all(
                all(n == 1 for n in load["counts"].values()) for load in loads), loads
        if page not in NOT_PLAYED:
            received, state = play_discovered(lab, agent, tmp_path, write_bench)
            assert len(received) == state.turn == state.sends.typed and len(set(received)) == len(received), received
            assert state.sends.resent == [] and len(state.sessions) == 2  # the new chat of the benchmark happened
    assert len(probes) == 2 and all(p.startswith("[mmb probe]") for p in probes)  # ONE to discover, one to verify
    assert agent["url"] == url and "discovery took" in done.stderr and "OK, verified by mmb probe" in done.stderr
    selectors, options = agent["selectors"], agent.get("options", {})
    assert not any(":nth" in s or "#" in s for s in selectors.values()), agent  # no positions, no generated ids
    assert options.get("keeps_history") is (not v.forgets_on_reload), agent  # as the reload showed it
    if v.sides in AUTHORS:
        user, bot = v.authors()
        assert options["authors"] == {"agent": regex_literal(bot), "user": regex_literal(user)}, agent
        assert {"message", "author"} <= selectors.keys() and "assistant_message" not in selectors
        assert f"names the author in each bubble: {user!r} in ours, {bot!r} in the reply's" in done.stderr
    else:
        assert selectors["assistant_message"] != selectors["user_message"]
    if v.sides == "style":
        assert "[style*=" in selectors["assistant_message"] + selectors["user_message"], agent
        assert "told by an inline style: no class, role or attribute tells the sides apart" in done.stderr
    if v.counters:  # no class with its number, no nameless counter (jss12): stable prefixes instead
        assert not re.search(r"\.[\w-]*\d\b|jss\d", " ".join(selectors.values())), agent
        assert "take the stable prefix of a class whose number changes" in done.stderr
    if v.work:
        assert {"tool", "thought", "status"} <= selectors.keys(), agent
        assert options["completion"]["activity_quiet_ms"] >= 5000
        assert re.search(r"signal \S*work\(3\)", done.stderr)  # the probe's reply: the answer, its work apart
        assert "the agent shows its work" in done.stderr
    if v.meta:  # the avatar and the time are no part of a bubble's words (the replies above are the echo alone)
        assert "strip" in selectors and "parts of each bubble that are not its words ('🧑'" in done.stderr, agent
    if v.busy == "working":
        assert "is working" in done.stderr.split("\nbusy: ")[1].splitlines()[0], done.stderr
    if v.pending:  # our message's sending state is not the agent at work, and rejects no selector of a bubble
        assert "Sending" not in selectors.get("busy", "") and "also matches the busy marker" not in done.stderr, done.stderr
        assert "part of our own message while it was sent, not the agent at work" in done.stderr  # said, not dropped
    if v.frame != "none":
        assert agent["frame"] in ("iframe", ".panel iframe", f".{v.names()['panel']} iframe"), agent
        assert "(cross-origin, HOLDS THE CHAT)" in done.stderr
    if v.launcher:
        assert selectors["launcher"].endswith(("bubble-button", v.names()["launcher"], '"Open chat"]')), agent
    if v.new_chat == "storage":
        assert options["new_session"] == "storage"


def control_selectors_on(harness, html: str, elements: list[str]) -> dict[str, list[str]]:
    """The page half's stable selectors (op `selector`) for each element (found by CSS) of `html`."""
    from drivers.discover_page import DISCOVER_JS

    async def go() -> dict[str, list[str]]:
        page = await harness.browser.new_page()
        try:
            await page.set_content(html)
            out = {}
            for css in elements:
                ref = await page.evaluate(DISCOVER_JS, {"op": "ref", "arg": await page.query_selector(css)})
                out[css] = await page.evaluate(DISCOVER_JS, {"op": "selector", "arg": ref})
            return out
        finally:
            await page.close()

    return harness.run(go())


def test_a_numbered_class_is_an_identity_only_when_the_page_has_it_with_another_number(harness):
    """`message-11`, `message-12` name two messages; `xnmpuk0`, alone on the page, is a generated name
    that may name a kind, and comes after the page's other names unless it is used more than once."""
    html = ('<div class="log"><p class="msg-11 turn">Hi</p><p class="msg-12 turn">Hello</p></div>'
            '<button class="xnmpuk0">Go</button><button class="xq7 toolbarentry">Stop</button>'
            '<a class="xr4 toolbarentry">Help</a><span class="xr4">?</span>')
    found = control_selectors_on(harness, html, ["p.msg-12", "button.xnmpuk0", "button.toolbarentry", "a.xr4"])
    assert not any("msg-" in s for s in found["p.msg-12"]), found
    assert "button.xnmpuk0" in found["button.xnmpuk0"], found
    assert found["button.toolbarentry"][0] == "button.toolbarentry" and "button.xq7" in found["button.toolbarentry"], found
    assert found["a.xr4"][0] == "a.xr4", found  # used twice: a kind, as good as any other name


def test_a_class_with_a_counter_is_taken_by_its_stable_prefix_and_generated_names_come_last(harness):
    """A redeploy (or, with CSS-in-JS, the next load) renumbers stopButton-149 and makeStyles-root-7: their
    stable prefix names the kind; a nameless counter (jss12) never does; a whole generated name (css-1x2y3z)
    holds until the next deploy: a test id goes first, and it is used only where nothing else tells."""
    html = ('<form><button class="stopButton-149 jss12">■</button><button class="makeStyles-root-7 jss13">▶</button>'
            '<button class="css-1x2y3z" data-testid="send-button">Send</button><button class="css-9q8w7e">?</button></form>')
    found = control_selectors_on(harness, html, [".jss12", ".jss13", ".css-1x2y3z", ".css-9q8w7e"])
    assert found[".jss12"][0] == 'button[class*="stopButton-"]', found
    assert found[".jss13"][0] == 'button[class*="makeStyles-root-"]', found
    assert not any(re.search(r"149|jss|-7\b", s) for sels in found.values() for s in sels), found
    assert found[".css-1x2y3z"][0] == 'button[data-testid="send-button"]', found
    assert found[".css-9q8w7e"] == ["button.css-9q8w7e", ".css-9q8w7e"], found


def test_what_discovery_says_of_names_a_build_made():
    lines = build_made({"assistant_message": ".css-8w9ymb", "busy": 'button[class*="stopButton-"]', "input": "textarea"})
    assert lines == ["these rest on class names a build generated, stable only until its next deploy (nothing stabler "
                     "marks them: no role, test id or attribute of their own): assistant_message '.css-8w9ymb'",
                     "these take the stable prefix of a class whose number changes (a build's counter): busy "
                     "'button[class*=\"stopButton-\"]'"]
    assert build_made({"assistant_message": ".bubble.bot", "new_chat": ".new-chat"}) == []


def test_sides_told_by_their_authors_name_them_whole_and_work_sets_the_pause_it_allows():
    turn = {"assistant": {"ok": [], "rejected": [[".msg", "also matches the other side's bubble"]]},
            "user": {"ok": [".msg"], "rejected": []}, "rows": 1,
            "authors": {"found": {"message": ".msg", "author": ".name", "agent": "Helper Bot (v1.2)", "user": "You"},
                        "rejected": []},
            "work": {"found": {"tool": {"sel": "details", "count": 2, "titles": ["Used tool search", "Used tool read"]}},
                     "rejected": []}}
    told = sides(turn)
    assert told.selectors == {"message": ".msg", "author": ".name"} and told.problem is None
    assert told.options == {"authors": {"agent": r"Helper Bot \(v1\.2\)", "user": "You"}}
    assert re.fullmatch(told.options["authors"]["agent"], "Helper Bot (v1.2)")
    assert work(turn, 1.6, "a collapsible <details>").options == {"completion": {"activity_quiet_ms": 5000}}
    assert work(turn, 3.1, "a collapsible <details>").options == {"completion": {"activity_quiet_ms": 6500}}
    nothing = work({"work": {"found": {}, "rejected": []}}, 0, "a status line ('Searching…')")
    assert nothing.selectors == {} and "no selector tells it from the answer" in nothing.findings[0].how
    turn["authors"] = {"found": None, "rejected": [[".msg by .time", "names '10:42' in ours and '10:42' in the reply's"]]}
    assert "no element in each bubble names its author" in sides(turn).problem


def test_no_send_types_nothing_and_says_what_it_cannot_tell(tmp_path):
    v = Variant(seed=104, welcome=None)
    with ChatLab(LabScenario(variant=v)) as lab:
        done, agent = discover(lab.url + "/", tmp_path, "--no-send")
        assert lab.received == []
    assert done.returncode == 1
    assert agent["selectors"]["input"] and agent["selectors"]["send"], agent
    assert "NOT FOUND: --no-send: no bubble on the page says whose it is" in done.stderr


def test_with_a_saved_login_the_new_chat_is_never_a_logout(tmp_path, write_config):
    """Forgetting the chat origin's storage would forget the login it holds (a messenger's session in
    IndexedDB): discovery says so and names the bot's way instead of logging out and failing later."""
    v = Variant(seed=103, new_chat="storage", busy="none")  # only forgetting the storage empties this chat
    with ChatLab(LabScenario(variant=v, chunk_ms=5)) as lab:
        url = lab.url + "/"
        auth = tmp_path / "auth"
        auth.mkdir()
        (auth / "lab.json").write_text(json.dumps({"cookies": [], "origins": [
            {"origin": lab.url, "localStorage": [{"name": "session", "value": "logged-in"}]}]}))
        config = write_config([{"id": "lab", "benchmark": str(tmp_path), "agent": {"driver": "generic", "url": url,
                                "selectors": {"input": "textarea", "assistant_message": ".x"}}}],
                              browser={"auth_dir": str(auth)})
        done, agent = discover(url, tmp_path, "--auth", "lab", "-c", str(config))
        probes = list(lab.received)
    assert done.returncode == 1, done.stderr
    assert "forgetting the browser's storage would end the login (--auth)" in done.stderr
    assert 'set options.new_session to "message"' in done.stderr
    assert agent["selectors"]["input"] and "new_session" not in agent.get("options", {}), agent
    assert len(probes) == 1  # the one discovery message; no verification of a profile that cannot start a new chat


@pytest.mark.slow  # 12 s of waiting out each control's search: the slow set
def test_a_page_with_no_chat_fails_naming_what_it_tried(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<!doctype html><h1>Nothing here</h1><button style="position: fixed; right: 10px; '
                                     'bottom: 10px; width: 56px; height: 56px" aria-label="Open chat">?</button>')
    from tests.support.static_site import serve

    with serve(site) as url:
        done, agent = discover(url, tmp_path, "--timeout", "35")
    assert done.returncode == 1
    assert "NOT FOUND: no text box to type a message into, in any frame; launchers tried: " in done.stderr
    assert "'role=button[name=\"Open chat\"]': clicking it showed no text box" in done.stderr
    assert agent is not None and agent["driver"] == "generic"  # stdout holds only the JSON, even then


def test_write_puts_the_agent_block_into_the_run_keeping_comments(tmp_path):
    from persona.cli.browsing import write_agent
    from persona.errors import InputError
    from persona.jsonc import load_jsonc

    config = tmp_path / "config.jsonc"
    config.write_text('{\n  // my engine\n  "runs": [\n    {"id": "mine", "benchmark": "b" /* the bench */},\n'
                      '    {"id": "other", "agent": {"driver": "demo"}}\n  ]\n}\n')
    agent = {"driver": "generic", "url": "http://127.0.0.1:1/", "selectors": {"input": "textarea", "assistant_message": ".a"}}
    write_agent(config, "mine", agent)
    write_agent(config, "other", agent)
    text = config.read_text()
    assert "// my engine" in text and "/* the bench */" in text
    data, _ = load_jsonc(config)
    assert data["runs"][0]["agent"] == agent == data["runs"][1]["agent"] and data["runs"][0]["benchmark"] == "b"
    with pytest.raises(InputError, match="no run with id 'third' \\(runs: mine, other\\): add it first"):
        write_agent(config, "third", agent)


def test_write_and_run_go_together():
    done = mmb("discover", "http://127.0.0.1:9/", "--write", "config.jsonc")
    assert done.returncode == 2 and "--write and --run go together" in done.stderr and done.stdout == ""
