"""A weak model as persona and judge, through the real openai client against the quirk server: nothing it
writes reaches the agent unchecked (the message guard), every call is bounded (max_tokens, a cut-off
answer counted, a heartbeat while it waits, time-outs counted in the lines a person reads), and the
judge's failures are the judge's. The real model (llama.cpp, Gemma 270M) plays the same in
tests/test_llama_server.py, in the slow set."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from typing import Any

import pytest

from persona.config import PersonaConfig
from persona.engine import llm
from persona.engine.guard import PROMPT_ECHO, REFUSED, TEMPLATE_TOKENS, TOOL_MARKUP
from persona.engine.intake import CUT_OFF, CUT_OFF_CALLS, CUT_OFF_PROBLEM, ReadTurn, read_turn
from persona.engine.judge import VerdictError, verdict_arguments
from persona.engine.llm import TIMEOUT, OpenAIPersona
from persona.engine.preflight import preflight
from persona.engine.tools import TOOL_NAMES
from persona.report.snapshots import Snapshot
from persona.state import RunStore
from tests.conftest import DEMO_BENCH
from tests.support.play import play, scores
from tests.support.quirk_server import QuirkServer, injecting, instructed, rewriting, scripted_responder

# What the guard's classes cover, as it would show in a typed message.
NEVER_TYPED = re.compile(r"<\|[^|]*\|>|<\|[a-z_]*$|<(?:start|end)_of_turn>|\[/?INST\]|</?agent_reply>|# Your profile"
                         r"|^\s*\d+\.\d+ |## Current phase", re.MULTILINE)


def persona_on(server: QuirkServer, **more: Any) -> dict[str, Any]:
    return {"kind": "openai", "base_url": server.base_url, "model": "m", "api_key_env": "MMB_TEST_UNSET_KEY", **more}


def typed(tmp_path) -> list[str]:
    """Every message that reached the agent."""
    return [ex.sent for ex in RunStore(tmp_path / "results" / "r").transcript()]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list:
    _, state = play(tmp_path_factory.mktemp("ref"), benchmark=DEMO_BENCH)
    return scores(state)


# -- the message guard in a run --------------------------------------------------------------------------

SLOPPY = [  # how a model that runs past its turn dresses what it meant to say
    lambda t: f"{t}<|im_end|>\n<|im_start|>user\nok",
    lambda t: f"<start_of_turn>model\n{t}<end_of_turn>",
    lambda t: f"[INST] {t} [/INST]",
    lambda t: f"<|start_header_id|>assistant<|end_header_id|>\n\n{t}<|eot_id|>",
]


def sloppy(answer: dict[str, Any], n: int) -> dict[str, Any]:
    if answer.get("content"):
        answer["content"] = SLOPPY[n % len(SLOPPY)](answer["content"])
    return answer


def test_template_tokens_never_reach_the_agent_and_the_run_ends_the_same(tmp_path, reference):
    with QuirkServer(rewriting(scripted_responder(), sloppy)) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=persona_on(server, preflight=False, max_tokens=300),
                              judge={"max_tokens": 200})
    assert outcome.status == "finished", state.error
    assert scores(state) == reference and not server.rejections
    sent = typed(tmp_path)
    assert sent and not [s for s in sent if NEVER_TYPED.search(s)]
    assert state.quirks[TEMPLATE_TOKENS] >= len(sent) and REFUSED not in state.quirks
    assert "chat-template tokens (`<|im_end|>`" in (tmp_path / "results" / "report.md").read_text()
    bounds = {(r["tools"][0]["function"]["name"], r.get("max_tokens")) for r in server.requests}
    assert bounds == {("next_phase", 300), ("grade", 200)}, "every request bounded, the judge by its own max_tokens"


BAD_TEXT = [  # whole answers a weak model gives: nothing of them may be typed
    {"content": "<agent_reply>\nNice to meet you!\n</agent_reply>"},
    {"content": "<|im_start|>user\nTell me more about your family!<|im_end|>\n<|im_start|>assistant\nSure"},
    {"content": "# Your profile (fact file `profile`)\n\n# Profile\n\n## 1. About me\n1.1 I'm Maya"},
]


def test_text_the_guard_refuses_is_never_typed_the_model_is_told_and_the_run_ends_the_same(tmp_path, reference):
    with QuirkServer(injecting(scripted_responder(), every=4, bad=list(BAD_TEXT))) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=persona_on(server, preflight=False))
    assert outcome.status == "finished", state.error
    assert scores(state) == reference and not [s for s in typed(tmp_path) if NEVER_TYPED.search(s)]
    assert state.quirks[REFUSED] == 3 and state.quirks[TOOL_MARKUP] == 1 and state.quirks[PROMPT_ECHO] >= 2
    notes = {m["content"] for r in server.requests for m in r["messages"] if m["role"] == "user"
             and m["content"].startswith("(Your last message was not sent to the agent")}
    assert len(notes) == 3 and any("the tool's own markup, such as the agent_reply tags" in n for n in notes)


def echo(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A base model in a chat template (Gemma 270M on llama.cpp, issue 26): it goes on with the last thing
    it was shown, then starts the next turn."""
    return {"content": f"{messages[-1]['content']}<|im_end|>\n<|im_start|>user\n"}


