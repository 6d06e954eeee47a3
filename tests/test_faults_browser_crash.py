"""The browser dies under running runs (every Chromium process killed by pid, as the OOM killer or a
crash would): the browser is started again, each run reopens its chat in it and goes on, the journal
deciding what to type again as after a kill. One crash never fails the other parallel runs; each run
counts it in its log and report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import DEMO_ENGINE, REPO, tiny_run
from tests.support.procs import chromium_of
from tests.support.run_process import DEMO_ENV, PROCESS_TIMEOUT_S, Results, safe

pytestmark = pytest.mark.usefixtures("chromium")


def test_a_browser_killed_mid_run_is_started_again_and_every_run_goes_on(tiny_reference, tmp_path):
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), "parallel": 2,
                                  "runs": [tiny_run("a", tmp_path), tiny_run("b", tmp_path)], **DEMO_ENGINE}))
    runs = [Results(tmp_path / "results", tmp_path / "results" / r) for r in "ab"]
    proc = subprocess.Popen([sys.executable, "-m", "persona", "run", "-c", str(config)], cwd=REPO,
                            env={**os.environ, **DEMO_ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        # Both runs mid-play, the agent (slow streaming) likely writing a reply.
        while min(safe(lambda r=r: json.loads((r.run / "state.json").read_text())["turn"]) for r in runs) < 2:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        killed = chromium_of(proc.pid)
        assert killed, "a Chromium under mmb"
        for pid in killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # a renderer that went with the browser
        out, err = proc.communicate(timeout=PROCESS_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out + err
    assert "Traceback" not in err and "never retrieved" not in err, err
    assert err.count("browser: the browser died") == 1, "one crash, one new browser for both runs: " + err
    entries = (tmp_path / "results" / "report.md").read_text().split("\n## ")[1:]
    for run in runs:
        state = run.state()
        assert state["status"] == "finished" and state["browser_relaunches"] == 1, state["log"]
        assert any("the browser died; it was started again" in line for line in state["log"])
        # Nothing lost, nothing typed twice: each agent took in what an uninterrupted run sends.
        assert run.agent_received() == tiny_reference.agent_received()
        entry = next(e for e in entries if f"— {run.run.name}:" in e)
        assert "- **Browser relaunched:** 1 time(s)" in entry
