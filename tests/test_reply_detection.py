"""Reply completion in real Chromium against the chat lab, one scenario a test.

Each asserts the exact reply (text and bubble count) and the signal that ended the wait; the
timeouts assert the error text and the screenshot.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator

import pytest

from drivers.base import InputCleared, ReplyTimeout, SelectorError
from drivers.generic import PlaywrightDriver
from tests.support.chat_lab import ChatLab, LabScenario
from tests.test_faults_driver import Counting


@pytest.fixture
def lab() -> Iterator[ChatLab]:
    with ChatLab() as lab:
        yield lab


def signal_is(signal: str, *parts: str) -> bool:
    """The signal is exactly these parts, then the measured quiet window."""
    return re.fullmatch(re.escape("+".join(parts)) + (r"\+" if parts else "") + r"stable\(\d+ms\)", signal) is not None


def test_streamed_reply_with_busy_and_done_markers(harness, lab, tmp_path):
    lab.scenario = LabScenario(chunk_chars=2, chunk_ms=40, busy="stop-button", done="attr")
    [reply] = harness.chat(lab.profile(), tmp_path, ["hello there, lab"])
    assert reply.bubbles == ["echo: hello there, lab"]
    assert signal_is(reply.signal, "busy-gone", "done"), reply.signal


def test_slow_first_token_while_busy_outlives_the_first_bubble_timeout(harness, lab, tmp_path):
    lab.scenario = LabScenario(first_token_ms=2500, busy="typing")
    profile = lab.profile(completion={"first_bubble_timeout_s": 1})
    [reply] = harness.chat(profile, tmp_path, ["are you there?"])
    assert reply.bubbles == ["echo: are you there?"]
    assert signal_is(reply.signal, "busy-gone"), reply.signal
    assert reply.seconds >= 2.5


def test_slow_first_token_without_any_marker(harness, lab, tmp_path):
    lab.scenario = LabScenario(first_token_ms=1500, busy="none", chunk_ms=30)
    [reply] = harness.chat(lab.profile(completion={"quiet_ms": 700}), tmp_path, ["slowly"])
    assert reply.bubbles == ["echo: slowly"]
    assert signal_is(reply.signal), reply.signal


def test_bubbles_with_pauses_and_no_busy_marker_between_them(harness, lab, tmp_path):
    """Telegram-bot style: whole bubbles, 'typing' only while each is prepared, silence between."""
    lab.scenario = LabScenario(bubbles=3, chunk_chars=0, bubble_gap_ms=600, busy="typing", busy_in_gaps=False)
    profile = lab.profile(completion={"quiet_ms_with_markers": 1500})
    [reply] = harness.chat(profile, tmp_path, ["tell me three things"])
    assert reply.bubbles == [f"part {i} of 3: tell me three things" for i in (1, 2, 3)]
    assert signal_is(reply.signal, "busy-gone"), reply.signal


def test_busy_marker_kept_between_bubbles_needs_no_long_window(harness, lab, tmp_path):
    lab.scenario = LabScenario(bubbles=2, bubble_gap_ms=500, busy="stop-button", busy_in_gaps=True, done="attr")
    [reply] = harness.chat(lab.profile(), tmp_path, ["two please"])
    assert reply.bubbles == ["part 1 of 2: two please", "part 2 of 2: two please"]
    assert signal_is(reply.signal, "busy-gone", "done"), reply.signal


def test_a_placeholder_after_a_finished_bubble_means_more_is_coming(harness, lab, tmp_path):
    """Bubble 1 is done and no busy marker exists, but bubble 2's "Thinking…" shows it goes on."""
    lab.scenario = LabScenario(bubbles=2, bubble_gap_ms=700, busy="none", done="attr", placeholder="Thinking…")
    [reply] = harness.chat(lab.profile(), tmp_path, ["go on"])
    assert reply.bubbles == ["part 1 of 2: go on", "part 2 of 2: go on"]
    assert signal_is(reply.signal, "done", "placeholder-gone"), reply.signal


def test_no_busy_marker_at_all_ends_on_a_long_quiet_window(harness, lab, tmp_path):
    lab.scenario = LabScenario(busy="none", chunk_chars=3, chunk_ms=150)
    [reply] = harness.chat(lab.profile(completion={"quiet_ms": 800}), tmp_path, ["stream it slowly"])
    assert reply.bubbles == ["echo: stream it slowly"]
    assert signal_is(reply.signal), reply.signal
    assert int(re.search(r"\d+", reply.signal).group()) >= 800


