"""A whole `mmb run` through a chat that errors, hangs, rate-limits and drops its streams."""

from __future__ import annotations

import json

import pytest

from demo_agent.faults import ENV as DEMO_FAULTS_ENV
from tests.conftest import DEMO_ENGINE, demo_run
from tests.support.run_process import Results, evaluation_key, finish, start

pytestmark = pytest.mark.usefixtures("chromium")


@pytest.mark.slow  # a whole run through every fault, 25 s: the slow set (tests/test_faults_driver.py has each fault alone)
def test_a_whole_run_rides_out_a_sick_chat_or_stops_resumable(demo_reference, tmp_path):
    """Through the CLI: a chat failing four times in a row stops the run with a clear error; the rerun
    resumes the pending message, recovers from an error bubble, a rate limit and dropped streams,
    notes each in the state's log, and ends like the reference, the agent taking every message once."""
    # the hang shows a busy marker, so the whole-reply limit (timeout_s) is the one that ends it
    run = demo_run(options={"completion": {"first_bubble_timeout_s": 4, "timeout_s": 4}},
                   recovery={"attempts": 4, "backoff_s": 0.2, "max_backoff_s": 2})
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), "runs": [run], **DEMO_ENGINE}))
    results = Results(tmp_path / "results", tmp_path / "results" / "demo")
    sick = {"error_next": 2, "hang_next": 1, "rate_limit_next": 1, "rate_limit_retry_s": 0.5}
    code, err = finish(start(config, {DEMO_FAULTS_ENV: json.dumps(sick)}))
    state = results.state()
    assert code == 1 and state["status"] == "failed" and state["pending"] is not None
    assert "gave up after 4 attempt(s) over " in state["error"]
    assert "s to send a message and get its reply" in state["error"]
    assert "run the same command again" in state["error"] and results.agent_received() == []

    better = {"error_next": 1, "rate_limit_next": 1, "rate_limit_retry_s": 0.5, "drop_next": 2}
    code, err = finish(start(config, {DEMO_FAULTS_ENV: json.dumps(better)}))
    assert code == 0, err
    state = results.state()
    assert [evaluation_key(e) for e in state["evaluations"]] == [evaluation_key(e) for e in demo_reference.state()["evaluations"]]
    assert results.agent_received() == demo_reference.agent_received()
    notes = "\n".join(state["log"])
    for sign in ("Error: HTTP 500", "rate limited", "no complete reply", "connection closed", "in the chat after all"):
        assert sign in notes, notes
