"""What the report says was typed is what the agent received, once: whole runs against the chat lab,
whose server logs every message it gets, on each failure path (no reply, an error bubble, a slow
reply, a reload mid-reply, kill -9 while typing or after sending), the report's counts compared with
that log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from drivers.base import ReplyTimeout
from persona.crashpoints import ENV as CRASH_ENV
from persona.state import RunState, RunStore
from tests.conftest import NO_TRACE, REPO
from tests.support.chat_lab import ChatLab, LabScenario
from tests.support.play import play
from tests.test_debugging import LAB_SELECTORS, TINY

pytestmark = pytest.mark.usefixtures("chromium")

# Three persona messages: two facts, one question after a new chat (the New chat button: no command typed).
BENCH = {**TINY, "family.md": "# Family\n\n## 1. People\n1.1 My wife is Ana\n1.2 My son is Leo\n"}
MESSAGES = 3
QUICK = {"browser": NO_TRACE}
SELECTORS = {**LAB_SELECTORS, "error": "#log .bubble.error"}


def agent(lab: ChatLab, first_bubble_s: float = 2, timeout_s: float = 20, **recovery: object) -> dict:
    return {"driver": "generic", "url": lab.url + "/", "selectors": SELECTORS,
            "options": {"completion": {"first_bubble_timeout_s": first_bubble_s, "timeout_s": timeout_s}},
            "recovery": {"backoff_s": 0.1, "max_backoff_s": 0.5, **recovery}}


def report_line(tmp_path: Path) -> str:
    text = (tmp_path / "results" / "report.md").read_text()
    return [line for line in text.splitlines() if line.startswith("- **Typed into the chat:**")][-1]


def accounted(state: RunState, lab: ChatLab) -> None:
    """The state's counts are the lab's log: every message it got was typed, none more."""
    assert state.sends.delivered == len(lab.received), (state.sends, lab.received)


def test_an_uneventful_run_types_each_message_once(write_bench, tmp_path):
    with ChatLab(LabScenario(done="attr")) as lab:
        outcome, state = play(tmp_path, **QUICK, benchmark=write_bench(BENCH), agent=agent(lab))
        received = list(lab.received)
    assert outcome.status == "finished", outcome.error
    assert len(received) == MESSAGES == state.turn and len(set(received)) == MESSAGES
    assert state.sends.typed == MESSAGES and state.sends.resent == [] and state.sends.commands == 0
    assert report_line(tmp_path) == f"- **Typed into the chat:** {MESSAGES} persona message(s) typed; {MESSAGES} answered"


def test_no_reply_stops_naming_the_selector_with_a_screenshot_and_the_dom(write_bench, tmp_path):
    with ChatLab(LabScenario(at_message={2: "no-reply"})) as lab:
        outcome, state = play(tmp_path, **QUICK, benchmark=write_bench(BENCH),
                              agent=agent(lab, first_bubble_s=1.5, timeout_s=3))
        accounted(state, lab)
        assert len(lab.received) == 2 and len(set(lab.received)) == 2  # the silent one was not typed again
    assert outcome.status == "failed" and state.pending is not None and state.pending.status == "sent"
    error = state.error or ""
    assert error.startswith("no complete reply (turn 2): "), error
    assert "nothing matched assistant_message '#log .bubble.bot' after our message" in error
    assert "The chat shows the message, so it is not typed again" in error
    folder = tmp_path / "results" / "r"
    shots, doms = sorted(folder.glob("failure-*.png")), sorted(folder.glob("failure-*.dom.txt"))
    assert shots and doms and str(shots[-1]) in error and str(doms[-1]) in error
    assert state.pending.text in doms[-1].read_text()
    assert report_line(tmp_path) == "- **Typed into the chat:** 2 persona message(s) typed; 1 answered, turn 2 awaiting its reply"


@pytest.mark.slow  # it waits a slow reply out, 10 s: the slow set
def test_a_slow_reply_with_no_reply_wait_is_waited_for_not_typed_again(write_bench, tmp_path):
    """The 2nd reply comes after 3 s, with no busy marker: past first_bubble_timeout_s, 'wait' reopens
    the chat and waits again until it shows the reply."""
    with ChatLab(LabScenario(busy="none", done="attr", at_message={2: "late"})) as lab:
        outcome, state = play(tmp_path, **QUICK, benchmark=write_bench(BENCH),
                              agent=agent(lab, first_bubble_s=1, no_reply="wait", no_reply_wait_s=30))
        accounted(state, lab)
    assert outcome.status == "finished", outcome.error
    assert state.sends.typed == MESSAGES and state.sends.resent == []
    assert any("no reply yet, waiting on" in line for line in state.log), state.log


def test_a_slow_reply_with_no_reply_stop_stops_the_run_resumable(write_bench, tmp_path):
    with ChatLab(LabScenario(busy="none", done="attr", at_message={2: "late"}, late_ms=6000)) as lab:
        outcome, state = play(tmp_path, **QUICK, benchmark=write_bench(BENCH), agent=agent(lab, first_bubble_s=1))
        accounted(state, lab)
        assert len(lab.received) == 2
    assert outcome.status == "failed" and "it is not typed again" in (state.error or "")
    assert state.pending is not None and state.pending.typed == 1


def test_an_error_bubble_is_typed_again_and_counted(write_bench, tmp_path):
    with ChatLab(LabScenario(at_message={2: "error"}, done="attr")) as lab:
        outcome, state = play(tmp_path, **QUICK, benchmark=write_bench(BENCH), agent=agent(lab))
        accounted(state, lab)
        assert lab.received[1] == lab.received[2]  # the lab kept the failed one: it got it twice
    assert outcome.status == "finished", outcome.error
    assert state.sends.typed == MESSAGES + 1 and len(state.sends.resent) == 1
    assert state.sends.resent[0].startswith("turn 2: the chat showed an error for it")
    line = report_line(tmp_path)
    assert line.startswith(f"- **Typed into the chat:** {MESSAGES + 1} persona message(s) typed; {MESSAGES} answered; "
                           "typed again 1 time(s): ` turn 2: the chat showed an error for it"), line
    transcript = [json.loads(x) for x in (tmp_path / "results" / "r" / "transcript.jsonl").read_text().splitlines()]
    assert [t["typed"] for t in transcript] == [1, 2, 1]


def test_a_page_that_clears_the_first_typing_gets_it_typed_again_in_the_same_page(write_bench, tmp_path):
    """An app still starting up clears what was typed and keeps its send button disabled (Chainlit did
    so in CI, again after every reload): send was never pressed, so the message is typed again in the
    same page, counted once, and the report's run log says what happened."""
    with ChatLab(LabScenario(wipe_first_typing=True, done="attr")) as lab:
        outcome, state = play(tmp_path, **QUICK, benchmark=write_bench(BENCH), agent=agent(lab))
        accounted(state, lab)
        assert len(lab.received) == MESSAGES == len(set(lab.received))
    assert outcome.status == "finished", outcome.error
    assert state.sends.typed == MESSAGES and state.sends.resent == [] and state.sends.not_taken == 0
    cleared = [line for line in state.log if "sending failed (attempt 1, for up to 10 min): the page cleared the input" in line]
    assert len(cleared) == 2, state.log  # the first page, and the new chat's
    report = (tmp_path / "results" / "report.md").read_text()
    assert "- **Run log:** " in report and "the page cleared the input before" in report


