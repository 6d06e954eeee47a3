"""The persona as an LLM behind any OpenAI-compatible chat-completions endpoint.

Every call is bounded: `max_tokens` goes with every request (`max_completion_tokens` to OpenAI's own
endpoint, which wants it), `finish_reason: length` comes back on the turn, and while a call takes
longer than HEARTBEAT_S a line says so. Retries and timeouts are the `openai` client's own
(`max_retries`, `timeout`): it retries 408, 409, 429, 5xx, timeouts and dropped connections with its
backoff and honours Retry-After up to 120 s. A 200 whose body is not a chat completion (a proxy's
page, junk) is turned into a dropped connection so the client retries it too. Every attempt is
watched (the HTTP client's event hooks, and its transport for timeouts and drops), so each retry and
its cause reach the run's usage and the report. What the client gives up on stops the run with the
endpoint's own message (resumable), as ModelCallFailed, which carries the retries it took.

The key is read from the environment variable named in config and never stored or logged: error
texts are scrubbed of it, since some servers echo it. `openai` is imported only when an LLM persona
is used (it takes seconds to import).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from persona.config import JudgeConfig, PersonaConfig
from persona.engine.model import ModelTurn
from persona.engine.toolspecs import plain_specs
from persona.errors import RunError
from persona.secrets import redact, register_secret
from persona.state import ToolCall

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
PLAIN_SCHEMA_HOSTS = ("generativelanguage.googleapis.com",)  # Gemini's endpoint refuses strict-mode keywords
REASONING_FIELDS = ("reasoning_content", "reasoning")  # DeepSeek, llama.cpp; vLLM, OpenRouter
REASONING_QUIRK = "reasoning fields in responses (never typed, never sent back)"
OBJECT_ARGUMENTS = "tool-call arguments sent as an object, not a JSON string"
JUNK = "200 with a body that is not a chat completion"
NO_RESPONSE = "no response (timeout or dropped connection)"
TIMEOUT = "timeout (no answer within timeout_s)"
DROPPED = "connection dropped or refused"
HEARTBEAT_S = 15.0  # a call taking longer gets a line this often
OPENAI_HOSTS = ("api.openai.com",)  # takes max_completion_tokens; its reasoning models refuse max_tokens


class ModelCallFailed(RunError):
    """The client gave up on a request; `retries` are the causes of the retries it made first."""

    def __init__(self, message: str, retries: list[str]):
        super().__init__(message)
        self.retries = retries


def is_loopback(url: str | None) -> bool:
    return bool(url) and urlparse(url).hostname in LOOPBACK_HOSTS


def api_key(cfg: PersonaConfig | JudgeConfig, role: str = "persona") -> str:
    key = os.environ.get(cfg.api_key_env, "")
    if key:
        register_secret(key)
        return key
    if is_loopback(cfg.base_url):
        return "not-needed"  # local servers (vLLM, llama.cpp, Ollama) take any key
    raise RunError(f"the {role} model needs an API key: set the environment variable {cfg.api_key_env}")


def strict_schemas(cfg: PersonaConfig) -> bool:
    if cfg.tool_schema != "auto":
        return cfg.tool_schema == "strict"
    host = urlparse(cfg.base_url or "").hostname or ""
    return not host.endswith(PLAIN_SCHEMA_HOSTS)


class Attempts:
    """Every HTTP attempt of the current request, seen from the client's event hooks."""

    def __init__(self, role: str = "persona") -> None:
        self.role = role
        self.sent = 0
        self.failures: list[str] = []  # why an attempt did not give a chat completion, where a response said
        self.http: Any = None  # the httpx module the openai client uses (httpx, or httpx2 in newer releases)

    def start(self) -> None:
        self.sent, self.failures = 0, []

    async def on_request(self, request: Any) -> None:
        self.sent += 1

    async def on_response(self, response: Any) -> None:
        await response.aread()
        if response.status_code >= 400:
            self._failed(f"HTTP {response.status_code}", response.text)
            return
        if not _is_completion(response.content):
            self._failed(JUNK, response.text)
            await response.aclose()
            raise self.http.RemoteProtocolError(f"{JUNK}: {response.content[:120]!r}", request=response.request)

    def _failed(self, cause: str, body: str) -> None:
        self.failures.append(cause)
        log.warning("%s model: %s: %s; retrying if the client has retries left", self.role, cause, redact(body[:300]))

    def transport(self) -> Any:
        """The HTTP transport, watched: an attempt that got no response says whether it timed out or dropped."""
        attempts, http = self, self.http

        class Watched(http.AsyncBaseTransport):  # type: ignore[name-defined, misc]
            def __init__(self) -> None:
                self.inner = http.AsyncHTTPTransport(limits=http.Limits(max_connections=1000,
                                                                        max_keepalive_connections=100))

            async def handle_async_request(self, request: Any) -> Any:
                try:
                    return await self.inner.handle_async_request(request)
                except http.TimeoutException as e:
                    attempts._failed(TIMEOUT, str(e) or type(e).__name__)
                    raise
                except http.TransportError as e:
                    attempts._failed(DROPPED, str(e) or type(e).__name__)
                    raise

            async def aclose(self) -> None:
                await self.inner.aclose()

        return Watched()

    def retry_causes(self) -> list[str]:
        """One cause per retry: the failed responses, and for attempts that got none, a timeout or a drop."""
        retries = max(self.sent - 1, 0)
        causes = self.failures[:retries]
        return causes + [NO_RESPONSE] * (retries - len(causes))


