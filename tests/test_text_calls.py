"""Tool calls a model wrote as text (a server without a tool parser for it): read in each model family's
form, run as calls and counted, never typed to the agent; what cannot be read is never typed either:
the model is told, and a model that only writes such calls stops the run as usual. Through the real
openai client and the quirk server, which writes the calls into the text as such servers do."""

from __future__ import annotations

import json
from typing import Any

import pytest

from persona.engine.intake import CUT_OFF, CUT_OFF_CALLS, UNREADABLE_TEXT_CALLS, read_turn, text_calls_quirk
from persona.engine.model import ModelTurn
from persona.engine.textcalls import BARE, HERMES, LLAMA, MISTRAL, calls_in_text
from persona.engine.tools import TOOL_NAMES
from persona.state import RunStore, ToolCall
from tests.conftest import DEMO_BENCH
from tests.support.play import play, scores
from tests.support.quirk_server import QuirkServer, Responder, scripted_responder

READ = {"name": "facts_read", "arguments": {"file": "family"}}
MARK = {"name": "facts_mark_told", "arguments": {"file": "family", "ids": ["1.1", "1.2"]}}


def calls(found) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in found.calls]


@pytest.mark.parametrize("text, form, left", [
    (f"Hi!\n<tool_call>\n{json.dumps(READ)}\n</tool_call>", HERMES, "Hi!"),
    (f"Hi!<function_call>{json.dumps(READ)}</function_call>", HERMES, "Hi!"),
    (f"</think>{json.dumps(READ)}</tool_call>", HERMES, "</think>"),  # the opening tag missing (Hermes)
    (f"[TOOL_CALLS]{json.dumps([READ])}", MISTRAL, ""),
    (f'Sure. [TOOL_CALLS]facts_read[ARGS]{json.dumps(READ["arguments"])}', MISTRAL, "Sure."),
    (f'[TOOL_CALLS]facts_read[CALL_ID]a1B2c3D4e[ARGS]{json.dumps(READ["arguments"])}', MISTRAL, ""),
    (f'<|python_tag|>{json.dumps({"name": "facts_read", "parameters": {"file": "family"}})}<|eom_id|>', LLAMA, ""),
    (f'<|python_start|>{json.dumps(READ)}<|python_end|>', LLAMA, ""),
    ('<function=facts_read>{"file": "family"}</function>', LLAMA, ""),
    (json.dumps(READ), BARE, ""),
    (f"```json\n{json.dumps({'type': 'function', 'function': READ})}\n```", BARE, ""),
    (json.dumps({"tool_call": READ}), BARE, ""),  # llama.cpp's generic format
], ids=["hermes", "function_call", "hermes-headless", "mistral-list", "mistral-args", "mistral-call-id", "python_tag",
        "llama4", "function-tag", "bare", "bare-openai-fenced", "bare-llamacpp"])
def test_each_form_is_read(text, form, left):
    found = calls_in_text(text, TOOL_NAMES)
    assert calls(found) == [("facts_read", {"file": "family"})] and found.forms == {form: 1}
    assert found.text == left and found.unreadable == 0
    assert found.calls[0].id.startswith("call_") and len(found.calls[0].id) > 20, "unique in the conversation"


def test_several_calls_in_one_text():
    llama = "<|python_tag|>" + "; ".join(json.dumps({"name": c["name"], "parameters": c["arguments"]}) for c in (READ, MARK))
    hermes = "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in (READ, MARK))
    for text in (llama, hermes, f"[TOOL_CALLS]{json.dumps([READ, MARK])}", json.dumps([READ, MARK])):
        assert [name for name, _ in calls(calls_in_text(text, TOOL_NAMES))] == ["facts_read", "facts_mark_told"], text


@pytest.mark.parametrize("text", [
    'I like {"name": "facts_read"} as a string',  # JSON inside prose is no call
    json.dumps({"name": "send_email", "arguments": {}}),  # bare JSON naming no offered tool
    json.dumps({"items": [1, 2]}),
    "[1, 2, 3]",
    "Just chatting. [INST] not a call [/INST]",
], ids=["inside prose", "unknown name", "no name", "a list", "no call form"])
def test_text_that_is_no_call_stays_text(text):
    found = calls_in_text(text, TOOL_NAMES)
    assert found.calls == [] and found.text == text


@pytest.mark.parametrize("text, name", [
    ('Hi <tool_call>{"name": "facts_read", "arguments": {"file": "fam', "facts_read"),  # cut off
    ("<tool_call>facts_read(file='family')</tool_call>", ""),  # pythonic, not JSON
    ("[TOOL_CALLS]facts_read[ARGS]{'file': 'family'}", "facts_read"),
    ("[TOOL_CALLS]", ""),
], ids=["cut-off", "pythonic", "mistral-single-quotes", "bare marker"])
def test_an_unreadable_call_still_becomes_a_call_the_model_is_told_about(text, name):
    turn = read_turn(ModelTurn(content=text), TOOL_NAMES)
    assert len(turn.calls) == 1 and turn.calls[0].name == name and UNREADABLE_TEXT_CALLS in turn.quirks
    assert "<tool_call>" not in turn.text and "[TOOL_CALLS]" not in turn.text


