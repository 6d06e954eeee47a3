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
    busy: Literal["stop", "dots", "none"] = "stop"
    send: Literal["button", "enter"] = "button"
    new_chat: Literal["button", "storage"] = "button"
    welcome: str | None = "Hi! How can I help you today?"
    break_watch: bool = False
    block_ms: int = 0

    def names(self) -> dict[str, str]:
        """Class names for each part, generated from the seed in one of the styles real builds use."""
        rng = random.Random(self.seed)
        style = rng.choice(["css-{}", "_{}_1", "sc-{}", "x{}"])
        parts = ["app", "header", "title", "log", "row", "user", "bot", "bubble", "text", "composer", "input", "send",
                 "stop", "dots", "new", "launcher", "panel", "welcome", "tag", "msgtag"]
        out = {}
        for part in parts:
            token = "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(6))
            out[part] = style.format(token)
        out["tag"] = f"x-chat-{out['tag'][-6:].lower().strip('_-') or 'app'}"
        out["msgtag"] = f"x-msg-{out['msgtag'][-6:].lower().strip('_-') or 'item'}"
        return out


def _config(variant: Variant, scenario: dict[str, Any], **extra: Any) -> str:
    data = {"v": variant.model_dump(), "names": variant.names(), "s": scenario, **extra}
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
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const el = (tag, cls, attrs = {}, ...kids) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
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
    .${n.log} { flex: 1; overflow-y: auto; padding: 10px; }
    .${n.row} { display: flex; margin: 6px 0; }
    .${n.user} { justify-content: flex-end; }
    .${n.bubble} { padding: 6px 10px; border-radius: 10px; background: #f2f2f2; max-width: 70%; white-space: pre-wrap; }
    .${n.user} .${n.bubble} { background: #cde; }
    .${n.composer} { display: flex; gap: 6px; padding: 8px; border-top: 1px solid #ddd; }
    .${n.input} { flex: 1; min-height: 2em; }
    .${n.dots} span { display: inline-block; width: 6px; height: 6px; margin: 2px; border-radius: 3px; background: #999; }
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

  // One message: a row with a bubble, or (shadow) an element whose own shadow root holds the bubble.
  function message(role, text) {
    const author = role === "me" ? "user" : "assistant";
    if (v.shadow === "nested") {
      const host = el(n.msgtag, "", {author});
      const inner = host.attachShadow({mode: "open"});
      const cls = v.shared_class ? "message" : `message ${author}`;
      const body = el("div", cls, {"data-from": author}, el("div", "text", {}, text));
      inner.append(el("style", "", {}, `.message { margin: 6px 0; padding: 6px 10px; border-radius: 10px; background: #f2f2f2; }`), body);
      return {node: host, text: body.firstChild};
    }
    const cls = v.shared_class ? n.row : `${n.row} ${role === "me" ? n.user : n.bot}`;
    const bubble = el("div", n.bubble, {}, el("span", n.text, {}, text));
    const row = el("div", cls, v.shared_class ? {"data-author": author} : {}, bubble);
    return {node: row, text: bubble.firstChild};
  }
  function add(role, text) {
    const m = message(role, text);
    log.append(m.node);
    log.scrollTop = log.scrollHeight;
    return m;
  }

  async function load() {
    log.replaceChildren();
    if (v.welcome !== null) add("bot", v.welcome);
    const res = await fetch(`/api/c/${conv}`);
    for (const m of (await res.json()).messages) add(m.role, m.text);
  }
  await load();

  let busy = false;
  function setBusy(on, dots) {
    busy = on;
    send.disabled = on;
    if (v.busy === "stop") stop.hidden = !on;
    if (v.busy === "dots") {
      if (on && !dots) {
        const d = el("div", `${n.row} ${n.dots}`, {}, el("span"), el("span"), el("span"));
        log.append(d);
        return d;
      }
      if (!on && dots) dots.remove();
    }
    return null;
  }

  let sent = 0;
  async function submit() {
    const text = input.value;
    if (busy || !text.trim()) return;
    input.value = "";
    add("me", text);
    sent += 1;
    if (v.block_ms) { const until = Date.now() + v.block_ms; while (Date.now() < until) { /* a stuck main thread */ } }
    if (v.break_watch && sent === 1) Element.prototype.checkVisibility = () => { throw new Error("broken polyfill"); };
    const dots = setBusy(true, null);
    const res = await fetch(`/api/c/${conv}/messages`, {method: "POST", headers: {"Content-Type": "application/json"},
                                                       body: JSON.stringify({text})});
    const reply = await res.json();
    if (reply.silent) return;
    await sleep(reply.late_ms || s.first_token_ms || 0);
    for (const b of reply.bubbles) {
      const step = s.chunk_chars || b.length || 1;
      let m = null;
      for (let i = 0; i < b.length; i += step) {
        if (i) await sleep(s.chunk_ms || 0);
        const shown = b.slice(0, i + step);
        if (!m) { if (dots) dots.remove(); m = add("bot", shown); } else m.text.textContent = shown;
      }
    }
    if (reply.error) add("bot", reply.error);
    setBusy(false, dots);
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
