"""Profile for Hermes Agent's native dashboard chat (NousResearch/hermes-agent, web/src/pages/ChatNative.tsx).

Status: built from the source, tested on rebuilt markup (tests/test_markup_frontends.py), not run
against Hermes. The released dashboard (PyPI hermes-agent 0.19.0, `hermes dashboard --tui`) has
no such page: its Chat tab embeds the terminal UI (`hermes --tui` over a PTY WebSocket) in
xterm.js with the WebGL renderer, so the conversation is pixels on a canvas, with no message
elements a selector could read; checked in the 0.19.0 wheel's web_dist bundle. The native chat
(`div[data-role]` messages) exists only in newer source. To test a released Hermes through a web
chat today, enable its OpenAI-compatible API server (API_SERVER_ENABLED=true, port 8642) and put
Open WebUI in front of it (driver `openwebui`), as Open WebUI's docs describe.

From ChatNative.tsx and chat/composer/ChatBar.tsx:
- messages are `div[data-role=user]` / `div[data-role=assistant]`; a pending reply shows "…"
  (a placeholder) until its first delta;
- the composer (`textarea[aria-label=Message]`, Enter sends) is disabled while a reply streams:
  the busy marker ("Retry" under a finished reply has no selector CSS can match by, so no done
  marker);
- an agent's work: the native chat draws only `message.delta` and `message.complete` from the
  gateway, so a running turn shows no tool call or reasoning, only "…" until its first words. A
  resumed session lists the stored messages as they are, tool results included, each a
  `div[data-role=tool]`: the `tool` selector, so they are never taken for an answer;
- /chat without `?resume=<session id>` creates a fresh session (what New chat does), so a new
  session is opened by URL and verified by the emptied list.
"""

from .profile import Completion, Profile, Selectors

PROFILE = Profile(
    name="hermes",
    url="http://127.0.0.1:9119/chat",
    selectors=Selectors(
        input="textarea[aria-label='Message']",
        send=None,
        assistant_message="[data-role='assistant']",
        user_message="[data-role='user']",
        busy="textarea[aria-label='Message']:disabled",
        tool="[data-role='tool']",
    ),
    new_session="url",
    new_session_url="/chat",
    completion=Completion(first_bubble_timeout_s=180, timeout_s=900),
)
