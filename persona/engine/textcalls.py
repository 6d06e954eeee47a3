"""Tool calls a model wrote as text, taken out of its text and run as calls.

A server without a tool parser for the model (llama.cpp and Ollama with many models, vLLM with the
wrong `--tool-call-parser`, small models) returns the call in `content` and no `tool_calls`
(notes/real-model-quirks.md 2b). The forms recognised:

- Hermes / Qwen: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, the opening tag may be
  missing, the closing one cut off; `<function_call>` alike;
- Mistral: `[TOOL_CALLS][{"name": ..., "arguments": ...}, ...]` and `[TOOL_CALLS]name[ARGS]{...}`;
- Llama: `<|python_tag|>{"name": ..., "parameters": {...}}` (several joined by `;`),
  `<|python_start|>...<|python_end|>`, `<function=name>{...}</function>`;
- bare JSON: the whole text one call or a list of calls (`{"name", "arguments"|"parameters"}`,
  `{"type": "function", "function": {...}}`, llama.cpp's `{"tool_call": {...}}`), taken only when
  every name is one of the offered tools: text that merely contains JSON is not a call.

A block that cannot be read (broken or cut-off JSON) still becomes a call, with the model's text as
its arguments: intake.repair_call turns it into an error result the model can act on, so markup is
never typed to the agent and never silently dropped. The caller counts what was found, by form.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from persona.state import ToolCall

HERMES, MISTRAL, LLAMA, BARE = "`<tool_call>` blocks", "`[TOOL_CALLS]`", "`<|python_tag|>` / `<function=…>`", "bare JSON"

_HERMES_BLOCK = re.compile(r"<(tool_call|function_call)>(.*?)(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)
_HERMES_HEADLESS = re.compile(r"\A(.*?)</(tool_call|function_call)>", re.DOTALL | re.IGNORECASE)  # opening tag missing
_MISTRAL = re.compile(r"\[TOOL_CALLS\]")
_MISTRAL_NAMED = re.compile(r"\A\s*([A-Za-z0-9_.-]{1,64})\s*(?:\[CALL_ID\]\s*[A-Za-z0-9]+\s*)?\[ARGS\]")
_LLAMA_TAG = re.compile(r"<\|python_tag\|>(.*?)(?:<\|(?:eom_id|eot_id|end_of_text)\|>|\Z)", re.DOTALL)
_LLAMA4 = re.compile(r"<\|python_start\|>(.*?)(?:<\|python_end\|>|\Z)", re.DOTALL)
_FUNCTION_TAG = re.compile(r"<function=([A-Za-z0-9_.-]{1,64})>(.*?)(?:</function>|\Z)", re.DOTALL)
_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.DOTALL)
_NAME_IN = re.compile(r'"name"\s*:\s*"([^"]{1,64})"')


@dataclass
class TextCalls:
    """What a model's text held: the text left for the agent, the calls, and by form how many."""

    text: str
    calls: list[ToolCall] = field(default_factory=list)
    forms: dict[str, int] = field(default_factory=dict)  # form -> calls found in it
    unreadable: int = 0  # of the calls, those whose block could not be read as a call

    def _add(self, form: str, call: ToolCall, readable: bool) -> None:
        self.calls.append(call)
        self.forms[form] = self.forms.get(form, 0) + 1
        self.unreadable += not readable


