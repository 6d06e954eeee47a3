"""The agent behind every widget backend: it remembers each session, and nothing across sessions.

A widget sends only the new message and a session id (n8n's sessionId, Flowise's chatId, Direct
Line's conversation), as the real servers expect; the agent keeps each session's history, as an
n8n AI Memory node or a Flowise buffer memory does, and answers with the frontend tests' model
(tests/support/chat_model.answer): a statement is acknowledged, a question answered from what was
said earlier in the same session. So a "new chat" that reaches the backend makes the agent forget,
and a check asked after it scores 0, which proves the reset in the grades. (DemoMind's brain keeps
notes across chats: it would answer that check from memory and hide whether the reset happened.)

Every message is recorded with its session, so a test can tell that nothing was typed twice and
which messages each session got.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tests.support.chat_model import answer


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

    def history(self, session: str) -> list[dict[str, str]]:
        with self._lock:
            return list(self.sessions.get(session, []))

    def think(self) -> None:
        if self.think_s:
            time.sleep(self.think_s)  # a model's pause before its first token, not a synchronisation

    def pause(self) -> None:
        if self.chunk_delay_s:
            time.sleep(self.chunk_delay_s)
