"""What a persona model's turn becomes: text to type, free of reasoning, and tool calls that a strict
server accepts when the history is sent back.

Reasoning never reaches the agent: closed `<think>` blocks go, a lone closing tag (templates that
open the block in the prompt) takes everything before it, an unclosed opening tag everything after
it. Tool calls written as text (textcalls.py) are taken out of the text and run as calls. A turn cut
off at max_tokens (`finish_reason: length`) is counted, and its last call, cut while being written,
is not run. A call whose arguments are not a JSON object, or whose name is no function name, is kept
in the history in a form servers accept (`{}`, `unnamed_call`) with the model's own text kept aside
in `raw`, and gets an error result the model can act on. Every such change is counted in
`state.quirks`, which the report shows. What is left of the text then passes the message guard
(guard.py) before it is typed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from persona.engine.model import ModelTurn
from persona.engine.textcalls import calls_in_text
from persona.state import PersonaMessage, RunState, ToolCall

_TAGS = r"think|thinking"
_BLOCK = re.compile(rf"<({_TAGS})>.*?</\1>", re.DOTALL | re.IGNORECASE)
_CLOSE = re.compile(rf"</({_TAGS})>", re.IGNORECASE)
_OPEN = re.compile(rf"<({_TAGS})>", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what OpenAI accepts as a function name
UNNAMED = "unnamed_call"

REASONING_TAGS = "reasoning in <think> tags, taken out of the text"
REPAIRED_ARGUMENTS = "tool calls whose arguments were not a JSON object (kept aside, {} sent back)"
REPAIRED_NAMES = "tool calls without a valid function name"
REPLACED_IDS = "tool-call ids missing or repeated within a turn, replaced"
REPAIRED_HISTORY = "changes to a saved history a server would refuse, made on resume"
CUT_OFF = "replies cut off at max_tokens (finish_reason length)"
CUT_OFF_CALLS = "tool calls cut off at max_tokens, not run (the model was told)"
UNREADABLE_TEXT_CALLS = "tool calls written as text that could not be read (the model was told)"
CUT_OFF_PROBLEM = ("your reply was cut off at max_tokens while this call was being written (finish_reason "
                   "length), so it was not run: call it again, with shorter arguments")


TEXT_CALLS = "tool calls written as text ("


def text_calls_quirk(form: str) -> str:
    return f"{TEXT_CALLS}{form}), run as calls"


def strip_reasoning(text: str | None) -> str:
    """The part of the model's text meant for the agent."""
    out = _BLOCK.sub("", text or "")
    if closes := list(_CLOSE.finditer(out)):
        out = out[closes[-1].end():]
    if opened := _OPEN.search(out):
        out = out[:opened.start()]
    return out.strip()


@dataclass
class ReadTurn:
    """A model's turn read: the text left for the agent (before the message guard), its calls (as the
    server returned them, or read from the text), and what that took, one quirk name per time."""

    text: str
    calls: list[ToolCall]
    quirks: list[str] = field(default_factory=list)


def read_turn(turn: ModelTurn, tool_names: list[str]) -> ReadTurn:
    """Reasoning out, calls written as text taken out and read, a call cut off at max_tokens marked."""
    text = strip_reasoning(turn.content)
    read = ReadTurn(text, list(turn.tool_calls), [REASONING_TAGS] if text != (turn.content or "").strip() else [])
    if not read.calls:  # a server that parsed calls left none in the text worth running twice
        found = calls_in_text(text, tool_names)
        if found.calls:
            read.text, read.calls = found.text, found.calls
            for form, n in found.forms.items():
                read.quirks += [text_calls_quirk(form)] * n
            read.quirks += [UNREADABLE_TEXT_CALLS] * found.unreadable
    if turn.cut_off:
        read.quirks.append(CUT_OFF)
        if read.calls:
            last = read.calls[-1]
            raw = json.dumps({"name": last.name, "arguments": last.arguments}, ensure_ascii=False)
            read.calls[-1] = last.model_copy(update={"problem": CUT_OFF_PROBLEM, "raw": raw})
            read.quirks.append(CUT_OFF_CALLS)
    return read


