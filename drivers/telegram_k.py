"""Profile for Telegram Web K (web.telegram.org/k, morethanwords/tweb), talking to a bot.

Telegram Web keeps its login in IndexedDB, so log in once and keep it:

    mmb login telegram_k          # a headed browser opens at web.telegram.org/k: scan the QR code

(`mmb login` saves the storage state, IndexedDB included, under .auth/ as an owner-only,
git-ignored secret; `--wait-for .chatlist-chat` saves as soon as the chat list shows.) Then
point a run at the bot with a deep link and that login:
`"agent": {"driver": "telegram_k", "auth": "telegram_k", "url": "https://web.telegram.org/k/#@<bot_username>"}`.

How tweb shows a bot chat, from its source (tests/support/telegram/k/index.html rebuilds it):
- the message input is a contenteditable with a second, hidden contenteditable mirror
  (`.input-field-input-fake`) that has the same classes, hence the `:not(...)`; Enter sends, and
  newlines are typed as Shift+Enter; with an empty input the send button is the microphone;
- messages are `.bubble[data-mid]`, ours `.is-out`, the bot's `.is-in`; the time sits inside the
  text and is stripped; a bot answers in one or several bubbles, all collected;
- while the bot "types", tweb shows `.peer-typing-container` in the chat-list row of the open chat
  (for bots the top bar keeps saying "bot"): that is the busy marker. Bubbles come seconds apart,
  so the quiet window is longer than a bot's pause between them;
- a bot never used shows START instead of the input; it is pressed once on opening (sends /start);
- a new session is the bot's `/new` command; the history stays on screen, so the reset is
  verified by the bot's acknowledgement (`new_session_ack`). Set `new_session_message` if the
  bot uses another command (/reset, /clear).
- tweb drops bubbles far from the viewport; the driver marks bubbles rather than counting them.

What every messenger profile shares (the quiet windows, `/new`, the limits) is drivers/messenger.py.

An agent's work: Telegram cannot show it apart from the answer. A bot's tool use reaches the chat
only as messages it sends (a "Searching…" message it edits or deletes, streamed drafts) and as the
typing status, which is the busy marker; no tool, thought or status selector.
"""

from .messenger import messenger_profile
from .profile import Selectors

PROFILE = messenger_profile(
    "telegram_k",
    url="https://web.telegram.org/k/",
    selectors=Selectors(
        input=".chat-input .input-message-input[contenteditable='true']:not(.input-field-input-fake)",
        send=None,
        assistant_message=".bubbles .bubble.is-in:not(.service)",
        user_message=".bubbles .bubble.is-out:not(.service)",
        busy=".chatlist-chat.active .peer-typing-container, .topbar .peer-typing-container",
        strip=".time, .reactions, .reply, .name, .bubble-beside-button",
        start=".chat-input-control .chat-input-control-button",
    ),
    input_method="type",  # the editor (Tiptap in new builds) takes keystrokes, not a filled value
)
