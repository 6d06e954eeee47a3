"""What the persona loop needs from a persona model: messages and tools in, one assistant turn out.

Two implementations speak this protocol: `llm.OpenAIPersona` (any OpenAI-compatible endpoint) and
`scripted.ScriptedPersona` (deterministic, offline). A turn may hold text and tool calls together:
the text is sent to the agent first, then the calls run (README, "Text beside tool calls").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from persona.state import ToolCall


@dataclass
class ModelTurn:
    """One assistant turn: text for the agent and/or tool calls, as the model wrote them."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None  # as the endpoint reported; None = count ourselves
    completion_tokens: int | None = None
    cached_tokens: int | None = None  # of prompt_tokens, read from the provider's cache; None = not reported
    retries: list[str] = field(default_factory=list)  # why each retry of this request was needed
    quirks: list[str] = field(default_factory=list)  # what the response had that we took out or converted
    finish_reason: str | None = None  # as the endpoint said; "length": cut off at max_tokens

    @property
    def cut_off(self) -> bool:
        return self.finish_reason == "length"


class PersonaModel(Protocol):
    label: str

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelTurn: ...

    async def aclose(self) -> None: ...
