"""The agent behind every widget backend: it remembers each session, and nothing across sessions.

A widget sends only the new message and a session id (n8n's sessionId, Flowise's chatId, Direct
Line's conversation), as the real servers expect; the agent keeps each session's history, as an
n8n AI Memory node or a Flowise buffer memory does, and answers with the frontend tests' model
(tests/support/chat_model.answer): a statement is acknowledged, a question answered from what was
said earlier in the same session. So a "new chat" that reaches the backend makes the agent forget,
and a check asked after it scores 0, which proves the reset in the grades. (DemoMind's brain keeps
notes across chats: it would answer that check from memory and hide whether the reset happened.)

Every message is recorded with its session, so a test can tell that nothing was typed twice and
which messages each session got. A backend that shows the agent's work (assistant-ui's data-stream
runtime) asks `work_for` what to show before the answer: its reasoning and a memory search, whose
result takes `tool_pause_s`; that is recorded in `work`, apart from the answers.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tests.support.chat_model import REASONING, answer, recall


@dataclass(frozen=True)
class Work:
    """What the agent shows before its answer: its reasoning, and one tool call with its result."""

    reasoning: str
    tool: str
    arguments: str  # JSON
    result: str  # JSON


def chunks(text: str, size: int = 6) -> list[str]:
    """The reply in the small pieces a model streams."""
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


@dataclass
class SessionAgent:
    think_s: float = 0.8  # before the first token: the widget shows its typing indicator
    chunk_delay_s: float = 0.05
    sessions: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    received: list[tuple[str, str]] = field(default_factory=list)  # (session, text) in arrival order
    answers: list[str] = field(default_factory=list)
    tool_pause_s: float = 0.0  # the memory search's time, between the tool call and its result
    at_work: bool = False  # a backend that can (Flowise's) shows the agent's work before the answer
    work: list[Work] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(self, session: str, text: str) -> str:
        """Record the user's message in its session and return the answer (the caller streams it)."""
        with self._lock:
            history = self.sessions.setdefault(session, [])
            history.append({"role": "user", "content": text})
            said = answer(history)
            history.append({"role": "assistant", "content": said})
            self.received.append((session, text))
            self.answers.append(said)
        return said

    def reply_to_history(self, messages: list[dict[str, Any]], session: str) -> str:
        """For a client that sends the whole conversation (assistant-ui's LocalRuntime adapter)."""
        said = answer(messages)
        last = next((m for m in reversed(messages) if m.get("role") == "user"), {"content": ""})
        with self._lock:
            self.sessions[session] = [*messages, {"role": "assistant", "content": said}]
            self.received.append((session, str(last.get("content", ""))))
            self.answers.append(said)
        return said

    def work_for(self, messages: list[dict[str, Any]]) -> Work:
        """The reasoning and memory search shown before answering the last message (recorded)."""
        said = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
        query = said[-1] if said else ""
        notes = recall(query, said[:-1])
        work = Work(REASONING, "memory_search", json.dumps({"query": query}), json.dumps({"notes": notes}))
        with self._lock:
            self.work.append(work)
        return work

    def run_tool(self) -> None:
        if self.tool_pause_s:
            time.sleep(self.tool_pause_s)  # the search behind an embedding API, not a synchronisation

    def history(self, session: str) -> list[dict[str, str]]:
        with self._lock:
            return list(self.sessions.get(session, []))

    def think(self) -> None:
        if self.think_s:
            time.sleep(self.think_s)  # a model's pause before its first token, not a synchronisation

    def pause(self) -> None:
        if self.chunk_delay_s:
            time.sleep(self.chunk_delay_s)
