"""Profile for Panel's chat (HoloViz `pn.chat.ChatInterface`, a `ChatFeed` with an input row).

Tested with panel 1.9.4 on bokeh 3.9.2 (the last Panel for Python 3.11; tests/frontends/, app in
tests/support/apps/panel_app.py). Start with `panel serve app.py --address 127.0.0.1 --port 5006
--allow-websocket-origin 127.0.0.1:5006`; the chat is at /app (the file's name). Quirks:
- Every part of the page is a Bokeh web component with its own open shadow root, nested ten deep: a
  bubble's words are in none of its own innerText. The driver reads text across open roots
  (drivers/deep_dom.py, `Q.text`).
- Both sides are the same `.chat-message`: only the name shown in it (`.name`) tells them apart.
  Ours is "User" (`ChatInterface(user=...)` changes it: override `authors.user`); the agent is any
  other name ("Assistant", an app's `callback_user`, "Exception" for a callback that raised). The
  bubble also shows an avatar, an activity dot and a time: stripped.
- Busy: the Stop button (its `.ti-player-stop` icon) replaces Send from the send until the callback
  returns; a callback slower than a second to give its first output also gets a placeholder message
  (`.message`, not `.chat-message`, with a spinning `.rotating-placeholder` avatar). The input is
  disabled meanwhile.
- New chat is the input row's Clear button. Clicked twice with nothing sent between, Panel turns it
  into "Revert" and the second click brings the cleared chat back: the selector names "Clear", so a
  second new chat without a message between finds no button rather than reverting. With
  `show_button_name=False` the buttons have icons only: point `new_chat` at your app's control.
- Steps (`instance.add_step`, `ChatStep`) are streamed as an agent message of their own (a
  `.chat-steps` card) before the answer's message: read as the turn's activity (`tool`), never the
  answer. A step's body folds away once it succeeded; its title stays.
- A reload is a new Bokeh session: the chat is empty (the app's `ChatInterface` object is per session).
- The feed keeps only about 50 messages either side of the visible ones in the page (`load_buffer`).
"""

from .profile import Authors, Completion, Profile, Selectors

PROFILE = Profile(
    name="panel",
    url="http://127.0.0.1:5006/app",
    selectors=Selectors(
        input=".chat-interface-input-widget textarea",
        send=".chat-interface-input-row button:has-text('Send')",
        message=".chat-message",
        author=".name",
        strip=".avatar, .activity-dot, .timestamp",
        busy=".ti-player-stop, .rotating-placeholder",
        tool=".chat-steps",
        new_chat=".chat-interface-input-row button:has-text('Clear')",
    ),
    authors=Authors(user="User"),
    # the last text render can trail the busy marker by a frame or two on a loaded machine
    completion=Completion(quiet_ms_with_markers=300),
    keeps_history=False,  # a reload opens an empty chat
)
