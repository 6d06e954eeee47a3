"""The chat lab: a tiny chat web app on 127.0.0.1 whose DOM and timing each test sets.

It stands in for the many ways real chat UIs render a reply, so the driver's reply detection,
session switching and probing can be tested in real Chromium, one behaviour at a time:
streamed replies at a given speed, a slow first token, a reply in several bubbles with pauses
and no busy marker between them (Telegram-bot style), no busy marker at all, a done marker on or
after the bubble, placeholder bubbles ("Thinking…", "…", empty) replaced later, a welcome bubble
(that may vanish on the first send), a message list re-rendered on every change (nodes replaced),
a reply that never comes, a "new chat" that does not reset, a contenteditable input, `/new` as
a bot command, a banner over the send button or one disabled for a while, a page that reloads
mid-reply, a chat that lives in open shadow roots (one, or nested three deep), an error bubble.

    with ChatLab(LabScenario(busy="none", chunk_ms=30)) as lab:
        page.goto(lab.url + "/")            # redirects to /c/<id>, a fresh chat
        profile = lab.profile()             # the drivers.profile.Profile matching the scenario

The server keeps each conversation (so a reload shows it) and records what it was sent, the
User-Agent of every request (headless Chromium says "HeadlessChrome") and the cookies it got. The reply text comes from
`responder(text, history) -> bubbles`; by default `echo: <text>`, as many bubbles as
`scenario.bubbles`. Change `lab.scenario` between page loads to change the behaviour.

DOM: `#log` holds `.bubble.me` (ours) and `.bubble.bot` (the agent's; `.welcome` on the welcome);
(with text_span, the text is in a `span.text` inside); `#box` is the input (textarea or contenteditable), `#send`, `#stop` (visible while busy when
busy="stop-button"), `#typing` (visible while busy when busy="typing"), `#new-chat`. A finished
bubble gets `data-done="1"` (done="attr") or a `.done-mark` element right after it (done="after").
With `shadow="open"` all of it lives in the open shadow root of `<chat-app>` (declarative, parsed
with the page); with `shadow="nested"` the message list is in the shadow root of a `<chat-log>` and the
composer in that of a `<chat-composer>`, both inside `<chat-app>`'s (attached by script). The same
selectors fit every mode, as none crosses a shadow boundary. With `parts_in_roots` each bubble is a
host whose parts (`.name`, `.text`, a `.time`) are hosts too, their words in their own roots (Panel).
"""

from __future__ import annotations

import html
import json
import re
import secrets
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from drivers.profile import Completion, Profile, Selectors
from tests.support.http_reply import respond
from tests.support.variant_lab import WIDGET_HOST, Variant, app_page, host_page

Responder = Callable[[str, list[dict[str, str]]], list[str]]
NEW_CHAT_ACK = "✅ New conversation started. I forgot everything we said."
AGENT_NAME = "Memo"  # the agent's name on its bubbles, where only names tell the sides apart (LabScenario.authors)
AGENT_ERROR = "Error: the model is overloaded, try again."


