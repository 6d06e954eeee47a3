"""Where compaction cuts: at a phase boundary when one keeps trim_to_tokens (the seed's rule), the
current phase whole while it fits under max_tokens, else inside the phase at the oldest turn that
fits, never between a tool call and its results; and never a cut that leaves the request over."""

from __future__ import annotations

import pytest

from persona.engine.compaction import CompactionError, Cut, Limits, plan_cut
from persona.state import PersonaMessage, ToolCall


def limits(max_tokens: int, trim_to: int, fixed: int = 0, note: int = 0, in_phase_note: int = 0) -> Limits:
    return Limits(max_tokens, trim_to, fixed, note, in_phase_note)


def history(tokens: list[int], starts: set[int]) -> list[PersonaMessage]:
    """Alternating assistant/user turns of the given sizes; `starts` begin a phase."""
    roles = ["user", "assistant"]
    return [PersonaMessage(role=roles[i % 2], content="x", tokens=t, starts_phase=i in starts) for i, t in enumerate(tokens)]


def test_no_cut_below_max():
    assert plan_cut(history([100] * 10, {0, 4, 8}), limits(1001, 500)) is None


def test_cut_at_the_earliest_phase_start_that_fits():
    msgs = history([100] * 10, {0, 3, 6, 8})
    assert plan_cut(msgs, limits(1000, 450)) == Cut(6, in_phase=False)  # tail from 6 = 400 tokens
    assert plan_cut(msgs, limits(1000, 750)) == Cut(3, in_phase=False)
    assert plan_cut(msgs, limits(1000, 450, note=60)) == Cut(8, in_phase=False), "the note counts"


def test_an_oversized_current_phase_is_kept_whole_while_it_fits_under_the_ceiling():
    assert plan_cut(history([100] * 10, {0, 2}), limits(1000, 300)) == Cut(2, in_phase=False)


def test_a_phase_over_the_ceiling_is_cut_inside_at_the_oldest_turn_that_fits():
    msgs = history([100] * 10, {0, 2})
    cut = plan_cut(msgs, limits(1000, 350, fixed=200, in_phase_note=50))
    assert cut == Cut(7, in_phase=True) and msgs[cut.index].role == "assistant"  # note 50 + the 300 from 7 fit 350


def test_the_first_phase_has_no_boundary_and_is_cut_inside():
    assert plan_cut(history([100] * 10, {0}), limits(500, 200)) == Cut(9, in_phase=True)


def test_a_cut_never_separates_a_call_from_its_results():
    msgs = [PersonaMessage(role="user", content="brief", tokens=100, starts_phase=True)]
    for _ in range(4):
        msgs += [PersonaMessage(role="assistant", tool_calls=[ToolCall(id="a", name="n", arguments="{}")], tokens=50),
                 PersonaMessage(role="tool", tool_call_id="a", content="r", tokens=200)]
    cut = plan_cut(msgs, limits(900, 300))
    assert cut is not None and msgs[cut.index].role == "assistant" and cut.index == 7


def test_no_cut_that_leaves_the_request_over_the_ceiling():
    msgs = history([100, 900], {0})
    with pytest.raises(CompactionError, match="the last turn alone 900"):
        plan_cut(msgs, limits(950, 300, fixed=100))
