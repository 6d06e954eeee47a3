"""The judge: grades a check from the agent's own words, apart from the persona that asked it.

The persona runs the exam (asks, asks for a memory search after "you never told me", calls
`log_evaluation` when the answer is final); the judge then reads the chat from the question to
that call and says, for each expected item, whether the agent's final answer gives it, and whether
that answer came only after a memory search. Code, not the model, turns this into a score
(grading.items_score and counts_half), so the rules hold whatever the model writes.

Two judges: `ModelJudge` (any OpenAI-compatible model at temperature 0, the rubric in
prompts/rubric.md, its verdict through the `grade` tool) and `RuleJudge` (deterministic, offline:
the scripted persona's rule grader, for the demo and tests).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from persona.benchmark.grading import counts_half, final_score, grade, items_found, items_score, says_unknown, stems
from persona.benchmark.phases import Check
from persona.config import JudgeConfig, PersonaConfig
from persona.engine.llm import OpenAIPersona
from persona.engine.model import ModelTurn
from persona.engine.scenario import prompt_file
from persona.errors import RunError
from persona.state import ASKED_AGAIN, TEXT_VERDICT, Exchange, Grade, ItemMark, QuotedTurn
from persona.tokens import TokenCounter

RUBRIC_FILE = "rubric.md"
GRADE_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": "grade",
    "description": "Your verdict on the agent's final answer; the score is computed from it.",
    "parameters": {
        "type": "object",
        "properties": {
            "items": {"type": "array", "description": "One entry per expected item, in the order given", "items": {
                "type": "object",
                "properties": {"item": {"type": "string", "description": "The expected item, copied exactly"},
                               "correct": {"type": "boolean"},
                               "evidence": {"type": "string", "description": "The agent's words that decided it"}},
                "required": ["item", "correct", "evidence"], "additionalProperties": False}},
            "after_memory_search": {"type": "boolean",
                                    "description": "Answered only after the user asked it to search its memory"},
            "comment": {"type": "string", "description": "Why, in one sentence"},
        },
        "required": ["items", "after_memory_search", "comment"], "additionalProperties": False,
    },
}}


def rubric() -> str:
    return prompt_file(RUBRIC_FILE)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Judged:
    """A judge's grade and what it cost."""

    grade: Grade
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)  # answers asked again (and why), verdicts taken from text


class Judge(Protocol):
    label: str

    async def grade(self, check: Check, turns: list[QuotedTurn]) -> Judged: ...

    async def aclose(self) -> None: ...


# -- what the judge reads ---------------------------------------------------------------------------


def answer_turns(exchanges: list[Exchange], question: str, after_turn: int, phase: int) -> list[QuotedTurn]:
    """The chat from the question to now: the exchanges of this phase since the last grade, from the
    earliest message that shares the most words with the question (the persona asks in its own words).
    With no word in common, the whole stretch: better the judge reads more than misses the question."""
    window = [ex for ex in exchanges if ex.turn > after_turn and ex.phase == phase]
    wanted = stems(question)
    shared = [len(wanted & stems(ex.sent)) for ex in window]
    start = shared.index(max(shared)) if shared and max(shared) > 0 else 0
    return [QuotedTurn(turn=ex.turn, sent=ex.sent, reply=list(ex.reply)) for ex in window[start:]]


def reply_text(turn: QuotedTurn) -> str:
    return "\n\n".join(turn.reply)


def judge_request(check: Check, turns: list[QuotedTurn]) -> str:
    """The user message of a judge call: JSON, so the agent's text is a quoted string, never structure."""
    return json.dumps({
        "question": check.question, "category": check.category.value, "expected_items": check.items,
        "conversation": [{"user": t.sent, "agent": t.reply} for t in turns],
    }, ensure_ascii=False, indent=1)


# -- from a verdict to a grade ------------------------------------------------------------------------


class VerdictError(ValueError):
    """A judge's answer that is not a usable verdict; the text goes back to the model."""


def graded(check: Check, marks: list[ItemMark], after_memory_search: bool, comment: str, grader: str) -> Grade:
    """The rules, by code: 0 or 10 for one value, 10 × right / expected for a list, ×0.5 after a search."""
    raw = items_score(check, [m.correct for m in marks])
    second = counts_half(check, after_memory_search)
    return Grade(grader=grader, raw_score=raw, score=final_score(raw, second), second_attempt=second,
                 comment=comment, items=marks)


def _norm(text: str) -> str:
    return " ".join(str(text).lower().split())


def parse_verdict(check: Check, args: Any, grader: str) -> Grade:
    """A `grade` call's arguments as a Grade; VerdictError says what to fix."""
    if not isinstance(args, dict):
        raise VerdictError("the verdict must be a JSON object with items, after_memory_search and comment")
    items, after, comment = args.get("items"), args.get("after_memory_search"), args.get("comment", "")
    expected = check.items
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("correct"), bool) for i in items):
        raise VerdictError("`items` must be a list of {item, correct: true/false, evidence}")
    if len(items) != len(expected):
        raise VerdictError(f"give exactly {len(expected)} item(s), one per expected item: {json.dumps(expected, ensure_ascii=False)}")
    if not isinstance(after, bool):
        raise VerdictError("`after_memory_search` must be true or false")
    by_name = {_norm(i.get("item", "")): i for i in items}
    marks = []
    for position, item in enumerate(expected):  # matched by name; a renamed item by its position
        given = by_name.get(_norm(item), items[position])
        marks.append(ItemMark(item=item, correct=given["correct"], evidence=str(given.get("evidence") or "")[:500]))
    return graded(check, marks, after, str(comment or "")[:1000], grader)


