"""kill -9, over and over, across a whole run in real Chromium: at every named crash point (mid-save,
right after a message left, while the agent streams its reply, between a transcript line and the
state that counts it...), when the state or the agent's own memory shows a given moment, and at
random moments from a fixed seed. Every restart resumes; the agent (DemoMind keeps its own memory)
gets each message exactly once; the evaluations equal those of a run never interrupted."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from demo_agent.faults import ENV as DEMO_FAULTS_ENV
from persona.crashpoints import ENV as CRASH_ENV
from persona.crashpoints import LOG_ENV as CRASH_LOG_ENV
from persona.crashpoints import POINTS
from tests.conftest import NO_TRACE, REPO, demo_run

pytestmark = pytest.mark.usefixtures("chromium")

SEED = 20261202
ENGINE = {"compaction": {"max_tokens": 4000, "trim_to_tokens": 1500, "encoding": "cl100k_base"}, "browser": NO_TRACE}
# Slow streaming (about 0.3 s a reply) so that kills land while the agent is still writing.
DEMO_ENV = {DEMO_FAULTS_ENV: json.dumps({"token_delay_s": 0.025})}
PROCESS_TIMEOUT_S = 300


@dataclass
class Results:
    folder: Path  # results/
    run: Path  # results/demo/

    def state(self) -> dict:
        return json.loads((self.run / "state.json").read_text())

    def agent_received(self) -> list[str]:
        """The user messages DemoMind took in, in order, from its own memory file."""
        memory = json.loads((self.run / "agent-data" / "memory.json").read_text())
        messages = [m for c in memory["conversations"].values() for m in c["messages"] if m["role"] == "user"]
        return [m["text"] for m in sorted(messages, key=lambda m: m["seq"])]

    def transcript(self) -> list[dict]:
        path = self.run / "transcript.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def write_config(tmp: Path) -> tuple[Path, Results]:
    config = tmp / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp / "results"), "runs": [demo_run()], **ENGINE}))
    return config, Results(tmp / "results", tmp / "results" / "demo")


def start(config: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "persona", "run", "-c", str(config)], cwd=REPO,
                            env={**os.environ, **DEMO_ENV, **env}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"mmb did not end within {PROCESS_TIMEOUT_S} s: {err[-2000:]}")
    return proc.returncode, err


def safe(read: Callable[[], int]) -> int:
    """A reading of a file another process is writing; -1 while it is missing or mid-write."""
    try:
        return read()
    except (FileNotFoundError, json.JSONDecodeError, KeyError, ValueError):
        return -1


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Results:
    config, results = write_config(tmp_path_factory.mktemp("reference"))
    code, err = finish(start(config, {}))
    assert code == 0, err
    assert results.state()["status"] == "finished"
    return results


# What kills each restart. ("point", NAME, N): the N-th time the process reaches crash point NAME.
# ("turn", N): once the state counts N more answered messages. ("mid-reply",): once the agent has
# taken a message whose reply the state has not recorded. ("random", SECONDS): that long after the
# process first wrote its state.
Kill = tuple


def schedule(rng: random.Random) -> list[Kill]:
    """Each named point once or twice, at a count that spreads the kills over the whole run, plus
    watched moments and random ones; shuffled with the fixed seed."""
    counts = {"save.written": (2, 8), "save.renamed": (2, 8), "model.answered": (2, 6), "tool.ran": (1, 4),
              "send.typing": (1, 3), "send.sent": (1, 3), "reply.received": (1, 3), "transcript.appended": (1, 3)}
    named: list[Kill] = [("point", name, rng.randint(*span)) for name, span in counts.items()]
    named += [("point", "save.written", 1), ("point", "send.sent", rng.randint(1, 3))]
    watched: list[Kill] = [("turn", 2), ("mid-reply",), ("turn", 1), ("mid-reply",), ("mid-reply",)]
    randomly: list[Kill] = [("random", round(rng.uniform(0.1, 3.0), 2)) for _ in range(6)]
    kills = named + watched + randomly
    rng.shuffle(kills)
    return kills


def kill_when(proc: subprocess.Popen, results: Results, kill: Kill) -> str | None:
    """Watch for the moment `kill` names and kill the process group then; None if mmb ended first."""
    turn0 = safe(lambda: results.state()["turn"])
    mtime0 = safe(lambda: int((results.run / "state.json").stat().st_mtime_ns))
    started_at: float | None = None
    while proc.poll() is None:
        if kill[0] == "turn":
            hit = safe(lambda: results.state()["turn"]) >= max(turn0, 0) + kill[1]
        elif kill[0] == "mid-reply":
            received = safe(lambda: len(results.agent_received()))
            hit = received > safe(lambda: len(results.transcript())) >= 0 and received > 0
        else:
            if started_at is None and safe(lambda: int((results.run / "state.json").stat().st_mtime_ns)) != mtime0:
                started_at = time.monotonic()
            hit = started_at is not None and time.monotonic() - started_at >= kill[1]
        if hit:
            os.killpg(proc.pid, signal.SIGKILL)
            return "+".join(map(str, kill))
        time.sleep(0.01)
    return None


@pytest.mark.timeout(1800)  # about 27 restarts of mmb and Chromium: 3 min on a quiet 2-core machine
def test_twenty_odd_kills_lose_nothing_and_send_nothing_twice(reference, tmp_path):
    config, results = write_config(tmp_path)
    crash_log = tmp_path / "crashes.log"
    kills: list[str] = []
    progress: list[tuple[str, int, int]] = []  # (kill, turn, phase) after each, for a failure message
    session_killed = False
    rng = random.Random(SEED)
    plan = schedule(rng)
    exam = [("mid-reply",), ("point", "send.sent", 2), ("random", round(rng.uniform(0.5, 3.0), 2)), ("turn", 2)]
    while plan:
        kill = plan.pop(0)
        if not plan and not session_killed and len(kills) < 40:
            plan.append(("turn", 2))  # on to the new chat: its crash point has to fire once
        elif not plan and exam:
            plan, exam = exam, []  # and a few kills among the checks after it
        # The new-chat point is armed until it has fired once: a kill right after "New chat" was clicked.
        armed = [f"{kill[1]}#{kill[2]}"] if kill[0] == "point" else []
        armed += [] if session_killed else ["session.opened#1"]
        before = crash_log.read_text().splitlines() if crash_log.exists() else []
        proc = start(config, {CRASH_ENV: ",".join(armed), CRASH_LOG_ENV: str(crash_log)})
        external = None if kill[0] == "point" else kill_when(proc, results, kill)
        code, err = finish(proc)
        fired = (crash_log.read_text().splitlines() if crash_log.exists() else [])[len(before):]
        assert code == -signal.SIGKILL, f"the run ended on its own before kill {kill} (exit {code}): {err[-1500:]}"
        kills.append(external or fired[0])
        if "session.opened" in fired and kill[0] == "point" and kill[1] != "session.opened":
            plan.insert(0, kill)  # the new chat's point came first; this one is still to be hit
        progress.append((kills[-1], results.state()["turn"], results.state()["phase"]))
        session_killed = session_killed or "session.opened" in fired
        assert not results.state()["finished"]
        assert results.state()["status"] == "running", "a kill -9 leaves no time to record anything else"

    code, err = finish(start(config, {}))
    assert code == 0, err

    assert len(kills) >= 20, kills
    assert set(POINTS) <= set(kills), f"every crash point was hit: missing {set(POINTS) - set(kills)}; {progress}"
    state, ref = results.state(), reference.state()
    assert state["status"] == "finished"
    assert [_evaluation(e) for e in state["evaluations"]] == [_evaluation(e) for e in ref["evaluations"]]
    # No message reached the agent twice, none was lost: it took in exactly what an uninterrupted run sends.
    assert results.agent_received() == reference.agent_received()
    transcript = results.transcript()
    assert [t["turn"] for t in transcript] == list(range(1, state["turn"] + 1))
    assert [(t["sent"], t["reply"]) for t in transcript] == [(t["sent"], t["reply"]) for t in reference.transcript()]
    assert [s["reason"] for s in state["sessions"]] == ["start", "newSession"]
    assert state["facts"] == ref["facts"]
    assert not list(results.run.glob(".*.tmp")), "temp files of interrupted saves are cleared"


def _evaluation(e: dict) -> tuple:
    return e["check_id"], e["score"], e["second_attempt"], e["answer"], e["phase"], e["turn"], e["session"]


def test_a_whole_run_rides_out_a_sick_chat_or_stops_resumable(reference, tmp_path):
    """Through the CLI: a chat failing four times in a row stops the run with a clear error; the rerun
    resumes the pending message, recovers from an error bubble, a rate limit and dropped streams,
    notes each in the state's log, and ends like the reference, the agent taking every message once."""
    # the hang shows a busy marker, so the whole-reply limit (timeout_s) is the one that ends it
    run = demo_run(options={"completion": {"first_bubble_timeout_s": 4, "timeout_s": 4}},
                   recovery={"backoff_s": 0.2, "max_backoff_s": 2})
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), "runs": [run], **ENGINE}))
    results = Results(tmp_path / "results", tmp_path / "results" / "demo")
    sick = {"token_delay_s": 0.025, "error_next": 2, "hang_next": 1, "rate_limit_next": 1, "rate_limit_retry_s": 0.5}
    code, err = finish(start(config, {DEMO_FAULTS_ENV: json.dumps(sick)}))
    state = results.state()
    assert code == 1 and state["status"] == "failed" and state["pending"] is not None
    assert "gave up after 4 attempt(s) to send a message and get its reply" in state["error"]
    assert "run the same command again" in state["error"] and results.agent_received() == []

    better = {"token_delay_s": 0.025, "error_next": 1, "rate_limit_next": 1, "rate_limit_retry_s": 0.5, "drop_next": 2}
    code, err = finish(start(config, {DEMO_FAULTS_ENV: json.dumps(better)}))
    assert code == 0, err
    state = results.state()
    assert [_evaluation(e) for e in state["evaluations"]] == [_evaluation(e) for e in reference.state()["evaluations"]]
    assert results.agent_received() == reference.agent_received()
    notes = "\n".join(state["log"])
    for sign in ("Error: HTTP 500", "rate limited", "no complete reply", "connection closed", "in the chat after all"):
        assert sign in notes, notes


