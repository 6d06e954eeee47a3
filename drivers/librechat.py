"""Profile for LibreChat (danny-avila/LibreChat), built from its client source and e2e helpers.

Not run here: LibreChat needs MongoDB (and, for its defaults, Meilisearch and a RAG API) and is
installed from its git repository or Docker images, neither of which this project can fetch
(only the package registries are reachable; npm has only `librechat-data-provider`). The markup
test (tests/test_markup_frontends.py) drives a page rebuilt from the client's components.

From the source:
- input: the composer's TextareaAutosize, `data-testid="text-input"` (id prompt-textarea,
  aria-label "Message input"), Enter sends; send button `[data-testid=send-button]` is
  disabled while the input is empty;
- messages: `ui/MessageRow.tsx` renders `.message-render` with `.user-turn` or `.agent-turn`
  and the text in `[data-testid=message-body]` (the header with the name and time is outside it);
- busy: while submitting, `StopButton` replaces the send button (aria-label "Stop generating",
  `data-testid=stop-generation-button` in some versions);
- new chat: `[data-testid=nav-new-chat-button]`, which goes to /c/new; the first message gives
  the conversation its URL /c/<id> (e2e/specs/mock/helpers.ts).
- an agent's work is drawn in the message body before the answer: reasoning (`Content/Parts/
  Reasoning.tsx`) in a `group/thinking-container` with a "Thinking"/"Thoughts" toggle; each tool
  call (`Content/ToolCall.tsx`, also code runs and searches) a row holding `ProgressText`
  (`.progress-text-wrapper`), its label shimmering (`.shimmer`) while the tool runs, its input and
  output in a panel opened on click. Rebuilt in tests/support/markup/librechat.html.

The strongest completion signal LibreChat offers is its API (`/api/messages/<id>`,
`unfinished: false`); a UI driver uses the stop button and a stable text instead.
"""

from .profile import Completion, Profile, Selectors

PROFILE = Profile(
    name="librechat",
    url="http://127.0.0.1:3080/c/new",
    selectors=Selectors(
        input="textarea[data-testid='text-input']",
        send="[data-testid='send-button']",
        assistant_message="[data-testid='messages-view'] .message-render .agent-turn [data-testid='message-body']",
        user_message="[data-testid='messages-view'] .message-render .user-turn [data-testid='message-body']",
        busy="[data-testid='stop-generation-button'], button[aria-label='Stop generating'], "
             ".agent-turn .progress-text-wrapper .shimmer",
        tool="[data-testid='messages-view'] .agent-turn div:has(> .progress-text-wrapper)",
        thought="[data-testid='messages-view'] .agent-turn [class~='group/thinking-container']",
        new_chat="[data-testid='nav-new-chat-button']",
    ),
    completion=Completion(first_bubble_timeout_s=180, timeout_s=900),
)
