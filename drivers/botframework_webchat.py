"""Profile for Bot Framework Web Chat (npm `botframework-webchat`), Azure Bot Service's web chat.

Tested with botframework-webchat 4.18.1 (tests/frontends/test_widgets.py: the package's own
dist/webchat.js, `renderWebChat` on a full page, talking to a local Direct Line 3.0 stand-in with
polling, whose bot sends a typing activity and then its answer). Quirks:
- No launcher: sites put the chat on a page or in their own popup.
- The conversation lives in the Direct Line connection. The page decides whether it survives a
  reload: Bot Framework's "persistent conversation" samples keep the conversation id and token in
  sessionStorage and reconnect to it (the history comes back), which this profile assumes: a new
  session is a storage wipe. A page that starts a new conversation on every load needs
  `options.new_session` "reload" and `keeps_history` false.
- The typing indicator (`.webchat__typing-indicator`) shows from the bot's typing activity until
  its message arrives (or for 5 s: a bot that thinks longer must send typing again).
- Several messages to one question arrive together or up to a Direct Line poll apart (1 s by
  default with polling): the reply is complete once nothing changed for 1.5 s after the indicator.
- Livestreaming (typing activities with `channelData.streamType`) is not supported: 4.18.1 shows
  each streamed step as a bubble of its own beside the final message.
- The send box is a single-line `<input>` unless the site sets `styleOptions.sendBoxTextWrap`: line
  breaks in a message are lost there.

An agent's work: Web Chat has no tool or reasoning view. A bot that reports progress sends it as
activities: a typing indicator (the busy marker) or, with livestreaming, informative typing
updates ("Searching…"), which 4.18.1 draws as bubbles of their own (see above, not supported), so
the profile has no tool, thought or status selector.
"""

from .profile import Completion, Profile, Selectors

PROFILE = Profile(
    name="botframework_webchat",
    selectors=Selectors(
        input="[data-id=webchat-sendbox-input]",
        send=".webchat__send-button",
        assistant_message=".webchat__bubble:not(.webchat__bubble--from-user)",
        user_message=".webchat__bubble--from-user",
        busy=".webchat__typing-indicator",
    ),
    new_session="storage",
    completion=Completion(quiet_ms_with_markers=1500),
)