def test_a_page_that_reloads_mid_reply_gets_each_message_once(write_bench, tmp_path):
    """The page reloads itself while the reply streams: the watch goes on in the new page."""
    with ChatLab(LabScenario(reload_mid_reply_ms=50, chunk_ms=40, done="attr")) as lab:
        outcome, state = play(tmp_path, **QUICK, benchmark=write_bench(BENCH), agent=agent(lab))
        accounted(state, lab)
    assert outcome.status == "finished", outcome.error
    assert state.sends.typed == MESSAGES


@pytest.mark.parametrize("point, status", [("send.typing#2", "typing"), ("send.sent#2", "sent")])
def test_kill_9_while_typing_or_after_sending_then_resume(write_bench, tmp_path, point, status):
    """SIGKILL of mmb and its Chromium with the 2nd message typed into the box but not sent, or sent and
    shown: the rerun types it (once) or takes its reply, and the counts still match the lab's log."""
    bench = write_bench(BENCH)
    config = tmp_path / "config.jsonc"
    with ChatLab(LabScenario(done="attr", chunk_ms=30)) as lab:
        config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), **QUICK,
                                      "runs": [{"id": "r", "benchmark": str(bench), "agent": agent(lab)}]}))
        killed = _mmb_run(config, {CRASH_ENV: point})
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        state = RunStore(tmp_path / "results" / "r").load()
        assert state is not None and state.pending is not None and state.pending.status == status
        assert len(lab.received) == (1 if status == "typing" else 2)
        done = _mmb_run(config, {})
        assert done.returncode == 0, done.stderr[-2000:]
        state = RunStore(tmp_path / "results" / "r").load()
        assert state is not None and state.status == "finished"
        accounted(state, lab)
        assert len(lab.received) == MESSAGES and len(set(lab.received)) == MESSAGES
    assert state.sends.typed == MESSAGES


def _mmb_run(config: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "persona", "run", "-c", str(config)], cwd=REPO, capture_output=True,
                          text=True, timeout=240, env={**os.environ, **env}, start_new_session=True)


def test_the_saved_dom_masks_the_runs_secrets(harness, tmp_path):
    """The failure files are outputs too: the chat's DOM is saved with every secret the driver knows masked."""
    async def go(lab: ChatLab):
        driver = await harness.driver(lab.profile(completion={"first_bubble_timeout_s": 1}), tmp_path,
                                      secrets=("tok-s3cret-42",))
        try:
            await driver.send("hello?")
        finally:
            await driver.close()

    with ChatLab(LabScenario(never_reply=True, busy="none", welcome="Your key is tok-s3cret-42.")) as lab:
        with pytest.raises(ReplyTimeout) as caught:
            harness.run(go(lab))
    dom = caught.value.dom.read_text()
    assert "Your key is ***." in dom and "tok-s3cret-42" not in dom
