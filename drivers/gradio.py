"""Profile for Gradio's ChatInterface (`gr.ChatInterface(fn)`), the usual Gradio chat app.

Tested with gradio 6.31.0 (tests/frontends/, app in tests/support/apps/gradio_app.py). Start an app
with `python app.py` (`demo.launch(server_name="127.0.0.1")`, port 7860 by default; set
GRADIO_ANALYTICS_ENABLED=False offline). Quirks:
- While the first token is pending, Gradio shows an empty bot bubble with loading dots: a
  placeholder, skipped by its empty text.
- The stop button replaces submit while `fn` streams; its disappearance is the only busy signal.
- "New chat" is the chatbot's Clear (trash) button: the page URL never changes, the chat empties.
- The chatbot's `placeholder` text (shown in an empty chat) and the pending dots are not messages.

How it shows an agent's work (seen on the live page, gradio 6.31.0, app in agent mode): an app yields
`gr.ChatMessage(metadata={"title": ..., "status": "pending" | "done"})` for each tool call and
thought; each is a bot bubble of its own (`[data-testid=bot]`) holding a `.thought-group` (a title
row, `.loading-spinner` while pending, a duration, the body collapsed once done), the answer a bot
bubble without one. Gradio gives thoughts and tool calls the same markup (the app's title tells
them apart, e.g. "🔧 Used tool memory_search" and "💭 Thinking"), so the profile calls all of them
`tool`: a memory read is never missed. Between a finished step and the next words Gradio shows its
pending dots (`[aria-label="Loading response"]`); both are busy markers, with the stop button.
"""

from .profile import Completion, Profile, Selectors

PROFILE = Profile(
    name="gradio",
    url="http://127.0.0.1:7860/",
    selectors=Selectors(
        input="textarea[data-testid=textbox]",
        send="button[data-testid=submit-button]",
        assistant_message="[data-testid=bot]",
        user_message="[data-testid=user]",
        busy="button[data-testid=stop-button], .thought-group .loading-spinner, [aria-label='Loading response']",
        ignore=".placeholder-content, .pending",
        tool="[data-testid=bot] .thought-group",
        new_chat="button[aria-label=Clear]",
    ),
    # the last text render can trail the busy marker by a frame or two on a loaded machine
    completion=Completion(quiet_ms_with_markers=300),
    keeps_history=False,  # a reload opens an empty chat
)