class LabScenario(BaseModel):
    """How the lab's chat page behaves. Times are in milliseconds."""

    model_config = ConfigDict(extra="forbid")

    input: Literal["textarea", "contenteditable"] = "textarea"
    send_button: bool = True  # False: Enter is the only way to send
    bubbles: int = Field(1, ge=1, description="Bubbles per reply from the default echo responder")
    first_token_ms: int = 0  # before the first bubble starts
    chunk_chars: int = Field(4, ge=0, description="Characters per streamed chunk; 0: whole bubble at once")
    chunk_ms: int = 10  # between chunks
    bubble_gap_ms: int = 0  # between the bubbles of one reply
    busy: Literal["stop-button", "typing", "none"] = "stop-button"
    busy_in_gaps: bool = True  # False: the busy marker is hidden between bubbles
    done: Literal["none", "attr", "after"] = "none"
    done_delay_ms: int = 0  # from a bubble's last text to its done marker
    placeholder: str | None = None  # e.g. "Thinking…", "…", "": shown before each bubble's text
    placeholder_replace: Literal["text", "node"] = "text"  # the text is replaced, or the node swapped
    welcome: str | None = None
    welcome_vanishes: bool = False  # the welcome is removed on the first send
    rerender: bool = False  # every change rebuilds the whole message list (new nodes)
    never_reply: bool = False  # the agent stays busy forever
    new_chat: Literal["reset", "noop"] = "reset"  # noop: the button re-renders the same chat
    new_chat_navigates: bool = True  # a new /c/<id> address; False: cleared in place, same URL
    slash_new: Literal["reset", "ignore", "opens"] = "ignore"  # "/new" as a message: resets (and acks) or is
    # echoed; "opens": the page itself opens a new chat, like the button (OpenClaw)
    slash_new_refusals: int = 0  # with "opens": the first ones are turned down, "/new" left in the box (OpenClaw)
    user_echo_delay_ms: int = 0  # before our own bubble shows up
    text_span: bool = False  # each bubble's text in a `span.text` inside it (markers stay on the bubble)
    cover_send_ms: int = 0  # a banner lies over the send button this long after the page loads
    input_hidden_ms: tuple[int, int] = (0, 0)  # (at, for): this long after the page loads, the input is hidden a
    # while, as an app suspends its chat area while the rest of it loads (Chainlit's start-up on a busy machine)
    send_enabled_after_ms: int = 0  # the send button is disabled this long after each edit of the input
    wipe_first_typing: bool = False  # an app finishing its start-up (Chainlit): in each page loaded, the send button
    # stays disabled and the first typing is cleared away; it is disabled whenever the input is empty
    reload_mid_reply_ms: int = 0  # the page reloads itself this long after the first reply starts (once a page)
    final_render_ms: int = 0  # this long after the done marker, the bubble's text is rendered once more (" ✓")
    shadow: Literal["none", "open", "nested"] = "none"  # where the chat lives: the document, or open shadow roots
    frontend: Literal["lab", "deep-chat"] = "lab"  # deep-chat: the npm web component instead (ChatLab(deep_chat=...))
    error_next: int = 0  # the next replies are an error bubble (`.bubble.error`) instead; the server keeps the message
    at_message: dict[int, Literal["error", "no-reply", "late"]] = {}  # the n-th message received (from 1) gets an
    # error bubble, no reply ever (busy forever), or its reply only after late_ms (the server too has it only
    # then, so a reload before shows no reply); the server keeps the message every time
    late_ms: int = 3000
    busy_gives_up_ms: int = 0  # with "no-reply": the busy marker goes away after this long, still with no reply
    variant: Variant | None = None  # a page of tests/support/variant_lab.py (random names, frames, launcher) instead
    # The agent's work before its answer, as memory agents show it: each step ("tool": a tool card that runs
    # work_ms and then shows its result, which holds the answer's words; "thought": a thinking block;
    # "status": a "Searching memory…" line, removed once the answer starts), in the reply's bubble (Gradio,
    # Open WebUI) or beside it as elements of their own (Chainlit, OpenClaw); the busy marker shows meanwhile
    # only with work_busy (a page with no busy marker during a tool's pause cuts a naive reply there).
    work: list[Literal["tool", "thought", "status"]] = []
    work_ms: int = 0
    work_place: Literal["in-bubble", "beside"] = "in-bubble"
    work_busy: bool = True
    work_after_answer: bool = False  # the last step comes after the answer's words (a note written once it answered)
    newest_first: bool = False  # the DOM lists the newest message first, laid out bottom-up (column-reverse): a reader
    # still sees the oldest on top
    forgets_on_reload: bool = False  # a page loaded shows an empty chat (the server keeps the conversation)
    # Sides told apart only by who wrote them (every bubble the same `.msg`): a name in each bubble ("User", the
    # agent's "Memo"), the name only on the first bubble of a group (messengers), or an avatar whose alt names it.
    authors: Literal["none", "name", "name-once", "avatar"] = "none"
    parts_in_roots: bool = False  # each bubble is a host whose parts (name, text, a "12:00" time) are hosts of open
    # shadow roots of their own, their words inside (Bokeh's components in Panel): no word in a bubble's innerText
    stop_class_counter: bool = False  # the stop button's class carries a counter that changes with each page load
    # (stopButton-<n>), as CSS-in-JS builds name classes


