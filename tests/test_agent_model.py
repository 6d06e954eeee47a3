"""The local model's agent mode, through the real openai client: it reasons, calls a memory search,
and answers once the result comes back, streamed as real servers stream it; the history a frontend
sends back is still checked as strictly as OpenAI checks it."""

from __future__ import annotations

import json
import time
from typing import Any

import openai
import pytest

from tests.support.chat_model import ACK, PREFIX, REASONING, AgentHabits, ChatModel
from tests.support.quirk_server import QuirkServer

MEMORY_SEARCH = {"type": "function", "function": {
    "name": "memory_search", "description": "Search the notes kept about the user.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                   "required": ["query", "limit"]}}}
OTHER = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}
TOLD = {"role": "user", "content": "My dog is called Biscuit."}
ASKED = {"role": "user", "content": "What is my dog called?"}


def _streamed(client: openai.OpenAI, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """One streamed completion as a frontend gathers it: reasoning and content deltas, calls by index."""
    got: dict[str, Any] = {"reasoning_content": "", "reasoning": "", "content": "", "calls": {}, "chunks": 0}
    for chunk in client.chat.completions.create(model="m", messages=messages, stream=True, **extra):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        got["chunks"] += 1
        for name in ("reasoning_content", "reasoning"):
            got[name] += (delta.model_extra or {}).get(name) or ""
        got["content"] += delta.content or ""
        for call in delta.tool_calls or []:
            kept = got["calls"].setdefault(call.index, {"id": "", "name": "", "arguments": ""})
            kept["id"] = call.id or kept["id"]
            kept["name"] = (call.function and call.function.name) or kept["name"]
            kept["arguments"] += (call.function and call.function.arguments) or ""
        got["finish"] = choice.finish_reason or got.get("finish")
    return got


def _call_turn(call: dict[str, str], result: str) -> list[dict[str, Any]]:
    """The assistant's call and the tool's result, as a frontend sends them back."""
    return [{"role": "assistant", "content": None, "tool_calls": [
                {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
            {"role": "tool", "tool_call_id": call["id"], "content": result}]


def test_offered_a_memory_search_the_model_reasons_calls_it_then_answers() -> None:
    model = ChatModel(agent=AgentHabits())
    with QuirkServer(model) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        first = _streamed(client, [TOLD, {"role": "assistant", "content": ACK}, ASKED], tools=[OTHER, MEMORY_SEARCH])
        assert first["reasoning_content"] == REASONING and first["content"] == ""
        assert first["finish"] == "tool_calls" and list(first["calls"]) == [0]
        call = first["calls"][0]
        # the arguments came in pieces and join into the JSON a tool takes, its required fields filled
        assert call["name"] == "memory_search" and call["id"].startswith("call_")
        assert json.loads(call["arguments"]) == {"query": ASKED["content"], "limit": 3}
        assert first["chunks"] > len(REASONING) // 8 + 2

        second = _streamed(client, [TOLD, {"role": "assistant", "content": ACK}, ASKED,
                                    *_call_turn(call, "note: the dog is called Biscuit")], tools=[OTHER, MEMORY_SEARCH])
        assert second["content"] == PREFIX + TOLD["content"] and second["reasoning_content"] == ""
        assert second["finish"] == "stop" and not second["calls"]

    # the answers alone are the replies; reasoning, the call and the result are kept apart
    assert model.answers == [PREFIX + TOLD["content"]]
    thought, answered = model.completions
    assert (thought.reasoning, thought.answer, [c["name"] for c in thought.tool_calls]) == (REASONING, None, ["memory_search"])
    assert (answered.reasoning, answered.tool_results) == ("", ["note: the dog is called Biscuit"])


@pytest.mark.parametrize(("reasoning_as", "fields", "inline"), [
    ("reasoning_content", ["reasoning_content"], False), ("reasoning", ["reasoning"], False),
    ("both", ["reasoning_content", "reasoning"], False), ("think", [], True)])
def test_reasoning_comes_back_where_the_server_puts_it(reasoning_as, fields, inline) -> None:
    with QuirkServer(ChatModel(agent=AgentHabits(tool="memory_search")), reasoning_as=reasoning_as) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        got = _streamed(client, [ASKED], tools=[MEMORY_SEARCH])
    assert [f for f in ("reasoning_content", "reasoning") if got[f] == REASONING] == fields
    assert got["content"] == (f"<think>{REASONING}</think>" if inline else "")
    assert got["calls"][0]["name"] == "memory_search"


def test_without_tools_it_reasons_and_answers_at_once() -> None:
    """An app that runs its own tool loop sends no tools: the model thinks and answers in one go."""
    model = ChatModel(agent=AgentHabits())
    with QuirkServer(model, profile="vllm") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        got = _streamed(client, [TOLD])
    assert (got["reasoning"], got["content"], got["calls"]) == (REASONING, ACK, {})
    assert model.answers == [ACK]


def test_the_answer_after_a_tool_waits_for_the_models_pause() -> None:
    model = ChatModel(agent=AgentHabits(answer_pause_s=0.6))
    with QuirkServer(model) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        began = time.monotonic()
        call = _streamed(client, [ASKED], tools=[MEMORY_SEARCH])["calls"][0]
        called_s = time.monotonic() - began
        began = time.monotonic()
        _streamed(client, [ASKED, *_call_turn(call, "no notes")], tools=[MEMORY_SEARCH])
        answered_s = time.monotonic() - began
    assert called_s < 0.5 <= 0.6 <= answered_s


def test_a_model_told_to_call_a_tool_the_request_lacks_says_so() -> None:
    from tests.support.chat_model import search_call

    with pytest.raises(ValueError, match="told to call 'recall'.*offers only \\['get_time'\\]"):
        search_call([OTHER], "recall", "q")


@pytest.mark.parametrize(("history", "error"), [
    ([ASKED, {"role": "tool", "tool_call_id": "call_1", "content": "x"}], "must be a response to a preceeding"),
    ([ASKED, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "memory_search", "arguments": "{}"}}]}, ASKED],
     "did not have response messages: call_1"),
    ([ASKED, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "memory_search", "arguments": {"query": "q"}}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "x"}], "cannot unmarshal object"),
    ([ASKED, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "memory_search", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "call_2", "content": "x"}], "must be a response to a preceeding"),
], ids=["result-without-call", "call-without-result", "arguments-as-object", "result-for-another-id"])
def test_the_tool_history_a_frontend_sends_back_is_checked_strictly(history, error) -> None:
    model = ChatModel(agent=AgentHabits())
    with QuirkServer(model, profile="vllm") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError, match=error):
            client.chat.completions.create(model="m", messages=history, tools=[MEMORY_SEARCH], stream=True)
    assert model.completions == [] and len(server.rejections) == 1
