"""A real LLM persona is never silently wrong (issue 12): each way a real model or server departs from
the plan, through the real `openai` client against the quirk server, with the oracle agent. What
reaches a real chat is checked in tests/test_persona_in_browser.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from persona.benchmark.loader import load_benchmark
from persona.config import CompactionConfig, ModelPrice, PersonaConfig
from persona.engine.llm import strict_schemas
from persona.engine.loop import EMPTY_TURN_NUDGE, PersonaLoop
from persona.engine.oracle import OracleDriver
from persona.engine.scripted import ScriptedPersona
from persona.report.cost import PriceTable, money
from persona.state import RunState, RunStore
from persona.tokens import TokenCounter
from tests.conftest import DEMO_BENCH
from tests.support.judge import is_judge_request
from tests.support.play import play, scores
from tests.support.quirk_server import QuirkServer, rewriting, scripted_responder, thinking_aloud
from tests.support.tiny import TINY

TINY_SCORES = [("q1", 10.0, False), ("q2", 10.0, False)]


def persona(server: QuirkServer, **more: Any) -> dict[str, Any]:
    return {"kind": "openai", "base_url": server.base_url, "model": "m", "api_key_env": "MMB_TEST_UNSET_KEY",
            "preflight": False, **more}


def persona_requests(server: QuirkServer) -> list[dict[str, Any]]:
    """The persona's requests, without its judge's (by default the same endpoint grades each answer)."""
    return [r for r in server.requests if not is_judge_request(r["tools"])]


def sent(folder: Path) -> list[str]:
    """What the transcript says was typed to the agent."""
    return [e.sent for e in RunStore(folder).transcript()]


def report_of(tmp_path: Path) -> str:
    return (tmp_path / "results" / "report.md").read_text()


@pytest.fixture
def tiny(write_bench) -> Path:
    return write_bench(TINY)


def test_text_beside_tool_calls_is_sent_first_and_the_calls_see_it_told(tmp_path, tiny):
    with QuirkServer(scripted_responder()) as server:
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server))
    assert outcome.status == "finished", state.error
    assert scores(state) == TINY_SCORES and not server.rejections
    beside = [m for m in state.messages if m.role == "assistant" and m.content and m.tool_calls]
    assert beside, "the scripted persona speaks the protocol: a message and its calls in one turn"
    assert [m.content for m in state.messages if m.role == "assistant" and m.content] == sent(tmp_path / "results" / "r")
    pets = state.facts["pets"]
    assert [f.told_turn for f in pets.all_facts()] == [1, 2], "marked told in the turn whose text told them"
    turns = [m for m in persona_requests(server)[-1]["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    assert all(m["content"] is None or m["content"].strip() for m in turns), "no empty text part is sent back"


def test_a_model_whose_words_never_reach_the_agent_gets_no_grade_and_no_fact_told(tmp_path, tiny):
    """The issue's run: not one message reached the agent, yet it finished 'mean 10.00 over 10 checks'."""
    def calls_only(answer: dict[str, Any], n: int) -> dict[str, Any]:
        return {"content": None, "tool_calls": answer.get("tool_calls") or [
            {"name": "facts_mark_told", "arguments": json.dumps({"file": "pets", "ids": ["1.1"]})}]}

    with QuirkServer(rewriting(scripted_responder(), calls_only)) as server:
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server, stall_calls=12))
    assert outcome.status in ("stalled", "failed") and not state.evaluations
    assert state.turn == 0 and all(f.told_turn is None for f in state.facts["pets"].all_facts())
    refusals = [m.content for m in state.messages if m.role == "tool" and "no message has reached the agent" in (m.content or "")]
    assert refusals, "the model is told why"


@pytest.mark.parametrize("profile, status", [("vllm", 400), ("llamacpp", 500), ("openai", 400)])
def test_a_malformed_call_gets_an_error_and_the_history_stays_one_the_server_takes(tmp_path, tiny, profile, status):
    def break_second(answer: dict[str, Any], n: int) -> dict[str, Any]:
        if n == 2:
            answer["tool_calls"] = [{"name": "facts_mark_told", "arguments": '{"file": "pets", "ids": ["1.1"'}]
        return answer

    with QuirkServer(rewriting(scripted_responder(), break_second), profile=profile) as server:
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server))
    assert outcome.status == "finished", state.error
    assert scores(state) == TINY_SCORES and not server.rejections, server.rejections
    at, broken = next((i, c) for i, m in enumerate(state.messages) for c in m.tool_calls if c.raw)
    assert broken.arguments == "{}" and "not a JSON object" in broken.problem
    assert json.loads(broken.raw)["arguments"] == '{"file": "pets", "ids": ["1.1"', "what the model wrote, kept aside"
    result = state.messages[at + 1].content  # its result follows it (ids may repeat across turns: llama.cpp)
    assert result.startswith("Error: ") and "Call it again with valid JSON" in result
    assert "tool calls whose arguments were not a JSON object (kept aside, {} sent back) ×1" in report_of(tmp_path)