class ChatLab:
    def __init__(self, scenario: LabScenario | None = None, *, responder: Responder | None = None,
                 deep_chat: Path | None = None):
        self.scenario = scenario or LabScenario()
        self.responder = responder
        self.deep_chat = deep_chat  # deep-chat's bundle (deepChat.bundle.js), served as /deep-chat.js
        self.stopping = threading.Event()
        self.conversations: dict[str, list[dict[str, str]]] = {}
        self.received: list[str] = []  # every message text posted, in order
        self.user_agents: list[str] = []  # of every request
        self.cookies: list[str] = []  # the Cookie header of every request that had one
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the chat lab is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> str:
        if self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
            self._server.daemon_threads = True
            threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True,
                             name="chat-lab").start()
        return self.url

    def stop(self) -> None:
        self.stopping.set()  # replies held open (never_reply) end
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> ChatLab:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what tests use ------------------------------------------------------------------------

    def profile(self, *, name: str = "lab", **overrides: Any) -> Profile:
        """The profile a user would write for this scenario; keyword overrides replace fields
        (`selectors={...}` and `completion={...}` are merged into the defaults)."""
        s = self.scenario
        selectors = {
            "input": "#box",
            "send": "#send" if s.send_button else None,
            "assistant_message": "#log .bubble.bot",
            "user_message": "#log .bubble.me",
            "busy": {"stop-button": "#stop", "typing": "#typing", "none": None}[s.busy],
            "done": {"none": None, "attr": "[data-done='1']", "after": ".done-mark"}[s.done],
            "ignore": ".welcome",
            "error": "#log .bubble.error",
            "new_chat": "#new-chat",
            **({"tool": ".work.tool", "thought": ".work.thought", "status": ".work.status"} if s.work else {}),
            **({"strip": ".time"} if s.parts_in_roots else {}),
            **overrides.pop("selectors", {}),
        }
        if s.authors != "none":
            selectors.update(assistant_message=None, user_message=None, message="#log .msg",
                             author=".avatar" if s.authors == "avatar" else ".name")
            overrides.setdefault("authors", {"agent": AGENT_NAME})
        completion = {"first_bubble_timeout_s": 30, "timeout_s": 60, **overrides.pop("completion", {})}
        return Profile(name=name, url=self.url + "/", selectors=Selectors(**selectors),
                       completion=Completion(**completion), **overrides)

    def new_conversation(self) -> str:
        conv = secrets.token_hex(4)
        with self._lock:
            self.conversations[conv] = []
        return conv

    def history(self, conv: str) -> list[dict[str, str]]:
        with self._lock:
            return list(self.conversations.get(conv, []))

    # -- the agent -----------------------------------------------------------------------------

    def _reply(self, conv: str, text: str) -> tuple[list[str], str | None, str | None]:
        """The bubbles to show, for a reset the new conversation id, and a fault: "error" or "no-reply"
        instead of the reply (the message is kept: it was received), "late" with it."""
        s = self.scenario
        with self._lock:
            self.received.append(text)
            history = self.conversations.setdefault(conv, [])
            history.append({"role": "me", "text": text})
            fault = s.at_message.get(len(self.received)) or ("no-reply" if s.never_reply else None)
            if fault is None and s.error_next > 0:
                s.error_next -= 1
                fault = "error"
        if fault in ("error", "no-reply"):
            return [], None, fault
        if text.strip() == "/new" and self.scenario.slash_new == "reset":
            fresh = self.new_conversation()
            with self._lock:
                self.conversations[fresh] = [*history, {"role": "bot", "text": NEW_CHAT_ACK}]
            return [NEW_CHAT_ACK], fresh, fault
        if self.responder is not None:
            bubbles = self.responder(text, history[:-1])
        elif self.scenario.bubbles == 1:
            bubbles = [f"echo: {text}"]
        else:
            bubbles = [f"part {i + 1} of {self.scenario.bubbles}: {text}" for i in range(self.scenario.bubbles)]
        def answer() -> None:
            with self._lock:
                history.extend({"role": "bot", "text": b} for b in bubbles)

        if fault == "late":
            threading.Timer(self.scenario.late_ms / 1000, answer).start()
        else:
            answer()
        return bubbles, None, fault


_CONV = re.compile(r"^/c/([0-9a-f]{1,32})$")
_API_CONV = re.compile(r"^/api/c/([0-9a-f]{1,32})(/messages)?$")
_DEEP_CHAT_API = re.compile(r"^/api/c/([0-9a-f]{1,32})/deep-chat$")


