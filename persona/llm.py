"""The persona as an LLM behind any OpenAI-compatible chat-completions endpoint.

Transient failures (429, 5xx, timeouts, dropped connections) are retried with exponential backoff
and jitter, honouring Retry-After; anything else stops the run with the endpoint's own message.
The key is read from the environment variable named in config and never stored or logged.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlparse

import openai

from .config import PersonaConfig
from .errors import RunError
from .model import ModelTurn
from .state import ToolCall

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
_TRANSIENT = (openai.RateLimitError, openai.APIConnectionError, openai.APITimeoutError, openai.InternalServerError)


def is_loopback(url: str | None) -> bool:
    return bool(url) and urlparse(url).hostname in LOOPBACK_HOSTS


def api_key(cfg: PersonaConfig) -> str:
    key = os.environ.get(cfg.api_key_env, "")
    if key:
        return key
    if is_loopback(cfg.base_url):
        return "not-needed"  # local servers (vLLM, llama.cpp, Ollama) take any key
    raise RunError(f"the persona model needs an API key: set the environment variable {cfg.api_key_env}")


def backoff_seconds(attempt: int, retry_after: float | None = None, cap: float = 60.0) -> float:
    if retry_after is not None:
        return min(retry_after, cap)
    return min(cap, 2.0**attempt) * (0.5 + random.random() / 2)


def _retry_after(error: Exception) -> float | None:
    response = getattr(error, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value else None
    except ValueError:
        return None


class OpenAIPersona:
    def __init__(self, cfg: PersonaConfig, *, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        self.cfg = cfg
        self.label = cfg.model
        self._sleep = sleep
        self.client = openai.AsyncOpenAI(base_url=cfg.base_url, api_key=api_key(cfg), max_retries=0,
                                         timeout=cfg.timeout_s)

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelTurn:
        for attempt in range(self.cfg.max_retries + 1):
            try:
                response = await self.client.chat.completions.create(
                    model=self.cfg.model, messages=messages, tools=tools, temperature=self.cfg.temperature)
                return self._turn(response)
            except _TRANSIENT as e:
                if attempt == self.cfg.max_retries:
                    raise RunError(f"persona model failed {attempt + 1} times, last: {_describe(e)}") from None
                wait = backoff_seconds(attempt, _retry_after(e))
                log.warning("persona model: %s; retrying in %.1f s", _describe(e), wait)
                await self._sleep(wait)
            except openai.APIStatusError as e:
                raise RunError(f"persona model refused the request: {_describe(e)}") from None
        raise AssertionError("unreachable")

    @staticmethod
    def _turn(response: Any) -> ModelTurn:
        if not response.choices:
            return ModelTurn(content=None)
        message = response.choices[0].message
        calls = [
            ToolCall(id=c.id or f"call_{i}", name=c.function.name, arguments=c.function.arguments or "{}")
            for i, c in enumerate(message.tool_calls or [])
        ]
        usage = response.usage
        return ModelTurn(
            content=message.content, tool_calls=calls,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
        )

    async def aclose(self) -> None:
        await self.client.close()


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"HTTP {status}: {text}" if status else f"{type(error).__name__}: {text}"