def test_a_saved_history_a_server_refuses_is_repaired_on_resume(tmp_path, tiny):
    with QuirkServer(scripted_responder()) as server:
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server, max_steps=4))
    assert outcome.status == "failed" and "max_steps" in state.error
    folder = tmp_path / "results" / "r"
    saved = json.loads((folder / "state.json").read_text())
    calls = [m for m in saved["messages"] if m["tool_calls"]]
    calls[0]["tool_calls"][0]["arguments"] = '{"file": "pets"'  # what an older version kept as the model wrote it
    calls[0]["content"], calls[0]["step"] = "<think>hm</think>Text an old version never sent", None
    (folder / "state.json").write_text(json.dumps(saved))
    with QuirkServer(scripted_responder(), profile="vllm") as server:
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server))
    assert outcome.status == "finished", state.error
    assert not server.rejections and scores(state) == TINY_SCORES
    assert any("text beside tool calls that never reached the agent" in line for line in state.log)
    assert any("not a JSON object" in line for line in state.log)
    assert "changes to a saved history a server would refuse, made on resume ×2" in report_of(tmp_path)


def test_reasoning_in_fields_or_tags_is_never_typed_nor_sent_back(tmp_path, tiny):
    with QuirkServer(rewriting(scripted_responder(), thinking_aloud), profile="vllm") as server:
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server))
    assert outcome.status == "finished", state.error
    assert scores(state) == TINY_SCORES
    typed = sent(tmp_path / "results" / "r")
    assert typed and not any("think" in t or "template" in t or "wonder" in t for t in typed)
    for request in server.requests:
        for m in request["messages"]:
            assert "reasoning" not in m and "reasoning_content" not in m
            assert "think>" not in (m.get("content") or "") or m["role"] != "assistant"
    assert state.quirks["reasoning in <think> tags, taken out of the text"] >= 3
    assert state.quirks["reasoning fields in responses (never typed, never sent back)"] == state.usage.calls
    assert any(m.raw_content and "<think>" in m.raw_content for m in state.messages), "the raw text is kept aside"


def test_a_persona_making_no_progress_stops_as_stalled_and_goes_on_once_the_limit_is_raised(tmp_path):
    """It chats on and alternates small talk with a refused next_phase; nothing is told or graded."""
    def small_talk(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if len(messages) % 2:
            return {"content": "Lovely weather today, isn't it?"}
        return {"tool_calls": [{"name": "next_phase", "arguments": "{}"}]}

    with QuirkServer(small_talk) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=persona(server, stall_calls=6))
        assert outcome.status == "stalled" and state.calls_since_progress == 6 and server.served
        assert "no progress in 6 persona calls" in state.error and "persona.stall_calls" in state.error
        report = report_of(tmp_path)
        assert "- **Status:** stalled: ` no progress in 6 persona calls" in report  # the error quoted inertly
        assert "Stopped as `stalled`" in report
        before = len(server.requests)
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=persona(server, stall_calls=6))
        assert outcome.status == "stalled" and len(server.requests) == before, "the same limit: not one more call"
    with QuirkServer(scripted_responder()) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=persona(server, stall_calls=40))
    assert outcome.status == "finished", state.error
    assert len(state.evaluations) == 10


def test_a_spent_budget_stops_the_run_and_a_raised_one_lets_it_finish(tmp_path, tiny):
    prices = {"m": {"input": 2.5, "cached_input": 1.25, "output": 10.0}}  # model "m" at gpt-4o's list price
    with QuirkServer(scripted_responder()) as server:
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server, budget_tokens=2500))
        assert outcome.status == "budget" and "persona.budget_tokens 2,500" in state.error
        assert state.usage.total_tokens >= 2500 and not state.finished
        assert "Stopped as `budget`" in report_of(tmp_path)
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server, budget_tokens=None, budget_usd=0.01),
                              prices=prices)
        assert outcome.status == "budget" and "persona.budget_usd $0.01 at $2.5 in / $1.25 cached" in state.error
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server, budget_tokens=None), prices=prices)
    assert outcome.status == "finished", state.error
    assert scores(state) == TINY_SCORES
    cost = PriceTable({k: ModelPrice(**v) for k, v in prices.items()}).run_cost(state)
    assert 0.01 < cost.usd < PriceTable({k: ModelPrice(**{**v, "cached_input": v["input"]}) for k, v in prices.items()}) \
        .run_cost(state).usd, "cached tokens are billed at the cached rate"
    assert f"- **Cost:** {money(cost.usd)}" in report_of(tmp_path)


