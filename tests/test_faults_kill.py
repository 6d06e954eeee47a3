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
import time
from pathlib import Path

import pytest

from persona.crashpoints import ENV as CRASH_ENV
from persona.crashpoints import LOG_ENV as CRASH_LOG_ENV
from persona.crashpoints import POINTS
from tests.conftest import DEMO_ENGINE, demo_run
from tests.support.run_process import Results, evaluation_key, finish, safe, start

pytestmark = pytest.mark.usefixtures("chromium")

SEED = 20261202


def write_config(tmp: Path) -> tuple[Path, Results]:
    config = tmp / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp / "results"), "runs": [demo_run()], **DEMO_ENGINE}))
    return config, Results(tmp / "results", tmp / "results" / "demo")


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
    # The named points first, while the run is far from its end: the N-th time a point is reached must
    # come before the run finishes (how far each kill lets it go differs with the machine's load).
    rng.shuffle(named)
    rest = watched + randomly
    rng.shuffle(rest)
    return named + rest


TOO_LATE = "too late"


class SavedState:
    """state.json as the running mmb last saved it, parsed again only when the file changed: the
    watch polls every 10 ms, and parsing it each time took CPU from the run it watches. Saves are
    atomic renames, so a read never sees half a file."""

    def __init__(self, path: Path):
        self.path, self.mtime, self.state = path, None, {}
        self.now()
        self.first_mtime = self.mtime  # None while the run has saved nothing

    def now(self) -> dict:
        mtime = safe(lambda: self.path.stat().st_mtime_ns)
        if mtime != self.mtime and mtime != -1:
            try:
                self.state, self.mtime = json.loads(self.path.read_text()), mtime
            except (FileNotFoundError, json.JSONDecodeError):
                pass  # read again at the next poll
        return self.state


def kill_when(proc: subprocess.Popen, results: Results, kill: Kill) -> str | None:
    """Watch for the moment `kill` names and kill the process group then; None if mmb ended first,
    TOO_LATE (and no kill) if the state shows the run finished before that moment came."""
    saved = SavedState(results.run / "state.json")
    turn0 = saved.now().get("turn", 0)
    started_at: float | None = None
    while proc.poll() is None:
        state = saved.now()
        if state.get("finished"):
            return TOO_LATE  # a kill now would land in the teardown of a run already done
        if kill[0] == "turn":
            hit = state.get("turn", -1) >= turn0 + kill[1]
        elif kill[0] == "mid-reply":
            received = safe(lambda: len(results.agent_received()))
            hit = received > safe(lambda: len(results.transcript())) >= 0 and received > 0
        else:
            if started_at is None and saved.mtime != saved.first_mtime:
                started_at = time.monotonic()
            hit = started_at is not None and time.monotonic() - started_at >= kill[1]
        if hit:
            os.killpg(proc.pid, signal.SIGKILL)
            return "+".join(map(str, kill))
        time.sleep(0.01)
    return None


@pytest.mark.slow  # about a minute; the default set's kills are test_end_to_end's and test_send_accounting's
@pytest.mark.timeout(1800)  # about 27 restarts of mmb and Chromium: 3 min on a quiet 2-core machine
def test_twenty_odd_kills_lose_nothing_and_send_nothing_twice(demo_reference, tmp_path):
    config, results = write_config(tmp_path)
    crash_log = tmp_path / "crashes.log"
    kills: list[str] = []
    progress: list[tuple[str, int, int]] = []  # (kill, turn, phase) after each, for a failure message
    session_killed = finished_untouched = False
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
        finished_first = external == TOO_LATE or (kill[0] == "point" and not fired and results.state()["finished"])
        if finished_first:
            # A moment late in the run (a watched one, or the N-th time a point is reached) may never
            # come before its end; the run then finishes untouched, and must finish well.
            assert code == 0, f"the run finished, then failed: {err[-1500:]}"
            finished_untouched = True
            break
        assert code == -signal.SIGKILL, f"the run ended on its own before kill {kill} (exit {code}): {err[-1500:]}"
        kills.append(external or fired[0])
        if "session.opened" in fired and kill[0] == "point" and kill[1] != "session.opened":
            plan.insert(0, kill)  # the new chat's point came first; this one is still to be hit
        progress.append((kills[-1], results.state()["turn"], results.state()["phase"]))
        session_killed = session_killed or "session.opened" in fired
        assert not results.state()["finished"]
        assert results.state()["status"] == "running", "a kill -9 leaves no time to record anything else"

    if not finished_untouched:
        code, err = finish(start(config, {}))
        assert code == 0, err

    assert len(kills) >= (len(POINTS) + 2 if finished_untouched else 20), kills
    assert set(POINTS) <= set(kills), f"every crash point was hit: missing {set(POINTS) - set(kills)}; {progress}"
    state, ref = results.state(), demo_reference.state()
    assert state["status"] == "finished"
    assert [evaluation_key(e) for e in state["evaluations"]] == [evaluation_key(e) for e in ref["evaluations"]]
    # No message reached the agent twice, none was lost: it took in exactly what an uninterrupted run sends.
    assert results.agent_received() == demo_reference.agent_received()
    transcript = results.transcript()
    assert [t["turn"] for t in transcript] == list(range(1, state["turn"] + 1))
    assert [(t["sent"], t["reply"]) for t in transcript] == [(t["sent"], t["reply"]) for t in demo_reference.transcript()]
    assert [s["reason"] for s in state["sessions"]] == ["start", "newSession"]
    assert state["facts"] == ref["facts"]
    assert not list(results.run.glob(".*.tmp")), "temp files of interrupted saves are cleared"