def test_a_call_cut_off_at_max_tokens_is_not_run():
    cut = ModelTurn(content="Hi!", tool_calls=[ToolCall(id="c", name="facts_read", arguments='{"file": "family"}'),
                                               ToolCall(id="d", name="facts_add", arguments='{"file": "fam')],
                    finish_reason="length")
    read = read_turn(cut, TOOL_NAMES)
    assert read.calls[0].problem is None and "cut off at max_tokens" in read.calls[1].problem
    assert read.quirks == [CUT_OFF, CUT_OFF_CALLS]


# -- whole runs through the quirk server ---------------------------------------------------------------


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list:
    _, state = play(tmp_path_factory.mktemp("ref"), benchmark=DEMO_BENCH)
    return scores(state)


def persona_on(server: QuirkServer, **more: Any) -> dict[str, Any]:
    return {"kind": "openai", "base_url": server.base_url, "model": "m", "api_key_env": "MMB_TEST_UNSET_KEY", **more}


MARKUP = ("<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|", '"name"', "[ARGS]")


@pytest.mark.parametrize("form, quirk", [("hermes", HERMES), ("mistral", MISTRAL), ("llama", LLAMA), ("bare", BARE)],
                         ids=["hermes", "mistral", "llama", "bare"])
def test_a_server_without_a_tool_parser_plays_the_demo_as_one_with(tmp_path, reference, form, quirk):
    with QuirkServer(scripted_responder(), profile="llamacpp", calls_as_text=form) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=persona_on(server))
    assert outcome.status == "finished", state.error
    assert scores(state) == reference and not server.rejections, "its own history, calls and results, taken back"
    assert len(server.requests) == len(server.served)
    judged = [r["tools"][0]["function"]["name"] == "grade" for r in server.requests]
    written = [(s.answer.get("content") or "").count('"name": ') for s in server.served]
    persona = sum(n for n, judge in zip(written[3:], judged[3:], strict=True) if not judge)  # the preflight's aside
    assert state.quirks[text_calls_quirk(quirk)] == persona >= 8
    assert sum(f"{text_calls_quirk(quirk)}" in n for n in state.judge_notes) == sum(judged[4:]) == 10, \
        "the judge's verdicts written as text too: read as grade calls, counted in its notes"
    sent = [ex.sent for ex in RunStore(tmp_path / "results" / "r").transcript()]
    assert sent and not [s for s in sent if any(m in s for m in MARKUP)], "no call markup ever typed"
    assert "calls a tool: ok (written as text, read and run as a call" in state.log[0]
    report = (tmp_path / "results" / "report.md").read_text()
    assert f"tool calls written as text ({quirk}), run as calls ×{persona}" in report


def unreadable_every(responder: Responder, every: int, bad: list[str]) -> Responder:
    """Every `every`-th answer is one of `bad` (unreadable call text); the good responder never sees them."""
    queue, count = list(bad), [0]

    def theirs(m: dict[str, Any]) -> bool:
        return any(c["id"] in shown for c in m.get("tool_calls") or []) or m.get("tool_call_id") in shown

    shown: set[str] = set()

    def respond(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        for m in messages:  # our bad calls, as the persona loop sent them back: hidden from the good responder
            if m["role"] == "assistant" and m.get("tool_calls") and m["tool_calls"][0]["function"]["arguments"] == "{}" \
                    and not m.get("content"):
                shown.update(c["id"] for c in m["tool_calls"])
        count[0] += 1
        if queue and count[0] % every == 0:
            return {"content": queue.pop(0)}
        return responder([m for m in messages if not theirs(m)], tools)

    return respond


def test_unreadable_calls_are_never_typed_the_model_is_told_and_the_run_ends_the_same(tmp_path, reference):
    bad = ['<tool_call>{"name": "facts_read", "arguments": {"file": "fam', "[TOOL_CALLS]facts_read[ARGS]{'file': 1}",
           "<tool_call>facts_read(file='family')</tool_call>"]
    with QuirkServer(unreadable_every(scripted_responder(), 4, bad)) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=persona_on(server, preflight=False))
    assert outcome.status == "finished", state.error
    assert scores(state) == reference and not server.rejections
    assert state.quirks[UNREADABLE_TEXT_CALLS] == 3
    told = [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool"
            and "are not a JSON object" in (m.get("content") or "")]
    assert told and "Call it again with valid JSON" in told[0]
    sent = [ex.sent for ex in RunStore(tmp_path / "results" / "r").transcript()]
    assert not [s for s in sent if any(m in s for m in MARKUP)]


def test_a_model_that_only_writes_unreadable_calls_stops_the_run(tmp_path):
    with QuirkServer(lambda m, t: {"content": '<tool_call>{"name": "facts_read", "arguments": {"file"'}) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH,
                              persona=persona_on(server, preflight=False, max_failed_turns=3))
    assert outcome.status == "failed" and "3 turns in a row that did nothing" in state.error
    assert "are not a JSON object" in state.error and state.turn == 0 and len(server.requests) == 3
    assert state.quirks[UNREADABLE_TEXT_CALLS] == 3