def _handler(lab: ChatLab) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
            respond(self, status, body, ctype, headers)

        def _json(self, obj: Any, status: int = HTTPStatus.OK) -> None:
            self._send(status, json.dumps(obj, ensure_ascii=False).encode(), "application/json; charset=utf-8")

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length) or b"{}") if length else {}

        def _record(self) -> None:
            lab.user_agents.append(self.headers.get("User-Agent", ""))
            if self.headers.get("Cookie"):
                lab.cookies.append(self.headers["Cookie"])

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            self._record()
            path = self.path.split("?", 1)[0]
            if lab.scenario.variant is not None and self._variant(path):
                return
            if path == "/":
                self._send(HTTPStatus.FOUND, b"", "text/plain", {"Location": f"/c/{lab.new_conversation()}"})
            elif (m := _CONV.match(path)) and lab.scenario.frontend == "deep-chat":
                page = deep_chat_page(lab.scenario, m.group(1), lab.history(m.group(1)))
                self._send(HTTPStatus.OK, page.encode(), "text/html; charset=utf-8")
            elif m := _CONV.match(path):
                self._send(HTTPStatus.OK, _page(lab.scenario, m.group(1)).encode(), "text/html; charset=utf-8")
            elif path == "/deep-chat.js" and lab.deep_chat is not None:
                self._send(HTTPStatus.OK, lab.deep_chat.read_bytes(), "text/javascript; charset=utf-8")
            elif (m := _API_CONV.match(path)) and not m.group(2):
                self._json({"messages": lab.history(m.group(1))})
            elif path == "/favicon.ico":
                self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            else:
                self._json({"error": "not found"}, HTTPStatus.NOT_FOUND)

        def _variant(self, path: str) -> bool:
            """The variant's pages: `/` (the page a user is given: a host site with the widget, the app keeping
            its conversation in localStorage, or a redirect to a fresh /c/<id>), `/c/<id>`, `/w` (the widget)."""
            v, port = lab.scenario.variant, lab.url.rsplit(":", 1)[1]
            timing = lab.scenario.model_dump(include={"first_token_ms", "chunk_chars", "chunk_ms"})
            if path == "/" and v.frame != "none":
                host = WIDGET_HOST if v.frame == "cross-origin" else "127.0.0.1"
                page = host_page(v, widget_url=f"http://{host}:{port}/w")
            elif (path == "/" or path.startswith("/app/")) and v.new_chat == "storage":  # also below the root
                page = app_page(v, timing, conv=None, host_origin=None)
            elif path == "/w":
                page = app_page(v, timing, conv=None, host_origin=f"http://127.0.0.1:{port}")
            elif m := _CONV.match(path):
                page = app_page(v, timing, conv=m.group(1), host_origin=None)
            else:
                return False
            self._send(HTTPStatus.OK, page.encode(), "text/html; charset=utf-8")
            return True

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            self._record()
            path = self.path.split("?", 1)[0]
            if path == "/api/new":
                self._json({"id": lab.new_conversation()})
            elif m := _DEEP_CHAT_API.match(path):
                deep_chat_reply(self, lab, m.group(1))
            elif (m := _API_CONV.match(path)) and m.group(2):
                bubbles, fresh, fault = lab._reply(m.group(1), str(self._body().get("text", "")))
                self._json({"bubbles": bubbles, "conversation": fresh, "error": AGENT_ERROR if fault == "error" else None,
                            "silent": fault == "no-reply", "late_ms": lab.scenario.late_ms if fault == "late" else 0})
            else:
                self._json({"error": "not found"}, HTTPStatus.NOT_FOUND)

    return Handler


def _page(scenario: LabScenario, conv: str) -> str:
    config = html.escape(json.dumps({**scenario.model_dump(), "conv": conv}), quote=False)
    box = ('<div id="box" contenteditable="true" role="textbox" aria-label="Message"></div>'
           if scenario.input == "contenteditable" else '<textarea id="box" rows="2" aria-label="Message"></textarea>')
    send = '<button id="send" type="submit">Send</button>' if scenario.send_button else ""
    composer = _COMPOSER.replace("@BOX@", box).replace("@SEND@", send)
    if scenario.shadow == "none":
        app = _APP.replace("@LOG@", _LOG).replace("@COMPOSER@", composer)
    elif scenario.shadow == "open":
        app = f'<chat-app><template shadowrootmode="open">{_STYLE}{_APP.replace("@LOG@", _LOG).replace("@COMPOSER@", composer)}</template></chat-app>'
    else:  # the inner roots are attached by the page's script from these templates
        inner = _APP.replace("@LOG@", "<chat-log></chat-log>").replace("@COMPOSER@", "<chat-composer></chat-composer>")
        app = (f'<chat-app><template shadowrootmode="open">{_STYLE}{inner}</template></chat-app>'
               f'<template id="log-markup">{_STYLE}{_LOG}</template><template id="composer-markup">{_STYLE}{composer}</template>')
    return _HTML.replace("@CONFIG@", config).replace("@STYLE@", _STYLE).replace("@APP@", app)


