"""Persona compaction cuts only at phase starts, keeping the newest trim_to_tokens."""

from __future__ import annotations

from persona.engine.compaction import cut_index
from persona.state import PersonaMessage


def history(tokens: list[int], starts: set[int]) -> list[PersonaMessage]:
    return [PersonaMessage(role="user", content="x", tokens=t, starts_phase=i in starts) for i, t in enumerate(tokens)]


def test_no_cut_below_max():
    msgs = history([100] * 10, {0, 4, 8})
    assert cut_index(msgs, 1000, max_tokens=1001, trim_to_tokens=500) is None


def test_cut_at_the_earliest_phase_start_that_fits():
    msgs = history([100] * 10, {0, 3, 6, 8})
    assert cut_index(msgs, 1000, max_tokens=1000, trim_to_tokens=450) == 6  # tail from 6 = 400 tokens
    assert cut_index(msgs, 1000, max_tokens=1000, trim_to_tokens=750) == 3


def test_an_oversized_current_phase_is_kept_whole():
    msgs = history([100] * 10, {0, 2})
    assert cut_index(msgs, 1000, max_tokens=1000, trim_to_tokens=300) == 2


def test_no_phase_start_means_no_cut():
    assert cut_index(history([100] * 10, {0}), 1000, max_tokens=500, trim_to_tokens=200) is None
