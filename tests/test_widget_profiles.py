"""The chat widget profiles load by name, each has its slow test and README row, and the widget
backends answer in their protocols (no browser, no npm: the slow tests drive the real widgets)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from drivers.registry import build_profile, driver_names
from tests.support.widgets.agent import SessionAgent
from tests.support.widgets.server import WidgetServer
from tests.support.widgets.specs import WIDGETS

WIDGET_PROFILES = ["n8n_chat", "flowise", "botframework_webchat", "assistant_ui"]
README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("name", WIDGET_PROFILES)
def test_each_widget_profile_is_complete_and_overridable(name: str) -> None:
    assert name in driver_names()
    profile = build_profile(name, {"busy": "#mine"}, {"completion": {"timeout_s": 42}})
    s = profile.selectors
    assert s.input and s.send and s.assistant_message and s.user_message and s.busy == "#mine"
    assert profile.completion.timeout_s == 42
    assert profile.new_session in ("button", "storage") and (profile.new_session != "button" or s.new_chat)
    assert f"| `{name}` |" in README.read_text()


def test_every_widget_profile_has_a_real_widget_test() -> None:
    assert sorted(w.name for w in WIDGETS) == sorted(WIDGET_PROFILES)


def _post(url: str, body: dict) -> bytes:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def test_the_backends_speak_each_widgets_protocol_and_keep_sessions_apart() -> None:
    agent = SessionAgent(think_s=0, chunk_delay_s=0)
    with WidgetServer(agent) as server:
        # n8n: a streamed reply in JSON lines, then the session's history as LangChain messages
        lines = [json.loads(line) for line in _post(server.url + "/webhook/x/chat", {
            "action": "sendMessage", "sessionId": "s1", "chatInput": "My dog is Rex."}).splitlines()]
        assert [x["type"] for x in (lines[0], lines[-1])] == ["begin", "end"]
        assert "".join(x["content"] for x in lines if x["type"] == "item") == agent.answers[0]
        history = json.loads(_post(server.url + "/webhook/x/chat", {"action": "loadPreviousSession",
                                                                    "sessionId": "s1"}))["data"]
        assert [m["id"][-1] for m in history] == ["HumanMessage", "AIMessage"]
        assert history[0]["kwargs"]["content"] == "My dog is Rex."
        # Flowise: server-sent events start, token..., metadata, end; another chatId knows nothing
        events = [json.loads(block.split("data:", 1)[1]) for block in
                  _post(server.url + "/api/v1/prediction/f", {"question": "What is my dog called?",
                                                              "chatId": "c2", "streaming": True}).decode()
                  .split("\n\n") if "data:" in block]
        assert [e["event"] for e in events][:1] + [e["event"] for e in events][-2:] == ["start", "metadata", "end"]
        assert "".join(e["data"] for e in events if e["event"] == "token") == agent.answers[1]
        assert "Rex" not in agent.answers[1]
        # Direct Line: a conversation, a posted activity, the bot's typing then its message from the watermark
        conversation = json.loads(_post(server.url + "/v3/directline/tokens/generate", {}))["conversationId"]
        posted = server.conversations[conversation]
        _post(server.url + f"/v3/directline/conversations/{conversation}/activities",
              {"type": "message", "text": "Hello", "from": {"id": "u"}})
        activities, mark = posted.since(0)
        assert activities[0]["text"] == "Hello" and mark >= 1
    assert [s for s, _ in agent.received][:2] == ["s1", "c2"]
