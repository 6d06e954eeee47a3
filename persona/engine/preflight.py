"""Before a long run, a few cheap calls show that the persona model can play it: it answers, it calls a
tool in this protocol, its endpoint takes that call and its result back in the history (the strict
checks real servers make, Gemini's thought signatures), and it reports usage. A model or endpoint
that can't is refused in seconds, saying what failed, not an hour into a marathon. `mmb check` runs
the same checks alone. The calls go through the run's own client path (retries, timeouts, repairs).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from persona.config import PersonaConfig
from persona.engine.intake import strip_reasoning
from persona.engine.llm import OpenAIPersona
from persona.engine.model import ModelTurn
from persona.engine.tools import TOOL_SPECS
from persona.errors import RunError
from persona.state import PersonaMessage, ToolCall

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


@dataclass
class Preflight:
    model: str
    checks: list[Check] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def render(self) -> str:
        parts = [f"{c.name}: {'ok' if c.ok else 'FAILED'}" + (f" ({c.detail})" if c.detail else "") for c in self.checks]
        return (f"persona model {self.model}: " + "; ".join(parts)
                + f" — {self.calls} calls, {self.prompt_tokens:,} tokens in, {self.seconds:.1f} s")

    def failure(self) -> str:
        failed = [c for c in self.checks if not c.ok]
        return "; ".join(f"{c.name}: {c.detail}" for c in failed)


async def preflight(cfg: PersonaConfig) -> Preflight:
    """Run the checks with the configured model; never raises for what the model or endpoint does."""
    report = Preflight(cfg.model)
    began = time.monotonic()
    try:
        model = OpenAIPersona(cfg)
    except RunError as e:
        report.checks.append(Check("connects", False, str(e)))
        return report
    try:
        await _run_checks(model, report)
    finally:
        await model.aclose()
        report.seconds = time.monotonic() - began
    return report


async def _ask(model: OpenAIPersona, report: Preflight, messages: list[dict], name: str) -> ModelTurn | None:
    try:
        turn = await model.complete([{"role": "system", "content": SYSTEM}, *messages], TOOL_SPECS)
    except RunError as e:
        report.checks.append(Check(name, False, str(e)))
        return None
    report.calls += 1
    report.prompt_tokens += turn.prompt_tokens or 0
    return turn


async def _run_checks(model: OpenAIPersona, report: Preflight) -> None:
    turns: list[ModelTurn] = []
    hello = await _ask(model, report, [{"role": "user", "content": SAY}], "answers")
    if hello is None:
        return
    turns.append(hello)
    text = strip_reasoning(hello.content)
    report.checks.append(Check("answers", bool(text), f"{text[:60]!r}" if text else "no text in its reply"))

    ask = [{"role": "user", "content": CALL}]
    called = await _ask(model, report, ask, "calls a tool")
    if called is None:
        return
    turns.append(called)
    call = next((c for c in called.tool_calls if c.name == "facts_read"), None)
    problem = _call_problem(call, called)
    report.checks.append(Check("calls a tool", problem is None, problem or ""))
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


def _call_problem(call: ToolCall | None, turn: ModelTurn) -> str | None:
    if call is None:
        names = [c.name for c in turn.tool_calls]
        return (f"asked to call facts_read, it called {names}" if names else
                f"asked to call facts_read, it wrote text instead: {strip_reasoning(turn.content)[:80]!r}; the model "
                "or the server's tool parser does not do tool calls")
    try:
        args = json.loads(call.arguments)
    except ValueError:
        return f"the call's arguments are not JSON: {call.arguments[:80]!r}"
    if not isinstance(args, dict) or "file" not in args:
        return f"the call's arguments lack 'file': {call.arguments[:80]!r}"
    return None
