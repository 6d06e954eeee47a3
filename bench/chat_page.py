"""An instrumented chat page for the bench: a reply of known length, streamed at a known pace.

It keeps the DOM contract of the demo chat (drivers/demo.py works on it unchanged): textarea#prompt,
#messages[data-ready] (no history to load), button#send (Enter sends too), .msg.user / .msg.assistant
bubbles, button#stop visible while busy, data-done="1" on a finished reply. `?history=N` opens it with N
earlier bubbles (half ours, half finished replies), for the cost of a long chat. The page records, per turn, when our bubble appeared, when each
chunk of the reply reached the DOM and when the busy marker went away, as epoch milliseconds
(performance.timeOrigin + performance.now()), readable from `window.__bench.turns`. That gives the
agent's own reply time (first bubble to last chunk) and the moment a driver could at best know the
reply was complete, without trusting any driver's own clock.
"""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bench chat</title>
<style>body{font:14px sans-serif;margin:0;display:flex;flex-direction:column;height:100vh}
#messages{flex:1;overflow:auto;padding:8px}.msg{margin:4px 0;padding:6px;border-radius:6px;white-space:pre-wrap}
#history{content-visibility:auto;contain-intrinsic-size:auto 40000px}
.user{background:#dde}.assistant{background:#eee}form{display:flex;gap:4px;padding:8px}textarea{flex:1}</style>
</head><body>
<main id="messages" aria-busy="false" data-ready="1"></main>
<form id="composer"><textarea id="prompt" rows="1"></textarea>
<button id="send" type="submit">Send</button><button id="stop" type="button" hidden>Stop</button></form>
<script>
"use strict";
const clock = () => performance.timeOrigin + performance.now();
window.__bench = {turns: []};
const messages = document.getElementById("messages"), prompt = document.getElementById("prompt");
const send = document.getElementById("send"), stop = document.getElementById("stop");
let busy = false;
function bubble(cls, text) {
  const el = document.createElement("div"); el.className = "msg " + cls; el.textContent = text;
  messages.appendChild(el); messages.scrollTop = messages.scrollHeight; return el;
}
const query = new URLSearchParams(location.search);
const history = Number(query.get("history") || 0);
// contained=1: the earlier bubbles sit in a block the browser may skip laying out (content-visibility),
// so the page's own layout does not grow with them; the DOM a driver queries is the same.
const earlier = query.get("contained") ? messages.appendChild(Object.assign(document.createElement("div"), {id: "history"})) : messages;
for (let i = 0; i < history; i++) {
  const el = document.createElement("div");
  el.className = "msg " + (i % 2 ? "assistant" : "user");
  el.textContent = `Earlier message ${i}: ` + "some words of an old turn ".repeat(4);
  if (i % 2) el.dataset.done = "1";
  earlier.appendChild(el);
}
messages.scrollTop = messages.scrollHeight;
function setBusy(on) { busy = on; send.disabled = on; stop.hidden = !on; messages.setAttribute("aria-busy", String(on)); }
async function submit() {
  const text = prompt.value;
  if (busy || !text.trim()) return;
  setBusy(true); prompt.value = "";
  bubble("user", text);
  const turn = {user: clock(), chunks: 0, first: null, last: null, idle: null};
  window.__bench.turns.push(turn);
  const reply = bubble("assistant", "Thinking…");
  const res = await fetch("/api/reply", {method: "POST", headers: {"Content-Type": "application/json"},
                                          body: JSON.stringify({text})});
  const reader = res.body.getReader(), decoder = new TextDecoder();
  let buf = "", started = false;
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += decoder.decode(value, {stream: true});
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const data = JSON.parse(buf.slice(0, cut).replace(/^data: /, "")); buf = buf.slice(cut + 2);
      if (data.chunk !== undefined) {
        if (!started) { reply.textContent = ""; started = true; turn.first = clock(); }
        reply.textContent += data.chunk; turn.last = clock(); turn.chunks++;
      }
    }
  }
  reply.dataset.done = "1";
  setBusy(false); turn.idle = clock();
}
document.getElementById("composer").addEventListener("submit", (e) => { e.preventDefault(); submit(); });
prompt.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit(); } });
</script></body></html>
"""


class _Handler(BaseHTTPRequestHandler):
    page: ChatPage

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        body = PAGE.encode() if self.path.split("?")[0] in ("/", "/index.html") else b""
        self.send_response(HTTPStatus.OK if body else HTTPStatus.NOT_FOUND)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        text = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}").get("text", "")
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        page = self.page
        with page._lock:
            page.replies += 1
            n = page.replies
        words = f"Reply {n} to {len(text)} characters: " + " ".join(f"word{i}" for i in range(page.chunks * 2))
        step = max(1, len(words) // page.chunks)
        parts = [words[i:i + step] for i in range(0, len(words), step)][: page.chunks]
        parts[-1] += words[step * page.chunks:]
        pause = page.reply_s / max(len(parts), 1)
        try:
            for part in parts:
                if page._stopping.wait(pause):
                    return
                self.wfile.write(b"data: " + json.dumps({"chunk": part}).encode() + b"\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


class ChatPage:
    """Serves the page on 127.0.0.1; every reply takes `reply_s` seconds, in `chunks` chunks."""

    def __init__(self, reply_s: float = 0.4, chunks: int = 10):
        self.reply_s = reply_s
        self.chunks = chunks
        self.replies = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        handler = type("Handler", (_Handler,), {"page": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/"

    def __enter__(self) -> ChatPage:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
