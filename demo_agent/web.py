"""DemoMind's chat web app: stdlib HTTP server, one page, replies streamed as server-sent events.

The reply is computed and saved by the Brain before streaming starts, so a reload or a server
restart mid-stream shows the whole reply.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

from demo_agent.brain import NOTICE_TEXT, Brain
from demo_agent.faults import RATE_LIMIT_TEXT, Faults

CHUNK_CHARS = 4
MAX_BODY = 1_000_000
_CONV_RE = re.compile(r"^/c/([A-Za-z0-9_-]{1,64})/?$")
_API_CONV_RE = re.compile(r"^/api/c/([A-Za-z0-9_-]{1,64})(/messages)?/?$")
_STATIC = {
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/app.css": ("app.css", "text/css; charset=utf-8"),
}


def _static(name: str) -> bytes:
    return resources.files("demo_agent").joinpath("static", name).read_bytes()


def _chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class _ClientGone(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    server_version = "DemoMind/1.0"
    app: DemoChatServer  # set on a per-server subclass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet: tests and demo runs share the terminal

    # ---- helpers -------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode(), "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def _event(self, name: str, data: dict[str, Any]) -> None:
        payload = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        try:
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError) as e:
            raise _ClientGone from e

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and self.app._stopping.wait(seconds):
            raise _ClientGone  # server is stopping: end the stream now

    # ---- routes --------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/":
            conv_id = self.app.brain.new_conversation()
            self._send(HTTPStatus.FOUND, b"", "text/plain", {"Location": f"/c/{conv_id}"})
        elif _CONV_RE.match(path):
            cookie = self.app.faults.set_cookie
            headers = {"Set-Cookie": f"demomind_session={cookie}; Path=/; HttpOnly; SameSite=Lax"} if cookie else None
            self._send(HTTPStatus.OK, _static("index.html"), "text/html; charset=utf-8", headers)
        elif path in _STATIC:
            name, ctype = _STATIC[path]
            self._send(HTTPStatus.OK, _static(name), ctype)
        elif (m := _API_CONV_RE.match(path)) and not m.group(2):
            conv_id = m.group(1)
            self._json(HTTPStatus.OK, {"id": conv_id, "messages": self.app.brain.history(conv_id)})
        elif path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
        else:
            self._error(HTTPStatus.NOT_FOUND, "not found")

    do_HEAD = do_GET

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/api/new":
            try:
                self._read_body()  # drained and ignored: a new chat takes no options
            except ValueError:
                self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "body too large")
                return
            self._json(HTTPStatus.OK, {"id": self.app.brain.new_conversation()})
            return
        m = _API_CONV_RE.match(path)
        if not (m and m.group(2)):
            self._error(HTTPStatus.NOT_FOUND, "not found")
            return
        try:
            body = json.loads(self._read_body() or b"{}")
            text = body["text"]
            if not isinstance(text, str) or not text.strip():
                raise ValueError
        except (ValueError, KeyError, TypeError):
            self._error(HTTPStatus.BAD_REQUEST, 'expected JSON {"text": "..."} with non-empty text')
            return
        faults = self.app.faults
        if faults.take("error_next"):
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "the model backend failed (injected fault)")
            return
        if faults.take("hang_next"):
            self.app._stopping.wait(600)  # until the server stops; the browser gives up first
            self.close_connection = True
            return
        if faults.take("rate_limit_next"):
            self._stream([RATE_LIMIT_TEXT.format(seconds=faults.rate_limit_retry_s)], False)
            return
        drop = faults.take("drop_next")
        reply = self.app.brain.reply(m.group(1), text)  # saved before the first byte is sent
        bubbles = reply.bubbles
        if faults.take("inject_next"):
            bubbles = [*bubbles[:-1], bubbles[-1] + faults.inject_text]
        self._sleep(faults.slow_s)
        self._stream(bubbles, reply.compacted, drop=drop)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(length) if length else b""

    def _stream(self, bubbles: list[str], compacted: bool, drop: bool = False) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        app = self.app
        token_delay = app.token_delay_s if app.faults.token_delay_s is None else app.faults.token_delay_s
        try:
            if compacted:
                self._event("notice", {"kind": "compaction", "text": NOTICE_TEXT})
            for i, bubble in enumerate(bubbles):
                self._event("bubble", {"index": i})
                self._sleep(app.think_delay_s)
                for j, chunk in enumerate(_chunks(bubble)):
                    if j:
                        self._sleep(token_delay)
                    self._event("chunk", {"index": i, "text": chunk})
                    if drop:
                        self.connection.shutdown(socket.SHUT_RDWR)  # mid-stream, as a proxy timing out would
                        return
                self._event("bubble_done", {"index": i, "text": bubble})
            self._event("done", {"bubbles": len(bubbles), "compacted": compacted})
        except _ClientGone:
            pass  # the user pressed Stop or closed the tab; the reply is already saved


class _QuietHTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a hung browser connection must not block exit

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A browser dropping a connection is normal; anything else is a bug worth printing.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class DemoChatServer:
    """DemoMind served on 127.0.0.1; start() returns the base URL."""

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        token_delay_s: float = 0.004,
        think_delay_s: float = 0.05,
        context_messages: int = 40,
        faults: Faults | None = None,
    ) -> None:
        self.brain = Brain(data_dir, context_messages=context_messages)
        self.faults = faults if faults is not None else Faults.from_env()
        self.token_delay_s = token_delay_s
        self.think_delay_s = think_delay_s
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        if self._httpd is not None:
            return self.url
        handler = type("Handler", (_Handler,), {"app": self})
        self._stopping.clear()
        httpd = _QuietHTTPServer((host, port), handler)
        # serve_forever polls for shutdown; 0.05 s keeps stop() quick for tests.
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), name="demomind-http", daemon=True
        )
        self._thread.start()
        return self.url

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # ends in-flight streams at their next pause
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def serve_forever(self) -> None:
        """Block until interrupted (used by `python -m demo_agent`)."""
        try:
            while self._thread is not None and self._thread.is_alive():
                time.sleep(0.5)
        finally:
            self.stop()

    def __enter__(self) -> DemoChatServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
