"""Every wait on the page has a bound on the Python side, and a wait that lasts says so.

The page keeps most of the time itself (the reply watch's limits run inside it), but a page can stop
answering: a script stuck in a loop, a watch that threw where nothing catches it, a frame gone
mid-call. So each call into the page is bounded here by the profile's own limit for its stage plus
a small grace, and while a wait goes on longer than `HEARTBEAT_S` a line is logged every
`HEARTBEAT_S` ("waiting for the reply: 45 s, stage ..."), which the console shows too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from .base import DriverError

log = logging.getLogger("drivers.waiting")

T = TypeVar("T")
HEARTBEAT_S = 15.0
PAGE_GRACE_S = 5.0  # a call into the page answers within its stage's limit plus this, or the page is stuck
# Log records the console shows whatever its level (a heartbeat is news, not a warning).
CONSOLE = {"console": True}


class PageNotAnswering(DriverError):
    """A call into the page did not come back within its bound: its scripts are stuck or it is gone."""


async def bounded(step: Awaitable[T], limit_s: float, what: str) -> T:
    """`step`, or PageNotAnswering naming `what` once `limit_s` is over."""
    try:
        return await asyncio.wait_for(step, timeout=max(limit_s, 0.05))
    except TimeoutError:
        raise PageNotAnswering(f"the page did not answer within {limit_s:.0f} s ({what}): its scripts may be stuck") from None


def beat(what: str, since: float, detail: str = "") -> None:
    """One heartbeat line: what is waited for, for how long, and what the page showed last."""
    log.info("%s: %.0f s%s", what, time.monotonic() - since, f", {detail}" if detail else "", extra=CONSOLE)


@contextlib.asynccontextmanager
async def heartbeat(what: str, detail: Callable[[], str] | None = None, every_s: float = HEARTBEAT_S) -> AsyncIterator[None]:
    """Log a line every `every_s` while the block runs (a clock, not a synchronisation: the block's
    own bounds decide when it ends)."""
    since = time.monotonic()

    async def clock() -> None:
        while True:
            await asyncio.sleep(every_s)
            beat(what, since, detail() if detail else "")

    task = asyncio.create_task(clock())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
