"""The persona as an LLM behind any OpenAI-compatible chat-completions endpoint.

Transient failures (429, 408, 409, 5xx, timeouts, dropped connections, a body that is not a chat
completion) are retried with exponential backoff and jitter, honouring Retry-After; anything else
stops the run with the endpoint's own message. The key is read from the environment variable named
in config and never stored or logged: error texts are scrubbed of it, since some servers echo it.
`openai` is imported only when an LLM persona is used (it takes seconds to import).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from persona.config import JudgeConfig, PersonaConfig
from persona.engine.model import ModelTurn
from persona.errors import RunError
from persona.secrets import redact, register_secret
from persona.state import ToolCall

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
RETRIED_STATUSES = {408, 409, 429}  # and every 5xx: what OpenAI's own client retries


class MalformedResponse(Exception):
    """The endpoint answered 200 with something that is not a chat completion (a proxy page, junk)."""


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


def backoff_seconds(attempt: int, retry_after: float | None = None, cap: float = 60.0) -> float:
    if retry_after is not None:
        return min(retry_after, cap)
    return min(cap, 2.0**attempt) * (0.5 + random.random() / 2)


def _retry_after(error: Exception) -> float | None:
    response = getattr(error, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def is_transient(error: Exception) -> bool:
    import openai

    if isinstance(error, (openai.APIConnectionError, MalformedResponse, json.JSONDecodeError)):
        return True  # APIConnectionError covers timeouts and dropped connections
    if isinstance(error, openai.APIStatusError):
        return error.status_code in RETRIED_STATUSES or error.status_code >= 500
    return False


class OpenAIPersona:
    """The persona's model client; the judge uses it too (`role` names which one an error is about)."""

    def __init__(self, cfg: PersonaConfig, *, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 role: str = "persona"):
        import openai

        self.cfg = cfg
        self.label = cfg.model
        self.role = role
        self._sleep = sleep
        self.client = openai.AsyncOpenAI(base_url=cfg.base_url, api_key=api_key(cfg, role), max_retries=0,
                                         timeout=cfg.timeout_s)

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelTurn:
        import openai

        for attempt in range(self.cfg.max_retries + 1):
            try:
                response = await self.client.chat.completions.create(
                    model=self.cfg.model, messages=messages, tools=tools, temperature=self.cfg.temperature)
                return self._turn(response)
            except Exception as e:
                if not is_transient(e):
                    if isinstance(e, openai.APIStatusError):
                        raise RunError(f"{self.role} model refused the request: {_describe(e)}{_hint(e, self.role)}") from None
                    raise
                if attempt == self.cfg.max_retries:
                    raise RunError(f"{self.role} model failed {attempt + 1} times, last: {_describe(e)}") from None
                wait = backoff_seconds(attempt, _retry_after(e))
                log.warning("%s model: %s; retrying in %.1f s", self.role, _describe(e), wait)
                await self._sleep(wait)
        raise AssertionError("unreachable")

    @staticmethod
    def _turn(response: Any) -> ModelTurn:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise MalformedResponse(f"not a chat completion: {str(response)[:120]!r}")
        if not choices:
            return ModelTurn(content=None)
        message = choices[0].message
        if message is None:
            raise MalformedResponse("a choice without a message")
        calls = []
        for i, c in enumerate(message.tool_calls or []):
            fn = getattr(c, "function", None)  # custom tool calls have none: the loop reports the name as unknown
            calls.append(ToolCall(id=getattr(c, "id", None) or f"call_{i}", name=(fn.name if fn else None) or "",
                                  arguments=(fn.arguments if fn else None) or "{}"))
        content = message.content if isinstance(message.content, str) else None
        usage = getattr(response, "usage", None)
        return ModelTurn(
            content=content, tool_calls=calls,
            prompt_tokens=getattr(usage, "prompt_tokens", None) if usage else None,
            completion_tokens=getattr(usage, "completion_tokens", None) if usage else None,
        )

    async def aclose(self) -> None:
        await self.client.close()


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if isinstance(error, json.JSONDecodeError):
        text = f"the response body is not JSON ({text})"
    text = redact(text[:500])
    return f"HTTP {status}: {text}" if status else f"{type(error).__name__}: {text}"


def _hint(error: openai.APIStatusError, role: str = "persona") -> str:
    if error.status_code in (401, 403):
        return f" (check the key in the environment variable named by {role}.api_key_env)"
    if error.status_code == 404:
        return f" (check {role}.base_url and {role}.model)"
    return ""
