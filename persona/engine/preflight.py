"""Before a long run, a few cheap calls show that the persona model can play it: it answers (with text
a person would type: no chat-template tokens, no copy of the prompt, within max_tokens), it calls a
tool in this protocol (written as text is read and counted, as runs do), its endpoint takes that call
and its result back in the history (the strict checks real servers make, Gemini's thought
signatures), and it reports usage. A judge model, when one grades, gets one real judge call on a
plain answer: it gives a verdict (the `grade` tool, or text, which runs accept and count), grades
that answer right, and reports usage. A model or endpoint that can't is refused in seconds, saying
what failed, not an hour into a marathon. `mmb check` runs the same checks alone. The calls go
through the run's own client path (retries, timeouts, repairs, the message guard; the judge's own
asking again), and count in the run's usage like every other call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from persona.benchmark.phases import Category
from persona.benchmark.phases import Check as BenchCheck
from persona.config import JudgeConfig, PersonaConfig
from persona.engine.guard import (
    FACT_LISTING,
    OTHER_TURN,
    PROMPT_ECHO,
    TEMPLATE_TOKENS,
    TOOL_MARKUP,
    PromptEcho,
    guard_message,
)
from persona.engine.intake import TEXT_CALLS, ReadTurn, read_turn, strip_reasoning
from persona.engine.judge import JudgeFailed, ModelJudge
from persona.engine.llm import ModelCallFailed, OpenAIPersona
from persona.engine.model import ModelTurn
from persona.engine.tools import TOOL_NAMES, TOOL_SPECS
from persona.errors import RunError
from persona.report.persona_lines import calls_text
from persona.state import TEXT_VERDICT, PersonaMessage, QuotedTurn, ToolCall, Usage

SYSTEM = "You check a tool protocol. Do exactly what the user asks, briefly."
SAY = "Reply with one short sentence saying hello."
CALL = "Call the tool facts_read with file 'profile'. Do not write any text."
PROFILE = "# Profile\n\n## 1. About me\n1.1 I'm Alex, 30 years old\n"
AFTER = "Thanks. Now, in one short sentence, tell me how old you are according to the profile."


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


# The judge's probe: an answer no working judge can grade wrong.
JUDGE_CHECK = BenchCheck(id="preflight", category=Category.single, question="How old am I?", answer="30")
JUDGE_TURNS = [QuotedTurn(turn=1, sent="How old am I?", reply=["You told me you are 30 years old."])]


# What an answer may not hold, by the message guard's classes: a person never types them.
NEVER_TYPED = {TEMPLATE_TOKENS: "chat-template tokens", OTHER_TURN: "a next turn after an end-of-turn token",
               TOOL_MARKUP: "the tool's own markup", PROMPT_ECHO: "the prompt it was given, echoed",
               FACT_LISTING: "lines numbered like the fact files"}


@dataclass
class Preflight:
    model: str
    role: str = "persona"
    checks: list[Check] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)  # every call made, failed ones and retries too: the run counts them
    cut_off: int = 0  # answers that ran to max_tokens
    seconds: float = 0.0

    @property
    def calls(self) -> int:
        return self.usage.calls

    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def render(self) -> str:
        parts = [f"{c.name}: {'ok' if c.ok else 'FAILED'}" + (f" ({c.detail})" if c.detail else "") for c in self.checks]
        cut = f", {self.cut_off} cut off at max_tokens" if self.cut_off else ""
        return (f"{self.role} model {self.model}: " + "; ".join(parts)
                + f" — {calls_text(self.usage)}{cut}, {self.prompt_tokens:,} tokens in, {self.seconds:.1f} s")

    def failure(self) -> str:
        failed = [c for c in self.checks if not c.ok]
        return "; ".join(f"{c.name}: {c.detail}" for c in failed)


async def preflight(cfg: PersonaConfig) -> Preflight:
    """Run the checks with the configured model; never raises for what the model or endpoint does."""
    return await _timed(Preflight(cfg.model), lambda: OpenAIPersona(cfg), _run_checks)


async def judge_preflight(cfg: JudgeConfig) -> Preflight:
    """The judge's check: one judge call as a run makes it; never raises for what the model or endpoint does."""
    return await _timed(Preflight(cfg.label, role="judge"), lambda: ModelJudge(cfg), _judge_checks)


class _Client(Protocol):
    async def aclose(self) -> None: ...


C = TypeVar("C", bound=_Client)


async def _timed(report: Preflight, make: Callable[[], C], run: Callable[[C, Preflight], Awaitable[None]]) -> Preflight:
    """Make the client (failing that, the `connects` check fails), run the checks with it, close it; timed."""
    began = time.monotonic()
    try:
        client = make()
    except RunError as e:
        report.checks.append(Check("connects", False, str(e)))
        return report
    try:
        await run(client, report)
    finally:
        await client.aclose()
        report.seconds = time.monotonic() - began
    return report