@pytest.mark.parametrize("scale", [1.0, 1.25], ids=["tiktoken", "a tokenizer counting 25 % more"])
def test_max_tokens_is_a_real_ceiling_even_inside_a_phase_larger_than_it(tmp_path, scale):
    """Every request the server saw stays under max_tokens as it counts them: boundary cuts where they
    fit, in-phase cuts (the first phase too) where not, each one shrinking the request and shown in the
    report; an endpoint whose tokenizer counts more is followed from the usage it reports."""
    with QuirkServer(scripted_responder(), token_scale=scale) as server:
        fixed = _fixed_tokens()
        compaction = {"max_tokens": round(fixed * scale) + 800, "trim_to_tokens": 500}
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=persona(server), compaction=compaction)
    assert outcome.status == "finished", state.error
    assert len(state.evaluations) == 10 and not server.rejections
    assert max(s.prompt_tokens for s in server.served[1:]) < compaction["max_tokens"], "from the first usage on"
    cuts = state.persona_compactions
    assert any(c.in_phase for c in cuts) and any(c.in_phase and c.phase == 0 for c in cuts)
    assert all(c.tokens_after < c.tokens_before for c in cuts)
    report = report_of(tmp_path)
    assert f"- **Persona compactions:** {len(cuts)}" in report and "cut inside the phase (its brief kept)" in report
    notes = [m["content"] for r in server.requests for m in r["messages"] if "(Your context was compacted" in (m.get("content") or "")]
    assert any("`family`" in n.split("Fact files you had loaded:")[1][:80] for n in notes), \
        "a file read with facts_get_untold is listed in the note"


def _fixed_tokens() -> int:
    """System prompt and tools of the demo benchmark, as the loop counts them."""
    bench = load_benchmark(DEMO_BENCH)
    loop = PersonaLoop(bench=bench, state=RunState(run_id="x", benchmark="b", driver="d", persona_model="m"),
                       store=RunStore(Path("/nonexistent")), model=ScriptedPersona(), driver=OracleDriver(bench),
                       counter=TokenCounter(), compaction=CompactionConfig())
    return loop.fixed_tokens


def test_the_profile_seen_is_the_live_copy_and_requests_still_extend_each_other(tmp_path, tiny):
    with QuirkServer(scripted_responder()) as server:
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server))
    assert outcome.status == "finished", state.error
    assert scores(state) == TINY_SCORES
    requests = persona_requests(server)
    profiles = [m["content"] for m in requests[-1]["messages"] if "# Your profile" in (m.get("content") or "")]
    assert "1.1 I am Tom, 40" in profiles[0] and "1.1 I am Tom, 41 today" in profiles[-1]
    assert "replacing any earlier copy" in profiles[-1]
    for before, after in zip(requests, requests[1:], strict=False):
        assert after["messages"][:len(before["messages"])] == before["messages"], "byte for byte a prefix"
        assert after["tools"] == before["tools"]


@pytest.mark.parametrize("profile, schema", [("openai", "auto"), ("gemini", "plain"), ("anthropic", "auto")])
def test_cached_tokens_retries_and_each_providers_rules(tmp_path, tiny, profile, schema):
    with QuirkServer(scripted_responder(), profile=profile) as server:
        server.faults = [{"status": 429, "retry_after": 0.01}]
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server, tool_schema=schema))
    assert outcome.status == "finished", state.error
    assert scores(state) == TINY_SCORES and not server.rejections
    usage, report = state.usage, report_of(tmp_path)
    assert usage.retries == 1 and usage.retry_causes == {"HTTP 429": 1}
    assert "(1 retried by the client: HTTP 429 ×1)" in report
    if profile == "openai":
        judge = state.judge_usage  # the judge's calls, on the same endpoint, counted the same way
        assert usage.cached_tokens + judge.cached_tokens == sum(s.cached_tokens for s in server.served)
        assert usage.cache_reported == usage.calls and judge.cache_reported == judge.calls == len(TINY_SCORES)
        assert "from the provider's cache" in report
        tools = server.requests[0]["tools"]
        assert all(t["function"]["strict"] for t in tools)
    else:
        assert usage.cache_reported == 0 and "the endpoint reported no cached tokens" in report


def test_the_tool_schemas_follow_the_endpoint():
    gemini = PersonaConfig(kind="openai", base_url="https://generativelanguage.googleapis.com/v1beta/openai/")
    assert not strict_schemas(gemini) and strict_schemas(PersonaConfig(kind="openai", base_url="https://api.openai.com/v1"))
    assert strict_schemas(gemini.model_copy(update={"tool_schema": "strict"}))


def test_an_empty_turn_is_nudged_not_sent(tmp_path, tiny):
    def empty_third(answer: dict[str, Any], n: int) -> dict[str, Any]:
        return {"content": "<think>only thoughts</think>"} if n == 3 else answer

    with QuirkServer(rewriting(scripted_responder(), empty_third)) as server:
        outcome, state = play(tmp_path, benchmark=tiny, persona=persona(server))
    assert outcome.status == "finished", state.error
    assert any(m["content"] == EMPTY_TURN_NUDGE for r in server.requests for m in r["messages"])
    assert not server.rejections
