"""What a benchmark needs of the persona's context (`compaction.max_tokens`), known before a run starts.

A run stops, however long it has played, when one turn with what must stay beside it cannot fit
under max_tokens: no compaction can cut a single turn. Some of those turns are known from the
benchmark alone: reading a fact file (facts_read returns it whole; facts_get_untold, all of it not yet
told), entering a phase (its brief), and the opening message. Each is counted here as the run would
count it, with the system prompt and tools and the note a compaction leaves, so `mmb validate`, the
dry run and `mmb run` say so at once, with the file and line, instead of after hours of play. Each
part is counted at its smallest (the shorter prompt, briefs without answers, the note the cheapest
cut leaves, naming only what must be loaded), so what is reported is a certain stop; our count is
tiktoken's, and an endpoint that counts more only makes it tighter.
"""

from __future__ import annotations

import json

from persona.benchmark.links import first_told
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Phase
from persona.config import CompactionConfig
from persona.engine.loop import message_tokens
from persona.engine.scenario import compaction_note, opening_message, phase_brief, system_prompt
from persona.engine.tools import TOOL_SPECS
from persona.errors import Problem
from persona.state import Claim, PersonaMessage, RunState
from persona.tokens import MESSAGE_OVERHEAD, TokenCounter

CALL_ID = "call_0123456789abcdefghijklmn"  # as long as the ids models give tool calls


def fit_problems(bench: Benchmark, compaction: CompactionConfig, setting: Problem | None = None) -> list[Problem]:
    """Each turn the benchmark makes that cannot fit under max_tokens, at its file and line; `setting` is
    where the compaction settings are (config.jsonc and its line), for a problem of theirs."""
    counter = TokenCounter(compaction.encoding)
    fixed = min(counter.count(system_prompt(bench, judged=judged)) for judged in (False, True)) \
        + MESSAGE_OVERHEAD + counter.count(json.dumps(TOOL_SPECS))
    ceiling = compaction.max_tokens
    if fixed + compaction.trim_to_tokens >= ceiling:
        where = setting or Problem("compaction (the defaults)", None, "")
        return [Problem(where.file, where.line,
                        f"the system prompt and tools take {fixed:,} tokens with this benchmark, so with trim_to_tokens "
                        f"{compaction.trim_to_tokens:,} a compacted history would not fit under max_tokens {ceiling:,}; "
                        f"raise max_tokens above {fixed + compaction.trim_to_tokens:,} (or lower trim_to_tokens)")]
    state = _start(bench)
    problems = []
    told = first_told(bench)
    for phase in bench.phases[1:]:  # the first one comes in the opening message
        note = _note_tokens(counter, bench, state, phase, [])
        brief = _tool_result(counter, phase_brief(bench, phase, judged=True))
        if fixed + note + brief >= ceiling:
            problems.append(Problem(phase.chapter, phase.line, _over(
                f"phase '{phase.title}' is too big to fit: entering it", brief, fixed, note, ceiling, "split the phase")))
    if bench.phases:
        first = bench.phases[0]
        opening = message_tokens(counter, PersonaMessage(role="user", content=opening_message(
            bench, state, phase_brief(bench, first))))
        if fixed + opening >= ceiling:
            problems.append(Problem(first.chapter, first.line, _over(
                "the opening message (the profile, the fact files, the first phase)", opening, fixed, 0, ceiling,
                "shorten the profile or the first phase")))
    for name, ff in bench.fact_files.items():
        if name == bench.profile.name:
            continue
        phase = bench.phases[told[name]] if name in told else None
        note = _note_tokens(counter, bench, state, phase, [name])
        read = _tool_result(counter, ff.render())
        if fixed + note + read >= ceiling:
            problems.append(Problem(bench.display(f"{name}.md"), 1, _over(
                "reading this fact file (facts_read, facts_get_untold)", read, fixed, note, ceiling,
                "split it into smaller fact files")))
    return problems


def _over(what: str, tokens: int, fixed: int, note: int, ceiling: int, fix: str) -> str:
    beside = f"the system prompt and tools ({fixed:,})" + (f" and the note a compaction leaves ({note:,})" if note else "")
    return (f"{what} takes {tokens:,} tokens; with {beside} that is {tokens + fixed + note:,}, over "
            f"compaction.max_tokens ({ceiling:,}), and no compaction can cut a single turn, so a run would stop "
            f"there: {fix}, or raise compaction.max_tokens above {tokens + fixed + note:,}")


def _start(bench: Benchmark) -> RunState:
    return RunState(run_id="fit", benchmark=str(bench.root), driver="", persona_model="", facts=dict(bench.fact_files))


def _note_tokens(counter: TokenCounter, bench: Benchmark, state: RunState, phase: Phase | None, loaded: list[str]) -> int:
    """The least a cut leaves beside a turn of `phase`, naming the `loaded` files: after the first phase, a cut
    at the phase's start (its note without the brief: compaction.plan_cut tries that first); in the first,
    which has no start to cut at, a cut inside it, whose note repeats the brief."""
    state.loaded_files = {name: Claim(turn=0, step=0) for name in loaded}
    if phase is None or phase.index > 0:
        return MESSAGE_OVERHEAD + counter.count(compaction_note(bench, state, judged=True))
    state.phase = phase.index
    return MESSAGE_OVERHEAD + counter.count(compaction_note(bench, state, in_phase=True, judged=True))


def _tool_result(counter: TokenCounter, content: str) -> int:
    """A tool call and its result: the turn that brings `content` into the context."""
    call = PersonaMessage(role="assistant", content=None, tool_calls=[])
    return message_tokens(counter, call) + message_tokens(counter, PersonaMessage(role="tool", content=content,
                                                                                   tool_call_id=CALL_ID))
