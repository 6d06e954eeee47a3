"""The bound on recovery, as time: a step is tried again until agent.recovery.give_up_after_s has passed
since its first failure (or `attempts`, when set, ran out), a wait longer than the heartbeat is
reported while it lasts, and giving up says how many tries over how long. A chat that never opens
stands in for an agent that is down; the waits are counted, not slept (the real outage, DemoMind
killed and started again, is in tests/test_faults_outage.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from drivers.base import ChatDriver, DriverError, Reply, SessionInfo
from drivers.recovery import Recovery
from drivers.resilient import HEARTBEAT_S, ResilientDriver


class Down(ChatDriver):
    """An agent whose chat does not open until `up_after` tries."""

    name = "down"

    def __init__(self, up_after: int | None = None):
        self.tries = 0
        self.up_after = up_after

    async def open(self, session_url: str | None, session_index: int = 0) -> SessionInfo:
        self.tries += 1
        if self.up_after is None or self.tries < self.up_after:
            raise DriverError("cannot open the chat at http://agent/: net::ERR_CONNECTION_REFUSED")
        return SessionInfo(url="/c/1")

    async def send(self, text, journal=None) -> Reply:
        return Reply(bubbles=["hi"])

    async def new_session(self) -> SessionInfo:
        return SessionInfo(url="/c/2")

    @property
    def session_url(self) -> str | None:
        return None


def counting_sleep(waits: list[float]):
    async def sleep(seconds: float) -> None:
        waits.append(seconds)
    return sleep


def test_the_default_bound_keeps_trying_for_ten_minutes_then_says_how_long(caplog):
    waits: list[float] = []
    down = Down()
    driver = ResilientDriver(down, Recovery(), sleep=counting_sleep(waits))
    with caplog.at_level(logging.INFO), pytest.raises(DriverError) as err:
        asyncio.run(driver.open(None))
    assert 595 <= sum(waits) <= 600 and max(waits) <= HEARTBEAT_S, "waited out up to the bound, in heartbeat steps"
    assert f"gave up after {down.tries} attempt(s) over 10 min to open the chat" in str(err.value)
    assert down.tries >= 10, "backoff capped at max_backoff_s (60 s), not doubling into the hours"
    beats = [r.getMessage() for r in caplog.records if "still waiting to try again" in r.getMessage()]
    assert beats and "gives up after 10 min, agent.recovery.give_up_after_s" in beats[-1], beats


def test_an_agent_back_within_the_bound_is_taken_up_again(caplog):
    waits: list[float] = []
    driver = ResilientDriver(Down(up_after=6), Recovery(give_up_after_s=300), sleep=counting_sleep(waits),
                             on_event=lambda line: events.append(line))
    events: list[str] = []
    info = asyncio.run(driver.open(None))
    assert info.url == "/c/1"
    assert events[-1].startswith("the chat works again after 6 tries over ")
    assert [e.split(":")[0] for e in events[:2]] == ["could not open the chat (attempt 1, for up to 5 min)",
                                                     "could not open the chat (attempt 2, for up to 5 min)"]


def test_attempts_when_set_still_cap_the_tries():
    down = Down()
    with pytest.raises(DriverError, match=r"gave up after 3 attempt\(s\) over \d+ s to open the chat"):
        asyncio.run(ResilientDriver(down, Recovery(attempts=3), sleep=counting_sleep([])).open(None))
    assert down.tries == 3
