"""A scripted judge behind the quirk server (tests/support/quirk_server.py): it reads the judge's request as a model
would (rubric, JSON with question, expected items and conversation, or the agent's memory for the
autopsy) and answers with a `grade` call.

By default it gives the offline rule judge's verdict, so runs with an LLM persona on the test server
are graded as the scripted persona's runs are; tests pass their own `verdict` to script a judge."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from persona.benchmark.phases import Category, Check
from persona.engine.judge import rule_memory_verdict, rule_verdict
from persona.state import QuotedTurn

Verdict = Callable[[Check, list[QuotedTurn]], dict[str, Any]]
MemoryVerdict = Callable[[Check, str], dict[str, Any]]
Responder = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]


def is_judge_request(tools: list[dict[str, Any]]) -> bool:
    return any(t.get("function", {}).get("name") == "grade" for t in tools)


def _request(messages: list[dict[str, Any]]) -> tuple[Check, dict[str, Any]]:
    data = json.loads(next(m["content"] for m in messages if m["role"] == "user"))
    check = Check(id="judged", category=Category(data["category"]), question=data["question"],
                  answer="; ".join(data["expected_items"]))
    return check, data


def read_request(messages: list[dict[str, Any]]) -> tuple[Check, list[QuotedTurn]]:
    """The check and the conversation of a judge request (its first user message)."""
    check, data = _request(messages)
    turns = [QuotedTurn(turn=i, sent=t["user"], reply=t["agent"]) for i, t in enumerate(data["conversation"], 1)]
    return check, turns


def judge_answer(messages: list[dict[str, Any]], verdict: Verdict = rule_verdict,
                 memory_verdict: MemoryVerdict = rule_memory_verdict) -> dict[str, Any]:
    check, data = _request(messages)
    if "agent_memory" in data:  # the memory autopsy's question
        answer = memory_verdict(check, data["agent_memory"])
    else:
        answer = verdict(*read_request(messages))
    arguments = json.dumps(answer, ensure_ascii=False)
    return {"content": None, "tool_calls": [{"name": "grade", "arguments": arguments}]}  # the server's profile names it


def with_judge(responder: Responder, verdict: Verdict = rule_verdict) -> Responder:
    """`responder` for everything but the judge's requests, which get `verdict`'s answer."""
    def respond(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        return judge_answer(messages, verdict) if is_judge_request(tools) else responder(messages, tools)

    return respond
