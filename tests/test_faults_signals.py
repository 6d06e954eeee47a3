"""SIGTERM (docker stop, systemd, Kubernetes, CI time-outs) and SIGHUP (the terminal went away) stop
`mmb` as Ctrl-C does: the state says `interrupted`, the run's report entry is written, the exit code
is 128 + the signal, and nothing but the one notice is printed. Real signals to a real `mmb` process
(and, as a terminal or systemd sends them, to its whole process group with Chromium and Playwright's
driver in it); the rerun goes on from where the signal stopped it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from drivers.base import DriverError
from persona.state import RunStore
from tests.conftest import DEMO_ENGINE, REPO, tiny_run
from tests.support.run_process import DEMO_ENV, Results, finish, safe, start
from tests.support.tiny import TINY

NOTICE = "interrupted: the state is saved; run the same command again to continue"
NOISE = ("Traceback", "never retrieved", "Error", "WARNING")


def demo_config(tmp: Path) -> tuple[Path, Results]:
    config = tmp / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp / "results"), "runs": [tiny_run(bench_root=tmp)], **DEMO_ENGINE}))
    return config, Results(tmp / "results", tmp / "results" / "demo")


def wait_for_turn(proc: subprocess.Popen, results: Results, turn: int) -> None:
    state = results.run / "state.json"
    while safe(lambda: json.loads(state.read_text())["turn"]) < turn:
        assert proc.poll() is None, f"mmb ended before turn {turn}: {proc.stderr.read() if proc.stderr else ''}"
        time.sleep(0.02)


def stop(proc: subprocess.Popen, sig: int, group: bool) -> tuple[int, str, float]:
    """Send `sig` (to the process, or to its whole group as a terminal or systemd does): exit code,
    stderr and the seconds mmb took to end."""
    sent = time.monotonic()
    (os.killpg if group else os.kill)(proc.pid, sig)
    code, err = finish(proc)
    return code, err, time.monotonic() - sent


def assert_interrupted(results: Results) -> None:
    state = results.state()
    assert state["status"] == "interrupted" and state["ends"] == state["reported_ends"] == 1
    entries = [line for line in (results.folder / "report.md").read_text().splitlines() if line.startswith("## ")]
    assert len(entries) == 1 and "— demo:" in entries[0]


@pytest.mark.usefixtures("chromium")
def test_sigterm_stops_a_run_as_ctrl_c_does_and_the_rerun_goes_on(tiny_reference, tmp_path):
    config, results = demo_config(tmp_path)
    proc = start(config, {})
    wait_for_turn(proc, results, 2)
    code, err, seconds = stop(proc, signal.SIGTERM, group=False)
    assert code == 143, err
    assert err.splitlines() == [NOTICE], err
    assert_interrupted(results)
    print(f"SIGTERM to exit: {seconds:.2f} s")

    rerun = subprocess.Popen([sys.executable, "-m", "persona", "run", "-c", str(config)], cwd=REPO, env=os.environ,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    code, err = finish(rerun)  # the agent streaming at its own speed now: no signal to land mid-reply
    assert code == 0, err
    assert results.state()["status"] == "finished"
    # Nothing was lost or sent twice: the agent took in exactly what an uninterrupted run sends.
    assert results.agent_received() == tiny_reference.agent_received()


def ignoring_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a script's `mmb run &` starts it (no job control)


def hearing_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal's job, even if this suite runs in the background


@pytest.mark.usefixtures("chromium")
@pytest.mark.parametrize("sig, group, code, ctrl_c_ignored", [
    (signal.SIGHUP, False, 129, False), (signal.SIGINT, True, 130, False), (signal.SIGTERM, True, 143, False),
    (signal.SIGTERM, False, 143, True)],
    ids=["SIGHUP", "ctrl-c-to-the-group", "SIGTERM-to-the-group", "SIGTERM-with-ctrl-c-ignored"])
def test_each_stop_signal_ends_the_run_quietly(tmp_path, sig, group, code, ctrl_c_ignored):
    """To the whole group, Playwright's driver and Chromium get the signal too: the run still ends as
    interrupted, and the driver's closed connection is no reason for a line of noise. Started with
    Ctrl-C ignored (a background job of a script), SIGTERM still stops it cleanly."""
    config, results = demo_config(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "persona", "run", "-c", str(config)], cwd=REPO,
                            env={**os.environ, **DEMO_ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=ignoring_ctrl_c if ctrl_c_ignored else hearing_ctrl_c)
    wait_for_turn(proc, results, 2)
    got, err, _ = stop(proc, sig, group)
    assert got == code, err
    assert err.splitlines() == [NOTICE], err
    assert not any(word in err for word in NOISE), err
    assert_interrupted(results)


def test_sigterm_stops_a_dry_run(tmp_path):
    """A dry run plays in process (no browser, no network): it still hears the signal at once."""
    proc = subprocess.Popen([sys.executable, "-m", "persona", "run", "--dry", "-b", str(REPO / "benchmarks" / "marathon-en")],
                            cwd=tmp_path, env={**os.environ, **DEMO_ENV}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    state = tmp_path / "results" / "dry-marathon-en" / "state.json"
    while safe(lambda: json.loads(state.read_text())["steps"]) < 1:  # saved once a second: playing by now
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.02)
    code, err, _ = stop(proc, signal.SIGTERM, group=False)
    assert code == 143, err
    assert err.splitlines() == ["interrupted: a dry run starts over the next time"], err
    assert json.loads(state.read_text())["status"] == "interrupted"


@pytest.mark.parametrize("cut", [DriverError("the chat went away"), asyncio.CancelledError()],
                         ids=["an error", "a signal (the task cancelled)"])
def test_a_step_cut_short_is_redone_by_the_rerun_never_half_recorded(write_bench, tmp_path, monkeypatch, cut):
    """The persona's message is in its history, its facts about to be marked told, when the run ends before
    the message is journaled: the end is recorded on the state as last saved, so the rerun sends the
    message and nothing counts as told that the agent did not receive (before, the rerun marked the facts
    told and went on without ever sending them)."""
    from drivers.base import ChatBefore
    from persona.engine.oracle import OracleDriver
    from tests.support.play import play

    calls = {"n": 0}

    async def chat_before(self) -> ChatBefore | None:
        calls["n"] += 1
        if calls["n"] == 2:  # the second message: the first one is told, its reply recorded
            raise cut
        return None

    monkeypatch.setattr(OracleDriver, "chat_before", chat_before)
    bench = write_bench(TINY)
    if isinstance(cut, asyncio.CancelledError):
        with pytest.raises(asyncio.CancelledError):
            play(tmp_path, benchmark=bench)
        state = RunStore(tmp_path / "results" / "r").load()
    else:
        _, state = play(tmp_path, benchmark=bench)
    assert state is not None and state.status in ("failed", "interrupted") and state.turn == 1
    assert state.pending is None and state.messages[-1].role != "assistant", "the half step is not recorded"

    outcome, state = play(tmp_path, benchmark=bench)
    assert outcome.status == "finished", outcome.error
    sent = " ".join(e.sent for e in RunStore(tmp_path / "results" / "r").transcript())
    told = [f.text for ff in state.facts.values() for f in ff.all_facts() if f.told_turn is not None and f.history
            and f.history[0].kind == "told"]
    assert told and all(text in sent for text in told), (told, sent)


def test_what_a_stop_leaves_in_asyncio_is_a_debug_line(capsys):
    """asyncio's own lines about a stop's leftovers (a JS block's process reaped as its start was cancelled,
    a Playwright call whose driver went with the Ctrl-C) are debug lines: shown with -v, not after the
    run's one clear end; any other asyncio warning stays one."""
    import logging

    from persona.cli.common import console_logging, stop_on_signals

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        console_logging(False)
        stop_on_signals()
        stop_on_signals()  # as when commands run in one process: still one filter
        log = logging.getLogger("asyncio")
        assert sum(type(f).__name__ == "_DriverGone" for f in log.filters) == 1
        log.warning("Unknown child process pid %d, will report returncode 255", 4242)
        try:
            raise Exception("Connection closed while reading from the driver")
        except Exception:
            log.error("Future exception was never retrieved", exc_info=True)
        log.warning("Executing <Task> took 0.5 seconds")
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    err = capsys.readouterr().err
    assert "Unknown child process" not in err and "never retrieved" not in err, err
    assert "took 0.5 seconds" in err
