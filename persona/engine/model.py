"""What the persona loop needs from a persona model: messages and tools in, one assistant turn out.

Two implementations speak this protocol: `llm.OpenAIPersona` (any OpenAI-compatible endpoint) and
`scripted.ScriptedPersona` (deterministic, offline).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from persona.state import ToolCall


@dataclass
class ModelTurn:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None  # as the endpoint reported; None = count ourselves
    completion_tokens: int | None = None


class PersonaModel(Protocol):
    label: str

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelTurn: ...

    async def aclose(self) -> None: ...