def test_busy_selector_that_never_matches_falls_back_to_the_long_window(harness, lab, tmp_path):
    lab.scenario = LabScenario(busy="none", chunk_chars=3, chunk_ms=150)
    profile = lab.profile(selectors={"busy": "#no-such-spinner"}, completion={"quiet_ms": 800})
    [reply] = harness.chat(profile, tmp_path, ["stream it slowly"])
    assert reply.bubbles == ["echo: stream it slowly"]
    assert signal_is(reply.signal, "busy-unseen"), reply.signal


def test_done_marker_that_comes_after_the_text_is_waited_for(harness, lab, tmp_path):
    lab.scenario = LabScenario(busy="none", done="attr", done_delay_ms=900)
    [reply] = harness.chat(lab.profile(), tmp_path, ["wait for done"])
    assert reply.bubbles == ["echo: wait for done"]
    assert signal_is(reply.signal, "done"), reply.signal
    assert reply.seconds >= 0.9


def test_done_marker_after_each_bubble(harness, lab, tmp_path):
    lab.scenario = LabScenario(bubbles=2, bubble_gap_ms=300, busy="stop-button", done="after")
    [first, second] = harness.chat(lab.profile(), tmp_path, ["one", "two"])
    assert first.bubbles == ["part 1 of 2: one", "part 2 of 2: one"]
    assert second.bubbles == ["part 1 of 2: two", "part 2 of 2: two"]
    assert signal_is(second.signal, "busy-gone", "done"), second.signal


def test_done_marker_on_the_container_of_the_text(harness, lab, tmp_path):
    lab.scenario = LabScenario(text_span=True, busy="none", done="attr", done_delay_ms=700)
    profile = lab.profile(selectors={"assistant_message": "#log .bubble.bot .text", "user_message": "#log .bubble.me .text"})
    [reply] = harness.chat(profile, tmp_path, ["nested"])
    assert reply.bubbles == ["echo: nested"]
    assert signal_is(reply.signal, "done"), reply.signal
    assert reply.seconds >= 0.7


@pytest.mark.parametrize("placeholder,replace", [("Thinking…", "text"), ("…", "node"), ("", "text")])
def test_placeholder_bubbles_are_never_the_reply(harness, lab, tmp_path, placeholder, replace):
    lab.scenario = LabScenario(first_token_ms=800, busy="none", placeholder=placeholder, placeholder_replace=replace)
    [reply] = harness.chat(lab.profile(completion={"quiet_ms": 500}), tmp_path, ["hi"])
    assert reply.bubbles == ["echo: hi"]
    assert signal_is(reply.signal, "placeholder-gone"), reply.signal


def test_markers_that_come_and_go_between_two_polls_are_still_seen(harness, lab, tmp_path):
    """Polls every 2 s; the busy marker and the placeholder live 0.4 s: the page's observer sees them."""
    lab.scenario = LabScenario(first_token_ms=400, chunk_chars=0, busy="typing", placeholder="Thinking…",
                               user_echo_delay_ms=300)
    profile = lab.profile(completion={"poll_ms": 2000, "quiet_ms": 500})
    [reply] = harness.chat(profile, tmp_path, ["quick"])
    assert reply.bubbles == ["echo: quick"]
    assert signal_is(reply.signal, "busy-gone", "placeholder-gone"), reply.signal


@pytest.mark.parametrize("user_selector", [True, False], ids=["anchored-on-our-bubble", "no-user-selector"])
@pytest.mark.parametrize("vanishes", [False, True], ids=["welcome-stays", "welcome-vanishes"])
def test_the_welcome_bubble_is_never_a_reply(harness, lab, tmp_path, user_selector, vanishes):
    lab.scenario = LabScenario(welcome="Hello! Ask me anything.", welcome_vanishes=vanishes, done="attr")
    profile = lab.profile(selectors={"ignore": None, **({} if user_selector else {"user_message": None})})
    first, second = harness.chat(profile, tmp_path, ["first", "second"])
    assert first.bubbles == ["echo: first"]
    assert second.bubbles == ["echo: second"]


