"""How hard a run tries before it stops on a sick chat (config.jsonc `agent.recovery`), and how long a
rate-limit message asks us to wait. Kept apart from resilient.py so the config loads without Playwright.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from .settings import Strict

_WAIT = re.compile(r"\b(?:in|after|wait|for)\s+(?:about\s+|another\s+)?(\d+(?:[.,]\d+)?)\s*"
                   r"(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b", re.IGNORECASE)


class Recovery(Strict):
    """config.jsonc `agent.recovery`: how hard to try before a run stops on a sick chat. By default a run
    rides out an agent that is down or restarting for up to give_up_after_s (10 minutes): an unattended
    marathon meets deploys and restarts."""

    attempts: int | None = Field(None, ge=1, description="At most this many tries per message, chat opening or "
                                 "new chat (unset: as many as fit in give_up_after_s)")
    give_up_after_s: float = Field(600.0, ge=0, description="Keep trying one step for this long from its first "
                                   "failure, then stop the run (resumable)")
    backoff_s: float = Field(2.0, ge=0, description="Wait before the 2nd try; doubles with each further one")
    max_backoff_s: float = Field(60.0, ge=0, description="Longest wait between tries")
    rate_limit_wait_s: float = Field(30.0, ge=0, description="Wait after a rate-limit message that names no time")
    no_reply: Literal["stop", "wait"] = Field(
        "stop", description="A message the chat shows but no reply comes to: 'stop' the run (resumable; the message "
                            "is never typed again), or 'wait' on, reopening the chat, for up to no_reply_wait_s")
    no_reply_wait_s: float = Field(1800.0, ge=0, description="With no_reply 'wait': how long to wait for the reply in all")
    resend_unconfirmed: bool = Field(
        False, description="Type a message again when the chat cannot show whether the agent got it (a chat that "
                           "forgets its history on reload, no user_message selector); each time is counted in the "
                           "report. Off: the run stops instead")


def wait_named_in(text: str) -> float | None:
    """Seconds a message asks us to wait: 'try again in 20 s', 'retry after 1.5 minutes'."""
    m = _WAIT.search(text)
    if not m:
        return None
    unit = m.group(2).lower()
    factor = 0.001 if unit == "ms" or unit.startswith("milli") else 3600 if unit[0] == "h" else 60 if unit[0] == "m" else 1
    return float(m.group(1).replace(",", ".")) * factor