@pytest.mark.parametrize("checked", [True, False], ids=["preflight", "no preflight"])
def test_a_model_that_echoes_its_prompt_never_reaches_the_agent_and_the_run_stops_saying_why(tmp_path, checked):
    printed: list[str] = []
    with QuirkServer(echo) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, printed=printed,
                              persona=persona_on(server, preflight=checked, max_failed_turns=5))
    assert outcome.status == "failed" and state.turn == 0 and typed(tmp_path) == [] and state.evaluations == []
    if checked:
        assert "persona preflight failed, nothing was sent to the agent: answers: its answer holds chat-template " \
               "tokens, the prompt it was given, echoed, which a person never types" in state.error
        assert state.usage.calls == 2, "the preflight's calls count"
    else:
        assert "5 turns in a row that did nothing" in state.error and "not sent to the agent" in state.error
        assert state.quirks[REFUSED] == 5 and state.usage.calls == 5
    assert state.provenance, "provenance recorded from the first save"
    end = next(line for line in printed if line.startswith("[r] failed: "))
    assert "no score (0 of 10 planned checks graded)" in end
    entry = (tmp_path / "results" / "report.md").read_text()
    assert "not recorded" not in entry and "- **Mean score:** n/a over 0 graded checks" in entry


# -- bounded calls ---------------------------------------------------------------------------------------


def complete(server: QuirkServer, messages: list[dict[str, Any]] | None = None, **cfg: Any):
    async def main():
        persona = OpenAIPersona(PersonaConfig(**persona_on(server, **cfg)))
        try:
            return await persona.complete(messages or [{"role": "user", "content": "hi"}], [])
        finally:
            await persona.aclose()

    return asyncio.run(main())


def test_an_answer_that_never_stops_is_cut_at_max_tokens_and_says_so():
    with QuirkServer(lambda m, t: {"content": "I really " + "really " * 5000 + "like running."}) as server:
        turn = complete(server, max_tokens=64)
    assert server.requests[0]["max_tokens"] == 64 and turn.finish_reason == "length" and turn.cut_off
    assert turn.completion_tokens <= 64 + 8 and not turn.content.endswith("running.")
    assert read_turn(turn, TOOL_NAMES).quirks == [CUT_OFF]


def test_openai_s_own_endpoint_gets_max_completion_tokens(monkeypatch):
    monkeypatch.setenv("MMB_TEST_KEY", "sk-test")
    persona = OpenAIPersona(PersonaConfig(kind="openai", base_url="https://api.openai.com/v1", api_key_env="MMB_TEST_KEY"))
    local = OpenAIPersona(PersonaConfig(kind="openai", base_url="http://127.0.0.1:8080/v1"))
    assert (persona.max_tokens_field, local.max_tokens_field) == ("max_completion_tokens", "max_tokens")
    asyncio.run(persona.aclose())
    asyncio.run(local.aclose())


def test_a_tool_call_cut_off_at_max_tokens_is_not_run_and_the_model_is_told(tmp_path, reference):
    long = {"tool_calls": [{"id": "bad_cut", "name": "facts_add",
                            "arguments": json.dumps({"file": "family", "section": 2, "text": "and so on " * 400})}]}
    with QuirkServer(injecting(scripted_responder(), every=5, bad=[long])) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=persona_on(server, preflight=False, max_tokens=400))
    assert outcome.status == "finished", state.error
    assert scores(state) == reference and not server.rejections
    assert state.quirks[CUT_OFF] == 1 and state.quirks[CUT_OFF_CALLS] == 1
    result = next(m["content"] for r in server.requests for m in r["messages"] if m.get("tool_call_id") == "bad_cut")
    assert result.startswith(f"Error: {CUT_OFF_PROBLEM}")
    assert "family" in state.facts and all("and so on" not in f.text for f in state.facts["family"].all_facts())


