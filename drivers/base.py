"""The interface every chat driver implements, and what it returns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Reply:
    """The agent's answer to one message: one or more bubbles, complete."""

    bubbles: list[str]
    signal: str = ""  # which completion signals fired, e.g. "busy-gone+done+stable(150ms)" (see reply_watch)
    seconds: float = 0.0  # from send to complete
    notices: list[str] = field(default_factory=list)  # UI notices seen meanwhile (e.g. "context compacted")
    watch_ms: float = 0.0  # time the page spent judging this reply: the watch's own cost (bench/)

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
