"""The widgets the slow tests play a benchmark through: driver profile, page, package, mode."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.support.widgets.packages import (
    BOTFRAMEWORK_WEBCHAT,
    FLOWISE_EMBED,
    N8N_CHAT,
    Fetched,
    assistant_ui_bundle,
    npm_pack,
)


@dataclass(frozen=True)
class Widget:
    name: str  # the driver profile (drivers/registry.py)
    page: str  # path on the widget server
    package: str  # served as /pkg/<package>/
    fetch: Callable[[], Fetched]
    mode: str  # how the page shows the chat


WIDGETS = [
    Widget("n8n_chat", "/n8n.html", "n8n-chat", lambda: npm_pack("n8n-chat", N8N_CHAT),
           "window (the launcher bubble)"),
    Widget("flowise", "/flowise.html", "flowise-embed", lambda: npm_pack("flowise-embed", FLOWISE_EMBED),
           "bubble (Chatbot.init)"),
    Widget("botframework_webchat", "/webchat.html", "botframework-webchat",
           lambda: npm_pack("botframework-webchat", BOTFRAMEWORK_WEBCHAT), "full page (renderWebChat)"),
    Widget("assistant_ui", "/assistant_ui.html", "assistant-ui", assistant_ui_bundle,
           "AssistantModal (the launcher button)"),
]
