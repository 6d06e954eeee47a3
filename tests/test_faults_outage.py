"""The agent's server goes down mid-run and comes back (a restart, a deploy): the run waits, with a
line while it waits, and goes on when the agent is back, nothing lost or typed twice; an outage longer
than `agent.recovery.give_up_after_s` stops the run (resumable), saying how long it tried. DemoMind
runs in a process of its own, killed and started again on the same port with the same memory.

The default bound (10 minutes) rides out a 5-minute outage: that takes 5 minutes, so it is in the
slow set; the default suite shows the mechanism with a bound of seconds."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import DEMO_ENGINE, REPO, tiny_run
from tests.support.demo_process import DemoAgentProcess
from tests.support.run_process import PROCESS_TIMEOUT_S, Results, safe

pytestmark = pytest.mark.usefixtures("chromium")


def start_run(tmp_path: Path, agent: DemoAgentProcess, recovery: dict | None) -> tuple[subprocess.Popen, Results]:
    run = tiny_run(bench_root=tmp_path, url=agent.url, **({"recovery": recovery} if recovery is not None else {}))
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), "runs": [run], **DEMO_ENGINE}))
    proc = subprocess.Popen([sys.executable, "-m", "persona", "run", "-c", str(config)], cwd=REPO, env=os.environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    return proc, Results(tmp_path / "results", tmp_path / "results" / "demo")


def until_turn(proc: subprocess.Popen, results: Results, turn: int) -> None:
    while safe(lambda: json.loads((results.run / "state.json").read_text())["turn"]) < turn:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)


def outage(agent: DemoAgentProcess, seconds: float) -> None:
    """The agent's server down for `seconds` (the fault itself, not a wait for something), then back."""
    agent.stop(signal.SIGKILL)
    time.sleep(seconds)
    agent.start()


def ended(proc: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=PROCESS_TIMEOUT_S + 600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, out, err


@pytest.fixture
def agent(tmp_path: Path):
    server = DemoAgentProcess(tmp_path / "agent-data")
    server.start()
    yield server
    server.stop()


def test_an_agent_down_for_a_while_is_waited_for_and_the_run_goes_on(tiny_reference, agent, tmp_path):
    proc, results = start_run(tmp_path, agent, {"backoff_s": 0.5, "max_backoff_s": 2, "give_up_after_s": 60})
    until_turn(proc, results, 2)
    outage(agent, 5)
    code, out, err = ended(proc)
    assert code == 0, out + err
    log = results.state()["log"]
    assert any("failed (attempt 1, for up to 1 min)" in line for line in log), log
    assert any("the chat works again after" in line for line in log), log
    assert "Traceback" not in err, err
    assert agent.received() == tiny_reference.agent_received(), "nothing lost, nothing typed twice"


def test_an_outage_past_the_bound_stops_the_run_saying_how_long_it_tried(agent, tmp_path):
    proc, results = start_run(tmp_path, agent, {"backoff_s": 0.5, "max_backoff_s": 1, "give_up_after_s": 4})
    until_turn(proc, results, 2)
    agent.stop(signal.SIGKILL)
    code, out, err = ended(proc)
    assert code == 1, out + err
    state = results.state()
    assert state["status"] == "failed", state["error"]
    error = state["error"]
    tried = re.search(r"gave up after \d+ attempt\(s\) over (\d+) s to ", error)
    assert tried and int(tried[1]) >= 4, error
    assert "run the same command again to continue" in error


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_default_recovery_rides_out_a_five_minute_outage(tiny_reference, agent, tmp_path):
    proc, results = start_run(tmp_path, agent, None)
    until_turn(proc, results, 2)
    outage(agent, 5 * 60 + 10)
    code, out, err = ended(proc)
    assert code == 0, out + err
    assert "still waiting to try again" in err, "a heartbeat line while it waits"
    assert agent.received() == tiny_reference.agent_received()
