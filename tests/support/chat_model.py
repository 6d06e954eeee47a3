"""A deterministic stand-in for the LLM behind a chat frontend: it remembers only what it is sent.

A frontend calls chat completions with the conversation so far. This responder acknowledges a
statement and answers a question from the user's earlier statements in that same request, so it
knows everything said in the current chat and nothing from another one. That makes a frontend's
"new chat" observable in the grades: a check asked after it can only be answered if the frontend
(wrongly) still sent the old history. Every answer is recorded so tests can compare what the
model streamed with what the driver scraped from the page.
"""

from __future__ import annotations

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


@dataclass
class ChatModel:
    """The responder for QuirkServer; `think_s` is a pause before the first token, like a model's."""

    think_s: float = 0.0
    answers: list[str] = field(default_factory=list)
    requests: list[list[dict[str, Any]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        text = answer(messages)
        with self._lock:
            self.requests.append(messages)
            self.answers.append(text)
        if self.think_s:
            time.sleep(self.think_s)
        return {"content": text, "tool_calls": []}
