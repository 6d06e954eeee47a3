"""A ChatDriver wrapper that rides out a misbehaving chat: crashed or closed pages, reloads, error
bubbles, rate limits, replies that never come; and that never types a message twice unless the chat
shows that it did not take it.

Recovery is the same move a person makes: wait (backoff, or as long as the rate-limit message
says), reopen the chat at its address (a fresh page, or a fresh browser context when the old one
is gone), and look whether the message got through. A message once sent (the send button pressed)
is typed again only when the chat shows that it did not take it:
* the reopened chat shows our earlier messages as before and not this one (it never arrived:
  counted as not taken);
* the chat answered it with an error or a rate-limit message (it said it failed);
* with `recovery.resend_unconfirmed`, also when the chat cannot show either way.
If the reopened chat shows it with its reply, that reply is the answer. If it shows it and no reply
comes, the run stops (or, with `recovery.no_reply: "wait"`, waits on) with an error naming the
selector that saw nothing, a screenshot and the page's DOM; the persona loop has journaled the
message as pending, so the next `mmb run` looks for its reply again. Every typing and every proof
goes through the SendJournal, so the run's report counts exactly what the chat was given.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from playwright.async_api import Error as PlaywrightError

from .base import (
    AgentErrorReply,
    ChatBefore,
    ChatDriver,
    DriverError,
    InputCleared,
    NotResent,
    Presence,
    RateLimited,
    Reply,
    ReplyTimeout,
    SelectorError,
    SendJournal,
    SessionInfo,
)
from .recovery import Recovery, wait_named_in
from .waiting import HEARTBEAT_S  # one cadence for every wait: a line this often says the run is alive and why

log = logging.getLogger(__name__)

T = TypeVar("T")
Rebuild = Callable[[], Awaitable[ChatDriver]]
Sleep = Callable[[float], Awaitable[object]]
# What a sick chat throws: our own diagnoses, Playwright's (closed or crashed target), sockets.
RECOVERABLE = (DriverError, PlaywrightError, ConnectionError, asyncio.TimeoutError)
FINAL = (SelectorError, NotResent)  # the profile is wrong, or typing again could send it twice: no retry
LOOK_S = 5.0  # after an error or a reply that never came, a reopened chat shows the reply's first bubble this soon


class _Tries:
    """The tries of one step (a message, opening the chat, a new chat): `recovery.attempts` of them when
    set, and never past `give_up_after_s` from the first failure. Time counts what was waited, as asked,
    when that is more than the clock saw (a test's sleep that does not sleep)."""

    def __init__(self, recovery: Recovery):
        self.recovery = recovery
        self.count = 0
        self._failed_at: float | None = None
        self.waited = 0.0

    def another(self) -> bool:
        """Whether to try (again)."""
        if self.count and self._failed_at is None:
            self._failed_at = time.monotonic()
        if self.count and ((self.recovery.attempts is not None and self.count >= self.recovery.attempts)
                           or self.left() <= 0):
            return False
        self.count += 1
        return True

    @property
    def elapsed(self) -> float:
        return 0.0 if self._failed_at is None else max(time.monotonic() - self._failed_at, self.waited)

    def left(self) -> float:
        return self.recovery.give_up_after_s - self.elapsed

    def label(self) -> str:
        bound = f" of {self.recovery.attempts}" if self.recovery.attempts is not None else \
            f", for up to {_duration(self.recovery.give_up_after_s)}"
        return f"attempt {self.count}{bound}"


class _Submits(SendJournal):
    """Passes each step on to the run's journal and remembers whether this attempt pressed send; every
    attempt is the message's own turn."""

    def __init__(self, journal: SendJournal, turn: int):
        self.journal = journal
        self.turn = journal.turn or turn
        self.submitted = False

    async def resending(self, why: str) -> None:
        await self.journal.resending(why)

    async def submitting(self) -> None:
        self.submitted = True
        await self.journal.submitting()

    async def shown(self) -> None:
        await self.journal.shown()

    async def not_taken(self, why: str) -> None:
        await self.journal.not_taken(why)


@dataclass
class _Resend:
    why: str  # what the chat showed that makes typing it again safe


class ResilientDriver(ChatDriver):
    def __init__(self, inner: ChatDriver, recovery: Recovery = Recovery(), *, rebuild: Rebuild | None = None,
                 sleep: Sleep = asyncio.sleep, on_event: Callable[[str], None] | None = None):
        self.inner = inner
        self.name = inner.name
        self.recovery = recovery
        self._rebuild = rebuild  # a fresh inner driver (new browser context) when the old one is dead
        self._sleep = sleep
        self._on_event = on_event
        self._url: str | None = None  # the chat to reopen
        self._session_index = 0
        self._commands_before = 0  # commands typed by inner drivers replaced since
        self._messages = 0  # messages delivered: a message's turn where its journal does not know it
        self.recoveries = 0

    # -- the interface -------------------------------------------------------------------------

    async def open(self, session_url: str | None, session_index: int = 0) -> SessionInfo:
        self._url, self._session_index = session_url, session_index
        info = await self._retrying("open the chat", lambda: self.inner.open(session_url, session_index), reopen=False)
        self._url = info.url
        return info

    async def send(self, text: str, journal: SendJournal | None = None) -> Reply:
        return await self.deliver(text, journal)

    async def deliver(self, text: str, journal: SendJournal | None = None, *, before: ChatBefore | None = None,
                      submitted: bool = False) -> Reply:
        self._messages += 1
        submits = _Submits(journal or SendJournal(), self._messages)
        if before is None and not submitted:
            before = await self.chat_before()
        last: Exception | None = None
        said_failed = timed_out = False  # what the last typing got: an error shown for it, no reply in time
        tries = _Tries(self.recovery)
        while tries.another():
            attempt = tries.count
            if attempt > 1:
                await self._wait(tries, last)
            try:
                if submitted:
                    found = await self._look(text, before, submits, reopen=attempt > 1, said_failed=said_failed,
                                             short=said_failed or timed_out)
                    if isinstance(found, Reply):
                        return found
                    self._event(f"typing the message again (attempt {attempt}): {found.why}")
                    await submits.resending(found.why)
                elif attempt > 1 and not isinstance(last, InputCleared):  # that page works: reopening starts it again
                    await self._reopen()
                if attempt > 1 or submitted:
                    before = await self.inner.chat_before()
            except FINAL:
                raise
            except RECOVERABLE as e:
                last = e
                self._event(f"reopening the chat failed ({tries.label()}): {_first_line(e)}")
                continue
            submits.submitted = False
            try:
                reply = await self.inner.send(text, submits)
            except FINAL:
                raise
            except RECOVERABLE as e:
                last = e
                if submits.submitted:  # from here on the chat may have it: looked for before any typing
                    submitted, said_failed, timed_out = True, isinstance(e, AgentErrorReply), isinstance(e, ReplyTimeout)
                self._event(f"sending failed ({tries.label()}): {_first_line(e)}")
                continue
            self._recovered(tries)
            self._url = self.inner.session_url
            return reply
        raise self._give_up("send a message and get its reply", last, tries)

    async def chat_before(self) -> ChatBefore | None:
        return await self._retrying("count the chat's messages", lambda: self.inner.chat_before())  # the inner of each try

    async def find_sent(self, text: str, before: ChatBefore | None) -> Presence:
        return await self._retrying("look for the message in the chat", lambda: self.inner.find_sent(text, before))

    async def reply_to_last(self, *, first_bubble_s: float | None = None) -> Reply:
        return await self.inner.reply_to_last(first_bubble_s=first_bubble_s)

    async def new_session(self) -> SessionInfo:
        info = await self._retrying("start a new chat", lambda: self.inner.new_session())
        self._url = info.url
        self._session_index += 1
        return info

    @property
    def commands_typed(self) -> int:  # type: ignore[override]
        return self._commands_before + self.inner.commands_typed

    @property
    def session_url(self) -> str | None:
        return self.inner.session_url or self._url

    async def close(self, failed: bool = False) -> list[Path]:
        return await self.inner.close(failed=failed)

    # -- a message that may be in the chat -----------------------------------------------------

    async def _look(self, text: str, before: ChatBefore | None, journal: SendJournal, *, reopen: bool,
                    said_failed: bool, short: bool) -> Reply | _Resend:
        """The reply to a message already sent, if the chat shows the message; or why typing it again is
        safe; else NotResent. With `short`, the reply's first bubble gets only LOOK_S."""
        if reopen:
            await self._reopen()
        deadline = time.monotonic() + self.recovery.no_reply_wait_s
        while True:
            found = await self.inner.find_sent(text, before)
            if found.state == "absent":
                await journal.not_taken(found.why)
                return _Resend(found.why)
            if found.state == "unknown":
                if said_failed:
                    return _Resend(f"the chat showed an error for it, and {found.why}")
                if self.recovery.resend_unconfirmed:
                    return _Resend(f"{found.why}; agent.recovery.resend_unconfirmed is on")
                raise NotResent(f"cannot tell whether the agent got the message: {found.why}. It is not typed again "
                                "(agent.recovery.resend_unconfirmed would type it anyway; a chat that renders its "
                                "history late needs selectors.ready)")
            try:
                reply = await self.inner.reply_to_last(first_bubble_s=LOOK_S if short else None)
            except AgentErrorReply as e:
                return _Resend(f"the chat showed an error for it: {e.text[:160]!r}")
            except ReplyTimeout as e:
                if said_failed:
                    return _Resend("the chat showed an error for it, and shows no reply to it after reopening")
                if self.recovery.no_reply == "wait" and time.monotonic() < deadline:
                    self._event(f"no reply yet, waiting on (agent.recovery.no_reply is 'wait'): {_first_line(e)}")
                    await self._reopen()
                    short = False
                    continue
                raise NotResent(f"{e}. The chat shows the message, so it is not typed again: run the same command to "
                                "look for its reply again (agent.recovery.no_reply 'wait' keeps waiting)") from None
            self._event("the message was in the chat after all; took its reply")
            return reply

    # -- recovery ------------------------------------------------------------------------------

    async def _retrying(self, what: str, action: Callable[[], Awaitable[T]], *, reopen: bool = True) -> T:
        last: Exception | None = None
        tries = _Tries(self.recovery)
        while tries.another():
            if tries.count > 1:
                await self._wait(tries, last)
                try:
                    if reopen:
                        await self._reopen()
                except RECOVERABLE as e:
                    last = e
                    self._event(f"reopening the chat failed ({tries.label()}): {_first_line(e)}")
                    continue
            try:
                result = await action()
            except FINAL:
                raise  # the profile is wrong, not the chat; or trying again could type a message twice
            except RECOVERABLE as e:
                last = e
                self._event(f"could not {what} ({tries.label()}): {_first_line(e)}")
                if not reopen and self._rebuild is not None and _is_dead(e):
                    await self._replace_inner()
                continue
            self._recovered(tries)
            return result
        raise self._give_up(what, last, tries)

    def _recovered(self, tries: _Tries) -> None:
        if tries.count > 1:
            self._event(f"the chat works again after {tries.count} tries over {_duration(tries.elapsed)}")

    async def _reopen(self) -> None:
        """The chat at its last known address: same page if it lives, a new page, else a new context."""
        self.recoveries += 1
        try:
            await self.inner.open(self._url, self._session_index)
            return
        except RECOVERABLE as e:
            if self._rebuild is None or not _is_dead(e):
                raise
            self._event(f"the browser context is gone ({_first_line(e)}); starting a new one")
        await self._replace_inner()
        await self.inner.open(self._url, self._session_index)

    async def _replace_inner(self) -> None:
        assert self._rebuild is not None
        self._commands_before += self.inner.commands_typed
        try:
            await self.inner.close(failed=True)
        except Exception as e:  # it is dead already; closing is only tidying up
            log.debug("closing the dead driver: %s", e)
        self.inner = await self._rebuild()

    async def _wait(self, tries: _Tries, error: Exception | None) -> None:
        """The backoff before the next try (as long as a rate-limit message asks, within max_backoff_s), never
        past the step's give_up_after_s; a wait longer than HEARTBEAT_S says every so often what it waits for."""
        r = self.recovery
        if isinstance(error, RateLimited):
            seconds = wait_named_in(error.text)
            seconds = r.rate_limit_wait_s if seconds is None else seconds
            seconds = min(seconds * 1.1 + 0.2, r.max_backoff_s)  # a little past what it asked
        else:
            seconds = min(r.backoff_s * 2 ** min(tries.count - 2, 30), r.max_backoff_s) * (0.8 + random.random() * 0.4)
        seconds = max(min(seconds, tries.left()), 0.0)
        log.info("waiting %.1f s before trying again", seconds)
        while seconds > 0:
            step = min(seconds, HEARTBEAT_S)
            await self._sleep(step)
            tries.waited += step
            seconds -= step
            if seconds > 0:
                log.warning("agent chat: still waiting to try again: failing for %s, next try in %s (%s; gives up "
                            "after %s, agent.recovery.give_up_after_s)", _duration(tries.elapsed), _duration(seconds),
                            _first_line(error) if error else "no error", _duration(r.give_up_after_s))

    def _give_up(self, what: str, last: Exception | None, tries: _Tries) -> DriverError:
        detail = str(last).strip() if last else f"could not {what}"
        return DriverError(f"{detail} (gave up after {tries.count} attempt(s) over {_duration(tries.elapsed)} to {what}; "
                           "the state is saved: run the same command again to continue)")

    def _event(self, message: str) -> None:
        log.warning("agent chat: %s", message)
        if self._on_event:
            self._on_event(message)


def _duration(seconds: float) -> str:
    """'12 s', '4 min 10 s', '1 h 5 min'."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min" + (f" {seconds % 60} s" if seconds % 60 else "")
    return f"{seconds // 3600} h" + (f" {seconds % 3600 // 60} min" if seconds % 3600 // 60 else "")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:400]


def _is_dead(error: BaseException) -> bool:
    """The page's context or browser is closed: reopening needs a new context, not a new page."""
    text = str(error).lower()
    return "context or browser has been closed" in text or "browser has been closed" in text or \
        "target closed" in text or "connection closed" in text or \
        "failed to find browser context" in text  # asked while the context is still closing
