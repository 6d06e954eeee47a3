"""The persona's seven tools: their schemas, as the model sees them, and what they do to the run state.

A tool that cannot do what was asked raises ToolError; the loop returns its text to the model as
the tool result, so the model can correct itself. Bad arguments are reported the same way.

Nothing counts as said that the agent did not receive: marking facts told (or changing them) and
grading an answer are refused while no message has reached the agent since the facts were loaded,
since the last such claim, or (for a grade) since the phase began or the last grade. Tool calls of
one persona turn count as one moment, so a message and the calls that mark it go together; a grade
is about the answers the model had read when it wrote the call, so a question sent beside it is left
to the next grade. That window of exchanges is what the judge reads and the reports quote. A phase
that must tell the story's date (its `📅` line, or a new chat while a date holds) ends only once a
message typed in it says that day.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from persona.benchmark.dates import dates_in, spoken
from persona.benchmark.facts import FactFile
from persona.benchmark.grading import final_score, validate_score
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Check
from persona.engine.judge import Judge, JudgeFailed, answer_turns, count_judge
from persona.engine.scenario import Scenario, live_profile_block
from persona.engine.toolspecs import function_spec, spec_names
from persona.errors import RunError
from persona.state import Claim, Evaluation, Exchange, Grade, QuotedTurn, RunState

SCENARIO_COMPLETE = "The scenario is complete. Do not write anything more."


class ToolError(Exception):
    pass


ERROR_PREFIX = "Error: "


def is_error(result: str) -> bool:
    """Whether a tool result (as the model sees it) reports a failure."""
    return result.startswith(ERROR_PREFIX)


_FILE = {"type": "string", "description": "A fact file, e.g. 'family'"}
TOOL_SPECS: list[dict[str, Any]] = [
    function_spec("next_phase", "Finish the current phase and get the next one; refuses, saying why, while required "
        "facts are untold or checks ungraded.", {}),
    function_spec("facts_read", "Read a fact file (live copy, with your edits).", {"file": _FILE}),
    function_spec("facts_mark_told", "Mark facts told, in the reply whose text tells them.",
        {"file": _FILE, "ids": {"type": "array", "items": {"type": "string"}, "description": "Fact ids, e.g. ['1.2', '1.3']"}}),
    function_spec("facts_get_untold", "List the facts of a file not yet told.", {"file": _FILE}),
    function_spec("facts_edit", "Change a fact, in the reply whose text tells the change; text '—' deletes it.",
        {"file": _FILE, "id": {"type": "string"}, "text": {"type": "string"}}),
    function_spec("facts_add", "Add a fact to a section, in the reply whose text tells it; returns its id.",
        {"file": _FILE, "section": {"type": "integer", "description": "Section number, e.g. 2"}, "text": {"type": "string"}}),
    function_spec("log_evaluation", "Grade the agent's answer to a check (❓ line) of the current phase.",
        {"check_id": {"type": "string"},
         "score": {"type": "number", "description": "0-10; only 0 or 10 for a single expected value"},
         "answer": {"type": "string", "description": "The agent's answer, in short"},
         "comment": {"type": "string", "description": "Why this score, one sentence"},
         "second_attempt": {"type": "boolean", "description": "True if right only after you asked it to search its memory"}}),
]
TOOL_NAMES = spec_names(TOOL_SPECS)
_PARAMS = {spec["function"]["name"]: spec["function"]["parameters"] for spec in TOOL_SPECS}
_OPTIONAL = {"second_attempt"}  # required by the strict schema, but a missing one means False
# What each schema type accepts; lenient where the tool converts (ids as numbers, "2" for a section).
_ACCEPTS: dict[str, tuple[type, ...]] = {
    "string": (str, int, float), "integer": (int, str), "number": (int, float, str),
    "boolean": (bool,), "array": (list, str),
}


def argument_problem(name: str, args: dict[str, Any]) -> str | None:
    """What is wrong with a call's arguments against the tool's schema, for the model to fix."""
    params = _PARAMS[name]
    props = params["properties"]
    if unknown := [k for k in args if k not in props]:
        return f"unknown argument(s) {', '.join(map(repr, unknown))}; {name} takes {', '.join(props) or 'none'}"
    if missing := [k for k in params["required"] if k not in args and k not in _OPTIONAL]:
        return f"missing argument(s) {', '.join(map(repr, missing))}"
    for key, value in args.items():
        kind = props[key]["type"]
        if value is None and key in _OPTIONAL:
            continue
        wrong = not isinstance(value, _ACCEPTS[kind]) or (isinstance(value, bool) and kind != "boolean")
        if kind == "array" and isinstance(value, list) and not all(isinstance(v, (str, int, float)) for v in value):
            wrong = True
        if kind in ("integer", "number") and isinstance(value, str):
            try:
                float(value)
            except ValueError:
                wrong = True
        if wrong:
            return f"argument {key!r} must be a{'n' if kind[0] in 'aei' else ''} {kind}, not {json.dumps(value)[:80]}"
    return None


def parse_arguments(name: str, arguments: str) -> dict[str, Any]:
    """The arguments as a dict, or ValueError saying what is wrong with the text."""
    args = json.loads(arguments or "{}")
    if not isinstance(args, dict):
        raise ValueError("arguments must be a JSON object")
    return args


class ToolBox:
    def __init__(self, bench: Benchmark, state: RunState, scenario: Scenario, *, judge: Judge | None = None,
                 exchanges: Callable[[], list[Exchange]] = list):
        self.bench = bench
        self.state = state
        self.scenario = scenario
        self.judge = judge  # None: the persona's own score is the grade (config `judge: "persona"`)
        self.exchanges = exchanges  # the chat so far, as transcript.jsonl has it
        self.step = -1  # the persona call being served
        self.decided_at = 0  # the agent turn when the model wrote that call

    async def call(self, name: str, arguments: str, step: int = -1, decided_at: int | None = None) -> str:
        """Run one tool call as the model wrote it; errors come back as text for the model.

        `step` is the persona call the tool call came in: the calls of one turn are one moment.
        `decided_at` is the agent turn when the model wrote it: before the text of its own turn was
        sent (a grade beside the next question is about the answer before it)."""
        self.step = step
        self.decided_at = self.state.turn if decided_at is None else decided_at
        if name not in TOOL_NAMES:
            return f"Error: unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}"
        try:
            args = parse_arguments(name, arguments)
        except ValueError as e:
            return f"Error: arguments of {name} are not valid JSON ({e})"
        if problem := argument_problem(name, args):
            return f"Error: bad arguments for {name}: {problem}"
        props = _PARAMS[name]["properties"]
        args = {k: str(v) if props[k]["type"] == "string" else v for k, v in args.items()}  # ids written as numbers
        try:
            return await getattr(self, name)(**args)
        except ToolError as e:
            return f"Error: {e}"
        except (TypeError, ValueError) as e:  # a value of the right type that still makes no sense
            return f"Error: bad arguments for {name}: {e}"

    # -- the tools -------------------------------------------------------------------------------

    async def next_phase(self) -> str:
        untold = {name: [f.id for f in self._file(name).untold()] for name in self.scenario.required_files()}
        untold = {name: ids for name, ids in untold.items() if ids}
        if untold:
            listing = "; ".join(f"`{n}`: {', '.join(ids)}" for n, ids in untold.items())
            raise ToolError(f"not yet: untold facts remain in {listing}. Tell them, call facts_mark_told, then next_phase.")
        if untold_date := self._untold_date():
            raise ToolError(f"not yet: you have not told the assistant the story's date in this phase ({untold_date}). "
                            "Say it in a message, with the day, the month and the year, then call next_phase.")
        ungraded = [c.id for c in self.scenario.phase.checks if self.state.evaluation(c.id) is None]
        if ungraded:
            raise ToolError(f"not yet: checks of this phase not graded: {', '.join(ungraded)}. Ask them and call log_evaluation.")
        if self.scenario.is_last_phase:
            self.state.finished = True
            return SCENARIO_COMPLETE
        return await self.scenario.enter(self.state.phase + 1)

    async def facts_read(self, file: str) -> str:
        ff = self._file(file)
        self._loaded(ff)
        return ff.render()

    async def facts_mark_told(self, file: str, ids: list[str]) -> str:
        ff = self._file(file)
        ids = [ids] if isinstance(ids, str) else ids
        unknown = [i for i in ids if ff.get(str(i)) is None]
        if unknown:
            raise ToolError(f"{ff.name} has no fact {', '.join(map(str, unknown))}")
        self._check_said(ff, "mark facts told")
        for i in ids:
            ff.get(str(i)).mark_told(self.state.turn)
        self._claimed_facts()
        return f"Marked {len(ids)} as told; {len(ff.untold())} untold left in {ff.name}."

    async def facts_get_untold(self, file: str) -> str:
        ff = self._file(file)
        self._loaded(ff)
        untold = ff.untold()
        if not untold:
            return f"All facts of {ff.name} are told."
        return ff.render(untold)

    async def facts_edit(self, file: str, id: str, text: str) -> str:  # noqa: A002 - the tool's argument name
        ff = self._file(file)
        fact = ff.get(str(id))
        if fact is None:
            raise ToolError(f"{ff.name} has no fact {id}; ids are {', '.join(f.id for f in ff.all_facts())}")
        self._check_said(ff, "change a fact")
        fact.change(text, self.state.turn)
        self._claimed_facts()
        return f"{ff.name} {fact.id} is now: {fact.text}" + self._live_profile(ff)

    async def facts_add(self, file: str, section: int, text: str) -> str:
        ff = self._file(file)
        if int(section) not in {s.number for s in ff.sections}:
            sections = ", ".join(f"{s.number} ({s.title})" for s in ff.sections)
            raise ToolError(f"{ff.name} has no section {section}; sections: {sections}")
        self._check_said(ff, "add a fact")
        fact = ff.add(int(section), text.strip(), turn=self.state.turn)
        self._claimed_facts()
        return f"Added {ff.name} {fact.id}: {fact.text}" + self._live_profile(ff)

    async def log_evaluation(self, check_id: str, score: float, answer: str, comment: str,
                             second_attempt: bool | None = False) -> str:
        check = self._check(str(check_id))
        if self.state.evaluation(check.id) is not None:
            raise ToolError(f"check {check.id} is already graded")
        try:
            score = float(score)
        except (TypeError, ValueError):
            raise ToolError("score must be a number") from None
        # With a judge the persona cannot know a list from a single value: any 0-10 is its impression.
        if problem := (validate_score(check, score) if self.judge is None else validate_score(None, score)):
            raise ToolError(problem)
        since, until, exchanges = self._answer_window()
        turns = answer_turns(exchanges, check.question)
        own = Grade(grader="persona", raw_score=score, score=final_score(score, bool(second_attempt)),
                    second_attempt=bool(second_attempt), comment=str(comment))
        record = own if self.judge is None else await self._judged(check, turns)
        self.state.last_grade = Claim(turn=until, step=self.step, since=since)
        self.state.evaluations.append(Evaluation(
            check_id=check.id, category=check.category, question=check.question, expected=check.answer,
            wrong_answer=check.wrong_answer, source_category=check.source_category, answer=str(answer), **record.model_dump(), persona_grade=own if self.judge else None,
            agent_turns=turns, phase=self.state.phase, turn=until, session=self.state.session,
        ))
        if self.judge is not None:  # the judge's score would tell the persona what the answer was not
            return f"Logged {check.id}; the grader scores it."
        return f"Logged {check.id}: {record.score:g}/10."

    async def _judged(self, check: Check, turns: list[QuotedTurn]) -> Grade:
        """The judge's grade of what the agent said, its cost and any answers it had to give again counted."""
        assert self.judge is not None
        if not turns:  # the transcript holds every turn the state counts; a judge cannot grade without them
            raise RunError(f"transcript.jsonl lacks the agent turns up to {self.decided_at} that grading {check.id} needs")
        try:
            judged = await self.judge.grade(check, turns)
        except JudgeFailed as e:  # the run stops (a rerun grades from here); what the judge spent still counts
            count_judge(self.state, check.id, e.judged)
            raise
        count_judge(self.state, check.id, judged)
        return judged.grade

    # -- what reached the agent ----------------------------------------------------------------------

    def _untold_date(self) -> str | None:
        """The story's date, said as the brief says it, when this phase must tell it and no message typed in
        the phase says that day (in any common form, with its year); None when it was told or need not be."""
        dated = self.bench.phase_dates()[self.state.phase]
        if not dated.tell or dated.date is None:
            return None
        typed = (ex for ex in self.exchanges()[:self.state.transcript_len] if ex.turn > self.state.phase_started_turn)
        if any(dated.date.day in dates_in(ex.sent) for ex in typed):
            return None
        return spoken(dated.date, self.bench.manifest.language)

    def _loaded(self, ff: FactFile) -> None:
        self.state.loaded_files.pop(ff.name, None)  # re-inserted last: the note lists files in the order last shown
        self.state.loaded_files[ff.name] = Claim(turn=self.state.turn, step=self.step)

    def _nothing_since(self, mark: Claim | None) -> bool:
        """No message reached the agent since `mark`, made by an earlier persona call than this one."""
        return mark is not None and self.state.turn <= mark.turn and mark.step != self.step

    def _check_said(self, ff: FactFile, what: str) -> None:
        if self.state.turn == 0:
            raise ToolError(f"cannot {what}: no message has reached the agent yet. Tell it in a message first "
                            "(text in the same turn as this call is sent before the call runs).")
        if self._nothing_since(self.state.loaded_files.get(ff.name)):
            raise ToolError(f"cannot {what}: no message has reached the agent since you loaded {ff.name}. Tell the "
                            "facts in a message first (text in the same turn as this call is sent before it runs).")
        if self._nothing_since(self.state.last_fact_claim):
            raise ToolError(f"cannot {what}: no message has reached the agent since your last facts_mark_told, "
                            "facts_edit or facts_add. Mark facts in the turn whose message tells them.")

    def _claimed_facts(self) -> None:
        self.state.last_fact_claim = Claim(turn=self.decided_at, step=self.step)

    def _answer_window(self) -> tuple[int, int, list[Exchange]]:
        """The exchanges a grade is about, or ToolError when there are none: from after the phase began
        and the last grade (of an earlier persona call: grades of one call share a window) up to when the
        model wrote this call. A grade beside the next question is about the answer before it: the
        question sent in the same turn belongs to the next window. The persona's grade, the judge's and
        the agent's words quoted in the reports all come from this one window."""
        last = self.state.last_grade
        since = self.state.phase_started_turn
        if last is not None:
            since = max(since, last.since if last.step == self.step and last.since is not None else last.turn)
        until = self.decided_at
        if until > since:
            return since, until, [ex for ex in self.exchanges()[:self.state.transcript_len] if since < ex.turn <= until]
        beside = " (a message in the same turn as this call is sent first, but its answer comes after the call)" \
            if self.state.turn > until else ""
        if last is not None and last.turn > self.state.phase_started_turn:
            what = "no message had reached the agent since your last log_evaluation"
        else:
            what = "no message had reached the agent in this phase"
        raise ToolError(f"cannot grade: {what} when you wrote this call{beside}. Ask the question, read the "
                        "agent's reply, then call log_evaluation.")

    def _live_profile(self, ff: FactFile) -> str:
        """A changed profile is shown again whole: the model must never go on from a stale copy."""
        return f"\n\n{live_profile_block(self.bench, self.state)}" if ff.name == self.bench.profile.name else ""

    # -- lookups -----------------------------------------------------------------------------------

    def _file(self, ref: str) -> FactFile:
        name = self.bench.resolve_fact_file(str(ref))
        if name is None:
            raise ToolError(f"no fact file {ref!r}; files: {', '.join(self.state.facts)}")
        return self.state.facts[name]

    def _check(self, check_id: str) -> Check:
        check = next((c for c in self.scenario.phase.checks if c.id == check_id), None)
        if check is None:
            here = ", ".join(c.id for c in self.scenario.phase.checks) or "none"
            raise ToolError(f"{check_id!r} is not a check of the current phase (its checks: {here})")
        return check
