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
from typing import TYPE_CHECKING, Any, Protocol

from persona.benchmark.grading import counts_half, final_score, grade, items_found, items_score, says_unknown, stems
from persona.benchmark.phases import Check
from persona.config import JudgeConfig, PersonaConfig
from persona.engine.intake import REPLACED_IDS, ReadTurn, read_turn, repair_call
from persona.engine.llm import ModelCallFailed, OpenAIPersona
from persona.engine.model import ModelTurn
from persona.engine.scenario import prompt_file
from persona.errors import RunError
from persona.state import ASKED_AGAIN, QUIRK, TEXT_VERDICT, Exchange, Grade, ItemMark, PersonaMessage, QuotedTurn, RunState, Usage
from persona.tokens import MESSAGE_OVERHEAD, TokenCounter

if TYPE_CHECKING:
    from persona.engine.memory import MemoryJudge

RUBRIC_FILE = "rubric.md"
GRADE_TOOL: dict[str, Any] = {"type": "function", "function": {  # valid under `strict: true`, as the persona's tools
    "name": "grade",
    "description": "Your verdict on the agent's final answer; the score is computed from it.",
    "strict": True,
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
    """A judge's grade and what it cost: its calls counted as the persona's are (the client's retries,
    cached tokens, our own count where a response had no usage)."""

    grade: Grade
    usage: Usage = field(default_factory=Usage)
    # answers asked again (and why), verdicts taken from text, what was cleaned out of responses
    notes: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return self.usage.calls


class Judge(Protocol):
    label: str

    async def grade(self, check: Check, turns: list[QuotedTurn]) -> Judged: ...

    async def find_in_memory(self, check: Check, memory: str) -> Judged:
        """Whether the agent's saved memory (a snapshot, as text) holds each expected item, in any wording:
        the memory autopsy's question (engine/memory.py judge_paraphrases), scored like a grade."""
        ...

    async def aclose(self) -> None: ...


# -- what the judge reads ---------------------------------------------------------------------------


def answer_turns(window: list[Exchange], question: str) -> list[QuotedTurn]:
    """The chat from the question to the grade: of the exchanges a grade is about (tools.ToolBox's
    answer window: since the phase began and the last grade, up to when the persona wrote the call),
    those from the earliest message that shares the most words with the question (the persona asks in
    its own words), a message that asks something first: a correction told just before the question
    in the same words ("my new bike cost 720 EUR" before "how much did my new bike cost?") is not where
    the question was asked. With no word in common, the whole window: better the judge reads more than
    misses the question."""
    wanted = stems(question)
    shared = [(len(wanted & stems(ex.sent)), "?" in ex.sent) for ex in window]
    asking = [(n if asks else 0) for n, asks in shared]
    counts = asking if any(asking) else [n for n, _ in shared]
    start = counts.index(max(counts)) if counts and max(counts) > 0 else 0
    return [QuotedTurn(turn=ex.turn, sent=ex.sent, reply=list(ex.reply)) for ex in window[start:]]


def reply_text(turn: QuotedTurn) -> str:
    return "\n\n".join(turn.reply)


def _asked(check: Check) -> dict[str, Any]:
    """What the judge is told of the check; a trap answer (the rubric's `wrong_answer`) only when it has one."""
    out: dict[str, Any] = {"question": check.question, "category": check.category.value, "expected_items": check.items}
    if check.wrong_answer:
        out["wrong_answer"] = check.wrong_answer
    return out


def judge_request(check: Check, turns: list[QuotedTurn]) -> str:
    """The user message of a judge call: JSON, so the agent's text is a quoted string, never structure."""
    return json.dumps({
        **_asked(check), "conversation": [{"user": t.sent, "agent": t.reply} for t in turns],
    }, ensure_ascii=False, indent=1)


def memory_request(check: Check, memory: str) -> str:
    """A judge call about a memory snapshot (the rubric's "Memory snapshots"): the memory in place of a
    conversation, as a quoted string too."""
    return json.dumps({**_asked(check), "agent_memory": memory}, ensure_ascii=False, indent=1)


# -- from a verdict to a grade ------------------------------------------------------------------------


class VerdictError(ValueError):
    """A judge's answer that is not a usable verdict; the text goes back to the model."""


class JudgeFailed(RunError):
    """The judge could not grade (no valid verdict, or its endpoint failed); the run stops, resumable,
    with what the judge spent on the check still in `judged`."""

    def __init__(self, message: str, judged: Judged):
        super().__init__(message)
        self.judged = judged


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


def rule_memory_verdict(check: Check, memory: str) -> dict[str, Any]:
    """The offline judge on a memory snapshot: an item is held by a line that gives it by the grader's rule
    and shares a word with the question (the autopsy's own guard: a stray "2" is not the answer 2)."""
    anchors = stems(check.question)
    lines = [line.strip() for line in memory.splitlines() if line.strip() and not line.startswith("## ")]
    lines = [line for line in lines if stems(line) & anchors]
    items = []
    for i, item in enumerate(check.items):
        held = next((line for line in lines if items_found(check, line)[i]), "")
        items.append({"item": item, "correct": bool(held), "evidence": held[:200]})
    return {"items": items, "after_memory_search": False, "comment": "read by rule, line by line"}


class RuleJudge:
    """Deterministic and offline: `rule_verdict`, scored by the same code as a model's verdict."""

    label = "rules"

    async def grade(self, check: Check, turns: list[QuotedTurn]) -> Judged:
        return Judged(parse_verdict(check, rule_verdict(check, turns), self.label))

    async def find_in_memory(self, check: Check, memory: str) -> Judged:
        return Judged(parse_verdict(check, rule_memory_verdict(check, memory), self.label))

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
            temperature=cfg.temperature, timeout_s=cfg.timeout_s, max_retries=cfg.max_retries,
            tool_schema=cfg.tool_schema or "auto", **({"max_tokens": cfg.max_tokens} if cfg.max_tokens else {})),
            role="judge")

    async def grade(self, check: Check, turns: list[QuotedTurn]) -> Judged:
        return await self._verdict(check, judge_request(check, turns))

    async def find_in_memory(self, check: Check, memory: str) -> Judged:
        return await self._verdict(check, memory_request(check, memory))

    async def _verdict(self, check: Check, request: str) -> Judged:
        """Ask until the answer is a valid verdict (each refused one goes back with what to fix). Whatever
        happens, what the judge spent is in the result or in the JudgeFailed raised, never lost."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system},
                                          {"role": "user", "content": request}]
        judged = Judged(Grade(grader=self.label, raw_score=0, score=0))
        last = ""
        for _ in range(self.cfg.max_attempts):
            try:
                turn = await self.client.complete(messages, [GRADE_TOOL])
            except ModelCallFailed as e:  # the endpoint gave up: the call and its retries still count
                judged.usage.record_failed(e.retries)
                raise JudgeFailed(f"the judge ({self.label}) failed: {e}", judged) from None
            except RunError as e:
                raise JudgeFailed(f"the judge ({self.label}) failed: {e}", judged) from None
            except Exception as e:  # a bug of ours on a strange response: the judge's failure, never the persona's
                raise JudgeFailed(f"the judge ({self.label}) failed: {type(e).__name__}: {e}", judged) from e
            try:
                self._account(judged, messages, turn)
                read = read_turn(turn, [GRADE_TOOL["function"]["name"]])
                judged.notes += [f"{QUIRK}{quirk}" for quirk in read.quirks]
                judged.grade = parse_verdict(check, verdict_arguments(read), self.label)
                if not any(c.name == "grade" for c in read.calls):
                    judged.notes.append(TEXT_VERDICT)
                return judged
            except VerdictError as e:
                judged.notes.append(f"{ASKED_AGAIN}{e}")
                again, quirks = _asked_again(read, str(e))
                messages += again
                judged.notes += [f"{QUIRK}{quirk}" for quirk in quirks]
                last = str(e)
            except Exception as e:  # a bug of ours on a strange answer: the judge's failure, never the persona's
                raise JudgeFailed(f"the judge ({self.label}) failed on its answer: {type(e).__name__}: {e}", judged) from e
        raise JudgeFailed(f"the judge ({self.label}) gave no valid verdict on check {check.id} in "
                          f"{self.cfg.max_attempts} attempts; last: {last}", judged)

    def _account(self, judged: Judged, messages: list[dict[str, Any]], turn: ModelTurn) -> None:
        """The call's usage, ours where the response reported none; anything cleaned out of it noted."""
        prompt, completion = turn.prompt_tokens, turn.completion_tokens
        ours = prompt is None or completion is None
        if prompt is None:
            prompt = sum(MESSAGE_OVERHEAD + self.counter.count(str(m.get("content") or "")) for m in messages) \
                + self.counter.count(json.dumps(GRADE_TOOL))
        if completion is None:
            completion = self.counter.count(turn.content) + sum(self.counter.count(c.arguments) for c in turn.tool_calls)
        judged.usage.record(0, prompt, completion, cached=turn.cached_tokens, counted=ours, retries=turn.retries)
        judged.notes += [f"{QUIRK}{quirk}" for quirk in turn.quirks]

    async def aclose(self) -> None:
        await self.client.aclose()


