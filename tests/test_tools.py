"""The persona's tools against live fact copies: refusals, edits, grading rules, errors as text, and
nothing claimed as said that the agent did not receive."""

from __future__ import annotations

import asyncio
import json
from itertools import count

import pytest

from persona.benchmark.loader import load_benchmark
from persona.engine.scenario import Scenario
from persona.engine.tools import SCENARIO_COMPLETE, TOOL_NAMES, TOOL_SPECS, ToolBox
from persona.engine.toolspecs import plain_specs
from persona.state import Exchange, RunState
from tests.support.quirk_server import PROFILES, Refused, _check_tools
from tests.test_benchmark import good_files

STEPS = count(1)


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


def call(box: ToolBox, name: str, *, step: int | None = None, **args) -> str:
    """One call in a persona turn of its own (or in turn `step`)."""
    return asyncio.run(box.call(name, json.dumps(args), step=next(STEPS) if step is None else step))


def said(box: ToolBox, n: int = 1) -> None:
    """n messages reached the agent."""
    box.state.turn += n


def test_specs_cover_the_seven_tools():
    assert TOOL_NAMES == ["next_phase", "facts_read", "facts_mark_told", "facts_get_untold", "facts_edit",
                          "facts_add", "log_evaluation"]
    assert all(spec["function"]["parameters"]["type"] == "object" for spec in TOOL_SPECS)


def test_the_schemas_pass_openai_strict_mode_and_geminis_subset():
    for spec in TOOL_SPECS:
        params = spec["function"]["parameters"]
        assert spec["function"]["strict"] is True and params["additionalProperties"] is False
        assert sorted(params["required"]) == sorted(params["properties"]), spec["function"]["name"]
    _check_tools(TOOL_SPECS, PROFILES["openai"])  # raises Refused as OpenAI would
    _check_tools(plain_specs(TOOL_SPECS), PROFILES["gemini"])
    with pytest.raises(Refused, match="additionalProperties|strict"):
        _check_tools(TOOL_SPECS, PROFILES["gemini"])
    assert "second_attempt" in TOOL_SPECS[-1]["function"]["parameters"]["required"]


def test_next_phase_refuses_until_required_facts_are_told(box):
    assert box.state.vars == {"require_all_facts": "family"}
    refusal = call(box, "next_phase")
    assert refusal.startswith("Error: not yet") and "`family`: 1.1, 1.2, 2.1" in refusal
    said(box)
    assert "Marked 3" in call(box, "facts_mark_told", file="family", ids=["1.1", "1.2", "2.1"])
    assert "checks of this phase not graded: q1" in call(box, "next_phase")
    said(box)
    call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="right", second_attempt=False)
    brief = call(box, "next_phase")
    assert brief.startswith("## Current phase (2 of 2): Later") and box.state.phase == 1
    assert "require_all_facts" not in box.state.vars  # reset for each phase
    assert box.state.phase_started_turn == 2


def test_untold_and_read(box):
    said(box)
    call(box, "facts_mark_told", file="family.md", ids=["1.1"])
    untold = call(box, "facts_get_untold", file="Family")
    assert "1.1" not in untold and "1.2 Ana is 38" in untold and "## 2. Kids" in untold
    assert "# Family" in call(box, "facts_read", file="family") and list(box.state.loaded_files) == ["family"]


def test_edit_delete_and_add_change_only_the_live_copy(box):
    said(box)
    assert "is now: Ana is 39" in call(box, "facts_edit", file="family", id="1.2", text="Ana is 39")
    said(box)
    call(box, "facts_edit", file="family", id="2.1", text="—")
    said(box)
    assert "Added family 2.2" in call(box, "facts_add", file="family", section=2, text="We have a daughter, Rita")
    live = box.state.facts["family"]
    assert live.get("1.2").text == "Ana is 39" and live.get("2.1").deleted
    assert box.bench.fact_files["family"].get("1.2").text == "Ana is 38"  # the benchmark is untouched
    assert "no section 9" in call(box, "facts_add", file="family", section=9, text="x")


def test_a_changed_profile_is_shown_again_whole(box):
    said(box)
    result = call(box, "facts_edit", file="profile", id="1.1", text="I'm Tom, 41")
    assert "# Your profile as it is now, replacing any earlier copy" in result and "1.1 I'm Tom, 41" in result
    said(box)
    assert "replacing any earlier copy" in call(box, "facts_add", file="profile", section=1, text="I sing")
    said(box)
    assert "replacing" not in call(box, "facts_edit", file="family", id="1.2", text="Ana is 39")


