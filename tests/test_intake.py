"""What a model's turn becomes before anything is typed or sent back: reasoning out of the text, calls
a strict server takes back, a saved history repaired."""

from __future__ import annotations

import json

import pytest

from persona.engine.intake import REPAIRED_HISTORY, UNNAMED, repair_call, repair_history, strip_reasoning, take_calls
from persona.state import PersonaMessage, RunState, ToolCall
from tests.support.quirk_server import PROFILES, validate


@pytest.mark.parametrize("text, typed", [
    ("<think>plan it</think>Hello!", "Hello!"),
    ("<THINKING>a\nb</THINKING>\n\nHello!", "Hello!"),
    ("the template opened the block</think>\n\nHello!", "Hello!"),  # Qwen3.5, DeepSeek-R1
    ("Hello!\n<think>and then I will", "Hello!"),
    ("<think>\n\n</think>\n\nHello!", "Hello!"),
    ("<think>only thoughts</think>", ""),
    ("I think </think-tank> is a band", "I think </think-tank> is a band"),
    (None, ""),
])
def test_reasoning_is_taken_out_however_it_is_tagged(text, typed):
    assert strip_reasoning(text) == typed


def test_broken_calls_are_kept_in_a_form_servers_take_with_the_original_aside():
    fixed, quirks = repair_call(ToolCall(id="a", name="facts_read", arguments='{"file": "x"'))
    assert (fixed.arguments, fixed.name) == ("{}", "facts_read") and "not a JSON object" in fixed.problem
    assert json.loads(fixed.raw) == {"name": "facts_read", "arguments": '{"file": "x"'} and len(quirks) == 1
    unnamed, quirks = repair_call(ToolCall(id="b", name="read file", arguments="[1]"))
    assert unnamed.name == UNNAMED and "name of a tool" in unnamed.problem and "JSON list" in unnamed.problem
    assert len(quirks) == 2
    empty, quirks = repair_call(ToolCall(id="c", name="next_phase", arguments=" "))
    assert empty.arguments == "{}" and empty.problem is None and not quirks
    same, _ = repair_call(ToolCall(id="d", name="next_phase", arguments="{}"))
    assert same.raw is None and same.problem is None


def test_ids_are_kept_unless_missing_or_repeated_within_the_turn():
    state = RunState(run_id="r", benchmark="b", driver="d", persona_model="m")
    calls = take_calls(state, [ToolCall(id="functions.next_phase:0", name="next_phase", arguments="{}"),
                               ToolCall(id="", name="facts_read", arguments='{"file": "f"}'),
                               ToolCall(id="functions.next_phase:0", name="next_phase", arguments="{}")], step=7)
    assert [c.id for c in calls] == ["functions.next_phase:0", "mmb_7_1", "mmb_7_2"]
    assert state.quirks == {"tool-call ids missing or repeated within a turn, replaced": 2}


def test_a_saved_history_is_made_one_a_strict_server_takes():
    def call(i: str, args: str = "{}") -> ToolCall:
        return ToolCall(id=i, name="facts_read", arguments=args)

    state = RunState(run_id="r", benchmark="b", driver="d", persona_model="m", messages=[
        PersonaMessage(role="user", content="brief"),
        PersonaMessage(role="assistant", content="said beside calls by an old version", tool_calls=[call("a", "{oops")]),
        PersonaMessage(role="tool", tool_call_id="a", content="ok"),
        PersonaMessage(role="tool", tool_call_id="zz", content="answers nothing"),
        PersonaMessage(role="assistant", content="", step=3, tool_calls=[call("b"), call("c")]),
        PersonaMessage(role="tool", tool_call_id="b", content="ok"),
        PersonaMessage(role="user", content="<agent_reply>\nhi\n</agent_reply>"),
        PersonaMessage(role="assistant", content="  "),
        PersonaMessage(role="assistant", content="hello", step=4),
        PersonaMessage(role="assistant", step=5, tool_calls=[call("d")]),  # the last turn: its result is still due
    ])
    changes = repair_history(state)
    assert len(changes) == 5 and state.quirks == {REPAIRED_HISTORY: 5}
    sent = [m.to_api() for m in state.messages]
    for profile in ("openai", "anthropic"):  # bad arguments, unanswered calls, orphan results, "" text parts
        validate({"model": "m", "messages": sent[:-1]}, PROFILES[profile])
    assert sent[1]["content"] is None and state.messages[1].raw_content.startswith("said beside")
    assert [m.get("tool_call_id") for m in sent if m["role"] == "tool"] == ["a", "b", "c"]
    assert sent[-1]["tool_calls"][0]["id"] == "d"
