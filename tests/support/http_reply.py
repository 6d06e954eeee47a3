"""Answering a request from a stdlib http.server handler in one call: status, body, headers."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler


def respond(handler: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str,
            headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    for name, value in {"Content-Type": ctype, "Content-Length": str(len(body)), "Cache-Control": "no-store",
                        **(headers or {})}.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)
