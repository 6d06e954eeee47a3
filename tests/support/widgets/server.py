"""One local server per widget test: the widget pages, the npm packages, and each widget's protocol.

    with WidgetServer(agent, packages={"n8n-chat": folder}) as server:
        page = server.url + "/n8n.html"

Routes (all on 127.0.0.1, one port, so the pages need no CORS):
- `/<page>.html` from tests/support/widgets/pages; `/pkg/<name>/<path>` from an installed package;
- n8n's chat webhook, `POST /webhook/<id>/chat`: `{"action": "loadPreviousSession" | "sendMessage",
  "sessionId", "chatInput"}`; previous sessions come back as LangChain messages (`{"data": [...]}`),
  replies as n8n's streaming response: JSON lines `begin`, `item` (a chunk), `end`;
- Flowise, `GET /api/v1/chatflows-streaming/<id>`, `GET /api/v1/public-chatbotConfig/<id>`,
  `POST /api/v1/prediction/<id>` (`{"question", "chatId", "streaming": true}`), streamed as Flowise's
  server-sent events (`message:` / `data: {"event": "start" | "token" | "metadata" | "end", "data"}`);
- Direct Line 3.0 with polling (`webSocket: false`), as botframework-directlinejs calls it:
  `POST /v3/directline/tokens/generate` and `/conversations` start one, `GET /conversations/<id>`
  resumes it, `GET|POST /conversations/<id>/activities` read (from a watermark) and post; the bot
  answers with a typing activity, then its message;
- assistant-ui's LocalRuntime adapter, `POST /api/chat` (`{"threadId", "messages"}`): the whole
  thread in, the answer streamed back as plain text chunks;
- assistant-ui's data-stream runtime, `POST /api/agent` (`{"threadId", "messages"}` as language-model
  messages, parts in `content`): the agent at work, in the AI SDK's UI message stream (server-sent
  events, `x-vercel-ai-ui-message-stream: v1`): its reasoning, a `memory_search` tool call (input,
  then its output after the agent's `tool_pause_s`), then the answer's text.
With `SessionAgent(at_work=True)` Flowise's stream shows the agent's work as Flowise does: its
reasoning as `thinking` events (the embed's ThinkingCard), the memory search run meanwhile (the
tool pause) and reported in `usedTools` (which the embed keeps but does not draw).

Every request is recorded (`requests`: method, path, parsed JSON body) for the tests' assertions.
"""

from __future__ import annotations

import json
import mimetypes
import re
import secrets
import threading
import time
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.chat_model import text_of
from tests.support.http_reply import respond
from tests.support.widgets.agent import SessionAgent, chunks

PAGES = Path(__file__).resolve().parent / "pages"
N8N_WEBHOOK = re.compile(r"^/webhook/[\w-]+/chat$")
FLOWISE = re.compile(r"^/api/v1/(chatflows-streaming|public-chatbotConfig|prediction)/([\w-]+)$")
DIRECT_LINE = "/v3/directline"
CONVERSATION = re.compile(r"^/v3/directline/conversations/([\w-]+)(/activities)?$")
BOT = {"id": "mmb-agent", "name": "Agent", "role": "bot"}


def _lc_message(role: str, text: str) -> dict[str, Any]:
    """A message as n8n's chat memory returns it for loadPreviousSession (LangChain's serialisation)."""
    kind = "HumanMessage" if role == "user" else "AIMessage"
    return {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", kind],
            "kwargs": {"content": text, "additional_kwargs": {}, "response_metadata": {}}}


