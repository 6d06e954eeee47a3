"""A deterministic stand-in for the LLM behind a chat frontend: it remembers only what it is sent.

A frontend calls chat completions with the conversation so far. This responder acknowledges a
statement and answers a question from the user's earlier statements in that same request, so it
knows everything said in the current chat and nothing from another one. That makes a frontend's
"new chat" observable in the grades: a check asked after it can only be answered if the frontend
(wrongly) still sent the old history. Every answer is recorded so tests can compare what the
model streamed with what the driver scraped from the page.

With `agent=AgentHabits(...)` it works like a memory agent's model: offered tools, it first
reasons and calls a memory search (the first completion of a turn: reasoning, then a tool call),
and answers once the tool's result comes back; without tools (an app running its own tool loop)
it reasons and answers at once. What it reasoned, called and answered is kept apart (`completions`),
and `answers` holds the answers alone: what the page's reply must equal.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from demo_agent.text import content_stems, is_question, is_search_request

ACK = "Got it, thank you for telling me. I will keep that in mind for later."
UNKNOWN = "I don't think you told me that in this chat."
SEARCHED_UNKNOWN = "I searched this conversation again, but I don't think you told me that."
PREFIX = "You told me this: "
MAX_RECALLED = 3


def text_of(content: Any) -> str:
    """A message's text: OpenAI content is a string or a list of parts ({"type": "text", "text": ...})."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def recall(question: str, statements: list[str]) -> list[str]:
    """Statements sharing the most content words with the question, the latest first."""
    wanted = content_stems(question)
    scored = [(len(wanted & content_stems(s)), i, s) for i, s in enumerate(statements)]
    best = max((score for score, _, _ in scored), default=0)
    if best == 0:
        return []
    return [s for score, _, s in sorted(scored, key=lambda t: -t[1]) if score == best][:MAX_RECALLED]


def answer(messages: list[dict[str, Any]]) -> str:
    """The reply to the last user message, from the user messages before it."""
    said = [" ".join(text_of(m.get("content")).split()) for m in messages if m.get("role") == "user"]
    said = [s for s in said if s]
    if not said:
        return ACK
    last, earlier = said[-1], said[:-1]
    searched = is_search_request(last)
    if searched:
        questions = [s for s in earlier if is_question(s)]
        if not questions:
            return "What should I look for? Ask me the question first."
        last = questions[-1]
        earlier = earlier[:earlier.index(last)]
    elif not is_question(last):
        return ACK
    found = recall(last, [s for s in earlier if not is_question(s) and not is_search_request(s)])
    if not found:
        return SEARCHED_UNKNOWN if searched else UNKNOWN
    return PREFIX + " ".join(found)


REASONING = "The user wrote to me. Before I answer I should look through my memory for notes about this."


@dataclass(frozen=True)
class AgentHabits:
    """How the model works like a memory agent (see the module's docstring)."""

    tool: str | None = None  # the tool it calls; None: the offered tool named for memory or search, else the first
    reasoning: str = REASONING
    answer_pause_s: float = 0.0  # before the first token of the answer to a tool's result: reading it takes time


@dataclass
class Step:
    """One completion the model gave: its reasoning, its tool calls ({"name", "arguments"}), or its answer."""

    reasoning: str = ""
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    answer: str | None = None
    tool_results: list[str] = field(default_factory=list)  # the tool messages it was answering


@dataclass
class ChatModel:
    """The responder for QuirkServer; `think_s` is a pause before the first token, like a model's."""

    think_s: float = 0.0
    agent: AgentHabits | None = None
    answers: list[str] = field(default_factory=list)
    completions: list[Step] = field(default_factory=list)
    requests: list[list[dict[str, Any]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def forget(self) -> None:
        """Drop what was asked and answered so far (a probe's messages before the run under test)."""
        with self._lock:
            self.answers.clear(), self.requests.clear(), self.completions.clear()

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        step = self._step(messages, tools)
        with self._lock:
            self.requests.append(messages)
            self.completions.append(step)
            if step.answer is not None:
                self.answers.append(step.answer)
        pause = self.think_s + (self.agent.answer_pause_s if self.agent and step.tool_results else 0.0)
        if pause:
            time.sleep(pause)  # the model's time to its first token, not a synchronisation
        calls = step.tool_calls
        return {"content": step.answer, "tool_calls": calls} | ({"reasoning": step.reasoning} if step.reasoning else {})

    def _step(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
        if self.agent is None:
            return Step(answer=answer(messages))
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        results = [text_of(m.get("content")) for m in messages[last_user + 1:] if m.get("role") == "tool"]
        if results:  # the search came back: the answer, from what the user said (tool results hold no facts it lacks)
            return Step(answer=answer(messages), tool_results=results)
        if not tools:  # the app runs the tools itself, or there are none: think, then answer
            return Step(reasoning=self.agent.reasoning, answer=answer(messages))
        query = text_of(messages[last_user].get("content")) if last_user >= 0 else ""
        return Step(reasoning=self.agent.reasoning, tool_calls=[search_call(tools, self.agent.tool, query)])


def search_call(tools: list[dict[str, Any]], wanted: str | None, query: str) -> dict[str, str]:
    """A call of the memory-search tool among `tools` ({"name", "arguments"}), its required parameters
    filled: strings with the query, numbers with 3, flags false."""
    functions = [t.get("function") or {} for t in tools]
    names = [str(f.get("name")) for f in functions]
    if wanted is not None and wanted not in names:
        raise ValueError(f"the model was told to call {wanted!r}, but the request offers only {names}")
    fitting = [n for n in names if "memory" in n.lower() or "search" in n.lower()]
    name = wanted or (fitting or names)[0]
    schema = functions[names.index(name)].get("parameters") or {}
    properties = schema.get("properties") or {}
    required = schema.get("required") or list(properties)[:1]  # none required: the first, as a model would
    filler = {"string": query, "integer": 3, "number": 3, "boolean": False}
    arguments = {key: filler.get((properties.get(key) or {}).get("type", "string"), query) for key in required}
    return {"name": name, "arguments": json.dumps(arguments)}