_LOG = '<main id="log" aria-live="polite"></main>'
_COMPOSER = '<form id="composer">@BOX@@SEND@<button id="stop" type="button" hidden>Stop</button></form>'
_APP = """<header><strong>Chat lab</strong><button id="new-chat" type="button">New chat</button>
  <span id="typing" hidden>typing…</span><span id="alert" role="alert"></span></header>
@LOG@
@COMPOSER@
<div id="cover" hidden style="position:fixed;left:0;right:0;bottom:0;height:90px;background:#fd8;z-index:9">A banner</div>"""
_STYLE = r"""<style>
  body { font: 15px sans-serif; margin: 0; display: flex; flex-direction: column; height: 100vh; }
  header { padding: 6px 10px; background: #eee; display: flex; gap: 10px; align-items: center; }
  #log { flex: 1; overflow-y: auto; padding: 10px; }
  .bubble { margin: 6px 0; padding: 6px 10px; border-radius: 8px; max-width: 70%; white-space: pre-wrap; }
  .bubble.me { background: #cde; margin-left: auto; }
  .bubble.bot { background: #f3f3f3; min-height: 1em; }
  .done-mark { font-size: 11px; color: #888; }
  form { display: flex; gap: 6px; padding: 8px; border-top: 1px solid #ddd; }
  #box { flex: 1; min-height: 2em; border: 1px solid #aaa; padding: 4px; white-space: pre-wrap; }
  chat-app, chat-log { display: flex; flex-direction: column; flex: 1; min-height: 0; }
  chat-composer { display: block; }
  .bubble.error { background: #fdd; color: #900; }
  .work { font-size: 12px; color: #555; border-left: 3px solid #bbb; margin: 4px 0; padding: 2px 6px; }
  .work .work-body { white-space: pre-wrap; }
  #log.newest-first { display: flex; flex-direction: column-reverse; justify-content: flex-end; }
</style>"""

