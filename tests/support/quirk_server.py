"""An OpenAI-compatible chat-completions server on 127.0.0.1 that validates and answers like real ones.

It serves GET /v1/models and POST /v1/chat/completions (plain and stream=true) for tests and
benchmarks, so real OpenAI clients (ours, or a chat frontend's) meet what real servers do:

* Every request is validated as the strictest servers do (/work/shared/notes/real-model-quirks.md
  sections 1, 5, 6): tool-call arguments in the history are JSON objects, every tool message answers
  a call of the assistant turn right before it and every call gets one, no assistant turn without
  text or calls, function names OpenAI accepts, `strict: true` schemas closed with every property
  required, no request fields the server does not know. A refused request gets the server's status
  and text and is kept in `rejections`.
* A `Profile` per real server switches the rest: how bad history is refused (vLLM 400, llama.cpp
  500), Gemini's schema subset, empty-text refusals and thought signatures, Anthropic's ids unique
  in the whole conversation, how tool-call ids look (empty, repeated per turn like Kimi), where
  reasoning comes back, and whether usage says how much of the prompt was cached.
* Answers come from a `Responder(messages, tools) -> answer`, after any answers queued with
  `reply(...)`. An answer is {"content", "tool_calls": [{"id"?, "name", "arguments"}], "reasoning",
  "finish_reason"?}.
* A request's `max_tokens` (or `max_completion_tokens`) is honoured as real servers do: an answer
  longer than that is cut there, tool-call arguments too, with `finish_reason: "length"`.
* `calls_as_text` plays a server without a tool parser for its model (notes section 2b): the
  answer's calls come back written into `content` in one model family's form (TEXT_CALL_FORMS:
  Hermes/Qwen `<tool_call>`, Mistral `[TOOL_CALLS]`, Llama `<|python_tag|>`, bare JSON: only in an
  answer without text, as a model writes it) and no `tool_calls`, `finish_reason: "stop"`.
* `faults` make the next requests fail: an HTTP status (429, 500...), {"status": 429, "retry_after": 0.1},
  "hang" (no answer until the client gives up), "garbage" (200, not JSON), "html" (200, a proxy's
  page), "drop" (the connection closes) or {"delay": 1.5} (the answer, that much later).
* Streamed as real servers stream (stream=true): the reasoning first, in deltas of the field it comes
  back in, then the text, then each tool call: its id and name with empty arguments, then the
  arguments in pieces, as OpenAI sends them. `reasoning_as` puts an answer's reasoning elsewhere than
  the profile does: `reasoning_content` (DeepSeek), `reasoning` (vLLM, OpenRouter), `both` fields,
  or `think`, a `<think>…</think>` prefix of the content (a server without a reasoning parser).
* Usage is counted with tiktoken over what was sent (messages and tools); cached tokens are the
  prefix shared with an earlier request, by OpenAI's rule (1024 tokens or more, in steps of 128).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from persona.tokens import MESSAGE_OVERHEAD, TokenCounter

# (messages, tools) -> {"content": str | None, "tool_calls": [{"id"?, "name", "arguments"}], "reasoning"?: str}
Responder = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]

OPENAI_FIELDS = {
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p", "n", "stream",
    "stream_options", "stop", "max_tokens", "max_completion_tokens", "presence_penalty", "frequency_penalty",
    "logit_bias", "logprobs", "top_logprobs", "user", "seed", "response_format", "metadata", "store",
    "reasoning_effort", "service_tier", "modalities", "audio", "prediction", "prompt_cache_key",
    "safety_identifier", "verbosity", "web_search_options",
}
GEMINI_FIELDS = {"model", "messages", "tools", "tool_choice", "temperature", "top_p", "n", "stream", "stream_options",
                 "stop", "max_tokens", "max_completion_tokens", "response_format", "seed", "reasoning_effort"}
FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ReasoningAs = Literal["reasoning_content", "reasoning", "both", "think"]
REASONING_FIELDS = ("reasoning_content", "reasoning")
GEMINI_SCHEMA_REFUSES = ("additionalProperties", "$schema", "$ref", "const", "exclusiveMinimum", "propertyNames")


@dataclass(frozen=True)
class Profile:
    name: str
    fields: frozenset[str] | None = frozenset(OPENAI_FIELDS)  # None: unknown fields ignored
    bad_history_status: int = 400  # tool-call arguments in the history that are not a JSON object
    empty_text_refused: bool = False  # an assistant turn with content "" (an empty text part)
    schema: Literal["strict", "gemini", "ignore"] = "strict"  # strict: `strict: true` schemas are checked
    ids_unique_in_conversation: bool = False
    signatures: bool = False  # Gemini 3: each call carries a thought signature that must come back
    error_body_array: bool = False  # Gemini answers errors as [{"error": ...}]
    ids: Literal["call", "empty", "per_turn", "kimi", "vllm", "toolu"] = "call"
    reasoning_field: str = "reasoning_content"  # where an answer's "reasoning" goes
    cache_rule: Literal["openai", "prefix", "none"] = "openai"  # how usage reports cached tokens


PROFILES = {p.name: p for p in (
    Profile("openai"),
    Profile("vllm", fields=None, schema="ignore", ids="vllm", reasoning_field="reasoning", cache_rule="none"),
    Profile("llamacpp", fields=None, bad_history_status=500, schema="ignore", ids="per_turn", cache_rule="prefix"),
    Profile("kimi", fields=None, schema="ignore", ids="kimi", reasoning_field="reasoning", cache_rule="none"),
    Profile("gemini", fields=frozenset(GEMINI_FIELDS), empty_text_refused=True, schema="gemini", signatures=True,
            error_body_array=True, ids="empty", cache_rule="none"),
    Profile("anthropic", fields=None, empty_text_refused=True, schema="ignore", ids_unique_in_conversation=True,
            ids="toolu", cache_rule="none"),
)}


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Served:
    """One answered request: what the client got back, for tests and the bench."""

    prompt_tokens: int
    cached_tokens: int | None
    completion_tokens: int
    answer: dict[str, Any] = field(default_factory=dict)


def _hermes(calls: list[dict[str, Any]]) -> str:
    return "\n".join(f'<tool_call>\n{json.dumps({"name": c["name"], "arguments": _args(c)})}\n</tool_call>' for c in calls)


def _mistral(calls: list[dict[str, Any]]) -> str:
    return "[TOOL_CALLS]" + json.dumps([{"name": c["name"], "arguments": _args(c)} for c in calls])


def _llama(calls: list[dict[str, Any]]) -> str:
    return "<|python_tag|>" + "; ".join(json.dumps({"name": c["name"], "parameters": _args(c)}) for c in calls) + "<|eom_id|>"


def _bare(calls: list[dict[str, Any]]) -> str:
    items = [{"name": c["name"], "arguments": _args(c)} for c in calls]
    return json.dumps(items[0] if len(items) == 1 else items)


def _args(call: dict[str, Any]) -> Any:
    try:
        return json.loads(call["arguments"])
    except ValueError:
        return call["arguments"]  # broken arguments stay broken, as the model wrote them


# How models write calls when the server has no parser for them (notes section 2b); bare JSON stands alone.
TEXT_CALL_FORMS: dict[str, Callable[[list[dict[str, Any]]], str]] = {
    "hermes": _hermes, "mistral": _mistral, "llama": _llama, "bare": _bare}


class QuirkServer:
    def __init__(self, responder: Responder, *, profile: str = "openai", model: str = "test-model",
                 chunk_delay_s: float = 0.0, encoding: str = "o200k_base", keep_requests: bool = True,
                 usage: bool = True, token_scale: float = 1.0, calls_as_text: str | None = None,
                 reasoning_as: ReasoningAs | None = None):
        self.reasoning_as = reasoning_as  # None: in the profile's reasoning field
        self.calls_as_text = calls_as_text  # a form of TEXT_CALL_FORMS: calls come back written in the text
        self.responder = responder
        self.usage = usage  # False: answers without a usage object, as some local servers send them
        self.token_scale = token_scale  # prompt tokens as a tokenizer counting this much more than tiktoken would
        self.profile = PROFILES[profile]
        self.model = model
        self.chunk_delay_s = chunk_delay_s
        self.keep_requests = keep_requests  # a marathon's bodies take hundreds of MB: the bench keeps none
        self.requests: list[dict[str, Any]] = []
        self.served: list[Served] = []
        self.rejections: list[tuple[int, str]] = []
        self.faults: list[int | str | dict[str, Any]] = []  # how to fail the next requests, in order
        self.queued: list[dict[str, Any]] = []  # answers given before the responder is asked
        self.signatures: set[str] = set()
        self._counter = TokenCounter(encoding)
        self._token_cache: dict[str, int] = {}
        self._prefixes: set[str] = set()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._stopping = threading.Event()

    def reply(self, *answers: dict[str, Any]) -> QuirkServer:
        self.queued += answers
        return self

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> QuirkServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()  # stops at once
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    # -- answering ---------------------------------------------------------------------------------

    def answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], Served]:
        """Validate a request and make its answer (the completion's message, as the profile shapes it)."""
        validate(body, self.profile, self.signatures)
        with self._lock:
            answer = self.queued.pop(0) if self.queued else None
        if answer is None:
            answer = self.responder(body.get("messages", []), body.get("tools") or [])
        answer = self._as_text(dict(answer))
        answer = self._bounded(answer, body.get("max_completion_tokens") or body.get("max_tokens"))
        message = self._message(answer)
        prompt, cached = self._usage(body)
        prompt = round(prompt * self.token_scale)
        completion = self._message_tokens(message) - MESSAGE_OVERHEAD
        served = Served(prompt, cached, completion, answer)
        with self._lock:
            self.served.append(served)
        return message, served

    def _as_text(self, answer: dict[str, Any]) -> dict[str, Any]:
        calls = answer.get("tool_calls") or []
        if not self.calls_as_text or not calls:
            return answer
        content = answer.get("content") or ""
        if self.calls_as_text == "bare" and content:  # bare JSON is a call only alone: beside text, parsed
            return answer
        written = TEXT_CALL_FORMS[self.calls_as_text](calls)
        return {**answer, "content": f"{content}\n{written}".strip(), "tool_calls": []}

    def _bounded(self, answer: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
        """The answer as a server stopping at `max_tokens` returns it: text first, then each call's
        arguments, cut where the tokens ran out, `finish_reason: "length"`."""
        if not isinstance(max_tokens, int):
            return answer
        left = max_tokens
        content = answer.get("content") or ""
        if self._counter.count(content) > left:
            return {**answer, "content": self._cut(content, left), "tool_calls": [], "finish_reason": "length"}
        left -= self._counter.count(content)
        calls = []
        for call in answer.get("tool_calls") or []:
            if self._counter.count(call["arguments"]) > left:
                calls.append({**call, "arguments": self._cut(call["arguments"], left)})
                return {**answer, "tool_calls": calls, "finish_reason": "length"}
            left -= self._counter.count(call["arguments"])
            calls.append(call)
        return answer

    def _cut(self, text: str, tokens: int) -> str:
        """The longest start of `text` within `tokens`."""
        low, high = 0, len(text)
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if self._counter.count(text[:mid]) <= tokens else (low, mid - 1)
        return text[:low]

    def _message(self, answer: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
        if answer.get("finish_reason"):
            message["finish_reason"] = answer["finish_reason"]  # taken off before it is sent
        if answer.get("reasoning"):
            where = self.reasoning_as or self.profile.reasoning_field
            if where == "think":
                message["content"] = f"<think>{answer['reasoning']}</think>{message['content'] or ''}"
            for name in REASONING_FIELDS if where == "both" else (where,) if where in REASONING_FIELDS else ():
                message[name] = answer["reasoning"]
        calls = []
        for i, call in enumerate(answer.get("tool_calls") or []):
            out = {"id": call["id"] if "id" in call else self._call_id(call["name"], i), "type": "function",
                   "function": {"name": call["name"], "arguments": call["arguments"]}}
            if self.profile.signatures:
                signature = f"sig-{next(self._ids)}"
                self.signatures.add(signature)
                out["extra_content"] = {"google": {"thought_signature": signature}}
            calls.append(out)
        if calls:
            message["tool_calls"] = calls
        return message

    def _call_id(self, name: str, index: int) -> str:
        kind = self.profile.ids
        if kind == "empty":
            return ""
        if kind == "per_turn":
            return f"call_{index}"  # the same ids every turn (llama.cpp)
        if kind == "kimi":
            return f"functions.{name}:{index}"  # numbered per turn, so repeated across turns
        prefix = {"call": "call_", "vllm": "chatcmpl-tool-", "toolu": "toolu_"}[kind]
        return prefix + hashlib.sha1(str(next(self._ids)).encode()).hexdigest()[:24]

    def _count(self, text: str) -> int:
        if text not in self._token_cache:
            self._token_cache[text] = self._counter.count(text)
        return self._token_cache[text]

    def _message_tokens(self, m: dict[str, Any]) -> int:
        """As OpenAI's cookbook counts a message: its strings plus a few tokens of framing."""
        parts = [m.get("role"), m.get("content") if isinstance(m.get("content"), str) else None, m.get("tool_call_id")]
        for call in m.get("tool_calls") or []:
            parts += [call.get("id"), (call.get("function") or {}).get("name"), (call.get("function") or {}).get("arguments")]
        return MESSAGE_OVERHEAD + sum(self._count(p) for p in parts if isinstance(p, str))

    def _usage(self, body: dict[str, Any]) -> tuple[int, int | None]:
        """Prompt tokens of the request, and how many of them an earlier request's prefix covers."""
        tools = json.dumps(body.get("tools") or [], ensure_ascii=False, sort_keys=True)
        running = self._count(tools)
        chain = hashlib.sha256(f"{body.get('model')}|{tools}".encode()).hexdigest()
        with self._lock:
            matching = chain in self._prefixes
            shared = running if matching else 0
            self._prefixes.add(chain)
            for m in body.get("messages", []):
                running += self._message_tokens(m)
                chain = hashlib.sha256(f"{chain}|{json.dumps(m, ensure_ascii=False, sort_keys=True)}".encode()).hexdigest()
                matching = matching and chain in self._prefixes
                shared = running if matching else shared
                self._prefixes.add(chain)
        rule = self.profile.cache_rule
        if rule == "none":
            return running, None
        if rule == "openai":
            return running, shared // 128 * 128 if shared >= 1024 else 0
        return running, shared


def _completion(model: str, message: dict[str, Any], served: Served, cache_rule: str) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": served.prompt_tokens, "completion_tokens": served.completion_tokens,
                             "total_tokens": served.prompt_tokens + served.completion_tokens}
    if served.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": served.cached_tokens}
    finish = _finish(message)
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}


def _finish(message: dict[str, Any]) -> str:
    """The finish reason of a message (taking off the one an answer set, which is no message field)."""
    return message.pop("finish_reason", None) or ("tool_calls" if message.get("tool_calls") else "stop")


# -- validation -----------------------------------------------------------------------------------------

def validate(body: dict[str, Any], profile: Profile, signatures: set[str] | None = None) -> None:
    """Raise Refused as the strictest real servers would for this request."""
    if profile.fields is not None:
        for key in body:
            if key not in profile.fields:
                raise Refused(400, f"Unrecognized request argument supplied: {key}" if profile.name != "gemini"
                              else f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.')
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise Refused(400, "you must provide a model parameter")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Refused(400, "'messages' must be a non-empty array")
    _check_tools(body.get("tools") or [], profile)
    _check_messages(messages, profile, signatures or set())


def _check_messages(messages: list[dict[str, Any]], profile: Profile, signatures: set[str]) -> None:
    waiting: list[str] = []  # calls of the last assistant turn without a tool message yet
    in_tool_block = False
    seen_ids: set[str] = set()
    for n, m in enumerate(messages):
        role = m.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            raise Refused(400, f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool'"
                          f" (messages.[{n}].role)")
        if role != "tool" and waiting:
            raise Refused(400, "An assistant message with 'tool_calls' must be followed by tool messages responding to "
                          f"each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                          f"{', '.join(waiting)}")
        if role == "tool":
            if not in_tool_block or m.get("tool_call_id") not in waiting:
                raise Refused(400, "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                              f"message with 'tool_calls'. (messages.[{n}].role)")
            if not isinstance(m.get("content"), str | list):
                raise Refused(400, f"Invalid value for 'content' (messages.[{n}]): expected a string")
            waiting.remove(m["tool_call_id"])
            continue
        in_tool_block = False
        if role == "assistant":
            waiting = _check_assistant(m, n, profile, signatures, seen_ids)
            in_tool_block = bool(waiting)
        elif not isinstance(m.get("content"), str | list):
            raise Refused(400, f"Invalid value for 'content' (messages.[{n}]): expected a string, got null.")
    if waiting:
        raise Refused(400, "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                      f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(waiting)}")


def _check_assistant(m: dict[str, Any], n: int, profile: Profile, signatures: set[str], seen: set[str]) -> list[str]:
    calls = m.get("tool_calls") or []
    content = m.get("content")
    if content is None and not calls:
        raise Refused(400, f"Invalid value for 'content' (messages.[{n}]): expected a string, got null.")
    if content is not None and not isinstance(content, str | list):
        raise Refused(400, f"'messages.{n}' : for 'role:assistant' the following must be satisfied"
                      f"[('messages.{n}.content' : value must be a string)]")
    if content == "" and profile.empty_text_refused:
        raise Refused(400, "Unable to submit request because it has an empty text parameter.")
    if content == "" and not calls:
        raise Refused(400, f"Invalid value for 'content' (messages.[{n}]): an assistant message needs text or tool calls")
    ids = []
    for call in calls:
        fn = call.get("function") or {}
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise Refused(400, f"Invalid 'messages[{n}].tool_calls': each call needs a non-empty id")
        if call_id in ids or (profile.ids_unique_in_conversation and call_id in seen):
            raise Refused(400, f"messages.{n}: `tool_use` ids must be unique: {call_id}")
        if call.get("type") != "function" or not FUNCTION_NAME.match(str(fn.get("name", ""))):
            raise Refused(400, f"Invalid 'messages[{n}].tool_calls': function name {fn.get('name')!r} does not match "
                          "'^[a-zA-Z0-9_-]{1,64}$'")
        _check_history_arguments(fn.get("arguments"), profile)
        if profile.signatures and (call.get("extra_content") or {}).get("google", {}).get("thought_signature") \
                not in signatures:
            raise Refused(400, "Function call is missing a thought_signature in functionCall parts. This is required "
                          f"for tools to work correctly. position {n}.")
        ids.append(call_id)
    seen.update(ids)
    return ids


def _check_history_arguments(arguments: Any, profile: Profile) -> None:
    if not isinstance(arguments, str):
        raise Refused(400, "json: cannot unmarshal object into Go struct field .messages.tool_calls.function.arguments "
                      "of type string")
    try:
        parsed = json.loads(arguments)
    except ValueError as e:
        if profile.bad_history_status == 500:
            raise Refused(500, f"Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] {e}") from None
        raise Refused(400, str(e)) from None
    if not isinstance(parsed, dict):
        raise Refused(profile.bad_history_status, "tool call arguments must be a JSON object")


def _check_tools(tools: list[dict[str, Any]], profile: Profile) -> None:
    for i, tool in enumerate(tools):
        fn = tool.get("function") or {}
        if tool.get("type") != "function" or not FUNCTION_NAME.match(str(fn.get("name", ""))):
            raise Refused(400, f"Invalid 'tools[{i}].function.name'")
        params = fn.get("parameters")
        if profile.schema == "gemini":
            if "strict" in fn:
                raise Refused(400, f'Invalid JSON payload received. Unknown name "strict" at \'tools[{i}].function\': '
                              "Cannot find field.")
            if params is not None:
                _check_gemini_schema(params, f"tools[{i}].function_declarations[0].parameters")
                if params.get("type") == "object" and not params.get("properties"):
                    raise Refused(400, "Request contains an invalid argument.")
        elif profile.schema == "strict" and fn.get("strict"):
            _check_strict_schema(params, f"tools[{i}].function.parameters")


def _check_strict_schema(schema: Any, where: str) -> None:
    """OpenAI's rules for `strict: true`: every object closed and every property required."""
    if not isinstance(schema, dict):
        raise Refused(400, f"Invalid schema for function: {where} must be an object schema")
    if schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            raise Refused(400, f"Invalid schema for function: In context=({where}), 'additionalProperties' is "
                          "required to be supplied and to be false.")
        props = schema.get("properties") or {}
        if sorted(schema.get("required") or []) != sorted(props):
            missing = [k for k in props if k not in (schema.get("required") or [])]
            raise Refused(400, f"Invalid schema for function: In context=({where}), 'required' is required to be "
                          f"supplied and to be an array including every key in properties. Missing {missing}.")
        for key, sub in props.items():
            _check_strict_schema(sub, f"{where}, 'properties', '{key}'")
    if schema.get("type") == "array" and "items" in schema:
        _check_strict_schema(schema["items"], f"{where}, 'items'")


def _check_gemini_schema(schema: Any, where: str) -> None:
    if not isinstance(schema, dict):
        return
    for key in GEMINI_SCHEMA_REFUSES:
        if key in schema:
            raise Refused(400, f'Invalid JSON payload received. Unknown name "{key}" at \'{where}\': Cannot find field.')
    if isinstance(schema.get("type"), list):
        raise Refused(400, f"Invalid value at '{where}.type'")
    for key, sub in (schema.get("properties") or {}).items():
        _check_gemini_schema(sub, f"{where}.properties[{key}].value")
    if "items" in schema:
        _check_gemini_schema(schema["items"], f"{where}.items")


# -- HTTP ------------------------------------------------------------------------------------------------

def _handler(owner: QuirkServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            self._send_raw(status, json.dumps(body).encode(), "application/json", headers)

        def _send_raw(self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
            error = {"error": {"message": message, "type": "invalid_request_error", "code": status}}
            self._send_json(status, [error] if owner.profile.error_body_array else error, headers)

        def _fault(self, fault: int | str | dict[str, Any], body: dict[str, Any]) -> None:
            if isinstance(fault, dict) and "delay" in fault:  # a slow answer: the same answer, later
                owner._stopping.wait(fault["delay"])
                self._answer(body)
            elif fault == "hang":
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
                self._error(spec["status"], spec.get("message", f"injected {spec['status']}"), headers)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send_json(200, {"object": "list", "data": [
                    {"id": owner.model, "object": "model", "created": 0, "owned_by": "test"}]})
            else:
                self._send_json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if owner.keep_requests:
                owner.requests.append(body)
            if owner.faults:
                self._fault(owner.faults.pop(0), body)
                return
            self._answer(body)

        def _answer(self, body: dict[str, Any]) -> None:
            try:
                message, served = owner.answer(body)
            except Refused as e:
                owner.rejections.append((e.status, e.message))
                self._error(e.status, e.message)
                return
            if body.get("stream"):
                self._stream(message)
            else:
                completion = _completion(owner.model, message, served, owner.profile.cache_rule)
                if not owner.usage:
                    del completion["usage"]
                self._send_json(200, completion)

        def _stream(self, message: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            first = {"role": "assistant"}
            fields = [f for f in REASONING_FIELDS if message.get(f)]
            for piece in _pieces(message.get(fields[0]) if fields else ""):  # reasoning first, as models think first
                self._delta({f: piece for f in fields} | first)
                first = {}
            for piece in _pieces(message.get("content") or ""):
                self._delta({"content": piece} | first)
                first = {}
            for n, call in enumerate(message.get("tool_calls") or []):
                # the id and name once, then the arguments in pieces, as OpenAI streams a call
                head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
                self._delta({"tool_calls": [{"index": n, **head}]} | first)
                first = {}
                for piece in _pieces(call["function"]["arguments"]):
                    self._delta({"tool_calls": [{"index": n, "function": {"arguments": piece}}]})
            self._chunk({}, finish=_finish(message))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def _delta(self, delta: dict[str, Any]) -> None:
            self._chunk(delta)
            if owner.chunk_delay_s:
                time.sleep(owner.chunk_delay_s)

        def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> None:
            event = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": owner.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()

    return Handler


def _pieces(text: str, size: int = 8) -> list[str]:
    """A text in the small deltas a model streams."""
    return [text[i:i + size] for i in range(0, len(text), size)]


def rewriting(respond: Responder, change: Callable[[dict[str, Any], int], dict[str, Any]]) -> Responder:
    """`respond`, with each answer passed through change(answer, n), n counting the answers from 1: a
    test scripts how a real model departs from the plan (reasoning, text beside calls, broken calls)."""
    served = itertools.count(1)

    def changed(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        return change(respond(messages, tools), next(served))

    return changed


def injecting(responder: Responder, every: int, bad: list[dict[str, Any]]) -> Responder:
    """Every `every`-th request gets the next bad turn; the good responder never sees the bad turns
    (calls with ids starting `bad_`, their results, the persona loop's notes after empty or refused turns)."""
    queue, count = list(bad), [0]
    nudge, refused = _loop_notes()

    def ours(m: dict[str, Any]) -> bool:
        ids = [c["id"] for c in m.get("tool_calls") or []] + [m.get("tool_call_id") or ""]
        return any(i.startswith("bad_") for i in ids) or m.get("content") == nudge \
            or (m.get("content") or "").startswith(refused)

    def respond(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        count[0] += 1
        if queue and count[0] % every == 0:
            return queue.pop(0)
        return responder([m for m in messages if not ours(m)], tools)

    return respond


def _loop_notes() -> tuple[str, str]:
    """What the persona loop tells a model after an empty turn, and how its note on a refused message starts."""
    from persona.engine.guard import REFUSAL_START
    from persona.engine.loop import EMPTY_TURN_NUDGE

    return EMPTY_TURN_NUDGE, REFUSAL_START


# How reasoning models leak their thoughts into the text (notes section 2c), each a function of the text.
THINKING: list[tuple[str, Callable[[str], str]]] = [
    ("closed", lambda t: f"<think>The agent should learn this.</think>{t}"),
    ("lone close", lambda t: f"The template opened it. Let me tell him.</think>\n\n{t}"),  # Qwen3.5, DeepSeek-R1
    ("unclosed", lambda t: f"{t}\n<think>and now I wonder whether"),
    ("empty block", lambda t: f"<think>\n\n</think>\n\n{t}"),  # Qwen3 with thinking off
]


def thinking_aloud(answer: dict[str, Any], n: int) -> dict[str, Any]:
    """For `rewriting`: reasoning in a field of every answer, and in the text in each THINKING style in turn."""
    answer["reasoning"] = "private chain of thought"
    if answer.get("content"):
        answer["content"] = THINKING[n % len(THINKING)][1](answer["content"])
    return answer


def instructed(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A model doing what the last message asks, as the preflight asks it (engine/preflight.py)."""
    last = messages[-1]
    if last["role"] == "user" and "Call the tool facts_read" in (last.get("content") or ""):
        return {"tool_calls": [{"name": "facts_read", "arguments": '{"file": "profile"}'}]}
    return {"content": "Hello, nice to meet you!" if len(messages) <= 2 else "I'm 30."}


def scripted_responder(language: str = "en", verdict: Callable[..., dict[str, Any]] | None = None) -> Responder:
    """The scripted persona behind the HTTP API: the real OpenAI client path, deterministic answers.
    Before a run has a phase (the preflight's few calls), it does what it is asked. Judge requests (the
    `grade` tool, the judge's preflight too) get `verdict`'s answer, by default the offline rule judge's
    (tests/support/judge.py)."""
    import asyncio

    from persona.engine.judge import rule_verdict
    from persona.engine.scenario import PHASE_HEADER
    from persona.engine.scripted import ScriptedPersona
    from tests.support.judge import with_judge

    persona = ScriptedPersona(language)

    def respond(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if not any(PHASE_HEADER in (m.get("content") or "") for m in messages):
            return instructed(messages)
        turn = asyncio.run(persona.complete(messages, tools))
        return {"content": turn.content,
                "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in turn.tool_calls]}

    return with_judge(respond, verdict or rule_verdict)