def repair_call(call: ToolCall) -> tuple[ToolCall, list[str]]:
    """The call as a strict server accepts it back, and what had to change (quirk names)."""
    problems, quirks, update = [call.problem] if call.problem else [], [], {}
    if not _NAME.match(call.name):
        problems.append(f"a tool call needs the name of a tool, not {call.name[:60]!r}")
        quirks.append(REPAIRED_NAMES)
        update["name"] = UNNAMED
    arguments = call.arguments if call.arguments.strip() else "{}"  # none at all: what servers expect back
    if arguments != call.arguments:
        update["arguments"] = arguments
    try:
        args = json.loads(arguments)
        if not isinstance(args, dict):
            raise ValueError(f"a JSON {type(args).__name__}, not an object")
    except ValueError as e:
        problems.append(f"the arguments of {call.name or 'the call'} are not a JSON object ({str(e)[:120]}): "
                        f"{call.arguments[:300]!r}. Call it again with valid JSON")
        quirks.append(REPAIRED_ARGUMENTS)
        update["arguments"] = "{}"
    if not problems:
        return call.model_copy(update=update) if update else call, quirks
    raw = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return call.model_copy(update={**update, "problem": "; ".join(problems), "raw": raw}), quirks


def take_calls(state: RunState, calls: list[ToolCall], step: int) -> list[ToolCall]:
    """The model's calls ready for the history: repaired where a server would refuse them, with ids
    unique within the turn. Ids are otherwise kept as the server wrote them: some (Kimi) want their
    own ids back, and results are matched to calls by position, not by id."""
    out, seen = [], set()
    for i, call in enumerate(calls):
        call, quirks = repair_call(call)
        for quirk in quirks:
            state.note_quirk(quirk)
        if not call.id or call.id in seen:
            state.note_quirk(REPLACED_IDS)
            call = call.model_copy(update={"id": f"mmb_{step}_{i}"})
        seen.add(call.id)
        out.append(call)
    return out


def repair_history(state: RunState) -> list[str]:
    """Make a saved history one a strict server accepts again (states saved by older versions, or
    edited by hand); returns what was changed, for the run's log. Called before a run resumes."""
    changes: list[str] = []
    kept: list[PersonaMessage] = []
    open_ids: list[str] = []  # calls of the latest assistant turn still waiting for their result
    for m in state.messages:
        if m.role == "tool":
            if m.tool_call_id not in open_ids:
                changes.append(f"dropped a tool result that answers no call ({m.tool_call_id})")
                continue
            open_ids.remove(m.tool_call_id)
            kept.append(m)
            continue
        if open_ids and kept:
            changes += [f"call {i} had no result: an error result added" for i in open_ids]
            kept += [PersonaMessage(role="tool", tool_call_id=i, phase=m.phase, content="Error: this call was never run.")
                     for i in open_ids]
            open_ids = []
        if m.role == "assistant":
            m = _repair_turn(m, changes)
            if m is None:
                continue
            open_ids = [c.id for c in m.tool_calls]
        kept.append(m)
    state.messages = kept
    if changes:
        state.note_quirk(REPAIRED_HISTORY, len(changes))
    return changes


def _repair_turn(m: PersonaMessage, changes: list[str]) -> PersonaMessage | None:
    calls = []
    for call in m.tool_calls:
        fixed, quirks = repair_call(call)
        changes += [f"call {call.id}: {quirk}" for quirk in quirks]
        calls.append(fixed)
    update: dict[str, Any] = {"tool_calls": calls}
    if m.step is None and calls and m.content:  # written before text beside calls was sent: it never was
        changes.append("text beside tool calls that never reached the agent, taken out of the history")
        update.update(content=None, raw_content=m.content)
    elif not (m.content or "").strip() and not calls:
        changes.append("an empty assistant turn dropped")
        return None
    elif m.content == "" and calls:
        update["content"] = None  # "" is an empty text part, which Gemini refuses
    return m.model_copy(update=update)
