"""Profile for Telegram Web A (web.telegram.org/a, Ajaxy/telegram-tt), talking to a bot.

Log in once with a headed browser and keep the session (Web A keeps it in localStorage,
`user_auth`): `mmb login telegram_a`, scan the QR code, then run with
`"agent": {"driver": "telegram_a", "auth": "telegram_a", "url": "https://web.telegram.org/a/#@<bot_username>"}`.

From telegram-tt's source (tests/support/telegram/a/index.html rebuilds it):
- the input is `#editable-message-text` (contenteditable, role=textbox) inside the message list's
  Transition; during a slide two can exist, so the app's own scoping picks the active one
  (config.ts EDITABLE_INPUT_CSS_SELECTOR, old and new Transition class names); Enter sends;
- messages are `.Message.message-list-item#message-<id>`, ours `.own`; the text is
  `.text-content`, which holds the time (`.MessageMeta`), stripped;
- the bot's typing shows as `.typing-status` in the chat header (PrivateChatInfo): busy; streamed
  drafts (`isTypingDraft`) are ordinary messages until the final one replaces them, which the
  typing status and the quiet window cover;
- START: the footer's `.join-subscribe-button` ("Start"), pressed once when a bot chat is new;
- a new session is the bot's `/new`, verified by its acknowledgement (drivers/messenger.py has
  what every messenger profile shares).

An agent's work: Telegram cannot show it apart from the answer. A bot's tool use reaches the chat
only as messages it sends (a "Searching…" message it edits or deletes, streamed drafts) and as the
typing status, which is the busy marker; no tool, thought or status selector.
"""

from .messenger import messenger_profile
from .profile import Selectors

_INPUT = "#editable-message-text"

PROFILE = messenger_profile(
    "telegram_a",
    url="https://web.telegram.org/a/",
    selectors=Selectors(
        input=", ".join(f".messages-layout {scope} {_INPUT}" for scope in (
            ".Transition_slide-active", ".Transition > .Transition_slide-to",  # current builds
            ".Transition__slide--active", ".Transition > .to")),              # older builds
        send=None,
        assistant_message=".messages-container .Message.message-list-item:not(.own)",
        user_message=".messages-container .Message.message-list-item.own",
        busy=".MiddleHeader .typing-status",
        strip=".MessageMeta, .message-title, .Reactions, .InlineButtons",
        start="button.join-subscribe-button",
    ),
)
