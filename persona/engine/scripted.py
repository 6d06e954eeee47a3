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

from persona.benchmark.dates import StoryDate, spoken
from persona.benchmark.facts import Fact, parse_fact_file
from persona.benchmark.grading import Verdict, grade, says_unknown
from persona.benchmark.phases import Category, Check, fact_refs_at, parse_directives
from persona.engine.model import ModelTurn
from persona.engine.replies import is_agent_reply, unwrap_reply
from persona.engine.scenario import DONE_ADDED, DONE_CHANGED, DONE_CHECKS, KEPT, PHASE_HEADER
from persona.state import ToolCall

SEARCH_PROMPTS = {
    "en": "Please search your memory or notes, I'm sure I told you.",
    "ru": "Поищи в памяти, пожалуйста, я точно тебе это рассказывал.",
}

# How the scripted persona tells the story's date as a phase starts (the brief's `📅` line).
DATE_SAYINGS = {
    "en": "Hi! It's {date} here.",
    "ru": "Привет! У меня сейчас {date}.",
}


def date_message(story: StoryDate, language: str) -> str:
    return DATE_SAYINGS.get(language, DATE_SAYINGS["en"]).format(date=spoken(story, language))


@dataclass(frozen=True)
class Say:
    text: str
    wants_reply: bool = False  # the plan goes on from the agent's answer (a question), not just after it


@dataclass(frozen=True)
class Call:
    name: str
    args: dict[str, Any]

    @property
    def wants_result(self) -> bool:
        return self.name in RESULT_NEEDED


RESULT_NEEDED = {"facts_get_untold", "facts_read", "next_phase"}  # the plan reads what these return
Action = Say | Call
Plan = Generator[Action, str, None]  # yields actions, receives each one's result (reply or tool output)


@dataclass
class Move:
    """One persona turn: text for the agent (sent first) and the tool calls that run after it."""

    text: str | None
    calls: list[Call]


@dataclass(frozen=True)
class Done:
    """What the engine's note says was already done in the current phase (after a cut inside it)."""

    checks: frozenset[str] = frozenset()
    changed: frozenset[tuple[str, str]] = frozenset()  # (file, fact id) edited in this phase
    added: frozenset[tuple[str, int]] = frozenset()  # (file, section) that got a fact in this phase
    kept: int = 0  # messages after the note kept from before the cut: their work is in the lists above


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


def phase_plan(brief: str, language: str, done: Done = Done()) -> Plan:
    """The story's date when the brief says to tell it, then everything the phase asks, in the order its
    lines ask it (what `done` lists skipped), then next_phase until it accepts."""
    directives, _ = parse_directives(brief, "phase", answers_required=False)
    if directives["date"] is not None:
        yield Say(date_message(directives["date"], language))
    steps: list[tuple[int, int, Any]] = [(line_no, 0, ("tell", ref)) for line_no, ref in fact_refs_at(brief)]
    steps += [(m.line, 1, ("mention", m)) for m in directives["mentions"]]
    steps += [(e.line, 1, ("edit", e)) for e in directives["edits"] if (e.file, e.fact_id) not in done.changed]
    steps += [(a.line, 1, ("add", a)) for a in directives["additions"] if (a.file, a.section) not in done.added]
    steps += [(c.line, 1, ("check", c)) for c in directives["checks"] if c.id not in done.checks]
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
    first = unwrap_reply((yield Say(check.question, wants_reply=True)))
    verdict, answer, second = _impression(check, first), first, False
    if verdict.unknown and verdict.score < 10 and check.category is not Category.absent:
        answer = unwrap_reply((yield Say(SEARCH_PROMPTS.get(language, SEARCH_PROMPTS["en"]), wants_reply=True)))
        verdict, second = _impression(check, answer), True
    comment = verdict.comment + (f" (after a memory search; first answer: {first[:200]!r})" if second else "")
    yield Call("log_evaluation", {"check_id": check.id, "score": verdict.score, "answer": answer[:2000],
                                  "comment": comment, "second_attempt": second})


