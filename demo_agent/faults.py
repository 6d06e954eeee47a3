"""Fault knobs for DemoMind's web chat, so tests can watch a driver meet a misbehaving agent.

Each `*_next` knob applies to that many of the next chat messages, then the agent is healthy again.
Tests set them on `DemoChatServer.faults` at any time; a run started from the CLI takes them from
the environment variable MMB_DEMO_FAULTS as JSON, e.g. `{"error_next": 2, "slow_s": 0.5}`.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field, fields

ENV = "MMB_DEMO_FAULTS"
RATE_LIMIT_TEXT = "Rate limit reached: too many requests. Please try again in {seconds:g} seconds."


@dataclass
class Faults:
    error_next: int = 0  # answer HTTP 500 before the agent sees the message: an error bubble in the chat
    rate_limit_next: int = 0  # reply with a rate-limit message instead; the message is not taken
    hang_next: int = 0  # never answer (the reply that never comes); the message is not taken
    drop_next: int = 0  # take the message and reply, but drop the connection mid-stream
    slow_s: float = 0.0  # wait this long before each reply starts streaming
    token_delay_s: float | None = None  # override the pause between streamed chunks
    rate_limit_retry_s: float = 1.0  # the wait the rate-limit message asks for
    set_cookie: str = ""  # a session cookie value the chat page sets (for secret-leak tests)
    inject_next: int = 0  # the next replies end with `inject_text` as streamed (the agent's memory keeps them clean)
    inject_text: str = "\ud83d"  # e.g. a lone UTF-16 surrogate or a NUL: text that breaks naive JSON handling
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def from_env(cls) -> Faults:
        raw = os.environ.get(ENV, "").strip()
        if not raw:
            return cls()
        data = json.loads(raw)
        known = {f.name for f in fields(cls) if not f.name.startswith("_")}
        if not isinstance(data, dict) or set(data) - known:
            raise ValueError(f"{ENV}: expected a JSON object with keys from {', '.join(sorted(known))}")
        return cls(**data)

    def take(self, knob: str) -> bool:
        """Use one count of a `*_next` knob; False when it is spent."""
        with self._lock:
            left = getattr(self, knob)
            if left <= 0:
                return False
            setattr(self, knob, left - 1)
            return True

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
