"""Chats in iframes (cross-origin, nested, replaced), behind launchers, reset by forgetting storage; and
every wait on the page bounded: in real Chromium against the variant pages of tests/support/variant_lab.py."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

from drivers.base import DriverError, ReplyTimeout
from drivers.profile import Completion, Profile, Selectors
from tests.support.chat_lab import ChatLab, LabScenario
from tests.support.static_site import serve
from tests.support.variant_lab import Variant


def variant_profile(lab: ChatLab, v: Variant, **overrides: Any) -> Profile:
    """The profile a person would write for the variant, from its generated names."""
    n = v.names()
    if v.shared_class and v.shadow == "nested":
        user, bot = ".message[data-from=user]", ".message[data-from=assistant]"
    elif v.shared_class:
        user, bot = f"[data-author=user] .{n['bubble']}", f"[data-author=assistant] .{n['bubble']}"
    else:
        user, bot = f".{n['user']} .{n['bubble']}", f".{n['bot']} .{n['bubble']}"
    if v.shadow == "nested" and not v.shared_class:
        user, bot = ".message.user", ".message.assistant"
    selectors = {"input": "textarea", "send": f".{n['send']}" if v.send == "button" else None,
                 "assistant_message": bot, "user_message": user,
                 "busy": {"stop": f".{n['stop']}", "dots": f".{n['dots']}", "none": None}[v.busy],
                 "new_chat": f".{n['new']}" if v.new_chat == "button" else None,
                 "launcher": f".{n['launcher']}" if v.launcher else None, **overrides.pop("selectors", {})}
    completion = {"first_bubble_timeout_s": 20, "timeout_s": 30, **overrides.pop("completion", {})}
    options: dict[str, Any] = {"frame": "iframe" if v.frame != "none" else None,
                               "new_session": "storage" if v.new_chat == "storage" else "button"}
    return Profile(name="variant", url=lab.url + "/", selectors=Selectors(**selectors),
                   completion=Completion(**completion), **{**options, **overrides})


def play(harness, profile: Profile, tmp_path: Path, *, new_chat_after: int = 1, messages: int = 3):
    """Send `messages` messages with a new chat after the first `new_chat_after`; the replies, the reset
    sign and our bubbles counted after the new chat."""

    async def go():
        driver = await harness.driver(profile, tmp_path)
        try:
            replies = [(await driver.send(f"message {i}")).bubbles for i in range(1, new_chat_after + 1)]
            info = await driver.new_session()
            replies += [(await driver.send(f"message {i}")).bubbles for i in range(new_chat_after + 1, messages + 1)]
            return replies, info.reset_sign, (await driver.chat_before()).users
        finally:
            await driver.close()

    return harness.run(go())


@pytest.mark.parametrize("frame", ["same-origin", "cross-origin"])
@pytest.mark.parametrize("launcher", [False, True])
def test_a_widget_in_an_iframe_that_only_works_in_its_host_page(harness, tmp_path, frame, launcher):
    v = Variant(seed=11, frame=frame, launcher=launcher, labels=False)
    with ChatLab(LabScenario(variant=v, chunk_ms=5)) as lab:
        replies, sign, users = play(harness, variant_profile(lab, v), tmp_path)
        assert lab.received == ["message 1", "message 2", "message 3"]  # each typed once
    assert replies == [["echo: message 1"], ["echo: message 2"], ["echo: message 3"]]
    assert sign.startswith("no messages left (1 before)") and users == 2


def test_the_widget_refuses_to_run_outside_its_host_page(harness, tmp_path):
    """Why `agent.frame` exists: pointing agent.url at the frame's own address does not work."""
    v = Variant(seed=12, frame="cross-origin")
    with ChatLab(LabScenario(variant=v)) as lab:
        profile = variant_profile(lab, v, frame=None, ready_timeout_s=1.5).model_copy(update={"url": lab.url + "/w"})
        with pytest.raises(DriverError, match=r"did not show .* within 1.5 s: input selector 'textarea' matched nothing visible"):
            harness.run(harness.driver(profile, tmp_path))