def _is_completion(body: bytes) -> bool:
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and isinstance(data.get("choices"), list)


def _http_module(client_class: type) -> Any:
    base = next(c for c in client_class.__mro__ if c.__name__ == "AsyncClient")
    return importlib.import_module(base.__module__.split(".")[0])


class OpenAIPersona:
    """The persona's model client; the judge uses it too (`role` names which one an error is about)."""

    def __init__(self, cfg: PersonaConfig, *, role: str = "persona"):
        import openai

        self.cfg = cfg
        self.label = cfg.model
        self.role = role
        self.attempts = Attempts(role)
        self.attempts.http = _http_module(openai.DefaultAsyncHttpxClient)
        http_client = openai.DefaultAsyncHttpxClient(
            transport=self.attempts.transport(),
            event_hooks={"request": [self.attempts.on_request], "response": [self.attempts.on_response]})
        self.client = openai.AsyncOpenAI(base_url=cfg.base_url, api_key=api_key(cfg, role), max_retries=cfg.max_retries,
                                         timeout=cfg.timeout_s, http_client=http_client)
        self.strict = strict_schemas(cfg)

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelTurn:
        import openai

        self.attempts.start()
        # The messages ride in extra_body: the client's typed transform of a long history costs about
        # 0.3 ms per message per request (a quarter second at 700 messages), and they are plain JSON.
        request = self.client.chat.completions.create(
            model=self.cfg.model, messages=[], extra_body={"messages": messages},
            tools=tools if self.strict else plain_specs(tools), temperature=self.cfg.temperature,
            **{self.max_tokens_field: self.cfg.max_tokens})
        try:
            response = await self._waited(request)
        except openai.APIStatusError as e:
            retries = self.attempts.retry_causes()
            if self.attempts.sent > 1 or e.status_code >= 500:
                raise ModelCallFailed(f"{self.role} model failed {self.attempts.sent} times, last: {_describe(e)}",
                                      retries) from None
            raise ModelCallFailed(f"{self.role} model refused the request: {_describe(e)}{_hint(e, self.role)}",
                                  retries) from None
        except openai.APIConnectionError as e:  # timeouts too
            raise ModelCallFailed(f"{self.role} model failed {self.attempts.sent} times, last: {_describe(e)}",
                                  self.attempts.retry_causes()) from None
        turn = parse_turn(response)
        turn.retries = self.attempts.retry_causes()
        return turn

    @property
    def max_tokens_field(self) -> str:
        host = urlparse(self.cfg.base_url or "https://api.openai.com/v1").hostname or ""
        return "max_completion_tokens" if host.endswith(OPENAI_HOSTS) else "max_tokens"

    async def _waited(self, request: Any) -> Any:
        """The request's response; while it takes longer than HEARTBEAT_S, a line every HEARTBEAT_S."""
        task = asyncio.ensure_future(request)
        began = time.monotonic()
        try:
            while not (await asyncio.wait({task}, timeout=HEARTBEAT_S))[0]:
                log.warning("%s model %s: still waiting for its answer after %.0f s (attempt %d of %d, each bounded "
                            "by timeout_s %g and max_tokens %d)", self.role, self.cfg.model, time.monotonic() - began,
                            max(self.attempts.sent, 1), self.cfg.max_retries + 1, self.cfg.timeout_s,
                            self.cfg.max_tokens)
            return task.result()
        finally:
            if not task.done():  # cancelled (Ctrl-C, the run stopping): the request goes too
                task.cancel()

    async def aclose(self) -> None:
        await self.client.close()