@pytest.mark.parametrize("user_selector", [True, False], ids=["anchored-on-our-bubble", "no-user-selector"])
def test_a_list_re_rendered_on_every_change(harness, lab, tmp_path, user_selector):
    lab.scenario = LabScenario(rerender=True, welcome="Hi!", busy="stop-button", done="attr", chunk_chars=3)
    profile = lab.profile(selectors={} if user_selector else {"user_message": None})
    replies = harness.chat(profile, tmp_path, ["first", "second", "first"])
    assert [r.bubbles for r in replies] == [["echo: first"], ["echo: second"], ["echo: first"]]
    assert signal_is(replies[-1].signal, "busy-gone", "done"), replies[-1].signal


def test_a_reply_that_never_comes_times_out_with_a_screenshot(harness, lab, tmp_path):
    lab.scenario = LabScenario(never_reply=True, busy="stop-button", placeholder="Thinking…")
    with pytest.raises(ReplyTimeout) as caught:
        harness.chat(lab.profile(completion={"timeout_s": 2}), tmp_path, ["anyone?"])
    message = str(caught.value)
    assert message.startswith("no complete reply (turn 1): reply not started (only placeholders or a busy marker)")
    assert "(limit 2 s): only placeholders matched assistant_message '#log .bubble.bot' after our message; " \
           "busy '#stop' visible; a placeholder still shown" in message
    assert caught.value.screenshot is not None and caught.value.screenshot.is_file()
    assert caught.value.screenshot.parent == tmp_path and f"(screenshot: {caught.value.screenshot})" in message


def test_nothing_at_all_fails_at_the_first_bubble_timeout(harness, lab, tmp_path):
    lab.scenario = LabScenario(never_reply=True, busy="none")
    with pytest.raises(ReplyTimeout) as caught:
        harness.chat(lab.profile(completion={"first_bubble_timeout_s": 1.5}), tmp_path, ["hello?"])
    assert str(caught.value).startswith("no complete reply (turn 1): no reply bubble after 2 s (limit 1.5 s): nothing "
                                        "matched assistant_message '#log .bubble.bot' after our message")
    assert caught.value.screenshot is not None and caught.value.screenshot.stat().st_size > 1000
    dom = caught.value.dom.read_text()  # the chat's DOM beside the screenshot, as text
    assert caught.value.dom.name.endswith(".dom.txt") and 'class="bubble me">hello?</div>' in dom


@pytest.mark.parametrize("method", ["fill", "type"])
def test_contenteditable_input_with_enter_to_send_keeps_lines_in_one_message(harness, lab, tmp_path, method):
    lab.scenario = LabScenario(input="contenteditable", send_button=False)
    profile = lab.profile(input_method=method)
    [reply] = harness.chat(profile, tmp_path, ["line one\nline two"])
    assert lab.received == ["line one\nline two"]
    assert reply.bubbles == ["echo: line one\nline two"]


def test_the_signal_is_logged_at_info(harness, lab, tmp_path, caplog):
    lab.scenario = LabScenario(busy="stop-button", done="attr")
    with caplog.at_level(logging.INFO, logger="drivers.generic"):
        [reply] = harness.chat(lab.profile(), tmp_path, ["log it"])
    assert f"turn 1: reply complete, 1 bubble(s), signal {reply.signal}" in caplog.text


def _stable_ms(signal: str) -> int:
    return int(re.search(r"stable\((\d+)ms\)", signal).group(1))


@pytest.mark.parametrize("done", ["attr", "none"])
def test_a_done_marker_ends_the_reply_on_its_own_quiet_window(harness, lab, tmp_path, done):
    """quiet_ms_with_done once the UI says done; quiet_ms_with_markers when only busy came and went."""
    lab.scenario = LabScenario(busy="stop-button", done=done)
    profile = lab.profile(completion={"quiet_ms_with_done": 300, "quiet_ms_with_markers": 900})
    [reply] = harness.chat(profile, tmp_path, ["which window?"])
    assert reply.bubbles == ["echo: which window?"]
    stable = _stable_ms(reply.signal)
    if done == "attr":
        assert signal_is(reply.signal, "busy-gone", "done") and 300 <= stable < 900, reply.signal
    else:
        assert signal_is(reply.signal, "busy-gone") and stable >= 900, reply.signal


def test_a_banner_over_the_send_button_is_waited_out_not_clicked(harness, lab, tmp_path):
    lab.scenario = LabScenario(cover_send_ms=1500, done="attr")
    [reply] = harness.chat(lab.profile(), tmp_path, ["after the banner"])
    assert lab.received == ["after the banner"]
    assert reply.bubbles == ["echo: after the banner"]


