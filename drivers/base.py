"""The interface every chat driver implements, and what it returns."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

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


ActivityKind = Literal["tool", "thought", "status"]


@dataclass
class Activity:
    """Work the agent showed in the chat while answering, which is not its answer: a tool call or its
    result (`tool`), reasoning (`thought`), a status line such as "Searching memory…" (`status`).
    `title` is its heading as shown (a summary, a toggle's label; else its first line), `text` all it
    holds as the page has it (a collapsed body included when the page keeps it in the DOM)."""

    kind: ActivityKind
    title: str
    text: str


@dataclass
class Reply:
    """The agent's answer to one message: one or more bubbles, complete, each with the agent's work
    (tool cards, thoughts, status lines) taken out into `activity`. Whatever a driver scraped is made
    `storable` here, at the boundary; `repaired` counts the characters replaced."""

    bubbles: list[str]
    signal: str = ""  # which completion signals fired, e.g. "busy-gone+done+stable(150ms)" (see reply_watch)
    seconds: float = 0.0  # from send to complete
    notices: list[str] = field(default_factory=list)  # UI notices seen meanwhile (e.g. "context compacted")
    watch_ms: float = 0.0  # time the page spent judging this reply: the watch's own cost (bench/)
    watch_checks: int = 0  # the page's checks of it (its looks at each DOM change between them: in watch_ms only)
    activity: list[Activity] = field(default_factory=list)  # the turn's work, in the order shown; never the answer
    repaired: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        bubbles, notices = [storable(b) for b in self.bubbles], [storable(n) for n in self.notices]
        self.bubbles, self.notices = [b for b, _ in bubbles], [n for n, _ in notices]
        self.repaired = sum(n for _, n in bubbles + notices)
        kept = []
        for a in self.activity:
            (title, t), (text, x) = storable(a.title), storable(a.text)
            kept.append(Activity(kind=a.kind, title=title, text=text))
            self.repaired += t + x
        self.activity = kept

    @property
    def text(self) -> str:
        return "\n\n".join(b for b in self.bubbles if b)


@dataclass
class SessionInfo:
    url: str | None
    reset_sign: str = ""  # how the reset was verified, e.g. "url changed; no messages left"


@dataclass(frozen=True)
class ChatBefore:
    """Our own bubbles in the chat just before a message was sent: how many, and the last one's text.
    What a later look compares with to tell whether that message arrived."""

    users: int
    last_user: str | None


@dataclass(frozen=True)
class Presence:
    """Whether the chat shows a message we typed: `shown`; `absent`, provably (it shows our earlier
    messages as before, and not this one); or `unknown` (no user bubbles to count, or the chat lost
    its history). `why` says what the chat showed."""

    state: Literal["shown", "absent", "unknown"]
    why: str


def squash(text: str) -> str:
    return " ".join(text.split())


def presence(text: str, before: ChatBefore | None, now: ChatBefore | None, *,
             keeps_history: bool | None = None) -> Presence:
    """Judge from our bubbles before sending and now (both as the chat shows them) where `text` is.
    `keeps_history`: the chat shows its messages when reopened (seen in this run, or claimed by the
    profile), so one still empty never got ours; None (not known) or False: an empty chat proves nothing."""
    if before is None or now is None:
        return Presence("unknown", "the chat shows no messages of ours to look for it (no user_message selector)")
    if before.users == 0 and now.users == 0:
        if keeps_history:
            return Presence("absent", "the chat, which keeps its messages, still shows none of ours: it never arrived")
        return Presence("unknown", "the chat shows none of our messages, and " + (
            "it does not keep its messages when reopened" if keeps_history is False else
            "whether it keeps its messages when reopened is not known yet (no reopening after a confirmed reply "
            "in this run; agent.options.keeps_history says it if you know)") + ", so its empty chat proves nothing")
    last_is_text = now.last_user is not None and squash(now.last_user) == squash(text)
    if last_is_text and (now.users > before.users or squash(before.last_user or "") != squash(text)):
        return Presence("shown", f"the chat shows it as our last message ({now.users} of ours, {before.users} before)")
    if before.users and now.users <= before.users and now.last_user is not None \
            and squash(now.last_user) == squash(before.last_user or ""):
        return Presence("absent", f"the chat shows our earlier messages as before ({now.users}, the last "
                                  f"{(before.last_user or '')[:60]!r}) and not this one: it never arrived")
    return Presence("unknown", f"the chat shows {now.users} message(s) of ours (the last "
                               f"{(now.last_user or '')[:60]!r}) where there were {before.users} before sending")


class DriverError(Exception):
    """The chat UI did not behave; names the step, the selector, and the screenshot and the page's DOM
    when they were saved."""

    def __init__(self, message: str, *, screenshot: Path | None = None, dom: Path | None = None):
        self.screenshot, self.dom = screenshot, dom
        super().__init__(message + (f" (screenshot: {screenshot})" if screenshot else "")
                         + (f" (page DOM: {dom})" if dom else ""))


class ReplyTimeout(DriverError):
    pass


class NotResent(DriverError):
    """The message may have reached the agent and brought no usable reply: it is not typed again, so
    the run stops (resumable) instead of sending it twice."""


class InputCleared(DriverError):
    """The page cleared what was typed before send could be pressed (an app finishing its start-up
    remounts its input): nothing was sent, and the same page takes the message typed again."""


class SelectorError(DriverError):
    """A selector of the profile that no page can match (not valid CSS): retrying cannot help."""


class AgentErrorReply(DriverError):
    """The chat showed an error (an error bubble, a failed request) where the reply should be."""

    def __init__(self, message: str, *, text: str, screenshot: Path | None = None, dom: Path | None = None):
        self.text = text
        super().__init__(message, screenshot=screenshot, dom=dom)


class RateLimited(AgentErrorReply):
    """The chat said to slow down ("rate limit reached, try again in 20 s"); `text` says how long."""


class SendJournal:
    """Told each step of a message's way into the chat, so that what was typed is accounted for
    exactly (persona/engine/channel.py keeps it in the run's state). This one forgets."""

    turn: int | None = None  # the message's turn in the run, when the journal knows it: every typing of it is that turn

    async def resending(self, why: str) -> None:
        """The next typing of the message is a second (third...) one, for this reason."""

    async def submitting(self) -> None:
        """The message is typed into the input and about to be sent: from here the agent may have it."""

    async def shown(self) -> None:
        """The chat shows the message as sent."""

    async def not_taken(self, why: str) -> None:
        """The chat shows that the last typing of the message never arrived."""


class ChatDriver(ABC):
    """One chat with one agent. Drivers are async; one instance per run."""

    name: str = "driver"
    commands_typed: int = 0  # commands typed into the chat so far ('/new', a bot's START): the agent got them too

    @abstractmethod
    async def open(self, session_url: str | None, session_index: int = 0) -> SessionInfo:
        """Open the chat: the saved session to resume, or a fresh one when None."""

    @abstractmethod
    async def send(self, text: str, journal: SendJournal | None = None) -> Reply:
        """Type `text` once, send it (telling the journal), wait for the full reply."""

    async def chat_before(self) -> ChatBefore | None:
        """Our bubbles in the chat now; None where the UI shows none we can count."""
        return None

    async def find_sent(self, text: str, before: ChatBefore | None) -> Presence:
        """Whether the chat shows `text` as sent after `before` (see `presence`)."""
        return presence(text, before, await self.chat_before())

    async def reply_to_last(self, *, first_bubble_s: float | None = None) -> Reply:
        """The reply to our message shown last (after find_sent said `shown`), waited for; with
        `first_bubble_s`, a shorter wait for its first bubble."""
        raise NotResent("this chat cannot look for the reply to a message sent before")

    async def deliver(self, text: str, journal: SendJournal | None = None, *, before: ChatBefore | None = None,
                      submitted: bool = False) -> Reply:
        """Get a persona message to the agent once and return the reply. `submitted`: a restart found
        it journaled as sent, so the chat is looked at first. Drivers that recover override this."""
        if submitted:
            found = await self.find_sent(text, before)
            if found.state == "shown":
                return await self.reply_to_last()
            if found.state == "unknown":
                raise NotResent(f"cannot tell whether the agent got the message sent before the restart: {found.why}")
            if journal:
                await journal.not_taken(found.why)
                await journal.resending(found.why)
        return await self.send(text, journal)

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