def parse_turn(response: Any) -> ModelTurn:
    """The first choice as a ModelTurn: its text, its calls as written (with any provider fields to
    replay), usage with cached tokens; reasoning fields are noted and left out."""
    if not response.choices:
        return ModelTurn(content=None)
    choice = response.choices[0]
    message = choice.message
    quirks = [REASONING_QUIRK] if any(_extra(message).get(f) for f in REASONING_FIELDS) else []
    calls = []
    for c in message.tool_calls or []:
        fn = getattr(c, "function", None)  # custom tool calls have none: the call gets an error back
        arguments = getattr(fn, "arguments", None) if fn else None
        if arguments is not None and not isinstance(arguments, str):
            quirks.append(OBJECT_ARGUMENTS)  # llama.cpp --tool-args-object, Ollama's native shape
            arguments = json.dumps(arguments, ensure_ascii=False)
        extra = {k: v for k, v in _extra(c).items() if k not in ("id", "type", "function", "index")}
        calls.append(ToolCall(id=getattr(c, "id", None) or "", name=(getattr(fn, "name", None) or "") if fn else "",
                              arguments=arguments or "{}", extra=extra))
    usage = getattr(response, "usage", None)
    return ModelTurn(
        content=message.content if isinstance(message.content, str) else None, tool_calls=calls,
        prompt_tokens=getattr(usage, "prompt_tokens", None), completion_tokens=getattr(usage, "completion_tokens", None),
        cached_tokens=_cached_tokens(usage), quirks=quirks, finish_reason=getattr(choice, "finish_reason", None))


def _extra(obj: Any) -> dict[str, Any]:
    """Fields a response had beyond the openai library's model of it."""
    return getattr(obj, "model_extra", None) or {}


def _cached_tokens(usage: Any) -> int | None:
    if usage is None:
        return None
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached is None:
        cached = _extra(usage).get("prompt_cache_hit_tokens")  # DeepSeek's own field
    return cached if isinstance(cached, int) else None


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    body = getattr(error, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], dict):  # Gemini: [{"error": {...}}]
        text = str((body[0].get("error") or body[0]).get("message") or body[0])
    cause = error.__cause__ or error.__context__
    if cause is not None and not status and str(cause):
        text = f"{text} ({str(cause).splitlines()[0]})"
    text = redact(text[:500])
    return f"HTTP {status}: {text}" if status else f"{type(error).__name__}: {text}"


def _hint(error: openai.APIStatusError, role: str = "persona") -> str:
    if error.status_code == 429:
        return " (the endpoint asked to wait longer than the client's 120 s; run again later)"
    if error.status_code in (401, 403):
        return f" (check the key in the environment variable named by {role}.api_key_env)"
    if error.status_code == 404:
        return f" (check {role}.base_url and {role}.model)"
    return ""