class Mover:
    """Packs a plan's actions into turns, as the protocol allows: a message and the calls whose results
    the plan does not read go together (calls left from before ride along too; they run after the
    message); a turn ends at a question, whose answer the plan reads, or at a call whose result it
    reads."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.next: Action = next(plan)
        self.awaiting = False  # the last move ended on an action whose outcome the plan waits for

    def move(self) -> Move:
        text: str | None = None
        calls: list[Call] = []
        action = self.next
        while True:
            if isinstance(action, Call):
                calls.append(action)
                if action.wants_result:
                    self.awaiting = True
                    return Move(text, calls)
            elif text is not None:
                self.next, self.awaiting = action, False  # a second message: the next turn's
                return Move(text, calls)
            else:
                text = action.text
                if action.wants_reply:
                    self.awaiting = True
                    return Move(text, calls)
            action = self.plan.send("")  # an outcome the plan does not read

    def feed(self, outcome: str) -> None:
        """The reply or tool result the last move was waiting for."""
        if self.awaiting:
            self.next = self.plan.send(outcome)
            self.awaiting = False


def _done(note: str) -> Done:
    """What an in-phase compaction note lists as done (see scenario.compaction_note)."""
    def listed(label: str) -> list[str]:
        line = next((x for x in note.splitlines() if x.startswith(label)), "")
        return [x.strip() for x in line[len(label):].split(",") if x.strip() and x.strip() != "none"]

    def pairs(label: str) -> list[tuple[str, str]]:
        return [(f, i) for f, _, i in (x.partition(" ") for x in listed(label)) if i]

    kept = listed(KEPT)
    return Done(checks=frozenset(listed(DONE_CHECKS)), changed=frozenset(pairs(DONE_CHANGED)),
                added=frozenset((f, int(i.split(".")[0])) for f, i in pairs(DONE_ADDED)),
                kept=int(kept[0]) if kept and kept[0].isdigit() else 0)


def _phase_start(messages: list[dict[str, Any]]) -> tuple[int, str, Done]:
    """Index and text of the latest phase brief (in a tool result, our opening message or a compaction
    note, never in agent text), and what that note lists as done."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        content = m.get("content") or ""
        if m["role"] in ("user", "tool") and PHASE_HEADER in content and not is_agent_reply(content):
            at = content.rindex(PHASE_HEADER)
            return i, content[at:], _done(content[:at])
    raise ValueError("no phase brief in the conversation")


def _outcome(messages: list[dict[str, Any]], at: int, move: Move) -> tuple[str, int]:
    """What the move at messages[at] got back (the last call's result, or the agent's reply when it
    ended on a question) and the index after it."""
    i = at + 1
    results = []
    while i < len(messages) and messages[i]["role"] == "tool":
        results.append(messages[i].get("content") or "")
        i += 1
    reply = ""
    if move.text is not None and i < len(messages) and is_agent_reply(messages[i].get("content") or ""):
        reply = messages[i]["content"]
        i += 1
    ends_on_call = bool(move.calls) and move.calls[-1].wants_result
    return (results[-1] if ends_on_call and results else reply), i


class ScriptedPersona:
    def __init__(self, language: str = "en"):
        self.language = language
        self.label = "scripted"
        self._ids = itertools.count(1)

    def decide(self, messages: list[dict[str, Any]]) -> Move:
        """Replay the current phase's plan against the turns since its brief (after a compaction's note,
        since the messages it kept, whose work the note lists as done); the next move."""
        start, brief, done = _phase_start(messages)
        mover = Mover(phase_plan(brief, self.language, done))
        move = mover.move()
        i = start + 1 + done.kept
        while i < len(messages):
            if messages[i]["role"] != "assistant":
                i += 1
                continue
            outcome, i = _outcome(messages, i, move)
            mover.feed(outcome)
            move = mover.move()
        return move

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelTurn:
        move = self.decide(messages)
        calls = [ToolCall(id=f"call_{len(messages)}_{next(self._ids)}", name=c.name,
                          arguments=json.dumps(c.args, ensure_ascii=False)) for c in move.calls]
        return ModelTurn(content=move.text, tool_calls=calls)

    async def aclose(self) -> None:
        return None