_HTML = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Chat lab</title>
@STYLE@</head>
<body>
@APP@
<script type="application/json" id="config">@CONFIG@</script>
<script>
"use strict";
(() => {
  const cfg = JSON.parse(document.getElementById("config").textContent);
  // Where the chat lives: the document, or the open shadow roots of shadow="open" / "nested".
  const scopes = [document];
  if (cfg.shadow !== "none") scopes.push(document.querySelector("chat-app").shadowRoot);
  if (cfg.shadow === "nested") {
    for (const name of ["log", "composer"]) {
      const root = scopes[1].querySelector(`chat-${name}`).attachShadow({mode: "open"});
      root.append(document.getElementById(`${name}-markup`).content.cloneNode(true));
      scopes.push(root);
    }
  }
  const $ = (id) => scopes.map((s) => s.getElementById(id)).find(Boolean);
  const log = $("log"), box = $("box");
  const sendBtn = $("send"), stopBtn = $("stop");
  if (cfg.newest_first) log.classList.add("newest-first");
  if (cfg.stop_class_counter) stopBtn.classList.add(`stopButton-${100 + Math.floor(Math.random() * 900)}`);
  const typing = $("typing");
  let conv = cfg.conv, busy = false, aborted = false, refusals = 0;
  const alertBox = $("alert");
  // The model of the list; each message keeps its DOM node unless cfg.rerender rebuilds them all.
  const msgs = [];
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  function setText(el, text) {
    const part = (el.shadowRoot || el).querySelector(".text");
    ((part && part.shadowRoot ? part.shadowRoot.firstChild : part) || el).textContent = text;
  }
  // With parts_in_roots, Bokeh's way (Panel): a part of a bubble is a host whose words are in its own root.
  function rooted(className, child) {
    const host = Object.assign(document.createElement("div"), {className});
    host.attachShadow({mode: "open"}).append(child);
    return host;
  }
  // A piece of the agent's work: a titled block (a toggle, as real UIs make them) with its body.
  function buildWork(x) {
    const el = document.createElement("div");
    el.className = "work " + x.kind;
    const head = document.createElement("button");
    head.type = "button";
    head.className = "work-title";
    head.setAttribute("aria-expanded", "true");
    // Icons as real UIs draw them in a toggle: an icon font's ligature, an svg spinner with its own style.
    const glyph = Object.assign(document.createElement("span"), {className: "material-symbols-outlined",
                                                                 textContent: x.running ? "progress_activity" : "check"});
    head.innerHTML = '<svg width="8" height="8"><style>.s { fill: #888 }</style><circle class="s" cx="4" cy="4" r="3"/></svg>';
    head.append(glyph, x.title);
    el.append(head);
    if (x.running) el.append(Object.assign(document.createElement("span"), {className: "spinner", textContent: "⏳"}));
    if (x.body) el.append(Object.assign(document.createElement("div"), {className: "work-body", textContent: x.body}));
    x.node = el;
    return el;
  }
  // Who wrote a bubble, where only that tells the sides apart: a name or an avatar, maybe once per group.
  function authorOf(m) {
    const name = m.role === "me" ? "User" : "Memo";
    const prev = msgs[msgs.indexOf(m) - 1];
    if (cfg.authors === "name-once" && prev && prev.role === m.role) return null;
    if (cfg.authors === "avatar") return Object.assign(document.createElement("img"), {className: "avatar", alt: name,
      src: "data:image/svg+xml," + encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"/>')});
    if (cfg.parts_in_roots) return rooted("name", Object.assign(document.createElement("div"), {textContent: name}));
    return Object.assign(document.createElement("span"), {className: "name", textContent: name});
  }
  function build(m) {
    if (m.role === "work") return buildWork(m);
    const el = document.createElement("div");
    const named = cfg.authors !== "none" && m.role !== "error";
    el.className = "bubble " + (named ? "msg" : m.role) + (m.welcome ? " welcome" : "");
    const box = cfg.parts_in_roots ? el.attachShadow({mode: "open"}) : el;
    if (named) { const who = authorOf(m); if (who) box.append(who, document.createElement("br")); }
    if (m.work) for (const x of m.work) box.append(buildWork(x));
    if (cfg.parts_in_roots) box.append(rooted("text", document.createElement("div")), rooted("time", Object.assign(
      document.createElement("div"), {textContent: "12:00"})));
    else if (cfg.text_span || m.work || named) box.append(Object.assign(document.createElement("span"), {className: "text"}));
    setText(el, m.text);
    if (m.workAfter) for (const x of m.workAfter) box.append(buildWork(x));
    const marked = m.done && m.role === "bot";  // (with authors too: the markers stay the agent's)
    if (marked && cfg.done === "attr") el.dataset.done = "1";
    const frag = document.createDocumentFragment();
    frag.append(el);
    if (marked && cfg.done === "after") {
      const mark = document.createElement("div");
      mark.className = "done-mark";
      mark.textContent = "✓ done";
      frag.append(mark);
    }
    m.node = el;
    m.frag = frag;
    return frag;
  }
  function renderAll() {
    const built = msgs.map(build);
    log.replaceChildren(...(cfg.newest_first ? built.reverse() : built));
    log.scrollTop = log.scrollHeight;
  }
  function add(m, scroll = true) {  // (a history of thousands is scrolled once, not laid out per message)
    msgs.push(m);
    if (cfg.rerender) return renderAll(), m;
    if (cfg.newest_first) log.prepend(build(m)); else log.append(build(m));
    if (scroll) log.scrollTop = log.scrollHeight;
    return m;
  }
  function update(m, patch, swapNode) {
    Object.assign(m, patch);
    if (cfg.rerender) return renderAll();
    const old = m.node, mark = old.nextElementSibling;
    if (swapNode || (m.done && cfg.done === "after" && !(mark && mark.classList.contains("done-mark")))) {
      const fresh = build(m);
      old.replaceWith(fresh);
      return;
    }
    setText(old, m.text);
    if (m.done && cfg.done === "attr") old.dataset.done = "1";
  }
  function remove(m) {
    msgs.splice(msgs.indexOf(m), 1);
    if (cfg.rerender) return renderAll();
    const mark = m.node.nextElementSibling;
    if (mark && mark.classList.contains("done-mark")) mark.remove();
    m.node.remove();
  }
  function setBusy(on) {
    if (cfg.busy === "stop-button") stopBtn.hidden = !on;
    if (cfg.busy === "typing") typing.hidden = !on;
  }
  function start(on) {
    busy = on;
    if (sendBtn) sendBtn.disabled = on;
    setBusy(on);
  }

  async function load() {
    msgs.length = 0;
    log.replaceChildren();
    if (cfg.welcome !== null) add({role: "bot", text: cfg.welcome, welcome: true, done: true});
    const res = await fetch(`/api/c/${conv}`);
    const history = (await res.json()).messages;
    // (a message may come with the work it showed: `work` in its bubble, or a {role: "work", kind, title, body})
    if (!cfg.forgets_on_reload) for (const m of history) add({...m, done: true}, false);
    log.scrollTop = log.scrollHeight;
    log.dataset.ready = "1";
  }
  const ready = load();
  if (cfg.cover_send_ms) {
    const cover = $("cover");
    cover.hidden = false;
    setTimeout(() => { cover.hidden = true; }, cfg.cover_send_ms);
  }
  if (cfg.input_hidden_ms[1]) {
    const [at, lasting] = cfg.input_hidden_ms;
    setTimeout(() => { box.style.display = "none"; setTimeout(() => { box.style.display = ""; }, lasting); }, at);
  }
  if (cfg.send_enabled_after_ms && sendBtn) {
    let timer = null;
    box.addEventListener("input", () => {
      sendBtn.disabled = true;
      clearTimeout(timer);
      timer = setTimeout(() => { sendBtn.disabled = busy; }, cfg.send_enabled_after_ms);
    });
  }

  if (cfg.wipe_first_typing && sendBtn) {
    let started = false;
    const clear = () => { if (cfg.input === "contenteditable") box.textContent = ""; else box.value = ""; };
    const typed = () => (cfg.input === "contenteditable" ? box.innerText : box.value).trim() !== "";
    const sync = () => { sendBtn.disabled = busy || !started || !typed(); };
    box.addEventListener("input", () => {
      sync();
      if (!started) setTimeout(() => { started = true; clear(); sync(); }, 100);
    });
    sync();
  }

  const WORK_TITLES = {tool: ["🔧 Using tool memory_search…", "🔧 Used tool memory_search"],
                       thought: ["💭 Thinking…", "💭 Thought for 1 second"], status: ["Searching memory…", "Searching memory…"]};
  // One step of the agent's work shown, in the bubble `m` or beside it; a tool runs cfg.work_ms.
  async function showWork(kind, m, text, where) {
    const [running, finished] = WORK_TITLES[kind];
    const x = {role: "work", kind, title: running, running: kind === "tool", done: false,
               body: kind === "thought" ? "The user asks something; choosing what to tell them." : ""};
    if (m) { (m[where] = m[where] || []).push(x); if (cfg.rerender) renderAll(); else m.node[where === "work" ? "prepend" : "append"](buildWork(x)); }
    else add(x);
    setBusy(cfg.work_busy);
    await sleep(kind === "tool" ? cfg.work_ms : 50);
    // A tool's result holds the answer's words: a reader must not take it for the answer.
    Object.assign(x, {title: finished, running: false, body: kind === "tool" ? `memory_search result: ${text}` : x.body});
    if (cfg.rerender) renderAll(); else x.node.replaceWith(buildWork(x));
    return x;
  }
  function dropStatus(m) {
    for (const list of [msgs, (m && m.work) || []]) {
      for (const x of list.filter((y) => y.role === "work" && y.kind === "status")) {
        list.splice(list.indexOf(x), 1);
        if (!cfg.rerender) x.node.remove();
      }
    }
    if (cfg.rerender) renderAll();
  }

  async function streamBubble(text, first, late) {
    const wait = first ? (late || cfg.first_token_ms) : cfg.bubble_gap_ms;
    let m = null;
    if (!first && !cfg.busy_in_gaps) setBusy(false);
    if (cfg.placeholder !== null) m = add({role: "bot", text: cfg.placeholder, done: false});
    await sleep(wait);
    if (aborted) return;
    const steps = first ? cfg.work.slice(0, cfg.work_after_answer ? -1 : undefined) : [];
    if (steps.length && cfg.work_place === "in-bubble" && !m) m = add({role: "bot", text: "", done: false, work: []});
    for (const kind of steps) await showWork(kind, cfg.work_place === "in-bubble" ? m : null, text, "work");
    dropStatus(m);
    setBusy(true);
    const parts = [];
    const step = cfg.chunk_chars || text.length || 1;
    for (let i = 0; i < text.length; i += step) parts.push(text.slice(i, i + step));
    for (const [i, part] of parts.entries()) {
      if (i) await sleep(cfg.chunk_ms);
      if (aborted) return;
      const shown = parts.slice(0, i + 1).join("");
      if (!m) m = add({role: "bot", text: shown, done: false});
      else update(m, {text: shown}, i === 0 && cfg.placeholder !== null && cfg.placeholder_replace === "node");
    }
    if (first && cfg.work_after_answer && cfg.work.length) {
      const kind = cfg.work[cfg.work.length - 1];
      await showWork(kind, cfg.work_place === "in-bubble" ? m : null, text, "workAfter");
    }
    if (cfg.done !== "none") {
      if (cfg.done_delay_ms) await sleep(cfg.done_delay_ms);
      update(m, {done: true});
      // queued, not awaited: the busy marker goes at once, the last render lands a moment later
      if (cfg.final_render_ms) setTimeout(() => update(m, {text: m.text + " ✓"}), cfg.final_render_ms);
    }
  }

  async function submit() {
    const text = cfg.input === "contenteditable" ? box.innerText.replace(/\n$/, "") : box.value;
    if (busy || !text.trim()) return;
    if (cfg.slash_new === "opens" && text.trim() === "/new") {
      if (refusals++ < cfg.slash_new_refusals) return alertBox.replaceChildren("Try New Chat again in a moment.");
      if (cfg.input === "contenteditable") box.textContent = ""; else box.value = "";
      return $("new-chat").click();
    }
    start(true);
    aborted = false;
    if (cfg.input === "contenteditable") box.textContent = ""; else box.value = "";
    await ready;
    if (cfg.welcome_vanishes) for (const w of msgs.filter((m) => m.welcome)) remove(w);
    if (cfg.user_echo_delay_ms) await sleep(cfg.user_echo_delay_ms);
    add({role: "me", text, done: true});
    const res = await fetch(`/api/c/${conv}/messages`, {method: "POST", headers: {"Content-Type": "application/json"},
                                                       body: JSON.stringify({text})});
    const reply = await res.json();
    if (reply.error) {
      add({role: "error", text: reply.error, done: true});
      return start(false);
    }
    if (reply.silent) {
      if (cfg.placeholder !== null) add({role: "bot", text: cfg.placeholder, done: false});
      if (cfg.busy_gives_up_ms) setTimeout(() => start(false), cfg.busy_gives_up_ms);
      return;  // busy forever, or until it gives up
    }
    if (cfg.reload_mid_reply_ms && !sessionStorage.getItem("reloaded")) {
      sessionStorage.setItem("reloaded", "1");  // the server has the whole reply: the reloaded page shows it
      setTimeout(() => location.reload(), cfg.first_token_ms + cfg.reload_mid_reply_ms);
    }
    for (const [i, b] of reply.bubbles.entries()) {
      await streamBubble(b, i === 0, reply.late_ms);
      if (aborted) break;
    }
    if (reply.conversation) conv = reply.conversation;
    start(false);
  }

  $("composer").addEventListener("submit", (e) => { e.preventDefault(); submit(); });
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
  });
  stopBtn.addEventListener("click", () => { aborted = true; start(false); });
  $("new-chat").addEventListener("click", async () => {
    if (cfg.new_chat === "noop") return renderAll();
    const {id} = await (await fetch("/api/new", {method: "POST"})).json();
    if (cfg.new_chat_navigates) return location.assign(`/c/${id}`);
    conv = id;
    await load();
  });
})();
</script>
</body></html>
"""


# -- deep-chat (npm `deep-chat`): a chat web component whose whole UI lives in its shadow root ---------

def deep_chat_page(scenario: LabScenario, conv: str, history: list[dict[str, str]]) -> str:
    """The component on a page of its own, talking to the lab; the history comes with the page, so a
    reload shows the conversation. "New chat" (outside the component) opens a fresh one."""
    connect = json.dumps({"url": f"/api/c/{conv}/deep-chat", "stream": True})
    shown = json.dumps([{"role": "user" if m["role"] == "me" else "ai", "text": m["text"]} for m in history])
    return _DEEP_CHAT_HTML.replace("@CONNECT@", html.escape(connect)).replace("@HISTORY@", html.escape(shown))


def deep_chat_reply(handler: BaseHTTPRequestHandler, lab: ChatLab, conv: str) -> None:
    """deep-chat's stream protocol: server-sent events `data: {"text": chunk}`, or `{"error": ...}`."""
    length = int(handler.headers.get("Content-Length") or 0)
    body = json.loads(handler.rfile.read(length) or b"{}") if length else {}
    text = next((m.get("text", "") for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    bubbles, _, fault = lab._reply(conv, text)
    s = lab.scenario
    handler.send_response(HTTPStatus.OK)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-store")
    handler.end_headers()
    handler.close_connection = True

    def event(data: dict[str, str]) -> None:
        handler.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
        handler.wfile.flush()

    try:
        if fault == "error":
            return event({"error": AGENT_ERROR})
        if fault == "no-reply":
            lab.stopping.wait(600)
            return
        if lab.stopping.wait((s.late_ms if fault == "late" else s.first_token_ms) / 1000):
            return
        whole = "\n\n".join(bubbles)
        step = s.chunk_chars or len(whole) or 1
        for i in range(0, len(whole), step):
            if i and lab.stopping.wait(s.chunk_ms / 1000):
                return
            event({"text": whole[i:i + step]})
    except (BrokenPipeError, ConnectionResetError):
        pass


_DEEP_CHAT_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>deep-chat lab</title>
<script type="module" src="/deep-chat.js"></script></head>
<body style="font: 15px sans-serif; margin: 0">
<header style="padding: 6px 10px; background: #eee"><strong>deep-chat lab</strong>
  <button id="new-chat" type="button" onclick="location.assign('/')">New chat</button></header>
<deep-chat style="width: 96vw; height: 80vh; display: block" connect="@CONNECT@" history="@HISTORY@"></deep-chat>
</body></html>
"""
