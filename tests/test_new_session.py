"""A new chat must really be new: the driver checks the sign of a reset and fails when there is none."""

from __future__ import annotations

import pytest

from drivers.base import DriverError
from tests.support.chat_lab import NEW_CHAT_ACK, ChatLab, LabScenario


def new_session_after_one_message(harness, lab, tmp_path, **profile):
    async def go():
        driver = await harness.driver(lab.profile(**profile), tmp_path)
        try:
            await driver.send("remember: my cat is Tom")
            before = driver.session_url
            info = await driver.new_session()
            reply = await driver.send("hello again")
            return before, info, reply
        finally:
            await driver.close()

    return harness.run(go())


def test_new_chat_with_a_new_address(harness, tmp_path):
    with ChatLab(LabScenario(done="attr")) as lab:
        base = lab.start()
        before, info, reply = new_session_after_one_message(harness, lab, tmp_path)
    assert info.url != before and info.url.startswith("/c/")
    assert info.reset_sign == f"url changed {base}{before} -> {base}{info.url}; no messages left (1 before)"
    assert reply.bubbles == ["echo: hello again"]


def test_new_chat_cleared_in_place(harness, tmp_path):
    with ChatLab(LabScenario(done="attr", new_chat_navigates=False)) as lab:
        before, info, _ = new_session_after_one_message(harness, lab, tmp_path)
    assert info.url == before
    assert info.reset_sign == "no messages left (1 before)"


def test_new_chat_that_does_not_reset_fails_clearly(harness, tmp_path):
    with ChatLab(LabScenario(done="attr", new_chat="noop")) as lab:
        with pytest.raises(DriverError) as caught:
            new_session_after_one_message(harness, lab, tmp_path, reset_timeout_s=1.5)
    message = str(caught.value)
    assert message.startswith("the chat did not reset after new session (button): 1 of 1 message(s) matching "
                              "'#log .bubble.me' still shown after 1.5 s, URL unchanged")
    assert caught.value.screenshot is not None and caught.value.screenshot.is_file()


def test_slash_new_acknowledged_by_the_bot(harness, tmp_path):
    with ChatLab(LabScenario(done="attr", slash_new="reset")) as lab:
        _, info, reply = new_session_after_one_message(harness, lab, tmp_path, new_session="message")
    assert info.reset_sign == f"agent acknowledged '/new': {NEW_CHAT_ACK!r}"
    assert reply.bubbles == ["echo: hello again"]
    assert lab.received == ["remember: my cat is Tom", "/new", "hello again"]


def test_slash_new_that_the_bot_just_echoes_fails_clearly(harness, tmp_path):
    with ChatLab(LabScenario(done="attr", slash_new="ignore")) as lab:
        with pytest.raises(DriverError) as caught:
            new_session_after_one_message(harness, lab, tmp_path, new_session="message")
    assert str(caught.value).startswith(
        "the chat did not reset: the agent answered '/new' with 'echo: /new', which does not acknowledge a new session")


def test_slash_new_the_ui_turns_down_at_first_is_sent_again(harness, tmp_path):
    # OpenClaw leaves `/new` in the input while it reloads the chat or the session list after a turn.
    with ChatLab(LabScenario(done="attr", slash_new="opens", slash_new_refusals=1)) as lab:
        _, info, reply = new_session_after_one_message(harness, lab, tmp_path, new_session="message",
                                                       new_session_message_opens_chat=True)
    assert info.reset_sign.startswith("sent '/new'; url changed")
    assert info.reset_sign.endswith("no messages left (1 before); sent 2 times: the UI had left it in the input")
    assert reply.bubbles == ["echo: hello again"]
    assert lab.received == ["remember: my cat is Tom", "hello again"]


def test_slash_new_the_ui_keeps_turning_down_fails_clearly(harness, tmp_path):
    with ChatLab(LabScenario(done="attr", slash_new="opens", slash_new_refusals=99)) as lab:
        with pytest.raises(DriverError) as caught:
            new_session_after_one_message(harness, lab, tmp_path, new_session="message",
                                          new_session_message_opens_chat=True, reset_timeout_s=5)
    message = str(caught.value)
    assert message.startswith("the chat did not reset after new session (message): 1 of 1 message(s)")
    assert "'/new' still in the input, sent 2 times" in message  # after 2 s, then 4 s more ran past 5 s
    assert "(the page says: 'Try New Chat again in a moment.')" in message
