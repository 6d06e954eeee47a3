"""A phase's JS block that fails only against the real chat, in a whole `mmb run`."""

from __future__ import annotations

import json

import pytest

from demo_agent.faults import ENV as DEMO_FAULTS_ENV
from tests.conftest import DEMO_ENGINE, demo_run
from tests.support.run_process import Results, evaluation_key, finish, start

pytestmark = pytest.mark.usefixtures("chromium")
FAST_STREAM = {DEMO_FAULTS_ENV: "{}"}  # no kill to land mid-reply here: the agent streams at its own pace


@pytest.mark.slow  # two whole runs against DemoMind, 15 s: the slow set (tests/test_faults_input.py has the static errors)
def test_a_phase_block_failing_at_run_time_stops_with_its_line_and_resumes_after_the_fix(demo_reference, tmp_path):
    """`await bench.newSession()` can only fail against the real chat (here: no such New-chat button):
    the run stops at the block's file:line, resumable; with the config fixed it ends like the reference."""
    config = tmp_path / "config.jsonc"
    results = Results(tmp_path / "results", tmp_path / "results" / "demo")

    def write(run: dict) -> None:
        config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), "runs": [run], **DEMO_ENGINE}))

    # a short reset limit: the missing button is given up on after 2 s, not the default 15
    write(demo_run(selectors={"new_chat": "button#no-such-button"}, options={"reset_timeout_s": 2},
                   recovery={"attempts": 1}))
    code, err = finish(start(config, FAST_STREAM))
    state = results.state()
    assert code == 1 and state["status"] == "failed", err
    assert state["error"].startswith("chapter2.md:7: JS block of phase 'The next morning' failed: ") \
        or "/chapter2.md:7: JS block of phase 'The next morning' failed: " in state["error"], state["error"]
    assert "button#no-such-button" in state["error"] and state["phase"] == 2
    graded = [evaluation_key(e) for e in state["evaluations"]]

    write(demo_run())
    code, err = finish(start(config, FAST_STREAM))
    assert code == 0, err
    state = results.state()
    assert [evaluation_key(e) for e in state["evaluations"]] == [evaluation_key(e) for e in demo_reference.state()["evaluations"]]
    assert [evaluation_key(e) for e in state["evaluations"]][: len(graded)] == graded
    assert results.agent_received() == demo_reference.agent_received()