def test_a_launcher_on_the_page_itself_and_a_conversation_kept_in_storage(harness, tmp_path):
    """No New chat control: the conversation id lives in localStorage (a reload shows the old chat), so
    `new_session: "storage"` forgets the origin's storage, opens the page again and the launcher with it."""
    v = Variant(seed=13, launcher=True, new_chat="storage", busy="dots", shadow="nested")
    with ChatLab(LabScenario(variant=v, chunk_ms=5)) as lab:
        replies, sign, users = play(harness, variant_profile(lab, v), tmp_path, new_chat_after=2, messages=3)
        assert lab.received == ["message 1", "message 2", "message 3"]
        conversations = [c for c in lab.conversations.values() if c]
    assert replies[-1] == ["echo: message 3"] and users == 1
    assert sign == f"no messages left (2 before); reopened with the launcher '.{v.names()['launcher']}'", sign
    assert len(conversations) == 2  # the new chat is a new conversation for the agent


def test_a_reload_alone_does_not_reset_a_chat_kept_in_storage(harness, tmp_path):
    """The reset check is what makes `storage` necessary: `reload` on the same widget is caught."""
    v = Variant(seed=14, frame="cross-origin", new_chat="storage")
    with ChatLab(LabScenario(variant=v, chunk_ms=5)) as lab:
        profile = variant_profile(lab, v, new_session="reload", reset_timeout_s=1.5)
        with pytest.raises(DriverError, match=r"did not reset after new session \(reload\): 1 of 1 message"):
            play(harness, profile, tmp_path)


def test_nested_frames_and_a_frame_found_by_its_address(harness, tmp_path):
    v = Variant(seed=15, frame="cross-origin")
    with ChatLab(LabScenario(variant=v, chunk_ms=5)) as lab:
        site = tmp_path / "site"
        site.mkdir()
        (site / "index.html").write_text(f'<!doctype html><h1>Portal</h1><iframe id="portal" src="{lab.url}/" '
                                         'style="width: 900px; height: 700px"></iframe>')
        with serve(site) as outer:
            chains = [["#portal", "iframe"], ["#portal", "url=*://localhost:*/w"], ["url=*/w"]]
            for chain in chains:
                profile = variant_profile(lab, v, frame=chain).model_copy(update={"url": outer})
                replies, _, _ = play(harness, profile, tmp_path, messages=2)
                assert replies == [["echo: message 1"], ["echo: message 2"]], chain
        assert lab.received == ["message 1", "message 2"] * len(chains)


def test_a_frame_that_is_replaced_is_found_again(harness, tmp_path):
    """`reload` re-creates the host page and so the widget's iframe: every later step finds the new one."""
    v = Variant(seed=16, frame="cross-origin")
    with ChatLab(LabScenario(variant=v, chunk_ms=5)) as lab:
        # the widget keeps its conversation id in the frame's localStorage: reload + storage reset makes a new frame
        replies, sign, _ = play(harness, variant_profile(lab, v, new_session="storage"), tmp_path, messages=2)
        assert lab.received == ["message 1", "message 2"]
    assert replies == [["echo: message 1"], ["echo: message 2"]] and sign.startswith("no messages left")


def test_a_chat_below_the_site_root_is_reopened_where_it_was(harness, tmp_path):
    """A restart reopens the saved address: the chat's own path (it used to become the site's root)."""
    v = Variant(seed=18, new_chat="storage")
    with ChatLab(LabScenario(variant=v, chunk_ms=5)) as lab:
        profile = variant_profile(lab, v).model_copy(update={"url": lab.url + "/app/chat.html"})

        async def go():
            driver = await harness.driver(profile, tmp_path)
            try:
                await driver.send("hello")
                saved = driver.session_url
                await driver.page.goto("about:blank")
                await driver.open(saved)
                return saved, driver.page.url, (await driver.chat_before()).users
            finally:
                await driver.close()

        saved, url, users = harness.run(go())
        assert url == lab.url + "/app/chat.html"
    assert saved == "/app/chat.html" and users == 1


def test_a_frame_selector_that_finds_nothing_names_the_step(harness, tmp_path):
    v = Variant(seed=17, frame="cross-origin")
    with ChatLab(LabScenario(variant=v)) as lab:
        profile = variant_profile(lab, v, frame=["iframe", "iframe.inner"], ready_timeout_s=1)
        with pytest.raises(DriverError, match=r"frame selector 'iframe.inner' matches nothing in the frame at http://localhost:"):
            harness.run(harness.driver(profile, tmp_path))


# -- no silent wait ------------------------------------------------------------------------------------

