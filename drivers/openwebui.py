"""Profile for Open WebUI (`open-webui serve`).

Tested with open-webui 0.12.4 (tests/frontends/). Start with `open-webui serve --host 127.0.0.1
--port 8080`; offline it needs the environment in tests/support/frontend_specs.py (no auth, no
model downloads, no title/tag/follow-up generation), and ~40 s and ~1 GB to get ready. Quirks:
- The input is a rich-text contenteditable (`#chat-input`); `fill` works on it.
- With an empty prompt the send slot is a "Call" button; `#send-message-button` shows once text is in.
- While generating a Stop button replaces send; the reply's action bar (Copy, Regenerate...), a
  sibling after the bubble, appears only when the message is done: the done marker.
- Only the last 8 messages are in the page (more load on scrolling up), so the user-bubble count
  stops growing: the driver then knows our message as the last user bubble it had not marked.
- A user bubble also holds its time and buttons: its text is taken from `.markdown-prose` only.
- The first visit after an install or upgrade opens a "What's New" dialog over the chat; its
  Close button is the `dismiss` selector.
- "New chat" is a link in the sidebar; collapsed (the default at 1100 px), the sidebar keeps an
  inert copy of it, hence `:not([inert] *)`. A new chat is at `/`, and gets a `/c/<id>` URL
  once its first message is sent.

How it shows an agent's work (seen on the live page, 0.12.4, a Tool registered through its API and
native function calling, its default; tests/support/openwebui_setup.py): the backend turns reasoning
(`reasoning_content` / `reasoning` deltas, or `<think>…</think>` in the text) and tool calls into
blocks of the one assistant message, drawn above the answer's `.markdown-prose`:
- reasoning alone: a collapsible reading "Thinking..." (`.shimmer`, a spinner) then "Thought for N
  seconds" (a `div` whose child is the `button[aria-expanded]` toggle; no id, no class of its own);
- a tool call alone: its display, `[id$="-tc"]`, "Executing <name>..." then "View Result from <name>";
- consecutive reasoning and tool calls (what an agent's turn shows): one group, `[id*="-detail-group"]`,
  "Exploring <tool>" (`.shimmer`, a spinner) while the tool runs, "Explored <tool>" after; its
  parts are mounted only when opened;
- status lines (`.status-description`: web or knowledge search) above the content.
The shimmer is a busy marker, with the Stop button.
"""

from .profile import Completion, Profile, Selectors

PROFILE = Profile(
    name="openwebui",
    url="http://127.0.0.1:8080/",
    selectors=Selectors(
        input="#chat-input",
        send="#send-message-button",
        assistant_message=".chat-assistant",
        user_message=".chat-user .markdown-prose",
        busy="button[aria-label=Stop], .chat-assistant .shimmer",
        tool=".chat-assistant [id*='-detail-group'], .chat-assistant [id$='-tc']",
        thought=".chat-assistant div:has(> button.text-start[aria-expanded])",
        status=".chat-assistant .status-description",
        done="button.copy-response-button",
        new_chat="a[aria-label='New Chat']:not([inert] *)",
        dismiss="[role=dialog] button[aria-label=Close]",
    ),
    # the last text render can trail the busy marker by a frame or two on a loaded machine
    completion=Completion(quiet_ms_with_markers=300, quiet_ms_with_done=300),
    ready_timeout_s=120,
)
