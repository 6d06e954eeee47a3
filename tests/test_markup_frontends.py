"""The LibreChat and Hermes profiles against markup rebuilt from their client source.

Neither runs here (see the module docstrings of drivers/librechat.py and drivers/hermes.py), so
tests/support/markup/ reproduces each chat's DOM around a small streamed model: the test checks
that the shipped selectors find the input, wait out the stream (busy marker), read the reply
without headers or placeholders, and that a new chat really starts empty.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from drivers.base import Reply
from drivers.generic import PlaywrightDriver
from drivers.registry import build_profile
from tests.support.static_site import serve

MARKUP = Path(__file__).resolve().parent / "support" / "markup"
PAGES = {"librechat": ("librechat.html", {}), "hermes": ("hermes.html", {"new_session_url": "/hermes.html"})}


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve(MARKUP) as url:
        yield url


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_chat_and_a_new_chat_through_the_rebuilt_page(harness, site, name, tmp_path) -> None:
    page, options = PAGES[name]
    profile = build_profile(name, {}, options)

    async def go() -> tuple[list[str], str]:
        driver = PlaywrightDriver(profile, await harness.browser.new_context(), base_url=site + page,
                                  artifacts=tmp_path)
        try:
            await driver.open(None)
            replies = [await driver.send("Our dog is called Biscuit."),
                       await driver.send("What is our dog called?")]
            info = await driver.new_session()
            replies.append(await driver.send("What is our dog called?"))
        finally:
            await driver.close()
        assert all(r.signal.startswith("busy-gone") for r in replies), [r.signal for r in replies]
        return [r.text for r in replies], info.reset_sign

    replies, sign = harness.run(go())
    assert replies == ["Got it: Our dog is called Biscuit.", "You told me: Our dog is called Biscuit.",
                       "You did not tell me that in this chat."]
    assert "no messages left (2 before)" in sign


def test_without_the_busy_marker_a_slow_stream_is_cut(harness, site, tmp_path) -> None:
    """The control: LibreChat's stop button is what keeps a paused stream from being taken as done."""
    profile = build_profile("librechat", {"busy": None}, {"completion": {"quiet_ms": 300}})
    reply = _librechat_reply(harness, site, tmp_path, profile, "wordMs = 700")
    assert reply.text in ("Got", "Got it:", "Got it: Our", "Got it: Our dog")


def _librechat_reply(harness, site, tmp_path, profile, setting: str) -> Reply:
    """One message to the rebuilt LibreChat page, its model set as `setting` says (model.js config)."""

    async def go() -> Reply:
        context = await harness.browser.new_context()
        await context.add_init_script(
            f"window.addEventListener('DOMContentLoaded', () => {{ window.mmbModel.config.{setting}; }})")
        driver = PlaywrightDriver(profile, context, base_url=site + "librechat.html", artifacts=tmp_path)
        try:
            await driver.open(None)
            return await driver.send("Our dog is called Biscuit.")
        finally:
            await driver.close()

    return harness.run(go())


@pytest.mark.parametrize("with_selectors", [True, False], ids=["profile", "no-work-selectors"])
def test_librechat_an_agents_reasoning_and_tool_call_are_kept_apart_from_its_answer(harness, site, tmp_path,
                                                                                      with_selectors) -> None:
    """Reasoning and a memory search drawn in the message body before the answer: the reply is the answer,
    the work its activity, and the wait outlasts the tool. Without the profile's work selectors (the
    control) the work's labels are read as words of the answer."""
    off = {} if with_selectors else {"tool": None, "thought": None}
    reply = _librechat_reply(harness, site, tmp_path, build_profile("librechat", off, {}), "toolMs = 1500")
    if not with_selectors:
        assert "Thoughts" in reply.text and "Ran memory_search" in reply.text
        return
    assert reply.text == "Got it: Our dog is called Biscuit."
    assert [(a.kind, a.title) for a in reply.activity] == [("thought", "Thoughts"), ("tool", "Ran memory_search")]
    assert reply.seconds >= 1.5
