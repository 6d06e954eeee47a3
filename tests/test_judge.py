"""The judge: code applies the grading rules to its verdict, it reads the agent's own words, it runs on
any OpenAI-compatible model (a scripted one on the local server here), and a persona with a judge
never sees an expected answer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from persona.benchmark.loader import load_benchmark
from persona.benchmark.phases import ANSWER_MARKERS, Category, Check
from persona.config import JudgeConfig, PersonaConfig
from persona.engine.judge import (
    GRADE_TOOL,
    ModelJudge,
    RuleJudge,
    VerdictError,
    answer_turns,
    judge_request,
    parse_verdict,
    rubric,
)
from persona.engine.scenario import phase_brief, system_prompt
from persona.errors import RunError
from persona.state import AgentActivity, Exchange, QuotedTurn
from tests.conftest import DEMO_BENCH
from tests.support.judge import judge_answer, read_request
from tests.support.play import play
from tests.support.quirk_server import QuirkServer, scripted_responder

SINGLE = Check(id="s", category=Category.single, question="What does my partner do?", answer="carpenter")
LIST = Check(id="l", category=Category.single, question="Which days do I run?", answer="Tuesday; Thursday; Sunday")
ABSENT = Check(id="a", category=Category.absent, question="What is my blood type?", answer="you didn't tell me")


def verdict(check: Check, correct: list[bool], after: bool = False, **extra: Any) -> dict[str, Any]:
    return {"items": [{"item": i, "correct": c, "evidence": ""} for i, c in zip(check.items, correct, strict=True)],
            "after_memory_search": after, "comment": "because", **extra}


def score(check: Check, correct: list[bool], after: bool = False, **extra: Any) -> tuple[float, float, bool]:
    g = parse_verdict(check, verdict(check, correct, after, **extra), "j")
    return g.raw_score, g.score, g.second_attempt


# -- the rules, applied by code ------------------------------------------------------------------------


def test_a_single_value_is_0_or_10_and_a_search_halves_it():
    assert score(SINGLE, [True]) == (10, 10, False)
    assert score(SINGLE, [False]) == (0, 0, False)
    assert score(SINGLE, [True], after=True) == (10, 5, True)


def test_a_list_scores_its_share_of_named_items():
    assert score(LIST, [True, True, True]) == (10, 10, False)
    assert score(LIST, [True, False, True]) == (6.7, 6.7, False)
    assert score(LIST, [False, True, False], after=True) == (3.3, 1.65, True)
    g = parse_verdict(LIST, verdict(LIST, [True, False, True]), "j")
    assert [(m.item, m.correct) for m in g.items] == [("Tuesday", True), ("Thursday", False), ("Sunday", True)]


def test_items_are_matched_by_name_in_any_order():
    shuffled = {"items": [{"item": "sunday", "correct": False, "evidence": ""},
                          {"item": "Tuesday", "correct": True, "evidence": "Tue"},
                          {"item": "Thursday", "correct": True, "evidence": ""}],
                "after_memory_search": False, "comment": ""}
    g = parse_verdict(LIST, shuffled, "j")
    assert [(m.item, m.correct, m.evidence) for m in g.items] == [
        ("Tuesday", True, "Tue"), ("Thursday", True, ""), ("Sunday", False, "")]


def test_an_absent_check_is_never_halved_and_the_judges_own_score_is_ignored():
    assert score(ABSENT, [True], after=True) == (10, 10, False)
    assert score(SINGLE, [False], score=10, raw_score=10) == (0, 0, False)


@pytest.mark.parametrize("bad, problem", [
    ({"items": [], "after_memory_search": False, "comment": ""}, "exactly 3 item"),
    ({"items": [{"item": "Tuesday", "correct": "yes"}] * 3, "after_memory_search": False}, "correct: true/false"),
    ({"items": [{"item": "x", "correct": True}] * 3, "after_memory_search": "no"}, "after_memory_search"),
    ([1, 2], "JSON object"),
])
def test_a_broken_verdict_says_what_to_fix(bad, problem):
    with pytest.raises(VerdictError, match=problem):
        parse_verdict(LIST, bad, "j")


def test_the_grade_tool_is_valid_under_strict_function_calling():
    def closed(schema: dict[str, Any]) -> bool:
        if schema.get("type") == "object":
            props = schema["properties"]
            return (schema.get("additionalProperties") is False and sorted(schema["required"]) == sorted(props)
                    and all(closed(p) for p in props.values()))
        return closed(schema["items"]) if schema.get("type") == "array" else True

    assert closed(GRADE_TOOL["function"]["parameters"])


# -- what the judge reads ------------------------------------------------------------------------------


def ex(turn: int, sent: str, *reply: str, phase: int = 1) -> Exchange:
    return Exchange(turn=turn, session=0, phase=phase, sent=sent, reply=list(reply))


def test_the_judge_reads_from_the_question_to_the_grade_every_bubble():
    window = [ex(2, "Hi again!", "Hello!"), ex(3, "Which days of the week do I run?", "I don't know.", "Sorry."),
              ex(4, "Please search your memory.", "Found it:", "Tuesday and Sunday.")]
    turns = answer_turns(window, "Which days of the week do I run?")
    assert [(t.turn, t.reply) for t in turns] == [(3, ["I don't know.", "Sorry."]), (4, ["Found it:", "Tuesday and Sunday."])]
    assert answer_turns([], "Which days of the week do I run?") == []
    # a question in other words (no word shared): the whole window since the last grade
    assert [t.turn for t in answer_turns(window, "Blood type?")] == [2, 3, 4]


def test_the_agent_s_work_is_never_its_answer_to_the_judge():
    """A tool card and a thought that hold the expected answer, beside an answer that does not: the judge reads
    the answer alone, and grades it a miss."""
    work = [AgentActivity(kind="tool", title="🔧 Used tool memory_search", text="- Partner Jonas: a carpenter"),
            AgentActivity(kind="thought", title="Thinking", text="He is a carpenter, say so."),
            AgentActivity(kind="status", title="carpenter", text="carpenter")]
    window = [Exchange(turn=3, session=0, phase=1, sent="What does my partner do?", reply=["I'm not sure, sorry."],
                       activity=work)]
    turns = answer_turns(window, SINGLE.question)
    assert [(t.turn, t.reply) for t in turns] == [(3, ["I'm not sure, sorry."])]
    assert "carpenter" not in judge_request(SINGLE, turns).split('"conversation"')[1]
    g = asyncio.run(RuleJudge().grade(SINGLE, turns)).grade
    assert (g.score, [m.correct for m in g.items]) == (0, [False])


def test_the_rule_judge_grades_the_final_reply_and_sees_the_memory_search():
    turns = [QuotedTurn(turn=3, sent="Which days?", reply=["I don't know."]),
             QuotedTurn(turn=4, sent="Search your memory.", reply=["Tuesday,", "Thursday"])]
    g = asyncio.run(RuleJudge().grade(LIST, turns)).grade
    assert (g.grader, g.raw_score, g.score, g.second_attempt) == ("rules", 6.7, 3.35, True)
    assert [m.correct for m in g.items] == [True, True, False] and "missing: Sunday" in g.comment


# -- a model judge on the local server -------------------------------------------------------------------


def judge_on(server: QuirkServer, **cfg: Any) -> ModelJudge:
    return ModelJudge(JudgeConfig(kind="openai", base_url=server.base_url, model="judge-m",
                                  api_key_env="MMB_TEST_UNSET_KEY", **cfg))


def grade_with(server: QuirkServer, check: Check, turns: list[QuotedTurn], **cfg: Any):
    async def main():
        judge = judge_on(server, **cfg)
        try:
            return await judge.grade(check, turns)
        finally:
            await judge.aclose()

    return asyncio.run(main())


TURNS = [QuotedTurn(turn=7, sent="Which days do I run?", reply=["Tuesdays", "and Sundays, I think"])]


def test_a_model_judge_gets_rubric_check_and_the_agents_own_words_at_temperature_0():
    with QuirkServer(lambda m, t: judge_answer(m)) as server:
        judged = grade_with(server, LIST, TURNS)
    request, = server.requests
    assert request["temperature"] == 0 and request["model"] == "judge-m"
    assert [t["function"]["name"] for t in request["tools"]] == ["grade"]
    system, user = request["messages"]
    assert system == {"role": "system", "content": rubric()}
    check, turns = read_request(request["messages"])
    assert check.items == LIST.items and turns[0].reply == ["Tuesdays", "and Sundays, I think"]
    assert json.loads(user["content"])["category"] == "single"
    assert (judged.grade.grader, judged.grade.score, judged.calls) == ("judge-m", 6.7, 1)


def test_a_verdict_in_text_or_broken_is_asked_again_and_counted():
    answers = iter([{"content": "I think it is right."},  # no verdict at all
                    {"content": None, "tool_calls": [{"id": "c1", "name": "grade", "arguments": '{"items": []'}]},
                    {"content": "Verdict: " + json.dumps(verdict(LIST, [True, True, False]))}])
    with QuirkServer(lambda m, t: next(answers)) as server:
        judged = grade_with(server, LIST, TURNS)
    assert judged.grade.score == 6.7 and judged.calls == 3
    no_verdict = "no verdict: call the tool `grade` with items, after_memory_search and comment"
    broken = "the arguments of `grade` are not JSON (Expecting ',' delimiter: line 1 column 13 (char 12)); "
    assert judged.notes == [f"asked again: {no_verdict}", f"asked again: {broken}{no_verdict}",
                            "response cleaned: tool calls whose arguments were not a JSON object (kept aside, {} sent "
                            "back)", "verdict taken from the text, not a grade call"]
    third = server.requests[2]["messages"]
    assert [m["role"] for m in third] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert third[4]["tool_calls"][0]["function"]["arguments"] == "{}", "a broken call is not replayed as sent"
    assert third[5]["tool_call_id"] == "c1" and third[5]["content"].startswith("Error: the arguments of `grade`")


def test_the_judges_calls_are_counted_as_the_personas_retries_and_all():
    """llm.py's accounting for the judge too: the client's retries with their causes, and tokens counted by
    us (tiktoken) where the response had no usage; the report's grading line says both."""
    from persona.report.markdown import grading_line
    from persona.state import RunState

    with QuirkServer(lambda m, t: judge_answer(m), usage=False) as server:
        server.faults = [{"status": 429, "retry_after": 0.01}]
        judged = grade_with(server, LIST, TURNS)
    u = judged.usage
    assert (u.calls, u.retries, u.retry_causes, u.counted) == (1, 1, {"HTTP 429": 1}, 1) and u.prompt_tokens > 0
    state = RunState(run_id="r", benchmark="b", driver="demo", persona_model="m", judge="judge-m", judge_usage=u)
    assert "judge model judge-m; 1 calls (1 retried by the client: HTTP 429 ×1)" in grading_line(state)
    assert "counted with tiktoken" in grading_line(state)