NO_VERDICT = "no verdict: call the tool `grade` with items, after_memory_search and comment"


def verdict_arguments(read: ReadTurn) -> Any:
    """The `grade` call's arguments; else a JSON object written in the text (reasoning taken out). Never
    raises but VerdictError: any text, no brace, one brace, broken JSON, is a missing verdict."""
    calls = [c for c in read.calls if c.name == "grade"]
    if calls:
        if calls[0].problem:
            raise VerdictError(calls[0].problem)
        try:
            return json.loads(calls[0].arguments)
        except ValueError as e:
            raise VerdictError(f"the arguments of `grade` are not JSON ({e}); {NO_VERDICT}") from None
    found = first_json_object(read.text)
    if found is None:
        raise VerdictError(NO_VERDICT)
    return found


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text`, wherever it starts; None when there is none."""
    decoder = json.JSONDecoder()
    at = text.find("{")
    while at != -1:
        try:
            value, _ = decoder.raw_decode(text, at)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        at = text.find("{", at + 1)
    return None


def _asked_again(read: ReadTurn, problem: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The refused answer and why, laid out as a strict server accepts (the persona's rules, intake.py:
    no reasoning sent back, calls repaired, every call answered, no empty turn); and what had to change."""
    note = f"Error: {problem}. Call `grade` again with the whole verdict."
    text = read.text or None
    if not read.calls:
        return [{"role": "assistant", "content": text or "(no verdict)"}, {"role": "user", "content": note}], []
    calls, quirks = [], []
    for i, call in enumerate(read.calls):
        fixed, changed = repair_call(call)
        quirks += changed
        if not fixed.id or fixed.id in {c.id for c in calls}:
            quirks.append(REPLACED_IDS)
            fixed = fixed.model_copy(update={"id": f"judge_{i}"})
        calls.append(fixed)
    message = PersonaMessage(role="assistant", content=text, tool_calls=calls).to_api()
    return [message, *({"role": "tool", "tool_call_id": c.id, "content": note} for c in calls)], quirks


def memory_judge(judge: Judge, state: RunState) -> MemoryJudge:
    """The judge as the memory autopsy asks it (engine/memory.py judge_paraphrases): per expected item,
    whether the snapshot holds it, and the words that decided it. Its calls count in the run's judge
    usage and notes, as its grades' do."""

    async def ask(check: Check, memory: str) -> tuple[list[bool], str]:
        try:
            judged = await judge.find_in_memory(check, memory)
        except JudgeFailed as e:
            count_judge(state, f"{check.id} (memory)", e.judged)
            raise
        count_judge(state, f"{check.id} (memory)", judged)
        marks = judged.grade.items
        return [m.correct for m in marks], "; ".join(m.evidence for m in marks if m.correct and m.evidence)

    return ask


def count_judge(state: RunState, what: str, judged: Judged) -> None:
    """A judge's calls for one check added to the run's judge usage; what its answers needed, to its notes."""
    state.judge_usage.merge(judged.usage, state.phase)
    state.judge_notes += [f"{what}: {note}"[:300] for note in judged.notes]


def make_judge(cfg: JudgeConfig | None) -> Judge | None:
    """The run's judge; None when the persona grades (config `judge: "persona"`)."""
    if cfg is None:
        return None
    return RuleJudge() if cfg.kind == "rules" else ModelJudge(cfg)
