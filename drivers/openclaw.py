"""Profile for OpenClaw's web chat: the Control UI the gateway serves (npm `openclaw`, seen on 2026.9.6).

Start the gateway (`openclaw gateway run`, default http://127.0.0.1:18789/) and point a run at it
with its token in the URL fragment, taken from the environment so it stays out of config.jsonc,
logs and traces: `"url": "http://127.0.0.1:18789/#token=${OPENCLAW_GATEWAY_TOKEN}"`. The UI moves
the token into the tab's session storage and drops it from the address, so saved chat URLs
(`/chat/main/<id>`) carry no secret; reopening one after a restart passes the fragment again.

What the UI does, as driven here (Lit, light DOM):
- every chat opened in the tab stays in the DOM in a pane cache, composer included (laid out, so
  "visible", but inert); only `.chat-pane-cache__pane--active` is the chat on screen, so the input and
  every message selector are scoped to it;
- the transcript is virtualized (rows leave the DOM when far from view), which the driver handles
  by marking bubbles instead of counting them;
- while the agent works, a reading/working indicator shows and the streamed bubble has class
  `streaming`; when the turn is over a recap "Done in N seconds" (`.chat-turn-recap`) appears
  under the reply, and the reply's group gets its footer (sender, time): those are the done markers;
- "+" (`a.sidebar-new-session`, "New conversation") opens a draft at /new that becomes a session
  with the first message; typing `/new` does the same in place (`new_session: "message"` with
  `new_session_message_opens_chat`). Both are verified by the emptied transcript and the new URL.
  Right after a turn the UI may turn `/new` down and leave it in the composer: while it still reloads
  the chat (Enter then only highlights `/new` in the command menu) or refreshes the session list
  ("Session list is still refreshing. Try New Chat again in a moment."); the driver sends it again.

The agent's work, beside the answer's bubble (never in its `.chat-text`):
- tool calls: while the turn runs, rows in `.chat-tools-inline` ("Read 2026-12-06.md"), a running one
  `.chat-tool-row--running` (busy); when it is over they fold into one `.chat-activity-group`
  whose label counts them ("1 read · 1 write", "2 other operations" for a deferred tool called
  through `tool_call`, such as memory_search); the rows and results are mounted only when opened;
- the working indicator's status (`.chat-working-indicator__status`): "Preparing workspace…",
  "Waiting for a response…", "Working…", with the seconds elapsed;
- thinking: `.chat-thinking` in the bubble, shown only for a model with reasoning and the session's
  thinking level on (not seen live here: the test model has no reasoning);
- compaction: a divider in the thread, `.chat-divider` with the compaction glyph, "Compacting
  context..." then "Context compacted · Earlier messages were summarized…" (the profile's `notice`).
"""

from .profile import Completion, Profile, Selectors

PANE = ".chat-pane-cache__pane--active"

PROFILE = Profile(
    name="openclaw",
    url="http://127.0.0.1:18789/#token=${OPENCLAW_GATEWAY_TOKEN}",
    selectors=Selectors(
        # the chat's composer, or the draft page's that "+" opens ("What should this session work on?")
        input=f"{PANE} textarea[aria-label='Chat composer'], textarea.new-session-page__message",
        send=None,  # Enter sends (aria-keyshortcuts="Enter"); Shift+Enter breaks a line
        assistant_message=f"{PANE} .chat-group.assistant .chat-bubble .chat-text",
        user_message=f"{PANE} .chat-group.user .chat-bubble .chat-text",
        busy=f"{PANE} .chat-reading-indicator, {PANE} .chat-working-indicator, {PANE} .chat-bubble.streaming, "
             f"{PANE} .chat-tool-row--running",
        # The recap is shown only to a page that saw the run start: the first turn of a session opened
        # with "+" may end without it. A finished assistant group then still gets its footer.
        done=f"{PANE} .chat-turn-recap, {PANE} .chat-group.assistant .chat-group-footer",
        # A finished turn's tools fold into one activity group ("1 read · 1 write"), the rows mounted only
        # when it is opened; while the turn runs, the live rows stand alone ("Read 2026-12-06.md").
        tool=f"{PANE} .chat-activity-group, {PANE} .chat-tools-inline",
        thought=f"{PANE} .chat-thinking",
        status=f"{PANE} .chat-working-indicator__status",  # "Waiting for a response… 16s", "Working… 3s"
        notice=f"{PANE} .chat-divider:has(.chat-compaction__glyph)",  # "Context compacted" in the thread
        # A failed turn: the alert card over the composer (role=alert; read from 2026.9.6's control-ui bundle,
        # not seen live): the wait ends at once instead of at timeout_s.
        error=".chat-composer-neighbor-card.chat-error[role=alert]",
        new_chat="a.sidebar-new-session, a.sidebar-brand__new-thread",
    ),
    # A local agent turn takes seconds to minutes (tools, workspace context): be patient.
    completion=Completion(first_bubble_timeout_s=300, timeout_s=900),
    new_session="button",
    new_session_message="/new",
    new_session_message_opens_chat=True,
    ready_timeout_s=300,  # the Control UI loads a large bundle and then the chat history
    send_timeout_s=60,
    reset_timeout_s=60,
)
