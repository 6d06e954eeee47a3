"""Persona-side compaction: past `max_tokens`, keep the newest `trim_to_tokens`, cut only at a phase start."""

from __future__ import annotations

from persona.state import PersonaMessage


def cut_index(messages: list[PersonaMessage], context_tokens: int, max_tokens: int, trim_to_tokens: int) -> int | None:
    """Where to cut (drop messages[:i]), or None when no cut is due or possible.

    The earliest phase start whose tail fits in `trim_to_tokens` wins; if even the current phase is
    bigger, we cut at its start, keeping the whole phase the persona is working on.
    """
    if context_tokens < max_tokens:
        return None
    starts = [i for i, m in enumerate(messages) if m.starts_phase and i > 0]
    if not starts:
        return None
    tail = 0
    tails = {}
    for i in range(len(messages) - 1, -1, -1):
        tail += messages[i].tokens
        tails[i] = tail
    fitting = [i for i in starts if tails[i] <= trim_to_tokens]
    return fitting[0] if fitting else starts[-1]
