"""The tool loop of the test apps in agent mode (MMB_AGENT=1), as agent frameworks run it.

The app offers the model a `memory_search` tool and streams its first completion: reasoning (in a
`reasoning_content` or `reasoning` field), then tool calls, gathered from their deltas. It runs each
call (`memory_search` waits MMB_TOOL_PAUSE_S seconds first, as a search behind an embedding API
does), sends the call and its result back as the API wants them (the assistant's `tool_calls` with
arguments as a JSON string, one `tool` message per call id), and streams the answer. Each app shows
the events as its UI shows an agent's work. Copied beside the app as agent_loop.py; needs only
openai and the standard library.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from openai import OpenAI

ENABLED = os.environ.get("MMB_AGENT") == "1"
TOOL_PAUSE_S = float(os.environ.get("MMB_TOOL_PAUSE_S") or 0)
MAX_ROUNDS = 3  # a model that keeps calling tools gets its answer asked for without them
TOOLS = [{"type": "function", "function": {
    "name": "memory_search", "description": "Search the notes kept about the user for what the question needs.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "What to look for"}},
                   "required": ["query"]}}}]


@dataclass
class Event:
    """What the agent is doing: `thinking` (reasoning so far), `calling` (a tool started), `called` (its
    result), `answer` (the answer so far)."""

    kind: str
    text: str
    tool: str = ""
    arguments: str = ""


def memory_search(query: str, said: list[str]) -> str:
    """The user's earlier messages sharing a word with the query: the notes an agent's memory would hold."""
    if TOOL_PAUSE_S:
        time.sleep(TOOL_PAUSE_S)  # the embedding API and the vector store behind a real memory search
    words = set(re.findall(r"\w{4,}", query.lower()))
    notes = [s for s in said if s != query and words & set(re.findall(r"\w{4,}", s.lower()))]
    return json.dumps({"query": query, "notes": notes[-3:]})


def _reasoning(delta: Any) -> str:
    extra = delta.model_extra or {}
    return getattr(delta, "reasoning_content", None) or extra.get("reasoning_content") or extra.get("reasoning") or ""


def run(client: OpenAI, model: str, messages: list[dict[str, Any]]) -> Iterator[Event]:
    """The events of one turn, ending with the whole answer."""
    said = [m["content"] for m in messages if m["role"] == "user"]
    messages = list(messages)
    for round_ in range(MAX_ROUNDS + 1):
        reasoning, answer, calls = "", "", {}
        tools = TOOLS if round_ < MAX_ROUNDS else None
        stream = client.chat.completions.create(model=model, messages=messages, stream=True,
                                                **({"tools": tools} if tools else {}))
        for chunk in stream:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if piece := _reasoning(delta):
                reasoning += piece
                yield Event("thinking", reasoning)
            if delta.content:
                answer += delta.content
                yield Event("answer", answer)
            for call in delta.tool_calls or []:
                kept = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                kept["id"] = call.id or kept["id"]
                if call.function:
                    kept["name"] = call.function.name or kept["name"]
                    kept["arguments"] += call.function.arguments or ""
        if not calls:
            return
        messages.append({"role": "assistant", "content": answer or None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]})
        for c in calls.values():
            yield Event("calling", "", c["name"], c["arguments"])
            if c["name"] == "memory_search":
                result = memory_search(str(json.loads(c["arguments"] or "{}").get("query", "")), said)
            else:
                result = json.dumps({"error": f"no tool named {c['name']}"})
            yield Event("called", result, c["name"], c["arguments"])
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
