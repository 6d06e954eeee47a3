"""Chat pages nobody profiled: the chat lab's agent behind markup whose names and shape come from a seed.

Discovery and frame handling must follow general rules (roles, structure, what changed when we
typed), never the markup of our own test pages; so these pages have no ids, class names generated
from a seed (as CSS modules and styled-components make them), and the shapes real chat UIs take:

* `labels`: controls named for assistive tech (aria-label, role=log) or bare icons;
* `shared_class`: our bubbles and the agent's share one class, told apart by an attribute only;
* `shadow="nested"`: the app in the open shadow root of one custom element and every message in
  the shadow root of its own element inside it (the text never in light DOM);
* `frame`: the chat is a widget in an iframe of a host page, same-origin or cross-origin (served
  as `localhost` while the host is `127.0.0.1`: another site, so an out-of-process frame), and the
  widget works only inside its host page: it waits for the host's init message from the host's origin;
* `launcher`: a floating bubble opens the chat (creating the widget's iframe on first click);
* `busy`: a stop button, typing dots, or nothing at all;
* `new_chat="storage"`: no New chat control; the conversation id lives in localStorage, so only
  forgetting the origin's storage starts over;
* `sides`: what tells our bubbles from the agent's: a class per side (or, with `shared_class`, an
  attribute), inline styles only (alignment, background), or only who wrote them: an author's name in
  each bubble, once per group (messengers), or an avatar whose alt text names it;
* `busy` also "working" (an "… is working" row in the list for the whole turn) and "input" (the text
  box disabled while the agent works);
* `work`: the agent's visible work before its answer (a tool card that runs `work_ms` and then shows a
  result holding the answer's words, a thought, a status line removed once the answer starts), in the
  reply's bubble or beside it, as `<details>`, an `aria-expanded` toggle or a block labelled for its
  kind; the busy marker shows meanwhile only with `work_busy`;
* `newest_first`: the DOM lists the newest message first, laid out bottom-up (column-reverse);
* `forgets_on_reload`: a page loaded shows an empty chat (the server keeps the conversation);
* `counters`: every class name carries a counter that changes with each page load (`kqzvtu-149`), as
  CSS-in-JS builds number their classes, plus a `jss<n>` class beside each;
* `meta`: each bubble also shows an emoji avatar and the time it was sent;
* faults for the driver's bounds: `break_watch` (the page breaks `checkVisibility` after the first
  message, so the reply watch throws inside the page), `block_ms` (the page's main thread is stuck
  that long after showing our message).

The reply timing (first token, chunks, faults per message) is the chat lab's `LabScenario`; a
variant is served by `ChatLab(LabScenario(variant=Variant(...)))`: `lab.url + "/"` is the page a
user would be given.
"""

from __future__ import annotations

import html
import json
import random
import string
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

WIDGET_HOST = "localhost"  # the cross-origin widget's host name: the same server, another site


