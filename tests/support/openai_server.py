"""A small OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

It answers GET /v1/models and POST /v1/chat/completions (plain and stream=true) with whatever a
`Responder` returns for the request's messages and tools, and records every request, so tests can
drive real OpenAI clients (ours, or a chat frontend's) with deterministic answers. `faults` lets a
test make the next requests fail: an HTTP status (429, 500...), `{"status": 429, "retry_after": 0}`,
"hang" (no answer until the client gives up), "garbage" (200 with a body that is not JSON), "html"
(200 with a proxy's HTML page), or "drop" (the connection closes without an answer).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (messages, tools) -> {"content": str | None, "tool_calls": [{"id", "name", "arguments"}]}
Responder = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]


class OpenAICompatServer:
    def __init__(self, responder: Responder, *, model: str = "test-model", chunk_delay_s: float = 0.0):
        self.responder = responder
        self.model = model
        self.chunk_delay_s = chunk_delay_s
        self.requests: list[dict[str, Any]] = []
        self.faults: list[int | str | dict[str, Any]] = []  # how to fail the next requests, in order
        self._server: ThreadingHTTPServer | None = None
        self._stopping = threading.Event()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> OpenAICompatServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        if self._server:
            self._server.shutdown()
            self._server.server_close()


def _handler(owner: OpenAICompatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            self._send_raw(status, json.dumps(body).encode(), "application/json", headers)

        def _send_raw(self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _fault(self, fault: int | str | dict[str, Any]) -> None:
            if fault == "hang":
                owner._stopping.wait(120)
                self.close_connection = True
            elif fault == "drop":
                self.close_connection = True
            elif fault == "garbage":
                self._send_raw(200, b"this is not json {", "application/json")
            elif fault == "html":
                self._send_raw(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
            else:
                spec = fault if isinstance(fault, dict) else {"status": fault}
                headers = {"Retry-After": str(spec["retry_after"])} if "retry_after" in spec else None
                message = spec.get("message", f"injected {spec['status']}")
                self._send_json(spec["status"], {"error": {"message": message, "type": "test"}}, headers)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send_json(200, {"object": "list", "data": [
                    {"id": owner.model, "object": "model", "created": 0, "owned_by": "test"}]})
            else:
                self._send_json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            owner.requests.append(body)
            if owner.faults:
                self._fault(owner.faults.pop(0))
                return
            answer = owner.responder(body.get("messages", []), body.get("tools") or [])
            if body.get("stream"):
                self._stream(answer)
            else:
                self._send_json(200, _completion(owner.model, answer))

        def _stream(self, answer: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            text = answer.get("content") or ""
            for i in range(0, len(text), 8):
                self._chunk({"content": text[i:i + 8]} | ({"role": "assistant"} if i == 0 else {}))
                if owner.chunk_delay_s:
                    time.sleep(owner.chunk_delay_s)
            for n, call in enumerate(answer.get("tool_calls") or []):
                self._chunk({"tool_calls": [{"index": n, "id": call["id"], "type": "function",
                                             "function": {"name": call["name"], "arguments": call["arguments"]}}]})
            self._chunk({}, finish="tool_calls" if answer.get("tool_calls") else "stop")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> None:
            event = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": owner.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()

    return Handler


def _completion(model: str, answer: dict[str, Any]) -> dict[str, Any]:
    calls = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
             for c in answer.get("tool_calls") or []]
    message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
    if calls:
        message["tool_calls"] = calls
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def scripted_responder(language: str = "en", verdict: Callable[..., dict[str, Any]] | None = None) -> Responder:
    """The scripted persona behind the HTTP API: the real OpenAI client path, deterministic answers.
    Judge requests (the `grade` tool) get `verdict`'s answer, by default the offline rule judge's
    (tests/support/judge.py)."""
    import asyncio

    from persona.engine.judge import rule_verdict
    from persona.engine.scripted import ScriptedPersona
    from tests.support.judge import is_judge_request, judge_answer

    persona = ScriptedPersona(language)

    def respond(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if is_judge_request(tools):
            return judge_answer(messages, verdict or rule_verdict)
        turn = asyncio.run(persona.complete(messages, tools))
        return {"content": turn.content,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in turn.tool_calls]}

    return respond