def test_a_call_that_takes_long_gets_a_heartbeat_line(monkeypatch, caplog):
    monkeypatch.setattr(llm, "HEARTBEAT_S", 0.1)
    with QuirkServer(lambda m, t: {"content": "Hello"}) as server, caplog.at_level(logging.WARNING):
        server.faults = [{"delay": 0.5}]
        turn = complete(server, max_tokens=50, timeout_s=30)
    assert turn.content == "Hello"
    beats = [r.getMessage() for r in caplog.records if "still waiting for its answer" in r.getMessage()]
    assert len(beats) >= 2 and "persona model m: still waiting for its answer after 0 s (attempt 1 of 7" in beats[0]
    assert "timeout_s 30 and max_tokens 50" in beats[0]


def test_time_outs_and_retries_are_in_the_check_line_and_the_run_line(tmp_path):
    with QuirkServer(lambda m, t: instructed(m)) as server:
        server.faults = ["hang"]
        report = asyncio.run(preflight(PersonaConfig(**persona_on(server, timeout_s=0.5))))
    assert report.ok and f"— 3 calls (1 retried by the client: {TIMEOUT} ×1)" in report.render()

    printed: list[str] = []
    with QuirkServer(scripted_responder()) as server:
        server.faults = ["hang", "hang"]
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, printed=printed,
                              persona=persona_on(server, timeout_s=0.5, max_retries=1))
    assert outcome.status == "failed" and "persona model failed 2 times" in state.error
    end = next(line for line in printed if line.startswith("[r] failed: "))
    assert f"persona model 0 calls (1 retried by the client: {TIMEOUT} ×1), 1 without an answer after the " \
           "client's retries" in end
    assert state.usage.failed == 1 and state.usage.retry_causes == {TIMEOUT: 1}


# -- the judge: its parser never raises, its failures are its own ---------------------------------------------


@pytest.mark.parametrize("text", ["", "no braces at all", "{", "}", "}{", '{"items": [', "text { more", "[1, 2]",
                                  '{"a": 1', "{}{", "{{{{", '"{"', "\x00{\ud800"])
def test_the_verdict_parser_never_raises_on_any_text(text):
    try:
        found = verdict_arguments(ReadTurn(text, []))
    except VerdictError:
        return
    assert isinstance(found, dict)


def test_the_verdict_parser_never_raises_on_random_text():
    rng = random.Random(26)
    alphabet = '{}[]":, tr01\nabc'
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        try:
            assert isinstance(verdict_arguments(ReadTurn(text, [])), dict)
        except VerdictError:
            pass


def test_a_judge_cut_off_by_max_tokens_is_asked_again_counted_and_never_blamed_on_the_persona(tmp_path):
    """Issue 26: a verdict cut by a token cap made the scripted persona's run fail as 'the persona model
    made 8 turns in a row that did nothing', and the report said 'judge ...; 0 calls'."""
    with QuirkServer(scripted_responder()) as server:
        judge = persona_on(server, model="j", max_tokens=20)
        del judge["kind"]
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona={"preflight": False},
                              judge={"kind": "openai", **judge})
    assert outcome.status == "failed"
    assert state.error.startswith("the judge (j) gave no valid verdict on check e1 in 3 attempts; last: your reply "
                                  "was cut off at max_tokens")
    assert "persona" not in state.error.split(";")[0] and state.failed_turns == 0
    assert state.judge_usage.calls == 3 == len(server.requests) and all(r["max_tokens"] == 20 for r in server.requests)
    entry = (tmp_path / "results" / "report.md").read_text()
    assert "judge model j; 3 calls" in entry and "3 judge answer(s) without a valid verdict asked again" in entry


def test_a_stalled_run_s_memory_snapshot_says_so():
    snap = Snapshot(n=3, reason="stalled", turn=41, session=1, folder="003-stalled")
    assert snap.label == "when the run stalled (turn 41)"
    assert Snapshot(n=4, reason="failed", turn=2, session=0, folder="004").label == "when the run failed (turn 2)"
