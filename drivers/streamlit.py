"""Profile for Streamlit chat apps (`st.chat_input` + `st.chat_message`).

Tested with streamlit 1.67.0 (tests/frontends/, app in tests/support/apps/streamlit_app.py). Start
with `streamlit run app.py --server.address 127.0.0.1 --server.headless true
--browser.gatherUsageStats false`. Quirks:
- Busy = the whole script is running: `[data-testid=stApp][data-test-script-state=running]`
  (it is `notRunning` once the reply is written, `rerunning` while a rerun starts).
- Streamlit has no "new chat" of its own: apps add one. The default is a sidebar button labelled
  "New chat" that clears `st.session_state`; point `selectors.new_chat` at your app's control,
  or set `options.new_session` to "reload" when a fresh page (a new session_state) is a new chat.
- While the model has not answered yet the assistant bubble is there but empty: a placeholder.
- Welcome bubbles an app writes before the history are assistant messages before ours, never a reply.

How it shows an agent's work (seen on the live page, streamlit 1.67.0, app in agent mode): Streamlit
has no notion of it; apps write `st.status(...)` (a tool running: an expander with the spinner icon
`stExpanderIconSpinner`, then `stExpanderIconCheck` or `stExpanderIconError`) and `st.expander(...)`
(reasoning, sources) inside the assistant's `st.chat_message`, before the answer. In a chat message a
status is tool work and a plain expander a thought; neither is the answer. The status's spinner is
a busy marker, besides the running script.
"""

from .profile import Completion, Profile, Selectors

PROFILE = Profile(
    name="streamlit",
    url="http://127.0.0.1:8501/",
    selectors=Selectors(
        input="[data-testid=stChatInputTextArea]",
        send="[data-testid=stChatInputSubmitButton]",
        # the content, labelled by role; the whole stChatMessage would add its avatar's icon name
        assistant_message="[aria-label='Chat message from assistant']",
        user_message="[aria-label='Chat message from user']",
        busy="[data-testid=stApp][data-test-script-state=running], [data-testid=stApp][data-test-script-state=rerunning], "
             "[data-testid=stExpanderIconSpinner]",
        tool="[data-testid=stChatMessage] [data-testid=stExpander]:has([data-testid^=stExpanderIcon])",
        thought="[data-testid=stChatMessage] [data-testid=stExpander]:not(:has([data-testid^=stExpanderIcon]))",
        new_chat="[data-testid=stSidebar] button:has-text('New chat')",
    ),
    # the last text render can trail the busy marker by a frame or two on a loaded machine
    completion=Completion(quiet_ms_with_markers=300),
    keeps_history=False,  # a reload opens an empty chat
)