def test_a_watch_that_throws_inside_the_page_is_a_clear_failure_at_once(harness, tmp_path):
    v = Variant(seed=21, break_watch=True)
    with ChatLab(LabScenario(variant=v)) as lab:
        started = time.monotonic()
        with pytest.raises(ReplyTimeout, match=r"the reply watch failed in the page: .*broken polyfill"):
            harness.chat(variant_profile(lab, v), tmp_path, ["hello"])
    assert time.monotonic() - started < 10


def test_bubbles_sharing_a_class_with_ours_in_nested_shadow_roots_fail_within_the_first_bubble_limit(harness, tmp_path):
    """The profile of the issue: one class for both bubbles. The reply never shows as the agent's, and the
    run says so within first_bubble_timeout_s (not timeout_s), naming the cause."""
    v = Variant(seed=22, shadow="nested", shared_class=True, busy="none")
    with ChatLab(LabScenario(variant=v)) as lab:
        profile = variant_profile(lab, v, selectors={"assistant_message": ".message", "user_message": ".message"},
                                  completion={"first_bubble_timeout_s": 3, "timeout_s": 600})
        started = time.monotonic()
        with pytest.raises(ReplyTimeout) as caught:
            harness.chat(profile, tmp_path, ["hello"])
        took = time.monotonic() - started
    assert took < 3 + 8, took
    assert "(limit 3 s)" in str(caught.value)
    assert "assistant_message '.message' also matches our own message" in str(caught.value)


def test_the_same_page_with_a_profile_that_tells_the_bubbles_apart_plays(harness, tmp_path):
    v = Variant(seed=22, shadow="nested", shared_class=True, busy="none")
    with ChatLab(LabScenario(variant=v)) as lab:
        replies, _, _ = play(harness, variant_profile(lab, v, completion={"quiet_ms": 300}), tmp_path, messages=2)
        assert lab.received == ["message 1", "message 2"]
    assert replies == [["echo: message 1"], ["echo: message 2"]]


def test_a_page_that_stops_answering_fails_within_its_limit_plus_a_few_seconds(harness, tmp_path):
    """The page's main thread is stuck after our message: the in-page wait cannot answer, the Python side
    bound ends it with the stage."""
    v = Variant(seed=23, block_ms=25_000)
    with ChatLab(LabScenario(variant=v)) as lab:
        profile = variant_profile(lab, v, send_timeout_s=2, completion={"first_bubble_timeout_s": 2, "timeout_s": 600})
        started = time.monotonic()
        with pytest.raises(DriverError, match=r"did not answer|stopped answering"):
            harness.chat(profile, tmp_path, ["hello"])
        took = time.monotonic() - started
    assert took < 20, took  # send 2 s + the page's grace, well before the page wakes up (25 s)


def test_a_busy_marker_gone_with_no_reply_fails_at_the_first_bubble_limit(harness, tmp_path):
    """A busy marker that came and went proves work only while it shows: with nothing to show, the run
    does not wait out timeout_s (a Web Chat run once waited 590 s with "no reply bubble")."""
    with ChatLab(LabScenario(at_message={1: "no-reply"}, busy_gives_up_ms=500)) as lab:
        started = time.monotonic()
        with pytest.raises(ReplyTimeout, match=r"no reply bubble after \d+ s \(limit 2 s\).*busy '#stop' gone"):
            harness.chat(lab.profile(completion={"first_bubble_timeout_s": 2, "timeout_s": 120}), tmp_path, ["hello"])
    assert time.monotonic() - started < 15


def test_a_long_wait_logs_a_heartbeat_with_its_stage(harness, tmp_path, caplog, monkeypatch):
    import drivers.reply_watch as reply_watch

    monkeypatch.setattr(reply_watch, "HEARTBEAT_S", 0.5)
    with ChatLab(LabScenario(first_token_ms=1800, busy="stop-button")) as lab:
        with caplog.at_level(logging.INFO, logger="drivers.waiting"):
            [reply] = harness.chat(lab.profile(), tmp_path, ["slow one"])
    assert reply.bubbles == ["echo: slow one"]
    beats = [r for r in caplog.records if r.name == "drivers.waiting"]
    assert len(beats) >= 2, caplog.text
    assert all(getattr(r, "console", False) for r in beats)  # shown on the console too
    assert "waiting for the reply: " in beats[0].getMessage() and "stage: reply not started" in caplog.text
