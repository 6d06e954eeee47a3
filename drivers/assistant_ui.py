"""Profile for chats built with assistant-ui (npm `@assistant-ui/react`), the React chat components.

Tested with @assistant-ui/react 0.15.22 and React 19.3.1 (tests/frontends/test_widgets.py: a page
bundled with esbuild from assistant-ui's own templates, the AssistantModal with its floating button,
on `useLocalRuntime` with an adapter streaming from a local backend). assistant-ui ships unstyled
primitives; sites copy its templates (`npx assistant-ui add thread assistant-modal thread-list`),
whose `aui-*` class names this profile uses. Quirks:
- The AssistantModal shows only its round button (`.aui-modal-button`) until it is clicked, and
  after every page load: the launcher. A page with the Thread alone needs none.
- The local runtime keeps threads in memory: a reload shows an empty chat (no history), unless the
  site gives it a history or thread-list adapter. A new chat is the thread list's "New Thread"
  (`ThreadListPrimitive.New`, `.aui-thread-list-new`).
- While a reply runs, the composer shows Cancel (`.aui-composer-cancel`, "Stop generating") instead
  of Send, and the text part carries `data-status="running"` (assistant-ui's own attribute): both
  are busy markers. A running message ends with a "●" that goes when it completes.
"""

from .profile import Profile, Selectors

PROFILE = Profile(
    name="assistant_ui",
    selectors=Selectors(
        launcher=".aui-modal-button",
        input="textarea.aui-composer-input",
        send=".aui-composer-send",
        assistant_message=".aui-assistant-message-root",
        user_message=".aui-user-message-root",
        busy=".aui-composer-cancel, [data-status=running]",
        new_chat=".aui-thread-list-new",
    ),
    new_session="button",
    keeps_history=False,  # useLocalRuntime without a history adapter
)
