"""Where the run is in the benchmark: entering phases (running their JS), and what the persona is shown."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

from persona.benchmark.dates import DATE_MARK, spoken
from persona.benchmark.js_sandbox import ScriptError, run_block
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Phase, hide_answers
from persona.errors import RunError
from persona.state import RunState

PHASE_HEADER = "## Current phase ("  # the scripted persona finds its phase by this header
NewSession = Callable[[int], Awaitable[None]]


class ScenarioError(RunError):
    """A phase's JS block failed at run time: a benchmark bug, reported with file:line."""


CHECKS_HEADING = "# Checks"


def prompt_file(name: str) -> str:
    return resources.files("persona").joinpath(f"prompts/{name}").read_text(encoding="utf-8").strip()


def system_prompt(bench: Benchmark, judged: bool = False) -> str:
    """The universal prompt and the benchmark's instructions; `judged`: a judge grades, so the persona's
    "Checks" section is the one without expected answers (prompts/checks-judged.md)."""
    universal = prompt_file("system.md")
    if judged:
        universal = _replace_section(universal, CHECKS_HEADING, prompt_file("checks-judged.md"))
    return f"{universal}\n\n# Your scenario\n\n{bench.instructions}\n"


def _replace_section(text: str, heading: str, section: str) -> str:
    lines = text.split("\n")
    start = lines.index(heading)  # a prompt without it is a packaging bug: fail loudly
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("# ")), len(lines))
    return "\n".join([*lines[:start], section, "", *lines[end:]]).strip()


def phase_brief(bench: Benchmark, phase: Phase, judged: bool = False) -> str:
    body = "\n".join(line for line in phase.body.split("\n") if DATE_MARK not in line).strip()
    body = hide_answers(body) if judged else body
    return f"{PHASE_HEADER}{phase.index + 1} of {len(bench.phases)}): {phase.title}\n\n{date_note(bench, phase)}{body}\n"


def date_note(bench: Benchmark, phase: Phase) -> str:
    """The story's date in the brief. To be told: its `📅` line (which the scripted persona reads) and what
    to do with it; else a reminder of the date in effect, without the mark."""
    dated = bench.phase_dates()[phase.index]
    if dated.date is None:
        return ""
    said = spoken(dated.date, bench.manifest.language)
    if not dated.tell:
        return f"(In the story it is still {said}: the assistant heard the date in this chat already.)\n\n"
    if dated.own:
        why = (f"In the story it is now {said}. The assistant has its own clock and does not know the story's "
               "date: tell it as you start this phase")
    else:
        why = (f"In the story it is still {said}. This phase opens a new chat, which never heard the date: tell "
               "it again as you start")
    return f"{dated.date.line_text()}\n{why}, the way a person would, with the day, the month and the year, once.\n\n"


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
KEPT = "- its latest messages, kept below this note: "  # the kept part of a phase cut inside, already done too


def compaction_note(bench: Benchmark, state: RunState, in_phase: bool = False, judged: bool = False,
                    kept: int = 0) -> str:
    """What the persona goes on from after a compaction; cut inside a phase, that phase's brief too
    (without expected answers when a judge grades), what was already done in it, and how many of its
    latest messages (`kept`) follow the note: done too, so that a persona replaying the phase (the
    scripted one) goes on after them."""
    loaded = ", ".join(f"`{n}`" for n in state.loaded_files) or "none"
    note = (f"(Your context was compacted: older messages were dropped. Here is what you need to go on.)\n\n"
            f"{profile_block(bench, state)}\nFact files you had loaded: {loaded}. Reload any with facts_read; "
            f"all fact files: {fact_file_list(bench, state)}.")
    if not in_phase:
        return note
    return (f"{note}\n\nThe cut fell inside the current phase. Already done in it (facts_get_untold no longer "
            f"lists facts you told):\n{_done_in_phase(bench, state)}\n{KEPT}{kept}\n\n"
            f"{phase_brief(bench, bench.phases[state.phase], judged)}")


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
    def __init__(self, bench: Benchmark, state: RunState, new_session: NewSession, judged: bool = False):
        self.bench = bench
        self.state = state
        self._new_session = new_session
        self.judged = judged  # a judge grades: the persona never sees an expected answer

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
        return phase_brief(self.bench, phase, self.judged)
