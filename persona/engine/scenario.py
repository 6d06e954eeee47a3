"""Where the run is in the benchmark: entering phases (running their JS), and what the persona is shown."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

from persona.benchmark.js_sandbox import ScriptError, run_block
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Phase
from persona.errors import RunError
from persona.state import RunState

PHASE_HEADER = "## Current phase ("  # the scripted persona finds its phase by this header
NewSession = Callable[[int], Awaitable[None]]


class ScenarioError(RunError):
    """A phase's JS block failed at run time: a benchmark bug, reported with file:line."""


def system_prompt(bench: Benchmark) -> str:
    universal = resources.files("persona").joinpath("prompts/system.md").read_text(encoding="utf-8").strip()
    return f"{universal}\n\n# Your scenario\n\n{bench.instructions}\n"


def phase_brief(bench: Benchmark, phase: Phase) -> str:
    return f"{PHASE_HEADER}{phase.index + 1} of {len(bench.phases)}): {phase.title}\n\n{phase.body}\n"


def fact_file_list(bench: Benchmark, state: RunState) -> str:
    others = [f for name, f in state.facts.items() if name != bench.profile.name]
    return ", ".join(f"`{f.name}` ({f.title}, {len(f.live_facts())} facts)" for f in others) or "none"


def profile_block(bench: Benchmark, state: RunState, header: str = "# Your profile") -> str:
    return f"{header} (fact file `{bench.profile.name}`)\n\n{state.facts[bench.profile.name].render()}"


def live_profile_block(bench: Benchmark, state: RunState) -> str:
    """After a change to the profile: the whole live copy, which replaces every earlier one in the context."""
    return profile_block(bench, state, "# Your profile as it is now, replacing any earlier copy")


def opening_message(bench: Benchmark, state: RunState, brief: str) -> str:
    return (f"{profile_block(bench, state)}\nFact files you can load with facts_read: {fact_file_list(bench, state)}.\n\n"
            f"{brief}")


DONE_CHECKS, DONE_CHANGED, DONE_ADDED = "- checks graded: ", "- facts changed: ", "- facts added: "


def compaction_note(bench: Benchmark, state: RunState, in_phase: bool = False) -> str:
    """What the persona goes on from after a compaction; cut inside a phase, that phase's brief too,
    and what was already done in it."""
    loaded = ", ".join(f"`{n}`" for n in state.loaded_files) or "none"
    note = (f"(Your context was compacted: older messages were dropped. Here is what you need to go on.)\n\n"
            f"{profile_block(bench, state)}\nFact files you had loaded: {loaded}. Reload any with facts_read; "
            f"all fact files: {fact_file_list(bench, state)}.")
    if not in_phase:
        return note
    return (f"{note}\n\nThe cut fell inside the current phase. Already done in it (facts_get_untold no longer "
            f"lists facts you told):\n{_done_in_phase(bench, state)}\n\n{phase_brief(bench, bench.phases[state.phase])}")


def _done_in_phase(bench: Benchmark, state: RunState) -> str:
    graded = [c.id for c in bench.phases[state.phase].checks if state.evaluation(c.id) is not None]
    changed, added = [], []
    for name, ff in state.facts.items():
        for fact in ff.all_facts():
            if fact.changed_turn is None or fact.changed_turn < state.phase_started_turn:
                continue
            original = bench.fact_files[name].get(fact.id) if name in bench.fact_files else None
            (changed if original is not None else added).append(f"{name} {fact.id}")
    return "\n".join(f"{label}{', '.join(items) or 'none'}" for label, items in
                     ((DONE_CHECKS, graded), (DONE_CHANGED, changed), (DONE_ADDED, added)))


class Scenario:
    def __init__(self, bench: Benchmark, state: RunState, new_session: NewSession):
        self.bench = bench
        self.state = state
        self._new_session = new_session

    @property
    def phase(self) -> Phase:
        return self.bench.phases[self.state.phase]

    @property
    def is_last_phase(self) -> bool:
        return self.state.phase >= len(self.bench.phases) - 1

    def required_files(self) -> list[str]:
        value = self.state.vars.get("require_all_facts") or []
        refs = [value] if isinstance(value, str) else list(value)
        return [self.bench.resolve_fact_file(str(r)) or str(r) for r in refs]

    async def enter(self, index: int) -> str:
        """Run the phase's JS block, make it current, and return the brief the persona is shown."""
        phase = self.bench.phases[index]
        vars_ = {k: v for k, v in self.state.vars.items() if k != "require_all_facts"}
        if phase.script is not None:
            handlers = {"newSession": lambda: self._new_session(index)}
            try:
                result = await run_block(phase.script, vars_, handlers)
            except ScriptError as e:
                line = phase.script_line + (e.line or 1) - 1
                message = e.message
                if e.approximate:  # name the block; QuickJS only roughly knows where a limit stopped it
                    line, message = phase.script_line, message + (f", stopped near line {line}" if e.line else "")
                raise ScenarioError(f"{phase.chapter}:{line}: JS block of phase '{phase.title}' failed: {message}") from None
            vars_ = result.vars
            self.state.log += [f"phase {index + 1} bench.log: {line}" for line in result.logs]
        self.state.vars = vars_
        self.state.phase = index
        self.state.phase_started_turn = self.state.turn
        return phase_brief(self.bench, phase)
