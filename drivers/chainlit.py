"""Profile for Chainlit apps (`chainlit run app.py`).

Tested with chainlit 2.12.0 (tests/frontends/, app in tests/support/apps/chainlit_app.py). Start
with `chainlit run app.py --host 127.0.0.1 --port 8000 --headless`. Quirks:
- Messages are "steps": `[data-step-type=assistant_message]` / `[data-step-type=user_message]`.
- `#stop-button` replaces `#chat-submit` while the app's `on_message` runs.
- "New chat" asks for confirmation (`#new-chat-button`, then `#confirm` in the dialog); a new chat
  is a new websocket session, so the app's `on_chat_start` welcome shows again (not a reply: it
  comes before our message).
- When the session connects (about 0.3 s after the input shows, with the app's welcome or the upload
  area) the chat area mounts and clears the input: a message typed before that is never sent. The
  driver sees the input cleared and the send button disabled, types it again in the same page, and
  the report's run log says so (InputCleared).

How it shows an agent's work (seen on the live page, chainlit 2.12.0, app in agent mode, `cot =
"full"`, the default): each `cl.Step` is a `.step[data-step-type=<type>]` beside the messages (not
inside them), an accordion reading "Using <name>" with `.loading-shimmer` while it runs and "Used
<name>" after, its input and output in the collapsed content. `tool`, `retrieval`, `embedding` and
`rerank` steps are tool work; `llm`, `run` and `undefined` steps (where apps put reasoning, and what
`@cl.step` makes by default) are thoughts. Between steps, while no step runs, a blinking cursor
(`.loading-cursor`) shows; with the stop button and the shimmer it is a busy marker. With `cot =
"hidden"` no step is shown; with `"tool_call"` only tool steps.
"""

from .profile import Completion, Profile, Selectors

PROFILE = Profile(
    name="chainlit",
    url="http://127.0.0.1:8000/",
    selectors=Selectors(
        input="#chat-input",
        send="#chat-submit",
        assistant_message="[data-step-type=assistant_message]",
        user_message="[data-step-type=user_message]",
        busy="#stop-button, .loading-shimmer, .loading-cursor",
        tool=".step[data-step-type=tool], .step[data-step-type=retrieval], .step[data-step-type=embedding], "
             ".step[data-step-type=rerank]",
        thought=".step[data-step-type=llm], .step[data-step-type=run], .step[data-step-type=undefined]",
        new_chat="#new-chat-button",
        new_chat_confirm="#confirm",
    ),
    # the last text render can trail the busy marker by a frame or two on a loaded machine
    completion=Completion(quiet_ms_with_markers=300),
    keeps_history=False,  # a reload opens an empty chat
)