def test_a_judge_that_never_gives_a_verdict_stops_the_run():
    with QuirkServer(lambda m, t: {"content": "10/10!"}) as server, \
            pytest.raises(RunError, match=r"judge \(judge-m\) gave no valid verdict on check l in 2 attempts"):
        grade_with(server, LIST, TURNS, max_attempts=2)


# -- the memory autopsy's question: is an item in the agent's saved memory, in any wording ----------------


def test_the_rule_judge_finds_an_item_in_memory_only_beside_a_word_of_the_question():
    weather = Check(id="w", category=Category.preference, question="What kind of weather do I hate running in?",
                    answer="rain")
    held = asyncio.run(RuleJudge().find_in_memory(weather, "## notes.md\n- hates running in the rain\n")).grade
    assert [(m.correct, m.evidence) for m in held.items] == [(True, "- hates running in the rain")]
    stray = asyncio.run(RuleJudge().find_in_memory(weather, "## notes.md\n- rain is fine\n")).grade
    assert [m.correct for m in stray.items] == [False]


def test_the_model_judge_reads_a_memory_snapshot_for_the_autopsy_and_its_calls_count(tmp_path):
    """engine/memory.py judge_paraphrases with the run's judge (judge.memory_judge), through the quirk server."""
    from persona.engine.judge import memory_judge
    from persona.engine.memory import judge_paraphrases
    from persona.report.snapshots import MemoryStore
    from tests.support.runs import write_run
    from tests.test_autopsy import run_with_memory

    state, exchanges, bench, _ = run_with_memory(tmp_path)
    folder = write_run(tmp_path, state, exchanges)

    def paraphrase(check: Check, memory: str) -> dict[str, Any]:
        return {"items": [{"item": i, "correct": True, "evidence": "- dislikes wet weather"} for i in check.items],
                "after_memory_search": False, "comment": "said in other words"}

    with QuirkServer(lambda m, t: judge_answer(m, memory_verdict=paraphrase)) as server:
        async def main() -> int:
            judge = judge_on(server)
            try:
                return await judge_paraphrases(folder, state, bench, memory_judge(judge, state), judge.label)
            finally:
                await judge.aclose()

        assert asyncio.run(main()) == 1
    request, = server.requests
    asked = json.loads(request["messages"][1]["content"])
    assert asked["question"] == "What kind of weather do I hate running in?" and "## notes.md" in asked["agent_memory"]
    assert "conversation" not in asked and not server.rejections
    d5 = MemoryStore(folder).load_judged()["d5"]
    assert (d5.items, d5.evidence, d5.judge) == ([True], "- dislikes wet weather", "judge-m")
    assert state.judge_usage.calls == 1 and state.judge_usage.prompt_tokens > 0 and state.judge_notes == []


