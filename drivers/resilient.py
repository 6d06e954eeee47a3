"""A ChatDriver wrapper that rides out a misbehaving chat: crashed or closed pages, reloads, error
bubbles, rate limits, replies that never come.

Recovery is the same move a person makes: wait (backoff, or as long as the rate-limit message
says), reopen the chat at its address (a fresh page, or a fresh browser context when the old one
is gone), and look whether the message got through. If the chat shows it with its reply, that reply
is the answer and nothing is sent again; if it does not show it, it is sent again. After
`attempts` tries the run stops with a DriverError that says what went wrong; the persona loop has
journaled the message as pending, so the next `mmb run` picks up from there.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from playwright.async_api import Error as PlaywrightError

from .base import ChatDriver, DriverError, OnSent, RateLimited, Reply, SelectorError, SessionInfo
from .recovery import Recovery, wait_named_in

log = logging.getLogger(__name__)

T = TypeVar("T")
Rebuild = Callable[[], Awaitable[ChatDriver]]
Sleep = Callable[[float], Awaitable[object]]
# What a sick chat throws: our own diagnoses, Playwright's (closed or crashed target), sockets.
RECOVERABLE = (DriverError, PlaywrightError, ConnectionError, asyncio.TimeoutError)

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
        self.recoveries = 0

    # -- the interface -------------------------------------------------------------------------

    async def open(self, session_url: str | None, session_index: int = 0) -> SessionInfo:
        self._url, self._session_index = session_url, session_index
        info = await self._retrying("open the chat", lambda: self.inner.open(session_url, session_index), reopen=False)
        self._url = info.url
        return info

    async def send(self, text: str, on_sent: OnSent | None = None) -> Reply:
        users_before = await self.user_message_count()
        last: Exception | None = None
        for attempt in range(1, self.recovery.attempts + 1):
            if attempt > 1:
                await self._wait(attempt, last)
                recovered = await self._reopen_and_recover(text, users_before)
                if recovered is not None:
                    self._event(f"the message was in the chat after all; took its reply (attempt {attempt})")
                    return recovered
            try:
                if attempt > 1:
                    users_before = await self.inner.user_message_count()
                reply = await self.inner.send(text, on_sent)
            except RECOVERABLE as e:
                last = e
                self._event(f"sending failed (attempt {attempt} of {self.recovery.attempts}): {_first_line(e)}")
                continue
            self._url = self.inner.session_url
            return reply
        raise self._give_up("send a message and get its reply", last)

    async def user_message_count(self) -> int | None:
        return await self._retrying("count the chat's messages", self.inner.user_message_count)

    async def recover(self, text: str, user_messages_before: int | None) -> Reply | None:
        try:
            return await self.inner.recover(text, user_messages_before)
        except RECOVERABLE as e:  # the chat is not well: reopen it and look once more, else it is sent again
            self._event(f"could not check whether the message was sent: {_first_line(e)}")
            return await self._reopen_and_recover(text, user_messages_before)

    async def new_session(self) -> SessionInfo:
        info = await self._retrying("start a new chat", self.inner.new_session)
        self._url = info.url
        self._session_index += 1
        return info

    @property
    def session_url(self) -> str | None:
        return self.inner.session_url or self._url

    async def close(self, failed: bool = False) -> list[Path]:
        return await self.inner.close(failed=failed)

    # -- recovery ------------------------------------------------------------------------------

    async def _retrying(self, what: str, action: Callable[[], Awaitable[T]], *, reopen: bool = True) -> T:
        last: Exception | None = None
        for attempt in range(1, self.recovery.attempts + 1):
            if attempt > 1:
                await self._wait(attempt, last)
                try:
                    if reopen:
                        await self._reopen()
                except RECOVERABLE as e:
                    last = e
                    self._event(f"reopening the chat failed (attempt {attempt}): {_first_line(e)}")
                    continue
            try:
                return await action()
            except SelectorError:
                raise  # the profile is wrong, not the chat
            except RECOVERABLE as e:
                last = e
                self._event(f"could not {what} (attempt {attempt} of {self.recovery.attempts}): {_first_line(e)}")
                if not reopen and self._rebuild is not None and _is_dead(e):
                    await self._replace_inner()
        raise self._give_up(what, last)

    async def _reopen_and_recover(self, text: str, users_before: int | None) -> Reply | None:
        try:
            await self._reopen()
        except RECOVERABLE as e:
            self._event(f"reopening the chat failed: {_first_line(e)}")
            return None
        try:
            return await self.inner.recover(text, users_before)
        except RECOVERABLE as e:
            self._event(f"the message is in the chat but its reply is not usable: {_first_line(e)}")
            return None

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
        try:
            await self.inner.close(failed=True)
        except Exception as e:  # it is dead already; closing is only tidying up
            log.debug("closing the dead driver: %s", e)
        self.inner = await self._rebuild()

    async def _wait(self, attempt: int, error: Exception | None) -> None:
        r = self.recovery
        if isinstance(error, RateLimited):
            seconds = wait_named_in(error.text)
            seconds = r.rate_limit_wait_s if seconds is None else seconds
            seconds = min(seconds * 1.1 + 0.2, r.max_backoff_s)  # a little past what it asked
        else:
            seconds = min(r.backoff_s * 2 ** (attempt - 2), r.max_backoff_s) * (0.8 + random.random() * 0.4)
        log.info("waiting %.1f s before trying again", seconds)
        await self._sleep(seconds)

    def _give_up(self, what: str, last: Exception | None) -> DriverError:
        detail = str(last).strip() if last else f"could not {what}"
        return DriverError(f"{detail} (gave up after {self.recovery.attempts} attempt(s) to {what}; the state is "
                           f"saved: run the same command again to continue)")

    def _event(self, message: str) -> None:
        log.warning("agent chat: %s", message)
        if self._on_event:
            self._on_event(message)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:400]


def _is_dead(error: BaseException) -> bool:
    """The page's context or browser is closed: reopening needs a new context, not a new page."""
    text = str(error).lower()
    return "context or browser has been closed" in text or "browser has been closed" in text or \
        "target closed" in text or "connection closed" in text or \
        "failed to find browser context" in text  # asked while the context is still closing