def test_each_fact_keeps_its_history_told_edited_deleted_added(box):
    said(box, 2)  # each claim needs a message to the agent since the one before
    call(box, "facts_mark_told", file="family", ids=["1.2", "2.1"])
    said(box, 3)
    call(box, "facts_mark_told", file="family", ids=["1.2"])  # told once: the first time counts
    said(box)
    call(box, "facts_edit", file="family", id="1.2", text="Ana is 39")
    said(box)
    call(box, "facts_edit", file="family", id="2.1", text="—")
    said(box)
    call(box, "facts_add", file="family", section=2, text="We have a daughter, Rita")
    live = box.state.facts["family"]
    assert [(e.turn, e.kind, e.text) for e in live.get("1.2").history] == [(2, "told", "Ana is 38"), (6, "edited", "Ana is 39")]
    assert [(e.turn, e.kind) for e in live.get("2.1").history] == [(2, "told"), (7, "deleted")]
    rita = live.get("2.2")
    assert [(e.turn, e.kind) for e in rita.history] == [(8, "added")] and rita.told_turn == rita.changed_turn == 8
    assert not box.bench.fact_files["family"].get("1.2").history  # the benchmark is untouched


def test_log_evaluation_rules(box):
    said(box)
    assert "0 or 10" in call(box, "log_evaluation", check_id="q1", score=7, answer="a", comment="c", second_attempt=False)
    assert "not a check of the current phase" in call(box, "log_evaluation", check_id="q2", score=10, answer="a",
                                                      comment="c", second_attempt=False)
    assert "5/10" in call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c", second_attempt=True)
    assert "already graded" in call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c",
                                    second_attempt=False)
    ev, = box.state.evaluations
    assert (ev.raw_score, ev.score, ev.second_attempt, ev.expected) == (10, 5, True, "Ana")


def test_a_missing_or_null_second_attempt_counts_as_a_first(box):
    """Strict schemas require the field; a lenient model may still leave it out."""
    said(box)
    assert "10/10" in call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c")


def test_nothing_is_marked_told_that_did_not_reach_the_agent(box):
    assert "no message has reached the agent yet" in call(box, "facts_mark_told", file="family", ids=["1.1"])
    said(box)
    call(box, "facts_read", file="family")
    assert "since you loaded family" in call(box, "facts_mark_told", file="family", ids=["1.1"])
    said(box)
    assert "Marked 1" in call(box, "facts_mark_told", file="family", ids=["1.1"], step=100)
    assert "Marked 1" in call(box, "facts_edit", file="family", id="1.2", text="Ana is 39", step=100) \
        .replace("family 1.2 is now", "Marked 1"), "the calls of one turn are one moment"
    refused = call(box, "facts_mark_told", file="family", ids=["2.1"])
    assert "since your last facts_mark_told, facts_edit or facts_add" in refused
    assert "since your last" in call(box, "facts_add", file="family", section=2, text="Rita")
    assert box.state.facts["family"].get("2.1").told_turn is None and not box.state.facts["family"].get("2.2")