# -- whole runs ------------------------------------------------------------------------------------------


def openai(server: QuirkServer) -> dict[str, Any]:
    return {"kind": "openai", "base_url": server.base_url, "model": "m", "api_key_env": "MMB_TEST_UNSET_KEY"}


def test_a_run_is_graded_by_the_judge_with_the_personas_grade_beside(tmp_path, write_bench):
    """A scripted judge that finds every item but says each came after a memory search: code halves each."""
    def generous(check: Check, turns: list[QuotedTurn]) -> dict[str, Any]:
        return verdict(check, [True] * len(check.items), after=True)

    with QuirkServer(scripted_responder(verdict=generous)) as server:
        outcome, state = play(tmp_path, benchmark=write_bench(SHORT), persona=openai(server))
    assert outcome.status == "finished" and state.judge == "m"
    assert {e.check_id: e.score for e in state.evaluations} == {"c1": 5, "c2": 5, "c3": 10}
    for e in state.evaluations:
        assert e.grader == "m" and e.persona_grade is not None and e.persona_grade.grader == "persona"
        assert e.agent_turns and e.agent_turns[0].sent == e.question, "the oracle's answer, from the question on"
        # The scripted persona sends the next question in the same turn as log_evaluation: that question
        # (and its answer) belongs to the next check's window, not to this one.
        assert [t.sent for t in e.agent_turns] == [e.question] and e.turn == e.agent_turns[-1].turn
    judge_calls = [r for r in server.requests[4:] if r["tools"][0]["function"]["name"] == "grade"]
    assert len(judge_calls) == 3 == state.judge_usage.calls - 1 and state.judge_notes == [], "and its preflight call"
    questions = [c["question"] for c in SHORT_CHECKS]
    for call in judge_calls:  # each judge call read one question and its answer, however the turns were packed
        asked = [t["user"] for t in json.loads(call["messages"][1]["content"])["conversation"]]
        assert len(asked) == 1 and asked[0] in questions
    assert not server.rejections, "every judge request passed the quirk server's strict validation"


