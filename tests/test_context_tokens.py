"""The persona's context size, summed incrementally, always equals the plain sum, across compactions."""

from __future__ import annotations

import asyncio

from bench.state_cost import Turns, make_loop
from persona.state import PersonaMessage


def plain_sum(loop) -> int:
    return loop.fixed_tokens + sum(m.tokens for m in loop.state.messages)


def test_context_tokens_match_the_plain_sum_through_growth_and_compaction(tmp_path):
    loop = make_loop(tmp_path, compaction=True)
    asyncio.run(loop._begin())
    turns = Turns(loop)
    seen_compactions = 0
    for _ in range(1000):
        turns.grow(timed=False)
        assert loop._context_tokens() == plain_sum(loop)
        seen_compactions = len(loop.state.persona_compactions)
    assert seen_compactions >= 2, "the probe should have compacted a few times"
    assert plain_sum(loop) < loop.compaction.max_tokens + 500


def test_a_list_cut_elsewhere_is_counted_afresh(tmp_path):
    loop = make_loop(tmp_path, compaction=False)
    for i in range(5):
        loop._append(PersonaMessage(role="user", content=f"message number {i} " * 10))
    assert loop._context_tokens() == plain_sum(loop)
    del loop.state.messages[2:]
    assert loop._context_tokens() == plain_sum(loop)


def test_a_compaction_that_keeps_the_length_is_counted_afresh(tmp_path):
    loop = make_loop(tmp_path, compaction=True)
    loop.compaction = loop.compaction.model_copy(update={"max_tokens": loop.fixed_tokens + 300, "trim_to_tokens": 250})
    loop._append(PersonaMessage(role="user", content="an old phase " * 100, starts_phase=True))
    loop._append(PersonaMessage(role="user", content="the phase now", starts_phase=True))
    assert loop._context_tokens() == plain_sum(loop)
    loop._maybe_compact()  # drops the first message and adds the note: still two messages
    assert len(loop.state.messages) == 2 and loop.state.persona_compactions
    assert loop._context_tokens() == plain_sum(loop)
