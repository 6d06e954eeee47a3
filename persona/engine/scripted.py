"""The scripted persona: deterministic, offline, and speaking exactly the LLM persona's protocol.

It reads only what an LLM persona would see (OpenAI-format messages): it finds the current phase
brief, replays its plan for that phase against the history since then, and returns the next
action. Being a pure function of the messages, it resumes after a restart without any state of
its own, and it can sit behind an OpenAI-compatible HTTP server to exercise the real client path.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from persona.benchmark.facts import Fact, parse_fact_file
from persona.benchmark.grading import Verdict, grade, says_unknown
from persona.benchmark.phases import Category, Check, parse_directives
from persona.engine.model import ModelTurn
from persona.engine.replies import is_agent_reply, unwrap_reply
from persona.engine.scenario import PHASE_HEADER
from persona.state import ToolCall

SEARCH_PROMPTS = {
    "en": "Please search your memory or notes, I'm sure I told you.",
    "ru": "Поищи в памяти, пожалуйста, я точно тебе это рассказывал.",
}


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class Call:
    name: str
    args: dict[str, Any]


Action = Say | Call
Plan = Generator[Action, str, None]  # yields actions, receives each one's result (reply or tool output)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text[-1:] in ".!?…" else text + "."


def _facts_in(listing: str) -> list[Fact]:
    ff, _ = parse_fact_file(listing, "listing", "tool result")
    return ff.live_facts()


def _tell_file(name: str, only: str | None = None) -> Plan:
    """Tell the untold facts of a file, one per message; with `only`, just that fact (if untold)."""
    listing = yield Call("facts_get_untold", {"file": name})
    for fact in _facts_in(listing):
        if only is None or fact.id == only:
            yield Say(_sentence(fact.text))
            yield Call("facts_mark_told", {"file": name, "ids": [fact.id]})


def phase_plan(brief: str, language: str) -> Plan:
    """Everything the phase asks, in the order its lines ask it, then next_phase until it accepts."""
    directives, _ = parse_directives(brief, "phase", answers_required=False)
    steps: list[tuple[int, int, Any]] = []
    for line_no, line in enumerate(brief.splitlines(), 1):
        for ref in parse_directives(line, "phase", answers_required=False)[0]["fact_refs"]:
            steps.append((line_no, 0, ("tell", ref)))
    steps += [(m.line, 1, ("mention", m)) for m in directives["mentions"]]
    steps += [(e.line, 1, ("edit", e)) for e in directives["edits"]]
    steps += [(a.line, 1, ("add", a)) for a in directives["additions"]]
    steps += [(c.line, 1, ("check", c)) for c in directives["checks"]]
    for _, _, (kind, item) in sorted(steps, key=lambda s: (s[0], s[1])):
        if kind == "tell":
            yield from _tell_file(item)
        elif kind == "mention":
            yield from _tell_file(item.file, only=item.fact_id)
        elif kind == "edit":
            if item.text == "—":
                listing = yield Call("facts_read", {"file": item.file})
                old = next((f.text for f in _facts_in(listing) if f.id == item.fact_id), "that")
                yield Say(f"Forget what I told you before: {_sentence(old)} It's no longer true."
                          if language != "ru" else f"Забудь, что я говорил раньше: {_sentence(old)} Это больше не так.")
            else:
                yield Say(_sentence(item.text))
            yield Call("facts_edit", {"file": item.file, "id": item.fact_id, "text": item.text})
        elif kind == "add":
            yield Say(_sentence(item.text))
            yield Call("facts_add", {"file": item.file, "section": item.section, "text": item.text})
        else:
            yield from _ask(item, language)
    while True:
        result = yield Call("next_phase", {})
        for name in re.findall(r"`([\w-]+)`", result.split("\n")[0]) if result.startswith("Error") else []:
            yield from _tell_file(name)


def _impression(check: Check, reply: str) -> Verdict:
    """Its own grade: by rule against the expected answer, or, when a judge grades and the brief has no
    answers, just whether the agent answered (for `absent`: whether it said it was never told)."""
    if check.answer:
        return grade(check, reply)
    unknown = says_unknown(reply)
    right = unknown == (check.category is Category.absent)
    return Verdict(10 if right else 0, unknown, "says it was never told" if unknown else "gave an answer")


def _ask(check: Check, language: str) -> Plan:
    first = unwrap_reply((yield Say(check.question)))
    verdict, answer, second = _impression(check, first), first, False
    if verdict.unknown and verdict.score < 10 and check.category is not Category.absent:
        answer = unwrap_reply((yield Say(SEARCH_PROMPTS.get(language, SEARCH_PROMPTS["en"]))))
        verdict, second = _impression(check, answer), True
    comment = verdict.comment + (f" (after a memory search; first answer: {first[:200]!r})" if second else "")
    yield Call("log_evaluation", {"check_id": check.id, "score": verdict.score, "answer": answer[:2000],
                                  "comment": comment, "second_attempt": second})


def _phase_start(messages: list[dict[str, Any]]) -> tuple[int, str]:
    """Index and text of the latest phase brief: in a tool result or our opening message, never in agent text."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        content = m.get("content") or ""
        if m["role"] in ("user", "tool") and PHASE_HEADER in content and not is_agent_reply(content):
            return i, content[content.rindex(PHASE_HEADER):]
    raise ValueError("no phase brief in the conversation")


class ScriptedPersona:
    def __init__(self, language: str = "en"):
        self.language = language
        self.label = "scripted"
        self._ids = itertools.count(1)

    def decide(self, messages: list[dict[str, Any]]) -> Action:
        start, brief = _phase_start(messages)
        plan = phase_plan(brief, self.language)
        action = next(plan)
        i = start + 1
        while i < len(messages):
            if messages[i]["role"] == "assistant" and i + 1 < len(messages):
                action = plan.send(messages[i + 1].get("content") or "")
                i += 2
            else:
                i += 1
        return action

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelTurn:
        action = self.decide(messages)
        if isinstance(action, Say):
            return ModelTurn(content=action.text)
        call_id = f"call_{len(messages)}_{next(self._ids)}"
        return ModelTurn(content=None, tool_calls=[ToolCall(id=call_id, name=action.name,
                                                            arguments=json.dumps(action.args, ensure_ascii=False))])

    async def aclose(self) -> None:
        return None