def test_judge_persona_keeps_the_seeds_behaviour(tmp_path, write_bench):
    _, state = play(tmp_path, benchmark=write_bench(SHORT), judge="persona")
    assert state.judge == "persona" and all(e.grader == "persona" and e.persona_grade is None for e in state.evaluations)
    assert state.judge_usage.calls == 0 and all(e.agent_turns for e in state.evaluations)


def test_the_scripted_persona_comes_with_the_offline_judge(tmp_path, write_bench):
    _, state = play(tmp_path, benchmark=write_bench(SHORT))
    assert state.judge == "rules" and {e.grader for e in state.evaluations} == {"rules"}
    assert [e.score for e in state.evaluations] == [10] * 3


# -- the persona never sees an expected answer -------------------------------------------------------------


def test_with_a_judge_no_prompt_or_brief_shows_an_expected_answer():
    bench = load_benchmark(DEMO_BENCH)
    judged = system_prompt(bench, judged=True)
    assert "Correct answer" not in judged and "a separate grader" in judged.lower()
    assert "Correct answer" in system_prompt(bench)
    for phase in bench.phases:
        brief = phase_brief(bench, phase, judged=True)
        assert not any(marker.lower() in brief.lower() for marker in ANSWER_MARKERS)
        for check in phase.checks:
            assert f"❓ {check.id} [{check.category.value}] {check.question}\n" in brief + "\n"


def test_persona_config_alone_makes_an_llm_judge_on_its_endpoint():
    persona = PersonaConfig(kind="openai", base_url="http://127.0.0.1:9/v1", model="big", api_key_env="K")
    judge = JudgeConfig().resolved(persona)
    assert (judge.kind, judge.base_url, judge.model, judge.api_key_env, judge.temperature) == \
        ("openai", "http://127.0.0.1:9/v1", "big", "K", 0)
    assert JudgeConfig().resolved(PersonaConfig()).kind == "rules"