class Variant(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed: int = 1
    labels: bool = True
    shared_class: bool = False
    shadow: Literal["none", "nested"] = "none"
    frame: Literal["none", "same-origin", "cross-origin"] = "none"
    launcher: bool = False
    busy: Literal["stop", "dots", "working", "input", "none"] = "stop"
    send: Literal["button", "enter"] = "button"
    new_chat: Literal["button", "storage"] = "button"
    welcome: str | None = "Hi! How can I help you today?"
    break_watch: bool = False
    block_ms: int = 0
    sides: Literal["markup", "style", "name", "name-once", "avatar"] = "markup"
    work: list[Literal["tool", "thought", "status"]] = []
    work_form: Literal["details", "toggle", "labelled"] = "details"
    work_place: Literal["in-bubble", "beside"] = "beside"
    work_ms: int = 0
    work_busy: bool = True
    newest_first: bool = False
    forgets_on_reload: bool = False
    counters: bool = False
    meta: bool = False  # each bubble also shows an emoji avatar and the time it was sent (not the message's words)
    pending: bool = False  # our message shows unsent (a class, a clock) until the server took it, then is drawn anew

    def names(self) -> dict[str, str]:
        """Class names for each part, generated from the seed in one of the styles real builds use."""
        rng = random.Random(self.seed)
        style = rng.choice(["css-{}", "_{}_1", "sc-{}", "x{}"])
        parts = ["app", "header", "title", "log", "row", "user", "bot", "bubble", "text", "composer", "input", "send",
                 "stop", "dots", "new", "launcher", "panel", "welcome", "tag", "msgtag",
                 "tool", "thought", "worktitle", "workbody", "status", "name", "avatar", "working", "face", "time", "pending", "clock"]  # (new ones last:
        # a seed keeps the names it had)
        out, tokens = {}, {}
        for part in parts:
            tokens[part] = token = "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(6))
            # Counters: a stem of letters and a number the page sets at each load ("@"), as CSS-in-JS numbers rules.
            out[part] = "k" + "".join(c if c.isalpha() else "q" for c in token) + "-@" if self.counters else style.format(token)
        out["tag"] = f"x-chat-{(tokens['tag'] if self.counters else out['tag'][-6:]).lower().strip('_-') or 'app'}"
        out["msgtag"] = f"x-msg-{(tokens['msgtag'] if self.counters else out['msgtag'][-6:]).lower().strip('_-') or 'item'}"
        return out

    def authors(self) -> tuple[str, str]:
        """The names shown on our bubbles and on the agent's (sides by name or avatar)."""
        rng = random.Random(f"authors-{self.seed}")
        return rng.choice(["You", "User", "Guest"]), rng.choice(["Memo", "Aria", "Nova", "Sage", "Assistant", "Helper Bot"])


def _config(variant: Variant, scenario: dict[str, Any], **extra: Any) -> str:
    data = {"v": variant.model_dump(), "names": variant.names(), "authors": variant.authors(), "s": scenario, **extra}
    return html.escape(json.dumps(data), quote=False)


def app_page(variant: Variant, scenario: dict[str, Any], *, conv: str | None, host_origin: str | None) -> str:
    """The chat app: standalone (conv from the address, or from localStorage when None), or the widget
    of a host page (`host_origin`: it waits for that origin's init message)."""
    cfg = _config(variant, scenario, conv=conv, hostOrigin=host_origin)
    return _APP_HTML.replace("@CONFIG@", cfg).replace("@JS@", _APP_JS)


def host_page(variant: Variant, *, widget_url: str) -> str:
    """A site with the chat widget in an iframe, shown at once or when the launcher is clicked."""
    cfg = _config(variant, {}, widgetUrl=widget_url)
    return _HOST_HTML.replace("@CONFIG@", cfg)


_APP_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Support</title>
<style>
  body { font: 15px sans-serif; margin: 0; }
  [data-fill] { display: flex; flex-direction: column; height: 100vh; }
</style></head>
<body>
<script type="application/json">@CONFIG@</script>
<script>@JS@</script>
</body></html>
"""

_APP_JS = r"""
"use strict";
(async () => {
  const cfg = JSON.parse(document.querySelector("script[type='application/json']").textContent);
  const v = cfg.v, n = cfg.names, s = cfg.s;
  const [userName, agentName] = cfg.authors;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  // Counters: each class's number is set at this load, and a jss<n> class goes beside each (both change
  // with every load, as CSS-in-JS builds number their rules).
  if (v.counters) {
    const base = 100 + Math.floor(Math.random() * 800);
    Object.keys(n).forEach((k, i) => { n[k] = n[k].replace("@", String(base + i)); });
  }
  const jss = new Map();
  const jssOf = (c) => { if (!jss.has(c)) jss.set(c, 10 + jss.size + Math.floor(Math.random() * 5) * 100); return "jss" + jss.get(c); };
  const el = (tag, cls, attrs = {}, ...kids) => {
    const e = document.createElement(tag);
    if (cls) e.className = v.counters ? cls.split(" ").filter(Boolean).map((c) => `${c} ${jssOf(c)}`).join(" ") : cls;
    for (const [k, val] of Object.entries(attrs)) if (val !== null && val !== undefined) e.setAttribute(k, val);
    e.append(...kids);
    return e;
  };
  const label = (text) => (v.labels ? text : null);

  // A widget runs only inside its host page, once the host said hello from the expected origin.
  if (cfg.hostOrigin) {
    if (window.top === window) {
      document.body.textContent = "This chat works only on its website.";
      return;
    }
    await new Promise((resolve) => {
      const hello = setInterval(() => parent.postMessage({type: "widget-ready"}, cfg.hostOrigin), 100);
      addEventListener("message", (e) => {
        if (e.origin === cfg.hostOrigin && e.data && e.data.type === "init" && e.data.site === "acme") {
          clearInterval(hello);
          resolve();
        }
      });
    });
  }

  const KEY = "chat.conversation";
  let conv = cfg.conv;
  if (!conv) {
    conv = localStorage.getItem(KEY);
    if (!conv) {
      conv = (await (await fetch("/api/new", {method: "POST"})).json()).id;
      localStorage.setItem(KEY, conv);
    }
  }

  // The app, in the document or in the open shadow root of a custom element.
  let root = document.body;
  if (v.shadow === "nested") {
    customElements.define(n.msgtag, class extends HTMLElement {});
    const host = el(n.tag, "", {"data-fill": ""});
    document.body.append(host);
    root = host.attachShadow({mode: "open"});
    root.append(el("style", "", {}, `:host { display: flex; flex-direction: column; height: 100vh; }`));
  }
  const style = el("style", "", {}, `
    [hidden] { display: none !important; }
    .${n.app} { display: flex; flex-direction: column; flex: 1; min-height: 0; height: 100%; }
    .${n.header} { display: flex; gap: 8px; padding: 6px 10px; background: #eef; }
    .${n.log} { flex: 1; overflow-y: auto; padding: 10px; display: flex; flex-direction: ${v.newest_first ? "column-reverse" : "column"};
                justify-content: flex-end; }
    .${n.row} { display: flex; margin: 6px 0; }
    .${n.user} { justify-content: flex-end; }
    .${n.bubble} { padding: 6px 10px; border-radius: 10px; background: #f2f2f2; max-width: 70%; white-space: pre-wrap; }
    .${n.user} .${n.bubble} { background: #cde; }
    .${n.composer} { display: flex; gap: 6px; padding: 8px; border-top: 1px solid #ddd; }
    .${n.input} { flex: 1; min-height: 2em; }
    .${n.dots} span { display: inline-block; width: 6px; height: 6px; margin: 2px; border-radius: 3px; background: #999; }
    .${n.tool}, .${n.thought}, .${n.status} { font-size: 12px; color: #555; border-left: 3px solid #bbb; margin: 4px 0; padding: 2px 6px; }
    .${n.name} { display: block; font-size: 11px; color: #666; }
    .${n.avatar} { width: 16px; height: 16px; margin-right: 6px; }
  `);
  root.append(style);
  const log = el("div", n.log, {role: label("log"), "aria-label": label("Conversation")});
  const input = el("textarea", n.input, {rows: "2", placeholder: "Type a message…", "aria-label": label("Message")});
  const send = el("button", n.send, {type: "submit", "aria-label": label("Send message")}, "➤");
  const stop = el("button", n.stop, {type: "button", "aria-label": label("Stop generating")}, "■");
  stop.hidden = true;
  const composer = el("form", n.composer, {}, input);
  if (v.send === "button") composer.append(send);
  composer.append(stop);
  const header = el("div", n.header, {}, el("span", n.title, {}, "Assistant"));
  const newChat = el("button", n.new, {type: "button", "aria-label": label("New chat"), title: label("New chat")}, "＋");
  if (v.new_chat === "button") header.append(newChat);
  const app = el("div", n.app, {}, header, log, composer);
  root.append(app);
  if (v.launcher && !cfg.hostOrigin) {  // a floating bubble opens the chat on its own page
    app.hidden = true;
    const open = el("button", n.launcher, {"aria-label": label("Open chat"), type: "button"}, "💬");
    open.style.cssText = "position: fixed; right: 20px; bottom: 20px; width: 56px; height: 56px; border-radius: 28px;";
    open.addEventListener("click", () => { app.hidden = !app.hidden; });
    document.body.append(open);
  }

  // Sides told by inline style alone: which declarations, from the seed.
  const STYLES = [[{row: "justify-content: flex-end", bubble: "background: #cde"}, {}],
                  [{row: "justify-content: flex-end"}, {row: "justify-content: flex-start"}],
                  [{bubble: "background-color: rgb(204, 221, 238); margin-left: auto"}, {bubble: "background-color: rgb(242, 242, 242)"}]];
  const styled = STYLES[v.seed % STYLES.length];
  let lastRole = null;  // of the last message shown (authors once per group)
  // Who wrote it, where only that tells the sides apart: a name, maybe once per group, or an avatar.
  function author(role) {
    const name = role === "me" ? userName : agentName;
    const grouped = v.sides === "name-once" && lastRole === role;
    lastRole = role;
    if (grouped) return null;
    if (v.sides === "avatar") return el("img", n.avatar, {alt: name, src: "data:image/svg+xml," +
      encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"/>')});
    return el("span", n.name, {}, name);
  }
  const byAuthor = ["name", "name-once", "avatar"].includes(v.sides);
  // What a bubble shows beside its words (meta): an emoji avatar, the time it was sent.
  const face = (role) => el("span", n.face, {}, role === "me" ? "🧑" : "🤖");
  const sentAt = () => el("span", n.time, {}, new Date().toTimeString().slice(0, 5));

  // One message: a row with a bubble, or (shadow) an element whose own shadow root holds the bubble.
  function message(role, text) {
    const who = byAuthor ? author(role) : null;
    const author_ = role === "me" ? "user" : "assistant";
    if (v.shadow === "nested") {
      const host = el(n.msgtag, "", v.sides === "markup" ? {author: author_} : {});
      const inner = host.attachShadow({mode: "open"});
      const cls = v.sides !== "markup" || v.shared_class ? "message" : `message ${author_}`;
      const side = styled[role === "me" ? 0 : 1];
      const look = v.sides === "style" ? {style: side.bubble || side.row} : {};  // (a row's own style goes on the bubble)
      const body = el("div", cls, {...(v.sides === "markup" ? {"data-from": author_} : {}), ...look});
      if (v.meta) body.append(face(role));
      if (who) body.append(who);
      const textEl = el("div", "text", {}, text);
      body.append(textEl);
      if (v.meta) body.append(sentAt());
      inner.append(el("style", "", {}, `.message { margin: 6px 0; padding: 6px 10px; border-radius: 10px; background: #f2f2f2; }
                                       .name { display: block; font-size: 11px; }`), body);
      return {node: host, bubble: body, text: textEl};
    }
    const shared = v.shared_class || v.sides !== "markup";
    const cls = shared ? n.row : `${n.row} ${role === "me" ? n.user : n.bot}`;
    const look = v.sides === "style" ? styled[role === "me" ? 0 : 1] : {};
    const textEl = el("span", n.text, {}, text);
    const bubble = el("div", n.bubble, look.bubble ? {style: look.bubble} : {});
    if (v.meta) bubble.append(face(role));
    if (who) bubble.append(who);
    bubble.append(textEl);
    if (v.meta) bubble.append(sentAt());
    const row = el("div", cls, {...(v.shared_class && v.sides === "markup" ? {"data-author": author_} : {}),
                                ...(look.row ? {style: look.row} : {})}, bubble);
    return {node: row, bubble, text: textEl};
  }
  // The list in DOM order; a row kept last (the "… is working" row) stays last.
  let trailer = null;
  function put(node) {
    if (v.newest_first) (trailer ? trailer.after(node) : log.prepend(node));
    else (trailer ? log.insertBefore(node, trailer) : log.append(node));
    log.scrollTop = v.newest_first ? 0 : log.scrollHeight;
  }
  function add(role, text) {
    const m = message(role, text);
    put(m.node);
    return m;
  }

  async function load() {
    log.replaceChildren();
    lastRole = null;
    if (v.welcome !== null) add("bot", v.welcome);
    const res = await fetch(`/api/c/${conv}`);
    const messages = (await res.json()).messages;
    if (!v.forgets_on_reload) for (const m of messages) add(m.role, m.text);
  }
  await load();

  let busy = false;
  function setBusy(on, dots) {
    busy = on;
    send.disabled = on;
    if (v.busy === "stop") stop.hidden = !on;
    if (v.busy === "input") input.disabled = on;
    if (v.busy === "dots") {
      if (on && !dots) {
        const d = el("div", `${n.row} ${n.dots}`, {}, el("span"), el("span"), el("span"));
        put(d);
        return d;
      }
      if (!on && dots) dots.remove();
    }
    if (v.busy === "working") {
      if (on && !trailer) { const row = el("div", `${n.row} ${n.working}`, {}, `${agentName} is working…`); put(row); trailer = row; }
      if (!on && trailer) { trailer.remove(); trailer = null; }
    }
    return null;
  }

  // The agent's work before its answer: each step in the reply's bubble or beside it.
  const TITLES = {tool: ["Using tool memory_search…", "🔧 Used tool memory_search"], thought: ["Thinking…", "💭 Thought for 1 second"]};
  function workBlock(kind, title, body) {
    if (v.work_form === "details") {
      return el("details", n[kind], {}, el("summary", n.worktitle, {}, title), el("div", n.workbody, {}, body));
    }
    if (v.work_form === "toggle") {
      const b = el("div", n.workbody, {}, body);
      b.hidden = true;
      const head = el("button", n.worktitle, {type: "button", "aria-expanded": "false"}, title);
      head.addEventListener("click", () => { b.hidden = !b.hidden; head.setAttribute("aria-expanded", String(!b.hidden)); });
      return el("div", n[kind], {}, head, b);
    }
    return el("div", n[kind], {"data-type": kind, "aria-label": kind === "tool" ? "Tool call" : "Reasoning"},
              el("div", n.worktitle, {}, title), el("div", n.workbody, {}, body));
  }
  async function showWork(kind, holder, answer, markers) {
    const place = (node) => (holder ? holder.bubble.insertBefore(node, holder.text) : put(node));
    markers.dots = v.work_busy ? (setBusy(true, markers.dots) || markers.dots) : setBusy(false, markers.dots);
    if (kind === "status") {
      const line = el("div", n.status, {role: label("status")}, "Searching memory…");
      place(line);
      await sleep(300);
      return line;
    }
    const [running, finished] = TITLES[kind];
    const block = workBlock(kind, running, kind === "thought" ? "The user asks something; choosing what to tell them." : "");
    place(block);
    await sleep(kind === "tool" ? v.work_ms : 300);
    // A tool's result holds the answer's words: a reader must not take it for the answer.
    const done = workBlock(kind, finished, kind === "tool" ? `memory_search result: ${answer}` : "The user asks something; choosing what to tell them.");
    block.replaceWith(done);
    return done;
  }

  let sent = 0;
  async function submit() {
    const text = input.value;
    if (busy || !text.trim()) return;
    input.value = "";
    const roleBefore = lastRole;  // (a message drawn anew keeps its place in a group)
    const mine = add("me", text);
    if (v.pending) { mine.node.classList.add(n.pending); mine.bubble.append(el("span", n.clock, {title: "Sending"}, "🕓")); }
    sent += 1;
    if (v.block_ms) { const until = Date.now() + v.block_ms; while (Date.now() < until) { /* a stuck main thread */ } }
    if (v.break_watch && sent === 1) Element.prototype.checkVisibility = () => { throw new Error("broken polyfill"); };
    const markers = {dots: setBusy(true, null)};
    const res = await fetch(`/api/c/${conv}/messages`, {method: "POST", headers: {"Content-Type": "application/json"},
                                                       body: JSON.stringify({text})});
    if (v.pending) {  // the server took it: our message drawn anew, as sent (Hydrogen's li.unsent goes so)
      lastRole = roleBefore;
      mine.node.replaceWith(message("me", text).node);
    }
    const reply = await res.json();
    if (reply.silent) return;
    await sleep(reply.late_ms || s.first_token_ms || 0);
    for (const [i, b] of reply.bubbles.entries()) {
      let m = null;
      if (i === 0 && v.work.length) {
        if (v.work_place === "in-bubble") { m = add("bot", ""); if (markers.dots) { markers.dots.remove(); markers.dots = null; } }
        const steps = [];
        for (const kind of v.work) steps.push(await showWork(kind, m, b, markers));
        for (const line of steps.filter((x) => x.className.includes(n.status))) line.remove();  // gone once the answer starts
        markers.dots = setBusy(true, markers.dots) || markers.dots;
      }
      const step = s.chunk_chars || b.length || 1;
      for (let j = 0; j < b.length; j += step) {
        if (j) await sleep(s.chunk_ms || 0);
        const shown = b.slice(0, j + step);
        if (!m) { if (markers.dots) { markers.dots.remove(); markers.dots = null; } m = add("bot", shown); } else m.text.textContent = shown;
      }
    }
    if (reply.error) add("bot", reply.error);
    setBusy(false, markers.dots);
  }
  composer.addEventListener("submit", (e) => { e.preventDefault(); submit(); });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
  });
  newChat.addEventListener("click", async () => {
    conv = (await (await fetch("/api/new", {method: "POST"})).json()).id;
    if (!cfg.conv) localStorage.setItem(KEY, conv);
    else history.replaceState(null, "", `/c/${conv}`);
    await load();
  });
})();
"""

_HOST_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Acme Inc.</title>
<style>
  body { font: 16px serif; margin: 0; padding: 20px; }
  .panel { position: fixed; right: 20px; bottom: 90px; width: 380px; height: 520px; border: 1px solid #ccc;
           box-shadow: 0 4px 20px #0003; background: white; }
  .panel iframe { width: 100%; height: 100%; border: 0; }
  .bubble-button { position: fixed; right: 20px; bottom: 20px; width: 56px; height: 56px; border-radius: 28px;
                   border: 0; background: #35c; color: white; font-size: 24px; cursor: pointer; }
</style></head>
<body>
<h1>Acme Inc.</h1>
<p>Welcome to our site. Questions? Our assistant is here to help.</p>
<script type="application/json">@CONFIG@</script>
<script>
"use strict";
(() => {
  const cfg = JSON.parse(document.querySelector("script[type='application/json']").textContent);
  const n = cfg.names, v = cfg.v;
  const widgetOrigin = new URL(cfg.widgetUrl).origin;
  addEventListener("message", (e) => {
    if (e.origin === widgetOrigin && e.data && e.data.type === "widget-ready") {
      e.source.postMessage({type: "init", site: "acme"}, widgetOrigin);
    }
  });
  const panel = document.createElement("div");
  panel.className = `panel ${n.panel}`;
  const frame = () => {
    if (panel.firstChild) return;
    const f = document.createElement("iframe");
    f.src = cfg.widgetUrl;
    f.title = v.labels ? "Chat" : "";
    panel.append(f);
  };
  document.body.append(panel);
  if (!v.launcher) return frame();
  panel.hidden = true;
  const open = document.createElement("button");
  open.className = `bubble-button ${n.launcher}`;
  if (v.labels) open.setAttribute("aria-label", "Open chat");
  open.textContent = "💬";
  open.addEventListener("click", () => { frame(); panel.hidden = !panel.hidden; });
  document.body.append(open);
})();
</script>
</body></html>
"""