def test_a_phase_block_failing_at_run_time_stops_with_its_line_and_resumes_after_the_fix(reference, tmp_path):
    """`await bench.newSession()` can only fail against the real chat (here: no such New-chat button):
    the run stops at the block's file:line, resumable; with the config fixed it ends like the reference."""
    config = tmp_path / "config.jsonc"
    results = Results(tmp_path / "results", tmp_path / "results" / "demo")

    def write(run: dict) -> None:
        config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), "runs": [run], **ENGINE}))

    write(demo_run(selectors={"new_chat": "button#no-such-button"}, recovery={"attempts": 1}))
    code, err = finish(start(config, {}))
    state = results.state()
    assert code == 1 and state["status"] == "failed", err
    assert state["error"].startswith("chapter2.md:7: JS block of phase 'The next morning' failed: ") \
        or "/chapter2.md:7: JS block of phase 'The next morning' failed: " in state["error"], state["error"]
    assert "button#no-such-button" in state["error"] and state["phase"] == 2
    graded = [_evaluation(e) for e in state["evaluations"]]

    write(demo_run())
    code, err = finish(start(config, {}))
    assert code == 0, err
    state = results.state()
    assert [_evaluation(e) for e in state["evaluations"]] == [_evaluation(e) for e in reference.state()["evaluations"]]
    assert [_evaluation(e) for e in state["evaluations"]][: len(graded)] == graded
    assert results.agent_received() == reference.agent_received()