def test_a_send_button_disabled_for_a_while_after_typing_is_clicked_once_enabled(harness, lab, tmp_path):
    lab.scenario = LabScenario(send_enabled_after_ms=400, done="attr")
    replies = harness.chat(lab.profile(), tmp_path, ["first", "second"])
    assert lab.received == ["first", "second"]
    assert [r.bubbles for r in replies] == [["echo: first"], ["echo: second"]]


class _ClearedOnceClickable(PlaywrightDriver):
    """The page empties its input the moment its send button has just become clickable: Chainlit
    finishing its start-up did so in CI between the driver's wait and its press."""

    cleared = False

    async def _wait_clickable(self, button, typed, timeout_s):
        await super()._wait_clickable(button, typed, timeout_s)
        if not self.cleared:
            self.cleared = True
            await (await self._frame()).evaluate(
                "() => { document.querySelector('#box').value = ''; document.querySelector('#send').disabled = true; }")


def test_an_input_cleared_just_after_send_became_clickable_is_input_cleared_not_a_long_wait(harness, lab, tmp_path):
    """Nothing was pressed, nothing sent: the driver says so at once (the run types it again) instead
    of waiting out send_timeout_s on a button the page will not enable for an empty input."""
    lab.scenario = LabScenario(send_enabled_after_ms=300, done="attr")
    journal = Counting()

    async def go() -> tuple[float, list[str]]:
        driver = _ClearedOnceClickable(lab.profile(send_timeout_s=8), await harness.browser.new_context(),
                                       artifacts=tmp_path, screenshot_on_failure=False)
        await driver.open(None)
        try:
            began = time.monotonic()
            with pytest.raises(InputCleared):
                await driver.send("typed before the remount", journal)
            waited = time.monotonic() - began
            reply = await driver.send("typed before the remount", journal)
            return waited, reply.bubbles
        finally:
            await driver.close()

    waited, bubbles = harness.run(go())
    assert lab.received == ["typed before the remount"]
    assert bubbles == ["echo: typed before the remount"]
    assert journal.typed == 1  # the press that did not happen is not counted as typed
    assert waited < 8  # told at the first look at the empty input, not at the end of send_timeout_s


@pytest.mark.parametrize("done", ["attr", "none"])
def test_a_page_that_reloads_mid_reply_is_watched_on_in_the_new_page(harness, lab, tmp_path, done):
    """The wait lives in the page; a reload ends it there, and it is taken up in the reloaded page."""
    lab.scenario = LabScenario(reload_mid_reply_ms=150, chunk_chars=2, chunk_ms=40, done=done)
    replies = harness.chat(lab.profile(completion={"quiet_ms": 600}), tmp_path, ["reload me please", "and again"])
    assert lab.received == ["reload me please", "and again"]
    assert [r.bubbles for r in replies] == [["echo: reload me please"], ["echo: and again"]]


@pytest.mark.parametrize("quiet_ms_with_done", [None, 0])
def test_a_render_right_after_the_done_marker_is_waited_for(harness, lab, tmp_path, quiet_ms_with_done):
    """The default quiet window after done catches a render queued with the marker; none at all would not."""
    lab.scenario = LabScenario(done="attr", final_render_ms=8)
    completion = {} if quiet_ms_with_done is None else {"quiet_ms_with_done": quiet_ms_with_done}
    replies = harness.chat(lab.profile(completion=completion), tmp_path, ["one", "two", "three"])
    if quiet_ms_with_done is None:
        assert [r.bubbles for r in replies] == [[f"echo: {t} ✓"] for t in ("one", "two", "three")]
    else:
        assert any(r.bubbles == [f"echo: {t}"] for r, t in zip(replies, ("one", "two", "three"), strict=True)), replies


def test_a_message_selector_that_is_not_css_fails_on_opening_naming_it(harness, lab, tmp_path):
    with pytest.raises(SelectorError) as caught:
        harness.chat(lab.profile(selectors={"busy": "#stop[", "done": "text=Done"}), tmp_path, ["hello?"])
    message = str(caught.value)
    assert "selectors.busy '#stop[' is not a valid CSS selector" in message
    assert "selectors.done 'text=Done' is not a valid CSS selector" in message
    assert lab.received == []  # nothing was sent