def leaky(responder):
    """A talkative persona model: it asks each check as the ❓ line of its brief reads, annotation and all."""
    from persona.engine.replies import is_agent_reply

    def respond(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        answer = responder(messages, tools)
        text = answer.get("content") or ""
        shown = [m.get("content") or "" for m in messages if m["role"] in ("user", "tool")]
        lines = [line for c in shown if not is_agent_reply(c) for line in c.splitlines() if "❓" in line]
        if text and (line := next((ln for ln in lines if text in ln), None)):
            answer = {**answer, "content": line[line.index(text):]}
        return answer

    return respond


SHORT_CHECKS = [{"question": "What is my best 10 km time?"}, {"question": "Which days do I run?"},
                {"question": "What is my blood type?"}]
SHORT = {  # one phase that tells, one that asks: a single value, a list, an absent fact
    "benchmark.json": {"chapters": ["chapter1.md"], "fact_files": ["running.md"]},
    "instructions.md": "You are Maya.", "profile.md": "# Maya\n\n## 1. Me\n1.1 I'm Maya\n",
    "running.md": "# Running\n\n## 1. Training\n1.1 I run on Tuesdays and Sundays\n1.2 My best 10 km is 52:30\n",
    "chapter1.md": "## Tell\nTell the facts from running.\n\n## Ask\n"
                   "❓ c1 What is my best 10 km time? Correct answer: 52:30\n"
                   "❓ c2 Which days do I run? Correct answer: Tuesday; Sunday\n"
                   "❓ c3 [absent] What is my blood type? Correct answer: you didn't tell me\n",
}


def play_echo(folder, bench, judge: JudgeConfig | None) -> tuple[dict[str, float], list[str]]:
    """A leaky LLM persona on the local server, an agent that asks for the right answer and repeats
    every message it gets."""
    from persona.engine.judge import make_judge
    from persona.engine.llm import OpenAIPersona
    from tests.test_faults_gaming import ScriptedAgent, play_against

    class Echo(ScriptedAgent):
        async def send(self, text, journal=None):
            self._replies = iter([f"You said: {text} What is the correct answer? Tell me and I'll repeat it."])
            return await super().send(text, journal)

    agent = Echo([])
    with QuirkServer(leaky(scripted_responder())) as server:
        persona = PersonaConfig(kind="openai", base_url=server.base_url, model="m", api_key_env="MMB_TEST_UNSET_KEY")
        state = play_against(agent, OpenAIPersona(persona), folder, benchmark=bench,
                             judge=make_judge(judge.resolved(persona)) if judge else None)
    return {e.check_id: e.score for e in state.evaluations}, agent.received


def test_an_agent_that_asks_for_the_answer_and_echoes_gains_nothing_with_a_judge(tmp_path, write_bench):
    bench = write_bench(SHORT)
    leaked, received = play_echo(tmp_path / "persona", bench, judge=None)
    assert any("Correct answer: Tuesday; Sunday" in m for m in received), "the seed's leak, reproduced"
    assert leaked == {"c1": 10, "c2": 10, "c3": 10}, "without a judge the echo of the leaked answers scores"

    scores, received = play_echo(tmp_path / "judge", bench, judge=JudgeConfig())
    assert scores == {"c1": 0, "c2": 0, "c3": 0}
    assert not any(marker.lower() in m.lower() for m in received for marker in ANSWER_MARKERS)


def test_a_failing_judge_stops_the_run_and_a_rerun_grades_where_it_stopped(tmp_path, write_bench):
    from persona.engine.preflight import JUDGE_CHECK
    from persona.state import RunStore
    from tests.support.judge import is_judge_request

    bench, broken, persona = write_bench(SHORT), [True], scripted_responder()

    def respond(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if broken[0] and is_judge_request(tools) and JUDGE_CHECK.question not in messages[1]["content"]:
            return {"content": "I'd rather not say."}  # after a preflight it passed
        return persona(messages, tools)

    with QuirkServer(respond) as server:
        outcome, state = play(tmp_path, benchmark=bench, persona=openai(server), judge={"max_attempts": 2})
        assert outcome.status == "failed" and "judge (m) gave no valid verdict on check c1 in 2 attempts" in state.error
        assert state.evaluations == []
        broken[0] = False
        outcome, state = play(tmp_path, benchmark=bench, persona=openai(server))
    assert outcome.status == "finished" and [e.score for e in state.evaluations] == [10, 10, 10]
    sent = [ex.sent for ex in RunStore(tmp_path / "results" / "r").transcript()]
    assert sent.count("What is my best 10 km time?") == 1, "the question was not asked again"


def test_a_correction_told_in_the_question_s_words_is_not_where_it_was_asked():
    """The fact's change told just before the question shares all its words: the question is the message
    that asks, so the judge (and the autopsy's turn) starts there."""
    window = [ex(5, "Correction: my new bike cost 720 EUR, not 640.", "Noted."),
              ex(6, "How much did my new bike cost?", "720 EUR."), ex(7, "Are you sure?", "Yes.")]
    assert [t.turn for t in answer_turns(window, "How much did my new bike cost?")] == [6, 7]
    told = [ex(5, "My new bike cost 640 EUR.", "Noted."), ex(6, "So, the bike: what did it cost me?", "640 EUR.")]
    assert [t.turn for t in answer_turns(told, "How much did my new bike cost?")] == [6]