class _DirectLineConversation:
    def __init__(self, conversation_id: str) -> None:
        self.id = conversation_id
        self.activities: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def add(self, activity: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            activity = {**activity, "id": f"{self.id}|{len(self.activities):07d}",
                        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                        "conversation": {"id": self.id}, "channelId": "directline"}
            self.activities.append(activity)
            return activity

    def since(self, watermark: int) -> tuple[list[dict[str, Any]], int]:
        with self.lock:
            return self.activities[watermark:], len(self.activities)


class WidgetServer:
    def __init__(self, agent: SessionAgent, packages: dict[str, Path] | None = None) -> None:
        self.agent = agent
        self.packages = dict(packages or {})
        self.requests: list[tuple[str, str, Any]] = []
        self.conversations: dict[str, _DirectLineConversation] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the widget server is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> WidgetServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True, name="widgets").start()
        return self

    def __exit__(self, *exc: object) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def record(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self.requests.append((method, path, body))

    def file(self, path: str) -> Path | None:
        """The page or package file a GET path names, never outside its folder."""
        if path.startswith("/pkg/"):
            name, _, rest = path[len("/pkg/"):].partition("/")
            root = self.packages.get(name)
        else:
            root, rest = PAGES, path.lstrip("/")
        if root is None or not rest:
            return None
        target = (root / urllib.parse.unquote(rest)).resolve()
        return target if target.is_file() and target.is_relative_to(root.resolve()) else None

    # -- Direct Line --------------------------------------------------------------------------

    def start_conversation(self) -> dict[str, Any]:
        conversation = _DirectLineConversation(secrets.token_hex(8))
        with self._lock:
            self.conversations[conversation.id] = conversation
        return self.conversation_info(conversation.id)

    def conversation_info(self, conversation_id: str) -> dict[str, Any]:
        return {"conversationId": conversation_id, "token": f"token-{conversation_id}", "expires_in": 1800}

    def bot_answers(self, conversation: _DirectLineConversation, activity: dict[str, Any]) -> None:
        """A typing activity while the agent thinks, then the answer as one message, as most bots reply.

        (Web Chat 4.18.1 shows the livestreaming typing activities of newer SDKs as bubbles of their own
        beside the final message, so this bot does not livestream.)"""
        said = self.agent.reply(conversation.id, activity.get("text", ""))
        conversation.add({"type": "typing", "from": BOT, "replyToId": activity["id"]})
        self.agent.think()
        # plain: Web Chat renders markdown with typographic quotes ("don’t"), which the offline rules
        # judge does not read as "don't" (persona/benchmark/grading.py UNKNOWN_PATTERNS)
        conversation.add({"type": "message", "from": BOT, "text": said, "replyToId": activity["id"],
                          "textFormat": "plain"})

def _handler(owner: WidgetServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, status: int, body: Any) -> None:
            respond(self, status, json.dumps(body).encode(), "application/json; charset=utf-8")

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw) if raw else {}
            except ValueError:
                return {"_raw": raw.decode(errors="replace")}

        def _stream_start(self, ctype: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", ctype)
            self.send_header("Cache-Control", "no-cache")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()  # HTTP/1.0: the body ends when the connection closes

        def _write(self, data: str) -> None:
            self.wfile.write(data.encode())
            self.wfile.flush()

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            owner.record("GET", url.path, None)
            if (match := FLOWISE.match(url.path)) and match.group(1) != "prediction":
                return self._json(200, {"isStreaming": True} if match.group(1) == "chatflows-streaming" else {})
            if (match := CONVERSATION.match(url.path)) is not None:
                return self._direct_line_get(match.group(1), bool(match.group(2)), url.query)
            target = owner.file(url.path)
            if target is None:
                return self._json(404, {"error": f"not found: {url.path}"})
            ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
            if target.suffix in (".js", ".mjs"):
                ctype = "text/javascript"
            respond(self, 200, target.read_bytes(), ctype)

        def do_POST(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            body = self._body()
            owner.record("POST", url.path, body)
            if N8N_WEBHOOK.match(url.path):
                return self._n8n(body)
            if (match := FLOWISE.match(url.path)) and match.group(1) == "prediction":
                return self._flowise(body)
            if url.path in (f"{DIRECT_LINE}/tokens/generate", f"{DIRECT_LINE}/conversations"):
                return self._json(201, owner.start_conversation())
            if (match := CONVERSATION.match(url.path)) is not None and match.group(2):
                return self._direct_line_post(match.group(1), body)
            if url.path == "/api/chat":
                return self._assistant_ui(body)
            if url.path == "/api/agent":
                return self._assistant_ui_agent(body)
            self._json(404, {"error": f"not found: {url.path}"})

        # -- n8n ----------------------------------------------------------------------------

        def _n8n(self, body: dict[str, Any]) -> None:
            session = str(body.get("sessionId") or "")
            if not session:
                return self._json(400, {"message": "sessionId is missing"})
            if body.get("action") == "loadPreviousSession":
                return self._json(200, {"data": [_lc_message(m["role"], m["content"])
                                                 for m in owner.agent.history(session)]})
            if body.get("action") != "sendMessage" or not str(body.get("chatInput") or "").strip():
                return self._json(400, {"message": f"unknown action {body.get('action')!r}"})
            said = owner.agent.reply(session, body["chatInput"])
            meta = {"nodeId": "AI Agent", "nodeName": "AI Agent", "itemIndex": 0, "runIndex": 0,
                    "timestamp": int(time.time() * 1000)}
            self._stream_start("application/json; charset=utf-8")
            self._write(json.dumps({"type": "begin", "metadata": meta}) + "\n")
            owner.agent.think()
            for piece in chunks(said):
                self._write(json.dumps({"type": "item", "content": piece, "metadata": meta}) + "\n")
                owner.agent.pause()
            self._write(json.dumps({"type": "end", "metadata": meta}) + "\n")

        # -- Flowise ------------------------------------------------------------------------

        def _flowise(self, body: dict[str, Any]) -> None:
            question, chat_id = str(body.get("question") or ""), str(body.get("chatId") or "")
            if not question.strip() or not chat_id:
                return self._json(400, {"message": "question and chatId are required"})
            said = owner.agent.reply(chat_id, question)
            if not body.get("streaming"):
                return self._json(200, {"text": said, "question": question, "chatId": chat_id,
                                        "chatMessageId": secrets.token_hex(8), "sessionId": chat_id})

            def event(name: str, data: Any) -> None:
                self._write("message:\ndata:" + json.dumps({"event": name, "data": data}) + "\n\n")

            self._stream_start("text/event-stream")
            owner.agent.think()
            event("start", "")
            if owner.agent.at_work:
                work = owner.agent.work_for(owner.agent.history(chat_id))
                began = time.monotonic()
                for piece in chunks(work.reasoning):
                    event("thinking", piece)
                    owner.agent.pause()
                owner.agent.run_tool()
                self._write("message:\ndata:" + json.dumps({"event": "thinking", "data": "",
                                                             "duration": round(time.monotonic() - began)}) + "\n\n")
                event("usedTools", [{"tool": work.tool, "toolInput": json.loads(work.arguments),
                                     "toolOutput": work.result}])
            for piece in chunks(said):
                event("token", piece)
                owner.agent.pause()
            event("metadata", {"chatId": chat_id, "chatMessageId": secrets.token_hex(8), "question": question,
                               "sessionId": chat_id, "memoryType": "Buffer Memory"})
            event("end", "[DONE]")

        # -- Direct Line --------------------------------------------------------------------

        def _conversation(self, conversation_id: str) -> _DirectLineConversation | None:
            found = owner.conversations.get(conversation_id)
            if found is None:
                self._json(404, {"error": {"code": "BadArgument", "message": "Conversation not found"}})
            return found

        def _direct_line_get(self, conversation_id: str, activities: bool, query: str) -> None:
            conversation = self._conversation(conversation_id)
            if conversation is None:
                return
            if not activities:
                return self._json(200, owner.conversation_info(conversation_id))
            watermark = urllib.parse.parse_qs(query).get("watermark", ["0"])[0]
            found, mark = conversation.since(int(watermark) if watermark.isdigit() else 0)
            self._json(200, {"activities": found, "watermark": str(mark)})

        def _direct_line_post(self, conversation_id: str, activity: dict[str, Any]) -> None:
            conversation = self._conversation(conversation_id)
            if conversation is None:
                return
            posted = conversation.add(activity)
            self._json(200, {"id": posted["id"]})
            if activity.get("type") == "message" and str(activity.get("text") or "").strip():
                threading.Thread(target=owner.bot_answers, args=(conversation, posted), daemon=True).start()

        # -- assistant-ui -------------------------------------------------------------------

        def _assistant_ui(self, body: dict[str, Any]) -> None:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                return self._json(400, {"error": "messages are required"})
            said = owner.agent.reply_to_history(messages, str(body.get("threadId") or "?"))
            self._stream_start("text/plain; charset=utf-8")
            owner.agent.think()
            for piece in chunks(said):
                self._write(piece)
                owner.agent.pause()

        def _assistant_ui_agent(self, body: dict[str, Any]) -> None:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                return self._json(400, {"error": "messages are required"})
            plain = [{"role": m.get("role"), "content": text_of(m.get("content"))} for m in messages
                     if m.get("role") in ("user", "assistant")]
            said = owner.agent.reply_to_history(plain, str(body.get("threadId") or "?"))
            work = owner.agent.work_for(plain)
            self._stream_start("text/event-stream", {"x-vercel-ai-ui-message-stream": "v1"})

            def event(chunk: dict[str, Any] | str) -> None:
                self._write(f"data: {chunk if isinstance(chunk, str) else json.dumps(chunk)}\n\n")

            call = f"call_{secrets.token_hex(6)}"
            event({"type": "start", "messageId": f"msg_{secrets.token_hex(6)}"})
            event({"type": "start-step"})
            owner.agent.think()
            event({"type": "reasoning-start", "id": "r1"})
            for piece in chunks(work.reasoning):
                event({"type": "reasoning-delta", "id": "r1", "delta": piece})
                owner.agent.pause()
            event({"type": "reasoning-end", "id": "r1"})
            event({"type": "tool-input-start", "toolCallId": call, "toolName": work.tool})
            for piece in chunks(work.arguments):
                event({"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": piece})
            event({"type": "tool-input-available", "toolCallId": call, "toolName": work.tool,
                   "input": json.loads(work.arguments)})
            owner.agent.run_tool()
            event({"type": "tool-output-available", "toolCallId": call, "output": json.loads(work.result)})
            event({"type": "finish-step"})
            event({"type": "start-step"})
            event({"type": "text-start", "id": "t1"})
            for piece in chunks(said):
                event({"type": "text-delta", "id": "t1", "delta": piece})
                owner.agent.pause()
            event({"type": "text-end", "id": "t1"})
            event({"type": "finish-step"})
            event({"type": "finish"})
            event("[DONE]")

    return Handler
