"""Profile for n8n's chat widget (npm `@n8n/chat`), the embed of an n8n workflow's Chat Trigger.

Tested with @n8n/chat 1.37.0 (tests/frontends/test_widgets.py: the package's own chat.bundle.es.js
and style.css on a page, window mode, talking to a local stand-in of n8n's chat webhook with
streaming on and previous sessions loaded). Quirks:
- Window mode (the default) shows only a round toggle, `.chat-window-toggle`, until it is clicked,
  and after every page load: the launcher. Fullscreen mode needs none (it is only clicked when the
  input is not shown).
- The conversation is the `sessionId` the widget sends with every message. It keeps it in
  localStorage (`n8n-chat/sessionId`) and, with `loadPreviousSession` (the default), asks the
  webhook for that session's messages on every load, so a reload shows the old chat. There is no
  "new chat" control (the welcome screen's "New Conversation" reuses the stored id): a new session
  is a storage wipe, after which the widget makes a new id.
- The configured `initialMessages` are bot bubbles like any other (no marker): they are there
  before anything is sent, so they are never taken for a reply, and the reset is checked on our own
  bubbles, which they are not.
- While it waits, and all the time a streamed reply grows, the widget shows a typing bubble
  (`[data-test-id=chat-message-typing]`), itself a `.chat-message-from-bot`: the busy marker, and
  ignored as a reply.
- The message history arrives after the input is shown; there is no marker of it having arrived.

An agent's work: the widget cannot show it. It draws the chat messages only; an AI Agent node's tool
calls and intermediate steps stay in n8n's execution log (the streamed `item`s are the answer's
text), so the profile has no tool, thought or status selector.
"""

from .profile import Profile, Selectors

PROFILE = Profile(
    name="n8n_chat",
    selectors=Selectors(
        launcher=".chat-window-toggle",
        input="textarea[data-test-id=chat-input]",
        send=".chat-input-send-button",
        assistant_message=".chat-message-from-bot",
        user_message=".chat-message-from-user",
        busy="[data-test-id=chat-message-typing]",
        ignore=".chat-message-typing",
        strip=".chat-message-actions",
    ),
    new_session="storage",
)
