"""`mmb regrade`: a finished run re-scored by a scripted judge on the local server into a new grading
set, never overwriting; the agreement printed and recorded; the reports say which set they show."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from persona.benchmark.phases import Check
from persona.cli.app import app
from persona.report.gradings import load_set
from persona.state import QuotedTurn
from tests.support.quirk_server import QuirkServer, scripted_responder
from tests.support.runs import demo_run, write_run


def every_item_right(check: Check, turns: list[QuotedTurn]) -> dict[str, Any]:
    return {"items": [{"item": i, "correct": True, "evidence": "yes"} for i in check.items],
            "after_memory_search": False, "comment": "all there"}


def mmb(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def results(tmp_path):
    state, exchanges, _ = demo_run("r1")
    write_run(tmp_path / "results", state, exchanges)
    return tmp_path / "results"


def test_regrade_writes_a_new_set_prints_the_agreement_and_never_overwrites(results):
    original = (results / "r1" / "state.json").read_bytes()
    with QuirkServer(scripted_responder(verdict=every_item_right)) as server:
        args = ["regrade", "r1", "--judge-model", "big-judge", "--base-url", server.base_url,
                "--api-key-env", "MMB_TEST_UNSET_KEY", "--results", str(results), "-c", str(results / "none.jsonc")]
        done = mmb(*args)
        assert done.exit_code == 0, done.output
        again = mmb(*args)
    assert (results / "r1" / "state.json").read_bytes() == original, "the original grades are never touched"
    gset = load_set(results / "r1", "judge-big-judge")
    assert {k: g.score for k, g in gset.grades.items()} == {"d1": 10, "d2": 10, "d9": 10}
    assert gset.judge == "big-judge" and gset.judge_host == "127.0.0.1:" + server.base_url.split(":")[2].split("/")[0]
    assert len(gset.rubric_sha256) == 64 and gset.usage.calls == 3
    a = gset.agreement
    assert (a.checks, round(a.exact, 3), a.mean_abs_difference) == (3, 0.333, 5)
    assert [(p.check_id, p.a, p.b) for p in a.furthest] == [("d2", 0, 10), ("d1", 5, 10)]
    assert "agreement with the original grades (rules): exact 33 % · mean |difference| 5.00" in done.output
    assert "furthest apart: d2 (original 0, big-judge 10), d1 (original 5, big-judge 10)" in done.output
    judged = [r for r in server.requests if r["model"] == "big-judge"]
    assert len(judged) == 3 and all(r["temperature"] == 0 for r in judged)
    conversation = json.loads(judged[0]["messages"][1]["content"])["conversation"]
    assert [t["agent"] for t in conversation] == [["I don't think you told me that."], ["He is a carpenter."]]
    assert again.exit_code == 1 and "never overwritten" in again.output
    entry = (results / "report.md").read_text()
    assert "r1: " in entry and "— grading set judge-big-judge" in entry and "judge model big-judge" in entry


def test_reports_say_which_grading_set_they_show(results):
    done = mmb("regrade", "r1", "--judge-model", "rules", "--name", "offline", "--results", str(results),
               "-c", str(results / "none.jsonc"))
    assert done.exit_code == 0, done.output
    state, exchanges, _ = demo_run("r2")  # a second run without that set
    write_run(results, state, exchanges)
    assert mmb("report", "--grading", "offline", "--results", str(results), "-c", str(results / "none.jsonc")).exit_code == 0
    board = (results / "leaderboard.md").read_text()
    assert "grading set `offline` (`mmb regrade`) where a run has it" in board
    assert "| rules [offline] |" in board and "| rules |" in board, "the run without the set is marked as original"
    assert "grading set offline (`mmb regrade`): the offline rule judge" in (results / "r1" / "report.html").read_text()


def test_only_a_finished_run_with_its_answers_saved_is_regraded(results):
    state, exchanges, _ = demo_run("r3")
    write_run(results, state.model_copy(update={"status": "interrupted"}), exchanges)
    done = mmb("regrade", "r3", "--judge-model", "rules", "--results", str(results), "-c", str(results / "none.jsonc"))
    assert done.exit_code == 1 and "interrupted, not finished" in done.output
    state.evaluations[0].agent_turns = []
    write_run(results, state.model_copy(update={"run_id": "r4"}), exchanges)
    done = mmb("regrade", "r4", "--judge-model", "rules", "--results", str(results), "-c", str(results / "none.jsonc"))
    assert done.exit_code == 1 and "checks d1 were graded before the agent's words were saved" in done.output
    assert mmb("regrade", "r9", "--judge-model", "rules", "--results", str(results)).exit_code == 2
