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

How it shows an agent's work (tested with the data-stream runtime, @assistant-ui/react-data-stream
0.12.32, reading the AI SDK's UI message stream, `?agent=1` on the test page): reasoning and tool-call
parts render through the templates' components, before the text: `reasoning.tsx`
(`[data-slot=reasoning-root]`, "Reasoning", a `reasoning-trigger-shimmer` while it streams) and
`tool-fallback.tsx` (`[data-slot=tool-fallback-root]`, "Used tool: <name>", a
`tool-fallback-trigger-shimmer` while the tool runs, arguments and result in the collapsed content).
Newer templates fold a run of them into a chain of thought (`[data-slot=aui_chain-of-thought]`), whose
parts keep these hooks. Sites may give a tool its own UI (`makeAssistantToolUI`): add its root to
`selectors.tool`. The shimmers are busy markers.
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
        busy=".aui-composer-cancel, [data-status=running], [data-slot=tool-fallback-trigger-shimmer], "
             "[data-slot=reasoning-trigger-shimmer]",
        tool="[data-slot=tool-fallback-root], .aui-tool-fallback-root",
        thought="[data-slot=reasoning-root], .aui-reasoning-root",
        new_chat=".aui-thread-list-new",
    ),
    new_session="button",
    keeps_history=False,  # useLocalRuntime without a history adapter
)
