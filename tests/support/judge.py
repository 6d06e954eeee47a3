"""A scripted judge behind the local OpenAI-compatible server: it reads the judge's request as a model
would (rubric, JSON with question, expected items and conversation) and answers with a `grade` call.

By default it gives the offline rule judge's verdict, so runs with an LLM persona on the test server
are graded as the scripted persona's runs are; tests pass their own `verdict` to script a judge."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from persona.benchmark.phases import Category, Check
from persona.engine.judge import rule_verdict
from persona.state import QuotedTurn

Verdict = Callable[[Check, list[QuotedTurn]], dict[str, Any]]


def is_judge_request(tools: list[dict[str, Any]]) -> bool:
    return any(t.get("function", {}).get("name") == "grade" for t in tools)


def read_request(messages: list[dict[str, Any]]) -> tuple[Check, list[QuotedTurn]]:
    """The check and the conversation of a judge request (its first user message)."""
    data = json.loads(next(m["content"] for m in messages if m["role"] == "user"))
    check = Check(id="judged", category=Category(data["category"]), question=data["question"],
                  answer="; ".join(data["expected_items"]))
    turns = [QuotedTurn(turn=i, sent=t["user"], reply=t["agent"]) for i, t in enumerate(data["conversation"], 1)]
    return check, turns


def judge_answer(messages: list[dict[str, Any]], verdict: Verdict = rule_verdict) -> dict[str, Any]:
    check, turns = read_request(messages)
    arguments = json.dumps(verdict(check, turns), ensure_ascii=False)
    return {"content": None, "tool_calls": [{"id": f"call_grade_{len(messages)}", "name": "grade", "arguments": arguments}]}
