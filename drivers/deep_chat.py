"""Profile for deep-chat (npm `deep-chat`), the `<deep-chat>` web component many sites embed.

Tested with deep-chat 2.4.2 (tests/test_deep_chat.py: its bundle from the npm registry, served by the
chat lab with a local streaming backend). The whole chat lives in the component's open shadow root:
Playwright's locators pierce it, and so do the driver's own page scripts (drivers/deep_dom.py), so
the selectors below are written as inside the root. Quirks:
- The input is a contenteditable `#text-input`; the send button is the `.input-button` at its end,
  disabled (`aria-disabled`) while the input is empty.
- While a reply is awaited or streams, the send button shows `#stop-icon`: the busy marker. A
  waiting reply is an empty bubble with loading dots (a placeholder, skipped by its empty text);
  there is no done marker.
- A failed request shows an `.error-message` bubble ("Error, please try again.").
- Intro messages (`introMessage`) carry `.deep-chat-intro` and are not replies.
- The component has no "new chat" of its own: by default its messages are gone on reload, so a new
  session is a reload. A site that keeps them (its `history`, `browserStorage` or `loadHistory`
  options) has its own button for a new chat: set `selectors.new_chat` and `options.new_session`
  "button". With `upwardsMode` the newest message is at the top: not supported.

An agent's work: deep-chat draws messages (text, HTML, files) and nothing else; a site that shows
tool calls or reasoning does so inside messages as its own HTML, which no selector of this profile
can know: set `selectors.tool` / `thought` to that markup.
"""

from .profile import Completion, Profile, Selectors

PROFILE = Profile(
    name="deep_chat",
    selectors=Selectors(
        input="#text-input",
        send="#input .input-button.inside-end",
        assistant_message=".message-bubble.ai-message",
        user_message=".message-bubble.user-message",
        busy="#stop-icon",
        ignore=".deep-chat-intro, .deep-chat-temporary-message",
        error=".message-bubble.error-message",
        ready="#messages",
    ),
    new_session="reload",
    keeps_history=False,  # unless the site gives it a history (then also set a new_chat button)
    # the last chunk is rendered a frame after the stop icon goes
    completion=Completion(quiet_ms_with_markers=200),
)
