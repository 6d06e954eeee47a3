"""The frontend profiles load by name and take config overrides; the test model answers from its chat only."""

from __future__ import annotations

import pytest

from drivers.registry import PROFILE_MODULES, build_profile
from tests.support.chat_model import ACK, PREFIX, SEARCHED_UNKNOWN, UNKNOWN, answer
from tests.support.frontend_specs import DISCOVERED_ONLY, FRONTENDS

FRONTEND_PROFILES = ["gradio", "chainlit", "streamlit", "openwebui", "panel"]


@pytest.mark.parametrize("name", FRONTEND_PROFILES)
def test_each_frontend_profile_is_complete_and_overridable(name: str) -> None:
    profile = build_profile(name, {"new_chat": "#mine"}, {"completion": {"timeout_s": 42}})
    s = profile.selectors
    assert profile.name == name and profile.url.startswith("http://127.0.0.1:")
    assert s.input and s.send and s.busy
    # each side found: by a selector of its own, or by the author's name (Panel)
    assert (s.assistant_message and s.user_message) or (s.message and s.author and profile.authors)
    assert s.new_chat == "#mine" and profile.completion.timeout_s == 42
    assert profile.completion.quiet_ms_with_markers == build_profile(name, {}, {}).completion.quiet_ms_with_markers


def test_every_profile_has_a_real_frontend_test() -> None:
    assert sorted(f.name for f in FRONTENDS) == sorted(FRONTEND_PROFILES)
    assert not {f.name for f in DISCOVERED_ONLY} & set(PROFILE_MODULES), "a UI with a profile is tested with it"


def test_an_unknown_override_is_refused() -> None:
    with pytest.raises(ValueError, match="selectors.inptu"):
        build_profile("gradio", {"inptu": "x"}, {})


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def test_the_test_model_acknowledges_and_answers_from_the_chat_it_is_sent() -> None:
    chat = [user("Our dog is called Biscuit."), {"role": "assistant", "content": ACK},
            user("My new bike cost 640 EUR."), user("Correction: my new bike cost 720 EUR, not 640.")]
    assert answer(chat) == ACK
    bike = answer(chat + [user("How much did my new bike cost?")])
    assert bike.startswith(PREFIX + "Correction: my new bike cost 720 EUR")  # the latest first
    parts = [{"type": "text", "text": "What is my dog called?"}]
    assert answer(chat + [{"role": "user", "content": parts}]) == PREFIX + "Our dog is called Biscuit."


def test_the_test_model_knows_nothing_of_another_chat() -> None:
    asked = [user("What is my dog called?")]
    assert answer(asked) == UNKNOWN
    assert answer(asked + [user("Please search your memory or notes, I'm sure I told you.")]) == SEARCHED_UNKNOWN
