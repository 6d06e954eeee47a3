"""Persona-side compaction: where to cut the persona's history when its request reaches `max_tokens`.

The seed's rule comes first: keep the newest `trim_to_tokens` of history, cut at a phase boundary
(right before the turn that began a phase). When no boundary leaves that little, the current phase
is kept whole if the request then fits under `max_tokens`. A phase that alone is over the ceiling
(or the first phase, which has no boundary before it) is cut inside: at the oldest turn whose tail
fits, never between a tool call and its results, and the note repeats the phase's brief. A cut
that would not bring the request under the ceiling is no cut: a compaction always shrinks.
"""

from __future__ import annotations

from dataclasses import dataclass

from persona.state import PersonaMessage


@dataclass(frozen=True)
class Cut:
    index: int  # drop messages[:index]
    in_phase: bool  # inside the current phase: the note carries its brief


@dataclass(frozen=True)
class Limits:
    max_tokens: int  # the whole request: system prompt, tools, messages
    trim_to_tokens: int  # the history kept after a cut, the note included
    fixed_tokens: int  # system prompt and tools, in every request
    note_tokens: int  # the note a boundary cut adds
    in_phase_note_tokens: int  # the note an in-phase cut adds (with the phase brief)


class CompactionError(Exception):
    """Nothing can be cut to bring the request under max_tokens (one turn alone is bigger)."""


def _tails(messages: list[PersonaMessage]) -> list[int]:
    """tails[i] = tokens of messages[i:]."""
    tails = [0] * (len(messages) + 1)
    for i in range(len(messages) - 1, -1, -1):
        tails[i] = tails[i + 1] + messages[i].tokens
    return tails


def turn_starts(messages: list[PersonaMessage], after: int) -> list[int]:
    """Indices after `after` where a cut keeps every tool call with its results: the persona's turns."""
    return [i for i in range(after + 1, len(messages)) if messages[i].role == "assistant"]


def plan_cut(messages: list[PersonaMessage], limits: Limits) -> Cut | None:
    """Where to cut, or None when the request is under max_tokens. Raises CompactionError when over
    it and no cut brings it under."""
    tails = _tails(messages)
    if limits.fixed_tokens + tails[0] < limits.max_tokens:
        return None
    boundaries = [i for i, m in enumerate(messages) if m.starts_phase and i > 0]
    for i in boundaries:
        if limits.note_tokens + tails[i] <= limits.trim_to_tokens:
            return Cut(i, in_phase=False)
    if boundaries and limits.fixed_tokens + limits.note_tokens + tails[boundaries[-1]] < limits.max_tokens:
        return Cut(boundaries[-1], in_phase=False)  # the current phase whole still fits under the ceiling
    phase_start = boundaries[-1] if boundaries else 0
    room = min(limits.trim_to_tokens, limits.max_tokens - limits.fixed_tokens - 1)
    starts = turn_starts(messages, phase_start)
    for i in starts:
        if limits.in_phase_note_tokens + tails[i] <= room:
            return Cut(i, in_phase=True)
    if starts and limits.fixed_tokens + limits.in_phase_note_tokens + tails[starts[-1]] < limits.max_tokens:
        return Cut(starts[-1], in_phase=True)  # only the last turn fits, and only under the ceiling
    last = tails[starts[-1]] if starts else tails[0]
    raise CompactionError(
        f"the persona's request is over compaction.max_tokens ({limits.max_tokens:,}) and no cut brings it under: "
        f"the system prompt and tools take {limits.fixed_tokens:,} tokens, the note after a cut "
        f"{limits.in_phase_note_tokens:,}, and the last turn alone {last:,}; raise compaction.max_tokens")
