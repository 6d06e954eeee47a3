"""The interface every chat driver implements, and what it returns."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

REPLACEMENT = "\ufffd"
# C0 controls but tab and line breaks (NUL, ESC...), DEL and C1 (an 8-bit CSI drives some terminals).
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def storable(text: str) -> tuple[str, int]:
    """Text scraped from a page, safe to store and show, and how many characters were replaced by U+FFFD:
    lone UTF-16 surrogates (a page's half emoji: JSON and UTF-8 cannot carry them) and control characters."""
    fixed = 0
    if _SURROGATES.search(text):  # a pair split into two code points is joined; a lone half is replaced
        joined = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        fixed, text = joined.count(REPLACEMENT) - text.count(REPLACEMENT), joined
    text, controls = _CONTROLS.subn(REPLACEMENT, text)
    return text, fixed + controls


@dataclass
class Reply:
    """The agent's answer to one message: one or more bubbles, complete. Whatever a driver scraped is
    made `storable` here, at the boundary; `repaired` counts the characters replaced."""

    bubbles: list[str]
    signal: str = ""  # which completion signals fired, e.g. "busy-gone+done+stable(150ms)" (see reply_watch)
    seconds: float = 0.0  # from send to complete
    notices: list[str] = field(default_factory=list)  # UI notices seen meanwhile (e.g. "context compacted")
    repaired: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        bubbles, notices = [storable(b) for b in self.bubbles], [storable(n) for n in self.notices]
        self.bubbles, self.notices = [b for b, _ in bubbles], [n for n, _ in notices]
        self.repaired = sum(n for _, n in bubbles + notices)

    @property
    def text(self) -> str:
        return "\n\n".join(b for b in self.bubbles if b)


@dataclass
class SessionInfo:
    url: str | None
    reset_sign: str = ""  # how the reset was verified, e.g. "url changed; no messages left"


class DriverError(Exception):
    """The chat UI did not behave; names the step, the selector, and a screenshot when one was taken."""

    def __init__(self, message: str, *, screenshot: Path | None = None):
        self.screenshot = screenshot
        super().__init__(message + (f" (screenshot: {screenshot})" if screenshot else ""))


class ReplyTimeout(DriverError):
    pass


class SelectorError(DriverError):
    """A selector of the profile that no page can match (not valid CSS): retrying cannot help."""


class AgentErrorReply(DriverError):
    """The chat showed an error (an error bubble, a failed request) where the reply should be."""

    def __init__(self, message: str, *, text: str, screenshot: Path | None = None):
        self.text = text
        super().__init__(message, screenshot=screenshot)


class RateLimited(AgentErrorReply):
    """The chat said to slow down ("rate limit reached, try again in 20 s"); `text` says how long."""


OnSent = Callable[[], Awaitable[None]]


class ChatDriver(ABC):
    """One chat with one agent. Drivers are async; one instance per run."""

    name: str = "driver"

    @abstractmethod
    async def open(self, session_url: str | None, session_index: int = 0) -> SessionInfo:
        """Open the chat: the saved session to resume, or a fresh one when None."""

    @abstractmethod
    async def send(self, text: str, on_sent: OnSent | None = None) -> Reply:
        """Type and send `text`, call `on_sent` once the UI shows it sent, wait for the full reply."""

    @abstractmethod
    async def user_message_count(self) -> int | None:
        """User messages visible in the chat; None where the UI shows none we can count."""

    @abstractmethod
    async def recover(self, text: str, user_messages_before: int | None) -> Reply | None:
        """After a restart: if `text` was already sent, wait for and return its reply; None if it was not."""

    @abstractmethod
    async def new_session(self) -> SessionInfo:
        """Start a new chat and verify that it really reset."""

    @property
    @abstractmethod
    def session_url(self) -> str | None:
        """Where the current chat lives, saved so a restart reopens it."""

    async def close(self, failed: bool = False) -> list[Path]:
        """Release the browser context; returns artefacts written (traces, videos)."""
        return []
