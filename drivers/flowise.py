"""Profile for Flowise's chat embed (npm `flowise-embed`), what Flowise's "Embed" tab hands out.

Tested with flowise-embed 3.1.6 (tests/frontends/test_widgets.py: the package's own dist/web.js,
`Chatbot.init` (the bubble), talking to a local stand-in of Flowise's prediction API with
streaming). Quirks:
- The whole widget lives in the open shadow root of `<flowise-chatbot>` (`<flowise-fullchatbot>`
  for `Chatbot.initFull`): the selectors are written as inside it.
- The bubble mode shows only a round button (`part="button"`) until it is clicked, and after every
  page load: the launcher. Full-page mode needs none.
- The conversation is a `chatId` the widget makes and keeps, with the chat's messages, in
  localStorage (`<chatflowid>_EXTERNAL`): a reload shows the old chat. The title bar's "Reset Chat"
  button forgets both (no confirmation); it is shown with the title bar (`theme.chatWindow.showTitle`);
  without it, set `options.new_session` to "storage".
- The welcome message is a bot bubble like the others; the reset is checked on our own bubbles.
- While a reply is awaited and streamed the textarea is disabled: the busy marker. Before the first
  token a bot bubble with three dots and no text stands in (a placeholder, skipped).

How it shows an agent's work (seen on the live widget, 3.1.6, its backend streaming `thinking` and
`usedTools` events; Bot.tsx, bubbles/BotBubble.tsx, ThinkingBubble.tsx): reasoning is a card above
the answer's bubble in `.host-container`, a `button[aria-expanded]` reading "Thinking..." (with a
`.thinking-spinner`) while it streams and "Thought for N seconds" after (no class of its own: the
selector is the card holding that toggle). Tool calls (`usedTools`) are kept on the message but not
drawn; a multi-agent flow's "Agent Messages" (`details`, only with `showAgentMessages`) are thoughts
too. The spinner is a busy marker, with the disabled input.
"""

from .profile import Profile, Selectors

PROFILE = Profile(
    name="flowise",
    selectors=Selectors(
        launcher="button[part=button]",
        input="[data-testid=input] textarea",
        send="[data-testid=input] button.chatbot-button",
        assistant_message="[data-testid=host-bubble]",
        user_message="[data-testid=guest-bubble]",
        busy="[data-testid=input] textarea:disabled, .host-container .thinking-spinner",
        thought=".host-container div:has(> button[aria-expanded]), .host-container details",
        new_chat="button[title='Reset Chat']",
    ),
    new_session="button",
)
