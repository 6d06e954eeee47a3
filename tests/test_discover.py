"""`mmb discover`: a profile from the URL alone, on pages no profile was written for (random class
names, no ids, shared classes, nested shadow roots, a cross-origin widget behind a launcher, a
conversation kept in storage), verified the run's way and then played with nothing typed twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import NO_TRACE, mmb
from tests.support.chat_lab import ChatLab, LabScenario
from tests.support.play import play
from tests.support.tiny import TINY
from tests.support.variant_lab import Variant

pytestmark = pytest.mark.usefixtures("chromium")

# Three pages that share nothing a profile could have been tuned to (the slow set plays more, and plays
# the frame's profile too: here it is discovered and verified by a round trip, which is most of the time).
PAGES = {
    "bare icons, typing dots, Enter": Variant(seed=101, labels=False, busy="dots", send="enter"),
    "cross-origin widget behind a launcher": Variant(seed=102, frame="cross-origin", launcher=True, labels=False),
    "nested shadow roots, one class, storage": Variant(seed=103, shadow="nested", shared_class=True, launcher=True,
                                                       new_chat="storage", busy="none"),
}
NOT_PLAYED = {"cross-origin widget behind a launcher"}


def discover(url: str, tmp_path: Path, *args: str):
    done = mmb("discover", url, "--out", str(tmp_path / "discover"), *args, timeout=120)
    return done, json.loads(done.stdout) if done.stdout.strip() else None


def play_discovered(lab: ChatLab, agent: dict, tmp_path: Path, write_bench) -> tuple[list[str], object]:
    """The tiny benchmark through the discovered profile: what the agent received, and the run's state."""
    sent_before = len(lab.received)
    outcome, state = play(tmp_path, browser=NO_TRACE, benchmark=write_bench(TINY), agent=agent)
    assert outcome.status == "finished", outcome.error
    return lab.received[sent_before:], state


@pytest.mark.parametrize("page", list(PAGES))
def test_a_discovered_profile_plays_a_benchmark_with_nothing_typed_twice(page, tmp_path, write_bench):
    v = PAGES[page]
    with ChatLab(LabScenario(variant=v, chunk_ms=5)) as lab:
        url = lab.url + "/"
        done, agent = discover(url, tmp_path)
        assert done.returncode == 0, done.stderr
        probes = list(lab.received)
        if page not in NOT_PLAYED:
            received, state = play_discovered(lab, agent, tmp_path, write_bench)
            assert len(received) == state.turn == state.sends.typed and len(set(received)) == len(received), received
            assert state.sends.resent == [] and len(state.sessions) == 2  # the new chat of the benchmark happened
    assert len(probes) == 2 and all(p.startswith("[mmb probe]") for p in probes)  # ONE to discover, one to verify
    assert agent["url"] == url and "discovery took" in done.stderr and "OK, verified by mmb probe" in done.stderr
    selectors = agent["selectors"]
    assert selectors["assistant_message"] != selectors["user_message"]
    assert not any(":nth" in s or "#" in s for s in selectors.values()), agent  # no positions, no generated ids
    if v.frame != "none":
        assert agent["frame"] in ("iframe", ".panel iframe", f".{v.names()['panel']} iframe"), agent
        assert "(cross-origin, HOLDS THE CHAT)" in done.stderr
    if v.launcher:
        assert selectors["launcher"].endswith(("bubble-button", v.names()["launcher"], '"Open chat"]')), agent
    if v.new_chat == "storage":
        assert agent["options"]["new_session"] == "storage"


def test_a_numbered_class_is_an_identity_only_when_the_page_has_it_with_another_number(harness):
    """`message-11`, `message-12` name two messages; `xnmpuk0`, alone on the page, is a generated name
    that may name a kind, and comes after the page's other names unless it is used more than once."""
    from drivers.discover_page import DISCOVER_JS

    html = ('<div class="log"><p class="msg-11 turn">Hi</p><p class="msg-12 turn">Hello</p></div>'
            '<button class="xnmpuk0">Go</button><button class="xq7 toolbarentry">Stop</button>'
            '<a class="xr4 toolbarentry">Help</a><span class="xr4">?</span>')

    async def selectors() -> dict[str, list[str]]:
        page = await harness.browser.new_page()
        try:
            await page.set_content(html)
            out = {}
            for css in ("p.msg-12", "button.xnmpuk0", "button.toolbarentry", "a.xr4"):
                ref = await page.evaluate(DISCOVER_JS, {"op": "ref", "arg": await page.query_selector(css)})
                out[css] = await page.evaluate(DISCOVER_JS, {"op": "selector", "arg": ref})
            return out
        finally:
            await page.close()

    found = harness.run(selectors())
    assert not any("msg-" in s for s in found["p.msg-12"]), found
    assert "button.xnmpuk0" in found["button.xnmpuk0"], found
    assert found["button.toolbarentry"][0] == "button.toolbarentry" and "button.xq7" in found["button.toolbarentry"], found
    assert found["a.xr4"][0] == "a.xr4", found  # used twice: a kind, as good as any other name


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
