"""Fast checks of the OpenClaw, messenger (Telegram, Hydrogen), LibreChat and Hermes profiles and of URL secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from drivers.base import DriverError
from drivers.generic import PlaywrightDriver
from drivers.messenger import BOT_COMMAND_NEW
from drivers.profile import DEFAULT_NEW_SESSION_ACK
from drivers.registry import build_profile, driver_names
from drivers.url_secrets import ChatUrl, expand
from tests.support.node_frontends import MatrixChannel, OpenClawChatModel, gateway_config, person_said

NAMES = ["openclaw", "telegram_k", "telegram_a", "hydrogen", "librechat", "hermes"]
MESSENGERS = ["telegram_k", "telegram_a", "hydrogen"]


@pytest.mark.parametrize("name", NAMES)
def test_each_profile_loads_and_takes_overrides(name: str) -> None:
    assert name in driver_names()
    profile = build_profile(name, {"busy": "#mine"}, {"completion": {"timeout_s": 42}})
    s = profile.selectors
    assert s.input and s.assistant_message and s.user_message and s.busy == "#mine"
    assert profile.completion.timeout_s == 42
    assert profile.new_session != "button" or s.new_chat


def test_the_messenger_profiles_share_the_bots_habits() -> None:
    """One place (drivers/messenger.py): a bot's /new acknowledged in a chat that keeps its history, and
    quiet windows longer than a bot's pause between messages; only what each client shows differs."""
    profiles = [build_profile(name, {}, {}) for name in MESSENGERS]
    for p in profiles:
        assert p.new_session == "message" and p.new_session_message.endswith(BOT_COMMAND_NEW)
        assert p.new_session_ack == DEFAULT_NEW_SESSION_ACK and not p.new_session_message_opens_chat
        assert p.completion.quiet_ms >= 3000 and p.completion.quiet_ms_with_markers >= 3000
    assert len({(p.completion.model_dump_json(), p.send_timeout_s, p.ready_timeout_s) for p in profiles}) == 1
    assert build_profile("hydrogen", {}, {}).new_session_message == "//new"  # Hydrogen's escape of a /command


def test_the_matrix_channel_config_keeps_the_bots_token_out() -> None:
    channel = MatrixChannel("http://127.0.0.1:8008", "@bot:t", "syt_secret_token", "DEV", ("@rui:t",), ("!r:t",), True)
    config = channel.config()
    assert "syt_secret_token" not in str(config)  # it goes in the gateway's environment
    matrix = config["channels"]["matrix"]
    assert matrix["dm"]["allowFrom"] == ["@rui:t"] and matrix["autoJoinAllowlist"] == ["!r:t"]
    assert matrix["encryption"] is True and matrix["deviceId"] == "DEV"


def test_a_url_secret_comes_from_the_environment() -> None:
    url, secrets = expand("http://h/#token=${TOK}&x=${TOK}", {"TOK": "s3cr3t-value"})
    assert url == "http://h/#token=s3cr3t-value&x=s3cr3t-value" and secrets == ("s3cr3t-value",)
    with pytest.raises(ValueError, match="TOK, TWO"):
        expand("http://h/#${TOK}${TWO}", {"TOK": ""})


def test_a_url_secret_is_shown_as_its_placeholder_and_filled_in_only_for_its_own_origin() -> None:
    chat = ChatUrl("http://h:1/c?k=${TOK}#t=${TOK}", {"TOK": "a b/c+d"})
    assert chat.opened == "http://h:1/c?k=a b/c+d#t=a b/c+d"
    for written in ("a b/c+d", "a%20b%2Fc%2Bd", "a%20b/c%2Bd", "a+b%2Fc%2Bd"):  # as a browser may write it
        assert chat.hide(f"http://h:1/c?k={written}") == "http://h:1/c?k=${TOK}"
    assert chat.reopen("/c/2#t=${TOK}") == "/c/2#t=a b/c+d"
    assert chat.reopen("http://h:1/c/3?k=${TOK}") == "http://h:1/c/3?k=a b/c+d"
    # A page that sent us elsewhere, with our placeholder in its address, never gets the value.
    assert chat.reopen("https://evil.example/?k=${TOK}") == "https://evil.example/?k=${TOK}"
    assert chat.reopen("//evil.example/${TOK}") == "//evil.example/${TOK}"
    assert chat.fill("${HOME}/x") == "${HOME}/x", "only the URL's own placeholders are filled"


class _Context:  # all PlaywrightDriver's constructor touches
    tracing = None


def test_a_missing_url_secret_names_the_variable_and_not_the_url(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENCLAW_GATEWAY_TOKEN", raising=False)
    with pytest.raises(DriverError, match="OPENCLAW_GATEWAY_TOKEN"):
        PlaywrightDriver(build_profile("openclaw", {}, {}), _Context(), artifacts=tmp_path)


def test_a_saved_chat_reopens_with_the_token_fragment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENCLAW_GATEWAY_TOKEN", "tok-123456")
    driver = PlaywrightDriver(build_profile("openclaw", {}, {}), _Context(), artifacts=tmp_path,
                              base_url="http://127.0.0.1:5000/#token=${OPENCLAW_GATEWAY_TOKEN}")
    assert driver._address(driver._open_url, "/chat/main/abc") == "http://127.0.0.1:5000/chat/main/abc#token=tok-123456"
    assert driver._address(driver.base_url, None).endswith("#token=${OPENCLAW_GATEWAY_TOKEN}")
    assert "tok-123456" in driver.tracer.secrets


def test_openclaws_wrapping_is_not_what_the_person_said() -> None:
    wrapped = ("[Wed 2026-12-02 19:00 UTC] Conversation info: ⟦openclaw:ctx⟧\n```json\n{\"sender\":{\"id\":\"o\"}}\n```\n\n"
               "Our dog is called Biscuit.\n\nRuntime: agent=main | session=agent:main:main | channel=webchat")
    assert person_said(wrapped) == "Our dog is called Biscuit."
    assert person_said([{"type": "text", "text": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nActive exec sessions"}]) is None
    model = OpenClawChatModel()
    ask = wrapped.replace("Our dog is called Biscuit.", "What is our dog called?")
    reply = model([{"role": "system", "content": "You are..."}, {"role": "user", "content": wrapped},
                   {"role": "assistant", "content": "Got it"}, {"role": "user", "content": ask},
                   {"role": "user", "content": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nnone"}], [])
    assert reply["content"] == "You told me this: Our dog is called Biscuit."


def test_the_gateway_config_keeps_the_token_out(tmp_path: Path) -> None:
    config = gateway_config(tmp_path, "http://127.0.0.1:1/v1", "m")
    assert config["gateway"]["auth"] == {"mode": "token"} and config["gateway"]["bind"] == "loopback"
    assert config["agents"]["defaults"]["model"]["primary"] == "mmb/m"
