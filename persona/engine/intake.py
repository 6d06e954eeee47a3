"""What a persona model's turn becomes: text to type, free of reasoning, and tool calls that a strict
server accepts when the history is sent back.

Reasoning never reaches the agent: closed `<think>` blocks go, a lone closing tag (templates that
open the block in the prompt) takes everything before it, an unclosed opening tag everything after
it. A call whose arguments are not a JSON object, or whose name is no function name, is kept in the
history in a form servers accept (`{}`, `unnamed_call`) with the model's own text kept aside in
`raw`, and gets an error result the model can act on. Every such change is counted in
`state.quirks`, which the report shows.
"""

from __future__ import annotations

import json
import re
from typing import Any

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


def strip_reasoning(text: str | None) -> str:
    """The part of the model's text meant for the agent."""
    out = _BLOCK.sub("", text or "")
    if closes := list(_CLOSE.finditer(out)):
        out = out[closes[-1].end():]
    if opened := _OPEN.search(out):
        out = out[:opened.start()]
    return out.strip()


def outgoing_text(state: RunState, content: str | None) -> str:
    """The text to type, counting a turn whose reasoning had to be taken out."""
    text = strip_reasoning(content)
    if text != (content or "").strip():
        state.note_quirk(REASONING_TAGS)
    return text


def repair_call(call: ToolCall) -> tuple[ToolCall, list[str]]:
    """The call as a strict server accepts it back, and what had to change (quirk names)."""
    problems, quirks, update = [], [], {}
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