def test_no_grade_without_a_message_since_the_question_could_be_asked(box):
    assert "no message had reached the agent in this phase when you wrote this call" in call(
        box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c", second_attempt=False)
    assert not box.state.evaluations
    said(box, 3)
    call(box, "facts_mark_told", file="family", ids=["1.1", "1.2", "2.1"])
    call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c", second_attempt=False)
    call(box, "next_phase")
    refused = call(box, "log_evaluation", check_id="q2", score=0, answer="38", comment="c", second_attempt=False)
    assert "in this phase when you wrote" in refused
    said(box)
    call(box, "log_evaluation", check_id="q2", score=0, answer="38", comment="c", second_attempt=False)
    assert "since your last log_evaluation" in call(box, "log_evaluation", check_id="q3", score=5, answer="Rui",
                                                    comment="c", second_attempt=False)


def test_a_grade_beside_the_next_question_is_about_the_answer_before_it(box):
    """One turn asks q3 and grades q2: that grade was decided before q3 went out, so grading q3 in a
    turn without text, once q3's answer is in, is not refused."""
    said(box)
    call(box, "facts_mark_told", file="family", ids=["1.1", "1.2", "2.1"])
    call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c", second_attempt=False)
    call(box, "next_phase")
    said(box)  # q2 asked and answered
    said(box)  # the next turn's text: q3, answered
    grade_q2 = json.dumps({"check_id": "q2", "score": 0, "answer": "38", "comment": "c", "second_attempt": False})
    assert "Logged q2" in asyncio.run(box.call("log_evaluation", grade_q2, step=50, decided_at=box.state.turn - 1))
    assert "Logged q3" in call(box, "log_evaluation", check_id="q3", score=5, answer="Rui", comment="c",
                               second_attempt=False)


def test_a_grade_written_beside_the_first_question_is_refused(box):
    """The question goes out first, but the model wrote the grade before any answer to it: nothing to grade."""
    said(box)  # the text of this very turn
    grade = json.dumps({"check_id": "q1", "score": 10, "answer": "Ana", "comment": "c", "second_attempt": False})
    refused = asyncio.run(box.call("log_evaluation", grade, step=60, decided_at=box.state.turn - 1))
    assert "in this phase when you wrote this call (a message in the same turn" in refused and not box.state.evaluations


def test_grades_of_one_turn_share_its_window(box):
    """Two checks asked in one message and graded in one turn: both grades read the same exchanges."""
    from persona.engine.judge import RuleJudge
    from persona.state import Exchange

    chat = [Exchange(turn=1, session=0, phase=0, sent="Tell me stuff", reply=["ok"])]
    box.judge, box.exchanges = RuleJudge(), lambda: chat
    said(box)
    box.state.transcript_len = 1
    call(box, "facts_mark_told", file="family", ids=["1.1", "1.2", "2.1"])
    call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c")
    assert "Later" in call(box, "next_phase")
    chat.append(Exchange(turn=2, session=0, phase=1, sent="How old is Ana, and who is my son?", reply=["39, and Rui."]))
    said(box)
    box.state.transcript_len = 2
    assert "Logged q2" in call(box, "log_evaluation", step=70, check_id="q2", score=0, answer="39", comment="c")
    assert "Logged q3" in call(box, "log_evaluation", step=70, check_id="q3", score=5, answer="Rui", comment="c")
    assert [[t.turn for t in e.agent_turns] for e in box.state.evaluations[1:]] == [[2], [2]]
    assert (box.state.last_grade.since, box.state.last_grade.turn) == (1, 2)


def test_bad_calls_come_back_as_errors(box):
    assert "unknown tool 'delete_everything'" in asyncio.run(box.call("delete_everything", "{}"))
    assert "not valid JSON" in asyncio.run(box.call("facts_read", "{file: family"))
    assert "bad arguments for facts_read" in asyncio.run(box.call("facts_read", "{}"))
    assert "no fact file 'pets'" in call(box, "facts_read", file="pets")
    said(box)
    assert "has no fact 9.9" in call(box, "facts_mark_told", file="family", ids=["9.9"])


def test_the_last_phase_completes_the_scenario(box):
    said(box)
    call(box, "facts_mark_told", file="family", ids=["1.1", "1.2", "2.1"])
    call(box, "log_evaluation", check_id="q1", score=10, answer="Ana", comment="c", second_attempt=False)
    call(box, "next_phase")
    said(box)
    call(box, "log_evaluation", check_id="q2", score=0, answer="38", comment="old value", second_attempt=False)
    said(box)
    call(box, "log_evaluation", check_id="q3", score=5, answer="Rui", comment="half", second_attempt=False)
    assert call(box, "next_phase") == SCENARIO_COMPLETE and box.state.finished


def test_with_a_judge_the_grade_is_the_judges_on_the_agents_own_words(box):
    from persona.engine.judge import RuleJudge
    from persona.state import Exchange

    chat: list[Exchange] = []
    box.judge, box.exchanges = RuleJudge(), lambda: chat
    assert "cannot grade: no message had reached the agent in this phase" in \
        call(box, "log_evaluation", check_id="q1", score=7, answer="a", comment="c"), "one refusal, judge or not"
    chat.append(Exchange(turn=1, session=0, phase=0, sent="Who is my wife?", reply=["Hm.", "It's Ana."]))
    box.state.turn = box.state.transcript_len = 1
    logged = call(box, "log_evaluation", check_id="q1", score=7, answer="Ana", comment="c")
    assert logged == "Logged q1; the grader scores it.", "no score back: it would tell the persona the answer"
    ev, = box.state.evaluations
    assert (ev.score, ev.grader, ev.persona_grade.score) == (10, "rules", 7)  # 7 is fine as the persona's impression
    assert [(t.turn, t.reply) for t in ev.agent_turns] == [(1, ["Hm.", "It's Ana."])]


def test_next_phase_refuses_until_the_story_date_was_typed_in_the_phase(write_bench):
    """An LLM persona that forgets to tell the date is told to; the words a message says it in may be any."""
    files = good_files()
    files["chapter1.md"] = files["chapter1.md"].replace("```\n", "```\n📅 2023-05-08 13:56\n", 1)
    bench = load_benchmark(write_bench(files))
    state = RunState(run_id="t", benchmark="b", driver="d", persona_model="m",
                     facts={n: f.model_copy(deep=True) for n, f in bench.fact_files.items()})
    typed: list[Exchange] = []

    async def new_session(phase: int) -> None:
        return None

    box = ToolBox(bench, state, Scenario(bench, state, new_session), exchanges=lambda: typed)
    assert "📅 2023-05-08 13:56" in asyncio.run(box.scenario.enter(0))

    def send(text: str) -> None:
        said(box)
        typed.append(Exchange(turn=state.turn, session=0, phase=0, sent=text, reply=["ok"]))
        state.transcript_len = len(typed)

    send("My wife is Ana, she is 38, and Rui is 9.")
    call(box, "facts_mark_told", file="family", ids=["1.1", "1.2", "2.1"])
    refusal = call(box, "next_phase")
    assert refusal == ("Error: not yet: you have not told the assistant the story's date in this phase (Monday, 8 May "
                       "2023, 1:56 pm). Say it in a message, with the day, the month and the year, then call next_phase.")
    send("Morning! Monday 8 May here.")  # no year: the agent would take it for this year
    assert call(box, "next_phase") == refusal
    send("Sorry, 8th May 2023, to be exact.")
    assert "checks of this phase not graded: q1" in call(box, "next_phase")