def new_call_id() -> str:
    """An id for a call the server did not name: unique in the conversation (some servers insist)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def calls_in_text(text: str | None, tool_names: list[str]) -> TextCalls:
    """The calls written in `text`, and the text without them."""
    found = TextCalls(text or "")
    if not text:
        return found
    rest = _take(found, text, _HERMES_BLOCK, HERMES, lambda m: m.group(2))
    if (headless := _HERMES_HEADLESS.search(rest)) and "{" in headless.group(1):
        start = headless.group(1).index("{")
        _read_block(found, HERMES, headless.group(1)[start:])
        rest = headless.group(1)[:start] + rest[headless.end():]
    rest = _take(found, rest, _FUNCTION_TAG, LLAMA, lambda m: m.group(2), name_group=1)
    rest = _take(found, rest, _LLAMA4, LLAMA, lambda m: m.group(1))
    rest = _take(found, rest, _LLAMA_TAG, LLAMA, lambda m: m.group(1), several=True)
    rest = _mistral(found, rest)
    if not found.calls:
        _bare(found, rest, tool_names)
        rest = "" if found.calls else rest
    found.text = rest.strip() if found.calls else text
    return found


def _take(found: TextCalls, text: str, pattern: re.Pattern[str], form: str, body: Any, *,
          name_group: int | None = None, several: bool = False) -> str:
    """Every match of `pattern` read as a call (or several, `;`-joined) and cut out of the text."""
    def one(m: re.Match[str]) -> str:
        block = body(m).strip()
        if name_group is not None:
            _read_arguments(found, form, m.group(name_group), block)
        elif several:
            for part in _split_calls(block):
                _read_block(found, form, part)
        else:
            _read_block(found, form, block)
        return ""

    return pattern.sub(one, text)


def _split_calls(block: str) -> list[str]:
    """`{...}; {...}` (Llama's several calls) as separate JSON texts; one broken part stays whole."""
    parts, decoder, at = [], json.JSONDecoder(), 0
    while at < len(block):
        try:
            _, end = decoder.raw_decode(block, at)
        except ValueError:
            return [*parts, block[at:]] if block[at:].strip() else parts
        parts.append(block[at:end])
        at = end
        while at < len(block) and block[at] in " \n\t;,":
            at += 1
    return parts


def _mistral(found: TextCalls, text: str) -> str:
    """`[TOOL_CALLS]` followed by a JSON list or object, or by `name[ARGS]{...}`, once or more."""
    pieces = _MISTRAL.split(text)
    if len(pieces) == 1:
        return text
    kept = [pieces[0]]
    for piece in pieces[1:]:
        if named := _MISTRAL_NAMED.match(piece):
            after = piece[named.end():]
            end = _json_end(after)
            _read_arguments(found, MISTRAL, named.group(1), after[:end])
            kept.append(after[end:])
            continue
        end = _json_end(piece)
        if end == 0:  # nothing readable at all: a broken call, the model is told
            found._add(MISTRAL, _broken(piece.strip() or "[TOOL_CALLS]"), False)
            continue
        value = _loads(piece[:end])
        for item in value if isinstance(value, list) else [value]:
            _read_value(found, MISTRAL, item, piece[:end])
        kept.append(piece[end:])
    return "".join(kept)


def _json_end(text: str) -> int:
    """Where the JSON value at the start of `text` ends; a value cut off takes the rest of the text."""
    stripped = len(text) - len(text.lstrip())
    if not text.strip() or text.lstrip()[0] not in "[{":
        return 0
    try:
        _, end = json.JSONDecoder().raw_decode(text, stripped)
        return end
    except ValueError:
        return len(text)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # _read_value makes it a broken call


def _read_block(found: TextCalls, form: str, block: str) -> None:
    block = _unfence(block.strip())
    end = _json_end(block)
    value = _loads(block[:end]) if end else block
    items = value if isinstance(value, list) and value else [value]
    for item in items:
        _read_value(found, form, item, block)


def _read_value(found: TextCalls, form: str, value: Any, source: str) -> None:
    call = _as_call(value)
    if call is None:
        found._add(form, _broken(source), False)
    else:
        found._add(form, call, True)


def _read_arguments(found: TextCalls, form: str, name: str, arguments: str) -> None:
    """A call whose name stands outside its JSON arguments (`name[ARGS]{...}`, `<function=name>{...}`)."""
    text = arguments.strip() or "{}"
    try:
        value = json.loads(text)
        readable = isinstance(value, dict)
    except ValueError:
        readable = False
    found._add(form, ToolCall(id=new_call_id(), name=name, arguments=text), readable)


def _as_call(value: Any) -> ToolCall | None:
    """A decoded JSON value as a call: {"name", "arguments"|"parameters"}, OpenAI's {"function": {...}},
    llama.cpp's {"tool_call": {...}}; None when it is not one."""
    if not isinstance(value, dict):
        return None
    inner = value.get("function") if isinstance(value.get("function"), dict) else value.get("tool_call")
    if isinstance(inner, dict):
        value = inner
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return ToolCall(id=new_call_id(), name=name, arguments=arguments)


def _broken(source: str) -> ToolCall:
    """A block that is not a readable call: kept as a call with the text as its arguments, so that
    repair_call gives the model an error it can act on."""
    name = _NAME_IN.search(source)
    return ToolCall(id=new_call_id(), name=name.group(1) if name else "", arguments=source[:2000])


def _unfence(text: str) -> str:
    fenced = _FENCE.match(text)
    return fenced.group(1) if fenced else text


def _bare(found: TextCalls, text: str, tool_names: list[str]) -> None:
    """The whole text one call or a list of calls, every name an offered tool; else nothing."""
    body = _unfence(text.strip())
    if not body or body[0] not in "[{":
        return
    try:
        value = json.loads(body)
    except ValueError:
        return
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item) for item in items]
    if items and all(c is not None and c.name in tool_names for c in calls):
        for call in calls:
            assert call is not None
            found._add(BARE, call, True)
