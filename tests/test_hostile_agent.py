"""An agent whose replies carry what breaks naive JSON and terminals: a lone UTF-16 surrogate (half an
emoji), NUL, ESC. Through the real CLI in real Chromium against DemoMind: the run goes on, the state
and every report hold the text repaired (U+FFFD) and say how many characters were replaced, and a
kill -9 between "delivered" and "recorded" never gets a message typed twice."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from demo_agent.faults import ENV as DEMO_FAULTS_ENV
from drivers.base import Reply, storable
from persona.crashpoints import ENV as CRASH_ENV
from tests.test_faults_kill import Results, finish, start
from tests.test_faults_secrets import TINY

pytestmark = pytest.mark.usefixtures("chromium")

BAD = " \ud83d, \x00 and \x1b[2J"  # 3 characters that cannot be stored or shown as they are


@pytest.fixture
def tiny_run(write_bench, write_config, tmp_path) -> tuple[Path, Results]:
    config = write_config([{"id": "t", "benchmark": str(write_bench(TINY)), "agent": {"driver": "demo"}}])
    return config, Results(tmp_path / "results", tmp_path / "results" / "t")


def test_scraped_text_is_made_storable_and_counted():
    assert storable("ok 😀") == ("ok 😀", 0)
    assert storable("half \ud83d emoji, NUL \x00, ESC \x1b[31m, C1 \x9b") == ("half \ufffd emoji, NUL \ufffd, ESC \ufffd[31m, C1 \ufffd", 4)
    assert storable("\ud83d\ude00 joined, tab\tnewline\n") == ("😀 joined, tab\tnewline\n", 0)
    reply = Reply(bubbles=["a\ud83d", "b\x00"], notices=["\x07 compacted"])
    assert reply.bubbles == ["a\ufffd", "b\ufffd"] and reply.notices == ["\ufffd compacted"] and reply.repaired == 3


def no_raw_bad_characters(results: Results) -> None:
    for path in results.folder.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".html"):
            text = path.read_text(encoding="utf-8")  # valid UTF-8: no surrogate got in
            assert "\x00" not in text and "\\u0000" not in text and "\x1b" not in text and "\\u001b" not in text, path


def sent_once_each(results: Results) -> None:
    """The agent took in exactly the messages the transcript says were sent, each once."""
    assert results.agent_received() == [t["sent"] for t in results.transcript()]


def test_replies_with_a_lone_surrogate_nul_and_esc_are_repaired_counted_and_shown(tiny_run):
    config, results = tiny_run
    code, err = finish(start(config, {DEMO_FAULTS_ENV: json.dumps({"inject_next": 2, "inject_text": BAD})}))
    assert code == 0, err[-3000:]
    state = results.state()
    assert state["status"] == "finished" and state["repaired_chars"] == 6
    replies = [r for t in results.transcript() for r in t["reply"]]
    assert sum(r.endswith(" \ufffd, \ufffd and \ufffd[2J") for r in replies) == 2
    no_raw_bad_characters(results)
    sent_once_each(results)
    report = (results.folder / "report.md").read_text()
    assert "- **Agent text repaired:** 6 character(s) of its replies replaced by U+FFFD" in report
    assert "6 character(s) of its replies replaced by U+FFFD" in (results.run / "report.html").read_text()


def test_a_kill_between_delivered_and_recorded_never_sends_twice(tiny_run):
    config, results = tiny_run
    faults = {DEMO_FAULTS_ENV: json.dumps({"inject_next": 3, "inject_text": BAD})}
    code, err = finish(start(config, {**faults, CRASH_ENV: "reply.received#2"}))
    assert code == -signal.SIGKILL, err[-3000:]
    assert results.state()["pending"]["status"] == "sent" and len(results.agent_received()) == 2
    code, err = finish(start(config, faults))
    assert code == 0, err[-3000:]
    assert results.state()["status"] == "finished"
    no_raw_bad_characters(results)
    sent_once_each(results)


def test_a_page_echoing_the_token_of_its_url_gets_its_placeholder_into_the_reply(harness, tmp_path, monkeypatch):
    from drivers.generic import PlaywrightDriver
    from tests.support.chat_lab import ChatLab

    token = "urltok-5e2d8c1a9f"
    monkeypatch.setenv("MMB_T_ECHO", token)

    async def go(lab: ChatLab) -> list[str]:
        driver = PlaywrightDriver(lab.profile(), await harness.browser.new_context(),
                                  base_url=lab.url + "/?k=${MMB_T_ECHO}", artifacts=tmp_path)
        try:
            await driver.open(None)
            return (await driver.send("what is my token?")).bubbles
        finally:
            await driver.close()

    with ChatLab(responder=lambda text, history: [f"your token is {token}, I keep it safe"]) as lab:
        assert harness.run(go(lab)) == ["your token is ${MMB_T_ECHO}, I keep it safe"]


def test_a_reply_that_cannot_be_recorded_leaves_the_message_pending_and_no_turn_counted(tmp_path):
    """Were anything to fail while recording (a full disk), the state a rerun resumes from must not
    count a turn the transcript lacks: the rerun takes the reply from the chat and counts it once."""
    from persona.engine.channel import AgentChannel
    from persona.state import PendingSend, RunState, RunStore

    class FullDisk(RunStore):
        def append_exchange(self, state, exchange):
            raise OSError(28, "No space left on device")

    class Chat:
        session_url = "/c/1"

    state = RunState(run_id="r", benchmark="b", driver="demo", persona_model="scripted", turn=4,
                     pending=PendingSend(text="hi", turn=5, user_messages_before=4, status="sent"))
    channel = AgentChannel(Chat(), state, FullDisk(tmp_path), save=lambda: None)
    with pytest.raises(OSError):
        channel.record("hi", Reply(bubbles=["hello"]))
    assert state.turn == 4 and state.pending is not None and state.transcript_len == 0
