"""The persona's tools against live fact copies: refusals, edits, grading rules, errors as text."""

from __future__ import annotations

import asyncio
import json

import pytest

from persona.benchmark.loader import load_benchmark
from persona.engine.scenario import Scenario
from persona.engine.tools import SCENARIO_COMPLETE, TOOL_NAMES, TOOL_SPECS, ToolBox
from persona.state import RunState
from tests.test_benchmark import good_files


@pytest.fixture
def box(write_bench):
    bench = load_benchmark(write_bench(good_files()))
    state = RunState(run_id="t", benchmark="b", driver="d", persona_model="m",
                     facts={n: f.model_copy(deep=True) for n, f in bench.fact_files.items()})
    sessions = []

    async def new_session(phase: int) -> None:
        sessions.append(phase)

    box = ToolBox(bench, state, Scenario(bench, state, new_session))
    asyncio.run(box.scenario.enter(0))
    box.sessions = sessions
    return box


def call(box: ToolBox, name: str, **args) -> str:
    return asyncio.run(box.call(name, json.dumps(args)))


def test_specs_cover_the_seven_tools():
    assert TOOL_NAMES == ["next_phase", "facts_read", "facts_mark_told", "facts_get_untold", "facts_edit",
                          "facts_add", "log_evaluation"]
    assert all(spec["function"]["parameters"]["type"] == "object" for spec in TOOL_SPECS)


def test_next_phase_refuses_until_required_facts_are_told(box):
    assert box.state.vars == {"require_all_facts": "family"}
    refusal = call(box, "next_phase")
    assert refusal.startswith("Error: not yet") and "`family`: 1.1, 1.2, 2.1" in refusal
    assert "Marked 3" in call(box, "facts_mark_told", file="family", ids=["1.1", "1.2", "2.1"])
    assert "checks of this phase not graded: q1" in call(box, "next_phase")
    call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="right")
    brief = call(box, "next_phase")
    assert brief.startswith("## Current phase (2 of 2): Later") and box.state.phase == 1
    assert "require_all_facts" not in box.state.vars  # reset for each phase


def test_untold_and_read(box):
    call(box, "facts_mark_told", file="family.md", ids=["1.1"])
    untold = call(box, "facts_get_untold", file="Family")
    assert "1.1" not in untold and "1.2 Ana is 38" in untold and "## 2. Kids" in untold
    assert "# Family" in call(box, "facts_read", file="family") and box.state.loaded_files == ["family"]


def test_edit_delete_and_add_change_only_the_live_copy(box):
    assert "is now: Ana is 39" in call(box, "facts_edit", file="family", id="1.2", text="Ana is 39")
    call(box, "facts_edit", file="family", id="2.1", text="—")
    assert "Added family 2.2" in call(box, "facts_add", file="family", section=2, text="We have a daughter, Rita")
    live = box.state.facts["family"]
    assert live.get("1.2").text == "Ana is 39" and live.get("2.1").deleted
    assert box.bench.fact_files["family"].get("1.2").text == "Ana is 38"  # the benchmark is untouched
    assert "no section 9" in call(box, "facts_add", file="family", section=9, text="x")


def test_log_evaluation_rules(box):
    assert "0 or 10" in call(box, "log_evaluation", check_id="q1", score=7, answer="a", comment="c")
    assert "not a check of the current phase" in call(box, "log_evaluation", check_id="q2", score=10, answer="a", comment="c")
    assert "5/10" in call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c", second_attempt=True)
    assert "already graded" in call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c")
    ev, = box.state.evaluations
    assert (ev.raw_score, ev.score, ev.second_attempt, ev.expected) == (10, 5, True, "Ana")


def test_bad_calls_come_back_as_errors(box):
    assert "unknown tool 'delete_everything'" in asyncio.run(box.call("delete_everything", "{}"))
    assert "not valid JSON" in asyncio.run(box.call("facts_read", "{file: family"))
    assert "bad arguments for facts_read" in asyncio.run(box.call("facts_read", "{}"))
    assert "no fact file 'pets'" in call(box, "facts_read", file="pets")
    assert "has no fact 9.9" in call(box, "facts_mark_told", file="family", ids=["9.9"])


def test_the_last_phase_completes_the_scenario(box):
    call(box, "facts_mark_told", file="family", ids=["1.1", "1.2", "2.1"])
    call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c")
    call(box, "next_phase")
    call(box, "log_evaluation", check_id="q2", score=0, answer="38", comment="old value")
    call(box, "log_evaluation", check_id="q3", score=5, answer="Rui", comment="half")
    assert call(box, "next_phase") == SCENARIO_COMPLETE and box.state.finished


def test_with_a_judge_the_grade_is_the_judges_on_the_agents_own_words(box):
    from persona.engine.judge import RuleJudge
    from persona.state import Exchange

    chat: list[Exchange] = []
    box.judge, box.exchanges = RuleJudge(), lambda: chat
    assert "nothing was said in the chat since the last grade: ask q1 first" in \
        call(box, "log_evaluation", check_id="q1", score=7, answer="a", comment="c")
    chat.append(Exchange(turn=1, session=0, phase=0, sent="Who is my wife?", reply=["Hm.", "It's Ana."]))
    box.state.turn = box.state.transcript_len = 1
    logged = call(box, "log_evaluation", check_id="q1", score=7, answer="Ana", comment="c")
    assert logged == "Logged q1; the grader scores it.", "no score back: it would tell the persona the answer"
    ev, = box.state.evaluations
    assert (ev.score, ev.grader, ev.persona_grade.score) == (10, "rules", 7)  # 7 is fine as the persona's impression
    assert [(t.turn, t.reply) for t in ev.agent_turns] == [(1, ["Hm.", "It's Ana."])]