async def _judge_checks(judge: ModelJudge, report: Preflight) -> None:
    try:
        judged = await judge.grade(JUDGE_CHECK, JUDGE_TURNS)
    except JudgeFailed as e:  # what its attempts cost is still shown, and counted
        report.checks.append(Check("gives a verdict", False, str(e)))
        report.usage = e.judged.usage
        return
    report.usage = judged.usage
    report.cut_off = sum("max_tokens" in note for note in judged.notes)
    as_text = TEXT_VERDICT in judged.notes
    report.checks.append(Check("gives a verdict", True, "as text, not a grade call (accepted, counted)" if as_text else ""))
    right = all(m.correct for m in judged.grade.items)
    report.checks.append(Check("grades a plain answer right", right, "" if right else
                               f"it marked {JUDGE_TURNS[0].reply[0]!r} wrong for the expected {JUDGE_CHECK.answer!r}: "
                               f"{judged.grade.comment[:120]!r}"))
    missing = judged.usage.counted  # no budget reads the judge's tokens: counted with tiktoken, the report says so
    report.checks.append(Check("reports usage", True, f"no: {missing} of {judged.usage.calls} responses without usage, "
                               "counted with tiktoken" if missing else "cached tokens reported"
                               if judged.usage.cache_reported else "no cached tokens reported"))


async def _ask(model: OpenAIPersona, report: Preflight, messages: list[dict], name: str) -> ModelTurn | None:
    try:
        turn = await model.complete([{"role": "system", "content": SYSTEM}, *messages], TOOL_SPECS)
    except ModelCallFailed as e:
        report.usage.record_failed(e.retries)
        report.checks.append(Check(name, False, str(e)))
        return None
    except RunError as e:
        report.checks.append(Check(name, False, str(e)))
        return None
    report.usage.record(0, turn.prompt_tokens or 0, turn.completion_tokens or 0, cached=turn.cached_tokens,
                        counted=turn.prompt_tokens is None or turn.completion_tokens is None, retries=turn.retries)
    report.cut_off += turn.cut_off
    return turn


def answer_problem(turn: ModelTurn, prompt: list[str], max_tokens: int) -> tuple[str | None, str]:
    """Why an answer is not one a person would type (None: it is), and the text that would be typed."""
    text = strip_reasoning(turn.content)
    guarded = guard_message(text, PromptEcho(prompt[0], notes=prompt[1:])) if text else None
    if guarded is None or (not guarded.text and not guarded.refused):
        return "no text in its reply", ""
    found = [what for kind, what in NEVER_TYPED.items() if kind in guarded.taken]
    if found:
        return f"its answer holds {', '.join(found)}, which a person never types: {text[:80]!r}", guarded.text
    if guarded.refused:
        return f"its answer would not be typed: {guarded.refused}: {text[:80]!r}", ""
    if turn.cut_off:
        return f"it did not end a one-sentence answer within max_tokens ({max_tokens}): {text[:60]!r}", guarded.text
    return None, guarded.text


async def _run_checks(model: OpenAIPersona, report: Preflight) -> None:
    turns: list[ModelTurn] = []
    hello = await _ask(model, report, [{"role": "user", "content": SAY}], "answers")
    if hello is None:
        return
    turns.append(hello)
    problem, text = answer_problem(hello, [SYSTEM, SAY], model.cfg.max_tokens)
    report.checks.append(Check("answers", problem is None, problem or f"{text[:60]!r}"))

    ask = [{"role": "user", "content": CALL}]
    called = await _ask(model, report, ask, "calls a tool")
    if called is None:
        return
    turns.append(called)
    read = read_turn(called, TOOL_NAMES)
    call = next((c for c in read.calls if c.name == "facts_read"), None)
    problem = _call_problem(call, read)
    as_text = [q for q in read.quirks if q.startswith(TEXT_CALLS)]
    report.checks.append(Check("calls a tool", problem is None, problem or (
        "written as text, read and run as a call (counted in a run's report)" if as_text else "")))
    if problem:
        return

    assert call is not None
    history = [*ask, PersonaMessage(role="assistant", tool_calls=[call.model_copy(update={"id": call.id or "mmb_check"})])
               .to_api(), {"role": "tool", "tool_call_id": call.id or "mmb_check", "content": PROFILE},
               {"role": "user", "content": AFTER}]
    back = await _ask(model, report, history, "takes the call and its result back")
    if back is None:
        return
    turns.append(back)
    report.checks.append(Check("takes the call and its result back", True))
    missing = sum(t.prompt_tokens is None or t.completion_tokens is None for t in turns)
    cached = "cached tokens reported" if any(t.cached_tokens is not None for t in turns) else "no cached tokens reported"
    report.checks.append(Check("reports usage", not missing, f"{missing} of {len(turns)} responses without usage; budgets "
                               "and the report need it (persona.preflight false skips this check)" if missing else cached))


def _call_problem(call: ToolCall | None, read: ReadTurn) -> str | None:
    if call is None:
        names = [c.name for c in read.calls]
        return (f"asked to call facts_read, it called {names}" if names else
                f"asked to call facts_read, it wrote text instead: {read.text[:80]!r}; the model "
                "or the server's tool parser does not do tool calls")
    if call.problem:
        return call.problem
    try:
        args = json.loads(call.arguments)
    except ValueError:
        return f"the call's arguments are not JSON: {call.arguments[:80]!r}"
    if not isinstance(args, dict) or "file" not in args:
        return f"the call's arguments lack 'file': {call.arguments[:80]!r}"
    return None
