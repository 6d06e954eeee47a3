"""A sick chat in real Chromium: error bubbles, rate limits, no reply, dropped streams, crashed, closed
and reloaded pages. The resilient driver recovers, and the agent (DemoMind, which keeps its own
memory) gets every message exactly once; or the driver gives up with a clear error."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.async_api import async_playwright

from demo_agent.faults import Faults
from demo_agent.web import DemoChatServer
from drivers.base import ChatDriver, DriverError, NotResent, SendJournal
from drivers.browser import launch_chromium
from drivers.demo import PROFILE
from drivers.generic import PlaywrightDriver
from drivers.recovery import Recovery, wait_named_in
from drivers.resilient import ResilientDriver

pytestmark = pytest.mark.usefixtures("chromium")


class Counting(SendJournal):
    def __init__(self) -> None:
        self.typed = 0

    async def submitting(self) -> None:
        self.typed += 1


@dataclass
class Chat:
    driver: ResilientDriver
    server: DemoChatServer
    faults: Faults
    waits: list[float] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    journal: Counting = field(default_factory=lambda: Counting())

    @property
    def typed(self) -> int:
        """Times the driver pressed send for a message given `journal`."""
        return self.journal.typed

    @property
    def page(self):
        return self.driver.inner.page

    def received(self) -> list[str]:
        """What the agent itself took in, from its own memory."""
        brain = self.server.brain
        return [m["text"] for cid in brain.conversation_ids() for m in brain.history(cid) if m["role"] == "user"]


def in_chat(body: Callable[[Chat], Awaitable[None]], tmp_path: Path, *, attempts: int = 4,
            reply_timeout_s: float = 4, **options: object) -> None:
    """Run `body` against DemoMind in Chromium through a ResilientDriver whose waits are recorded, not slept."""

    async def main() -> None:
        faults = Faults()
        with DemoChatServer(tmp_path / "agent", faults=faults, think_delay_s=0.01, token_delay_s=0.001) as server:
            async with async_playwright() as pw:
                browser = await launch_chromium(pw)
                profile = PROFILE.with_overrides({}, {"completion": {"first_bubble_timeout_s": reply_timeout_s,
                                                                     "timeout_s": reply_timeout_s * 3}, **options})

                async def build() -> ChatDriver:
                    return PlaywrightDriver(profile, await browser.new_context(), base_url=server.url,
                                            artifacts=tmp_path / "artifacts", screenshot_on_failure=False)

                chat = Chat(driver=None, server=server, faults=faults)  # type: ignore[arg-type]

                async def record_wait(seconds: float) -> None:
                    chat.waits.append(seconds)

                chat.driver = ResilientDriver(await build(), Recovery(attempts=attempts, backoff_s=0.5), rebuild=build,
                                              sleep=record_wait, on_event=chat.events.append)
                await chat.driver.open(None)
                try:
                    await body(chat)
                finally:
                    await chat.driver.close()
                    await browser.close()

    asyncio.run(main())


def test_an_error_bubble_is_retried_after_a_backoff(tmp_path):
    async def body(chat: Chat) -> None:
        chat.faults.error_next = 1
        reply = await chat.driver.send("My sister Ana is 31")
        assert reply.text == "Got it, I'll remember that."
        assert chat.received() == ["My sister Ana is 31"]
        assert "Error: HTTP 500" in chat.events[0] and len(chat.waits) == 1 and chat.waits[0] > 0

    in_chat(body, tmp_path)


def test_a_rate_limit_reply_waits_as_long_as_it_asks_then_resends(tmp_path):
    async def body(chat: Chat) -> None:
        chat.faults.rate_limit_next, chat.faults.rate_limit_retry_s = 2, 7
        reply = await chat.driver.send("I run on Tuesdays")
        assert "rate" not in reply.text.lower()
        assert chat.received() == ["I run on Tuesdays"]  # a refused message never reached the agent
        assert len(chat.waits) == 2 and all(7 <= w <= 8.5 for w in chat.waits), chat.waits
        assert "rate limited" in chat.events[0]

    in_chat(body, tmp_path)


def test_a_reply_that_never_comes_is_sent_again_once_the_chat_shows_it_never_arrived(tmp_path):
    async def body(chat: Chat) -> None:
        await chat.driver.send("My name is Tom")
        chat.faults.hang_next = 1  # the agent never takes it: reopened, the chat shows only "My name is Tom"
        reply = await chat.driver.send("My cat is called Pixel")
        assert reply.text and chat.received() == ["My name is Tom", "My cat is called Pixel"]
        assert "no complete reply" in chat.events[0]
        assert "never arrived" in chat.events[1], chat.events

    in_chat(body, tmp_path, reply_timeout_s=2)


def test_a_reply_that_never_comes_where_the_chat_cannot_tell_stops_without_typing_it_again(tmp_path):
    """The first message, in a chat said to forget its messages on reload: reopened and empty, it may
    have lost it or never got it."""
    async def body(chat: Chat) -> None:
        chat.faults.hang_next = 1
        with pytest.raises(NotResent) as caught:
            await chat.driver.send("My cat is called Pixel", chat.journal)
        assert "cannot tell whether the agent got the message" in str(caught.value)
        assert chat.typed == 1

    in_chat(body, tmp_path, reply_timeout_s=2, keeps_history=False)


def test_the_first_message_that_never_arrived_in_a_chat_that_keeps_history_is_sent_again(tmp_path):
    async def body(chat: Chat) -> None:
        chat.faults.hang_next = 1
        reply = await chat.driver.send("My cat is called Pixel", chat.journal)
        assert reply.text and chat.received() == ["My cat is called Pixel"] and chat.typed == 2
        assert "still shows none of ours: it never arrived" in chat.events[1], chat.events

    in_chat(body, tmp_path, reply_timeout_s=2)


def test_a_dropped_stream_takes_the_saved_reply_instead_of_resending(tmp_path):
    async def body(chat: Chat) -> None:
        await chat.driver.send("My name is Tom")
        chat.faults.drop_next = 1
        reply = await chat.driver.send("I live in Porto")
        assert reply.text == "Thanks for telling me."  # the whole reply, not the cut one
        assert chat.received() == ["My name is Tom", "I live in Porto"]  # not sent twice
        assert any("in the chat after all" in e for e in chat.events), chat.events

    in_chat(body, tmp_path)


def test_a_slow_reply_is_just_waited_for(tmp_path):
    async def body(chat: Chat) -> None:
        chat.faults.slow_s = 2.5
        reply = await chat.driver.send("Is it slow today?")
        assert reply.text and chat.events == [] and chat.driver.recoveries == 0

    in_chat(body, tmp_path, reply_timeout_s=8)


async def _mid_reply(chat: Chat, text: str, hit: Callable[[], Awaitable[object]]) -> str:
    """Send `text`; once the agent has it and is still replying, `hit` the page."""
    chat.faults.slow_s = 3
    sending = asyncio.create_task(chat.driver.send(text))
    for _ in range(1000):  # the agent has the message once its memory does; it then thinks for slow_s
        if text in chat.received():
            break
        await asyncio.sleep(0.01)
    assert not sending.done() and text in chat.received()
    await hit()
    reply = await sending
    chat.faults.slow_s = 0
    return reply.text


def test_a_page_that_crashes_mid_reply_is_reopened(tmp_path):
    async def body(chat: Chat) -> None:
        async def crash() -> None:
            cdp = await chat.driver.inner.context.new_cdp_session(chat.page)
            pending = asyncio.ensure_future(cdp.send("Page.crash"))  # never answers: the renderer is gone
            pending.add_done_callback(lambda f: f.exception())

        assert await _mid_reply(chat, "My sister Ana is 31", crash) == "Got it, I'll remember that."
        assert chat.received() == ["My sister Ana is 31"]
        assert "crashed" in chat.events[0].lower()
        assert (await chat.driver.send("And my brother is Rui")).text  # the new page keeps working

    in_chat(body, tmp_path)


def test_a_page_closed_under_the_driver_is_replaced(tmp_path):
    async def body(chat: Chat) -> None:
        assert await _mid_reply(chat, "My sister Ana is 31", lambda: chat.page.close())
        assert chat.received() == ["My sister Ana is 31"] and not chat.page.is_closed()

    in_chat(body, tmp_path)


def test_a_closed_browser_context_is_rebuilt(tmp_path):
    async def body(chat: Chat) -> None:
        old = chat.driver.inner
        assert await _mid_reply(chat, "My sister Ana is 31", lambda: old.context.close())
        assert chat.driver.inner is not old and chat.received() == ["My sister Ana is 31"]
        assert any("context is gone" in e for e in chat.events), chat.events

    in_chat(body, tmp_path)


def test_a_reload_mid_reply_still_gets_the_reply(tmp_path):
    async def body(chat: Chat) -> None:
        assert await _mid_reply(chat, "My sister Ana is 31", lambda: chat.page.reload())
        assert chat.received() == ["My sister Ana is 31"]

    in_chat(body, tmp_path)


def test_a_chat_that_keeps_failing_stops_with_a_clear_error(tmp_path):
    async def body(chat: Chat) -> None:
        chat.faults.error_next = 99
        with pytest.raises(DriverError) as err:
            await chat.driver.send("Hello?")
        message = str(err.value)
        assert message.startswith("the chat shows an error instead of a reply") and "'Error: HTTP 500'" in message
        assert "gave up after 3 attempt(s) over " in message and "s to send a message and get its reply" in message
        assert "run the same command again" in message
        assert chat.received() == [] and len(chat.waits) == 2 and chat.waits[1] > chat.waits[0]

    in_chat(body, tmp_path, attempts=3)


@pytest.mark.parametrize("text, seconds", [
    ("Rate limit reached. Please try again in 20 seconds.", 20), ("Slow down! Retry after 1.5 minutes", 90),
    ("Too many requests, wait 250 ms", 0.25), ("Limit: 20 messages per 3 hours", None), ("Rate limited.", None),
])
def test_the_wait_a_rate_limit_message_names(text, seconds):
    assert wait_named_in(text) == seconds


def test_after_a_restart_a_dead_page_is_reopened_before_looking_for_the_message(tmp_path):
    async def body(chat: Chat) -> None:
        before = await chat.driver.chat_before()
        await chat.driver.send("My sister Ana is 31")
        await chat.page.close()
        reply = await chat.driver.deliver("My sister Ana is 31", chat.journal, before=before, submitted=True)
        assert reply.text == "Got it, I'll remember that."
        assert chat.received() == ["My sister Ana is 31"] and chat.typed == 0  # not typed again
        after = await chat.driver.chat_before()
        await chat.driver.deliver("Never sent", chat.journal, before=after, submitted=True)  # journaled, never typed
        assert chat.received() == ["My sister Ana is 31", "Never sent"] and chat.typed == 1

    in_chat(body, tmp_path)
