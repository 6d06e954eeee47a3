"""The Telegram Web K and A profiles against markup rebuilt from tweb's and telegram-tt's source.

Real Telegram needs a login, so the pages under tests/support/telegram/ reproduce the clients'
chat DOM (duplicated contenteditable input, bubbles with their time inside, the typing marker
where each client shows it for bots, START) around a simulated bot that streams a draft, then
answers in several messages with typing in between, and forgets on /new. The driver runs in real
Chromium with the shipped profiles, opened by a deep link as a user would open a bot.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from drivers.base import DriverError
from drivers.generic import PlaywrightDriver
from drivers.registry import build_profile
from tests.support import telegram
from tests.support.async_browser import BrowserHarness
from tests.support.run_process import saved_state
from tests.support.static_site import serve

CLIENTS = ["telegram_k", "telegram_a"]
# The long tests play both clients in the slow set and telegram_k alone in the default suite.
BOTH_SLOW_A = ["telegram_k", pytest.param("telegram_a", marks=pytest.mark.slow)]
PATH = {"telegram_k": "k/", "telegram_a": "a/"}
NAIVE_INPUT = {"telegram_k": ".input-message-input", "telegram_a": "#editable-message-text"}
# Quicker than real bots, same shape: the draft streams, the second bubble comes after a pause.
FAST_BOT = "Object.assign(window.mmbBot.config, {draftMs: 200, gapMs: 700, stepMs: 30})"
FAST = {"completion": {"quiet_ms_with_markers": 1200, "quiet_ms": 1500}}


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve(telegram.HERE) as url:
        yield url


def _url(site: str, client: str, bot: str = telegram.BOT) -> str:
    return f"{site}{PATH[client]}#@{bot}"


async def _open(harness: BrowserHarness, client: str, site: str, tmp: Path, options: dict | None = None,
                bot: str = telegram.BOT) -> PlaywrightDriver:
    profile = build_profile(client, {}, {**FAST, **(options or {})})
    context = await harness.browser.new_context(viewport={"width": 1200, "height": 800})
    await context.add_init_script(f"window.addEventListener('DOMContentLoaded', () => {{ {FAST_BOT} }})")
    driver = PlaywrightDriver(profile, context, base_url=_url(site, client, bot), artifacts=tmp)
    try:
        await driver.open(None)
    except BaseException:
        await driver.close()
        raise
    return driver


async def _bot_log(driver: PlaywrightDriver) -> list[dict]:
    return await driver._page().evaluate("window.mmbBot.log")


@pytest.mark.parametrize("client", CLIENTS)
def test_the_input_is_the_real_editable_one_and_start_is_pressed_once(harness, site, client, tmp_path) -> None:
    async def go() -> None:
        driver = await _open(harness, client, site, tmp_path)
        page = driver._page()
        try:
            # The bot got /start from START; its greeting was taken then, not as a later reply.
            assert [x["in"] for x in await _bot_log(driver)] == ["/start"]
            profile_input = page.locator(driver.profile.selectors.input)
            assert await profile_input.count() == 1
            assert await page.locator(NAIVE_INPUT[client]).count() == 2  # the fake mirror / the sliding chat
            reply = await driver.send("Line one\nline two")  # typed with Shift+Enter: one message
            assert [x["in"] for x in await _bot_log(driver)] == ["/start", "Line one\nline two"]
            assert reply.bubbles[0] == "Noted: Line one\nline two"
            assert await profile_input.inner_text() == ""
        finally:
            await driver.close()

    harness.run(go())


@pytest.mark.parametrize("client", CLIENTS)
def test_a_streamed_multi_bubble_reply_is_collected_whole(harness, site, client, tmp_path) -> None:
    async def go() -> None:
        driver = await _open(harness, client, site, tmp_path)
        try:
            reply = await driver.send("My cat is called Sill.")
        finally:
            await driver.close()
        # Two messages, no draft text, no time stamps, nothing of the greeting.
        assert reply.bubbles == ["Noted: My cat is called Sill.", "That's 1 thing this session."]
        assert reply.signal.startswith("busy-gone+stable")

    harness.run(go())


@pytest.mark.parametrize("client", CLIENTS)
def test_without_the_typing_marker_the_reply_would_be_cut_short(harness, site, client, tmp_path) -> None:
    """The control: what the busy marker buys. Text stability alone stops at the first bubble."""

    async def go() -> None:
        driver = await _open(harness, client, site, tmp_path,
                             {"completion": {"quiet_ms": 400, "quiet_ms_with_markers": 400}})
        driver.profile.selectors.busy = None
        try:
            reply = await driver.send("My cat is called Sill.")
        finally:
            await driver.close()
        assert reply.bubbles == ["Noted: My cat is called Sill."]

    harness.run(go())


@pytest.mark.parametrize("client", BOTH_SLOW_A)
def test_new_is_a_message_the_bot_acknowledges_and_then_it_has_forgotten(harness, site, client, tmp_path) -> None:
    async def go() -> None:
        driver = await _open(harness, client, site, tmp_path)
        try:
            await driver.send("My cat is called Sill.")
            remembered = await driver.send("What did I tell you?")
            info = await driver.new_session()
            forgotten = await driver.send("What did I tell you?")
        finally:
            await driver.close()
        assert remembered.bubbles == ["Let me think.", "You told me: My cat is called Sill."]
        assert info.reset_sign.startswith("agent acknowledged '/new'")
        assert forgotten.bubbles == ["You never told me anything in this session."]

    harness.run(go())


@pytest.mark.slow  # 14 s: the slow set
def test_a_long_chat_survives_tweb_dropping_old_bubbles(harness, site, tmp_path) -> None:
    """Web K keeps only the bubbles near the viewport, so counting ours stops working."""

    async def go() -> list[list[str]]:
        driver = await _open(harness, "telegram_k", site, tmp_path)
        try:
            replies = [await driver.send(f"Fact number {i}.") for i in range(1, 6)]
            shown = await driver._page().locator(driver.profile.selectors.user_message).count()
        finally:
            await driver.close()
        assert shown < 5, "the fixture should have dropped old bubbles"
        return [r.bubbles for r in replies]

    replies = harness.run(go())
    assert replies == [[f"Noted: Fact number {i}.", f"That's {i} {'thing' if i == 1 else 'things'} this session."]
                       for i in range(1, 6)]


@pytest.mark.parametrize("client", BOTH_SLOW_A)
def test_a_deep_link_to_another_bot_opens_no_chat(harness, site, client, tmp_path) -> None:
    async def go() -> None:
        await _open(harness, client, site, tmp_path, {"ready_timeout_s": 3}, bot="nosuchbot")

    with pytest.raises(DriverError, match="matched nothing visible"):
        harness.run(go())


def test_the_profiles_log_in_at_telegram_web_and_start_bots_by_message() -> None:
    for client in CLIENTS:
        profile = build_profile(client, {}, {})
        assert profile.url == f"https://web.telegram.org/{PATH[client]}"
        assert profile.new_session == "message" and profile.new_session_message == "/new" and profile.selectors.start


@pytest.mark.slow  # half a minute; the default set drives each Telegram markup without a whole run
def test_a_benchmark_plays_through_the_web_k_markup_with_mmb_run(site, write_config, tmp_path) -> None:
    """The real `mmb run` path: deep link from config.jsonc, START, multi-bubble replies, /new, grades."""
    import json

    from tests.conftest import mmb

    bench = Path(__file__).resolve().parent / "support" / "frontend_bench"
    fast_url = _url(site, "telegram_k").replace("#", "?fast#")  # FAST_BOT's timings, with FAST's windows
    config = write_config([{"id": "tg", "benchmark": str(bench),
                            "agent": {"driver": "telegram_k", "url": fast_url, "options": FAST}}])
    done = mmb("run", "-c", str(config), timeout=900)
    folder = tmp_path / "results" / "tg"
    assert done.returncode == 0, done.stdout + done.stderr
    state = saved_state(folder)
    assert state["status"] == "finished"
    exchanges = [json.loads(line) for line in (folder / "transcript.jsonl").read_text().splitlines()]
    told = [x for x in exchanges if x["reply"][0].startswith("Noted: ")]
    assert told and all(len(x["reply"]) == 2 for x in told), [x["reply"] for x in exchanges]
    assert [s["reason"] for s in state["sessions"]] == ["start", "newSession"]
    assert state["sessions"][1]["reset_sign"].startswith("agent acknowledged '/new'")
    scores = {e["check_id"]: e["score"] for e in state["evaluations"]}
    # s1's answer is in the second bubble of its reply; n1 was told before /new, which the bot forgot.
    assert scores["s1"] == 10 and scores["n1"] == 0, scores
