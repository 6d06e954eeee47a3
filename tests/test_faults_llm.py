"""The persona LLM failing, through the real openai client against a local server: HTTP errors,
timeouts, junk bodies, broken or unknown tool calls, empty turns. Transient failures are retried by the
client itself (its backoff, Retry-After), each retry counted; bad turns go back to the model as tool
errors; a model that keeps failing stops the run."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from persona.config import PersonaConfig
from persona.engine.llm import DROPPED, JUNK, TIMEOUT, OpenAIPersona
from persona.engine.loop import EMPTY_TURN_NUDGE
from persona.engine.model import ModelTurn
from persona.errors import RunError
from tests.conftest import DEMO_BENCH
from tests.support.play import play, scores
from tests.support.quirk_server import QuirkServer, injecting, scripted_responder

HELLO = [{"role": "user", "content": "hi"}]
SAY = {"content": "Hello there"}
FAST = 0.01  # a Retry-After short enough for tests; the client honours it for every retried status


def complete(server: QuirkServer, **cfg: Any) -> ModelTurn:
    """One persona turn through the real client, its own retries and timeout."""
    async def main() -> ModelTurn:
        settings = {"api_key_env": "MMB_TEST_UNSET_KEY", **cfg}
        persona = OpenAIPersona(PersonaConfig(kind="openai", base_url=server.base_url, model="m", **settings))
        try:
            return await persona.complete(HELLO, [])
        finally:
            await persona.aclose()

    return asyncio.run(main())


def fast(status: int) -> dict[str, Any]:
    return {"status": status, "retry_after": FAST}


@pytest.mark.parametrize("faults, causes", [
    ([fast(429), fast(500)], ["HTTP 429", "HTTP 500"]),
    ([fast(502), fast(503), fast(504)], ["HTTP 502", "HTTP 503", "HTTP 504"]),
    ([fast(408), fast(409)], ["HTTP 408", "HTTP 409"]),
    (["garbage"], [JUNK]), (["html"], [JUNK]), (["drop"], [DROPPED]),
], ids=["429+500", "502-504", "408+409", "garbage", "html", "drop"])
def test_transient_failures_are_retried_by_the_client_and_each_retry_is_counted(faults, causes):
    with QuirkServer(lambda m, t: SAY) as server:
        server.faults = list(faults)
        turn = complete(server)
    assert turn.content == "Hello there" and len(server.requests) == len(faults) + 1
    assert turn.retries == causes


def test_retry_after_is_honoured_up_to_the_clients_limit():
    with QuirkServer(lambda m, t: SAY) as server:
        server.faults = [{"status": 429, "retry_after": 0.4}]
        began = time.monotonic()
        turn = complete(server)
    assert turn.retries == ["HTTP 429"] and time.monotonic() - began >= 0.4
    with QuirkServer(lambda m, t: SAY) as server:
        server.faults = [{"status": 429, "retry_after": 3600, "message": "come back in an hour"}]
        with pytest.raises(RunError, match="HTTP 429.*come back in an hour") as err:
            complete(server)
    assert len(server.requests) == 1 and "run again later" in str(err.value)


def test_a_hanging_response_times_out_and_is_retried():
    with QuirkServer(lambda m, t: SAY) as server:
        server.faults = ["hang", "hang"]
        turn = complete(server, timeout_s=0.5)
    assert turn.content == "Hello there" and turn.retries == [TIMEOUT, TIMEOUT]


def test_retries_have_a_limit():
    with QuirkServer(lambda m, t: SAY) as server:
        server.faults = [fast(500)] * 10
        with pytest.raises(RunError, match=r"failed 3 times, last: HTTP 500: .*injected 500"):
            complete(server, max_retries=2)
    assert len(server.requests) == 3


@pytest.mark.parametrize("status, hint", [(400, "refused the request"), (404, "check persona.base_url"),
                                          (401, "persona.api_key_env")])
def test_permanent_errors_stop_at_once_with_the_endpoints_message(status, hint):
    with QuirkServer(lambda m, t: SAY) as server:
        server.faults = [{"status": status, "message": "context length exceeded"}]
        with pytest.raises(RunError, match=hint) as err:
            complete(server)
    assert f"HTTP {status}" in str(err.value) and "context length exceeded" in str(err.value)
    assert len(server.requests) == 1


def test_an_endpoint_echoing_the_key_does_not_get_it_into_the_error(monkeypatch):
    key = "sk-echo-me-0123456789abcdef"
    monkeypatch.setenv("MMB_TEST_ECHO_KEY", key)
    with QuirkServer(lambda m, t: SAY) as server:
        server.faults = [{"status": 401, "message": f"Incorrect API key provided: {key}"}]
        with pytest.raises(RunError) as err:
            complete(server, api_key_env="MMB_TEST_ECHO_KEY")
    assert key not in str(err.value) and "Incorrect API key provided: ***" in str(err.value)


# -- bad turns in a whole run (oracle agent: the persona's side is the point here) ------------------

BAD_TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"id": "bad_json", "name": "facts_read", "arguments": '{"file": "family"'}]},
    {"tool_calls": [{"id": "bad_tool", "name": "remember_everything", "arguments": "{}"}]},
    {"tool_calls": [{"id": "bad_missing", "name": "facts_edit", "arguments": '{"file": "family"}'}]},
    {"tool_calls": [{"id": "bad_type", "name": "facts_add", "arguments": '{"file": "family", "section": "two", "text": 3}'}]},
    {"tool_calls": [{"id": "bad_extra", "name": "next_phase", "arguments": '{"force": true}'}]},
    {"tool_calls": [{"id": "bad_list", "name": "facts_read", "arguments": "[1, 2]"}]},
    {"content": ""},
    {"content": "<think>only thoughts, nothing to say</think>"},
    {"tool_calls": [{"id": "bad_noname", "name": "", "arguments": "{}"}]},
]


def openai_persona(server: QuirkServer, **more: Any) -> dict[str, Any]:
    """The persona section of a config; no preflight, whose requests would shift the injected turns."""
    return {"kind": "openai", "base_url": server.base_url, "model": "m", "api_key_env": "MMB_TEST_UNSET_KEY",
            "preflight": False, **more}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list:
    """The demo benchmark against the oracle agent with the scripted persona, nothing failing."""
    _, state = play(tmp_path_factory.mktemp("ref"), benchmark=DEMO_BENCH)
    assert state.status == "finished"
    return scores(state)


def test_bad_turns_go_back_to_the_model_as_errors_and_the_run_ends_the_same(tmp_path, reference):
    with QuirkServer(injecting(scripted_responder(), every=3, bad=BAD_TURNS)) as server:
        server.faults = [500, "garbage"]
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=openai_persona(server))
    assert outcome.status == "finished", state.error
    assert scores(state) == reference
    seen = {m["tool_call_id"]: m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool"}
    assert "are not a JSON object (Expecting" in seen["bad_json"] and "{\"file\": \"family\"" in seen["bad_json"]
    assert "unknown tool 'remember_everything'" in seen["bad_tool"]
    assert "missing argument(s) 'id', 'text'" in seen["bad_missing"]
    assert "argument 'section' must be an integer" in seen["bad_type"]
    assert "unknown argument(s) 'force'" in seen["bad_extra"]
    assert "a JSON list, not an object" in seen["bad_list"]
    assert any("needs the name of a tool" in text for text in seen.values())
    nudged = [r for r in server.requests if r["messages"][-1].get("content") == EMPTY_TURN_NUDGE]
    assert len(nudged) == 2 and state.failed_turns == 0


@pytest.mark.parametrize("profile", ["llamacpp", "kimi", "gemini"])
def test_call_ids_as_servers_write_them(tmp_path, reference, profile):
    """llama.cpp repeats call_0 every turn, Kimi numbers its ids per turn, Gemini sends none: results
    are matched by position, a server gets its own ids back, and missing ids get ours."""
    schema = "plain" if profile == "gemini" else "auto"  # auto picks plain for Google's own host
    with QuirkServer(scripted_responder(), profile=profile) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=openai_persona(server, tool_schema=schema))
    assert outcome.status == "finished", state.error
    assert scores(state) == reference and not server.rejections
    ids = [c.id for m in state.messages for c in m.tool_calls]
    if profile == "gemini":
        assert all(i.startswith("mmb_") for i in ids) and len(ids) == len(set(ids))
        assert state.quirks["tool-call ids missing or repeated within a turn, replaced"] == len(ids)
    else:
        assert len(set(ids)) < len(ids), "repeated across turns, replayed unchanged"
        assert not any(i.startswith("mmb_") for i in ids)


def test_a_model_that_keeps_failing_stops_the_run_and_it_resumes_later(tmp_path, reference):
    def broken(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        return {"tool_calls": [{"id": f"bad_{len(messages)}", "name": "facts_read", "arguments": "{oops"}]}

    good = scripted_responder()
    calls = [0]

    def fails_in_phase_two(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        calls[0] += 1
        in_phase_two = any("(2 of " in (m.get("content") or "") for m in messages if m["role"] == "tool")
        return broken(messages, tools) if in_phase_two else good(messages, tools)

    with QuirkServer(fails_in_phase_two) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=openai_persona(server, max_failed_turns=4))
    assert outcome.status == "failed"
    assert "4 turns in a row that did nothing" in state.error and "are not a JSON object" in state.error
    assert state.phase == 1 and state.failed_turns == 4
    told_before = [e.check_id for e in state.evaluations]

    clean = injecting(scripted_responder(), every=10**9, bad=[])  # hides the failed turns, like a model moving on
    with QuirkServer(clean) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=openai_persona(server, max_failed_turns=4))
    assert outcome.status == "finished", state.error
    assert scores(state) == reference and [e.check_id for e in state.evaluations][:len(told_before)] == told_before


def test_arguments_are_checked_against_the_schema():
    """A unit view of the same rule: arguments checked against the schema before the tool runs."""
    from persona.engine.tools import argument_problem

    assert argument_problem("facts_mark_told", {"file": "f", "ids": [{"a": 1}]}) == \
        "argument 'ids' must be an array, not [{\"a\": 1}]"
    assert argument_problem("log_evaluation", {"check_id": "q", "score": "ten", "answer": "", "comment": ""}) == \
        "argument 'score' must be a number, not \"ten\""
    assert argument_problem("log_evaluation", {"check_id": "q", "score": "7", "answer": "", "comment": ""}) is None
    assert argument_problem("facts_add", {"file": "f", "section": True, "text": "t"}).startswith("argument 'section'")