# -- the judges -----------------------------------------------------------------------------------


def rule_verdict(check: Check, turns: list[QuotedTurn]) -> dict[str, Any]:
    """The offline judge's verdict, as a model would write it: the final reply graded by rule (numbers,
    words); a memory search when the first reply said "you never told me" and a later one answered."""
    final = reply_text(turns[-1])
    found = items_found(check, final)
    return {"items": [{"item": item, "correct": ok, "evidence": final[:200] if ok else ""}
                      for item, ok in zip(check.items, found, strict=True)],
            "after_memory_search": len(turns) > 1 and says_unknown(reply_text(turns[0])),
            "comment": grade(check, final).comment}


class RuleJudge:
    """Deterministic and offline: `rule_verdict`, scored by the same code as a model's verdict."""

    label = "rules"

    async def grade(self, check: Check, turns: list[QuotedTurn]) -> Judged:
        return Judged(parse_verdict(check, rule_verdict(check, turns), self.label))

    async def aclose(self) -> None:
        return None


class ModelJudge:
    """A model behind any OpenAI-compatible endpoint, through the persona's own client code."""

    def __init__(self, cfg: JudgeConfig, counter: TokenCounter | None = None):
        self.cfg = cfg
        self.label = cfg.label
        self.system = rubric()
        self.counter = counter or TokenCounter()
        self.client = OpenAIPersona(PersonaConfig(
            kind="openai", base_url=cfg.base_url, model=cfg.model or "", api_key_env=cfg.api_key_env or "OPENAI_API_KEY",
            temperature=cfg.temperature, timeout_s=cfg.timeout_s, max_retries=cfg.max_retries), role="judge")

    async def grade(self, check: Check, turns: list[QuotedTurn]) -> Judged:
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system},
                                          {"role": "user", "content": judge_request(check, turns)}]
        judged = Judged(Grade(grader=self.label, raw_score=0, score=0))
        for _ in range(self.cfg.max_attempts):
            turn = await self.client.complete(messages, [GRADE_TOOL])
            self._account(judged, messages, turn)
            try:
                judged.grade = parse_verdict(check, _verdict_arguments(turn), self.label)
                if not any(c.name == "grade" for c in turn.tool_calls):
                    judged.notes.append(TEXT_VERDICT)
                return judged
            except VerdictError as e:
                judged.notes.append(f"{ASKED_AGAIN}{e}")
                messages += _asked_again(turn, str(e))
        raise RunError(f"the judge ({self.label}) gave no valid verdict on check {check.id} in {self.cfg.max_attempts} "
                       f"attempts; last: {judged.notes[-1].removeprefix(ASKED_AGAIN)}")

    def _account(self, judged: Judged, messages: list[dict[str, Any]], turn: ModelTurn) -> None:
        judged.calls += 1
        judged.prompt_tokens += turn.prompt_tokens if turn.prompt_tokens is not None else \
            sum(self.counter.count(str(m.get("content") or "")) for m in messages)
        judged.completion_tokens += turn.completion_tokens if turn.completion_tokens is not None else \
            self.counter.count(turn.content) + sum(self.counter.count(c.arguments) for c in turn.tool_calls)

    async def aclose(self) -> None:
        await self.client.aclose()


def _verdict_arguments(turn: ModelTurn) -> Any:
    """The `grade` call's arguments; a verdict written as a JSON object in the text is taken too."""
    calls = [c for c in turn.tool_calls if c.name == "grade"]
    text = calls[0].arguments if calls else (turn.content or "").strip()
    if not calls and "{" in text:
        text = text[text.index("{"):text.rindex("}") + 1]
    try:
        return json.loads(text)
    except ValueError:
        raise VerdictError("no verdict: call the tool `grade` with items, after_memory_search and comment") from None


def _asked_again(turn: ModelTurn, problem: str) -> list[dict[str, Any]]:
    """The refused answer and why, laid out as a strict server accepts: every tool call gets its result."""
    note = f"Error: {problem}. Call `grade` again with the whole verdict."
    if not turn.tool_calls:
        return [{"role": "assistant", "content": turn.content or ""}, {"role": "user", "content": note}]
    calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _json_object(c.arguments)}}
             for c in turn.tool_calls]
    return [{"role": "assistant", "content": turn.content, "tool_calls": calls},
            *({"role": "tool", "tool_call_id": c.id, "content": note} for c in turn.tool_calls)]


def _json_object(arguments: str) -> str:
    """Arguments as sent back: a server that parses the history refuses a call that is not a JSON object."""
    try:
        return arguments if isinstance(json.loads(arguments), dict) else "{}"
    except ValueError:
        return "{}"


def make_judge(cfg: JudgeConfig | None) -> Judge | None:
    """The run's judge; None when the persona grades (config `judge: "persona"`)."""
    if cfg is None:
        return None
    return RuleJudge() if cfg.kind == "rules" else ModelJudge(cfg)
