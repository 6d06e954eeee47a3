"""The persona's seven tools: their schemas, as the model sees them, and what they do to the run state.

A tool that cannot do what was asked raises ToolError; the loop returns its text to the model as
the tool result, so the model can correct itself. Bad arguments are reported the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from persona.benchmark.facts import DELETED, FactFile
from persona.benchmark.grading import final_score, validate_score
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Check
from persona.engine.judge import Judge, answer_turns
from persona.engine.scenario import Scenario
from persona.state import Evaluation, Exchange, Grade, QuotedTurn, RunState

SCENARIO_COMPLETE = "The scenario is complete. Do not write anything more."


class ToolError(Exception):
    pass


ERROR_PREFIX = "Error: "


def is_error(result: str) -> bool:
    """Whether a tool result (as the model sees it) reports a failure."""
    return result.startswith(ERROR_PREFIX)


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
    }}


_FILE = {"type": "string", "description": "Fact file name, e.g. 'family' or 'profile'"}
TOOL_SPECS: list[dict[str, Any]] = [
    _fn("next_phase", "Finish the current phase and get the next one. Refuses, saying why, while the phase "
        "still has untold required facts or ungraded checks.", {}, []),
    _fn("facts_read", "Read a fact file (live copy, with your edits).", {"file": _FILE}, ["file"]),
    _fn("facts_mark_told", "Mark facts as told to the agent, right after telling them.",
        {"file": _FILE, "ids": {"type": "array", "items": {"type": "string"}, "description": "Fact ids, e.g. ['1.2', '1.3']"}},
        ["file", "ids"]),
    _fn("facts_get_untold", "List the facts of a file not yet told.", {"file": _FILE}, ["file"]),
    _fn("facts_edit", "Change a fact after telling the agent the change; text '—' deletes it.",
        {"file": _FILE, "id": {"type": "string"}, "text": {"type": "string"}}, ["file", "id", "text"]),
    _fn("facts_add", "Add a new fact to a section after telling it; returns its id.",
        {"file": _FILE, "section": {"type": "integer", "description": "Section number, e.g. 2"}, "text": {"type": "string"}},
        ["file", "section", "text"]),
    _fn("log_evaluation", "Grade the agent's answer to a check (❓ line) of the current phase.",
        {"check_id": {"type": "string"},
         "score": {"type": "number", "description": "0-10; only 0 or 10 for a single expected value"},
         "answer": {"type": "string", "description": "The agent's answer, in short"},
         "comment": {"type": "string", "description": "Why this score, one sentence"},
         "second_attempt": {"type": "boolean", "description": "True if right only after you asked it to search its memory (counts half)"}},
        ["check_id", "score", "answer", "comment"]),
]
TOOL_NAMES = [spec["function"]["name"] for spec in TOOL_SPECS]
_PARAMS = {spec["function"]["name"]: spec["function"]["parameters"] for spec in TOOL_SPECS}
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
    if missing := [k for k in params["required"] if k not in args]:
        return f"missing argument(s) {', '.join(map(repr, missing))}"
    for key, value in args.items():
        kind = props[key]["type"]
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


class ToolBox:
    def __init__(self, bench: Benchmark, state: RunState, scenario: Scenario, *, judge: Judge | None = None,
                 exchanges: Callable[[], list[Exchange]] = list):
        self.bench = bench
        self.state = state
        self.scenario = scenario
        self.judge = judge  # None: the persona's own score is the grade (config `judge: "persona"`)
        self.exchanges = exchanges  # the chat so far, as transcript.jsonl has it

    async def call(self, name: str, arguments: str) -> str:
        """Run one tool call as the model wrote it; errors come back as text for the model."""
        if name not in TOOL_NAMES:
            return f"Error: unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}"
        try:
            args = json.loads(arguments or "{}")
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
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
        ungraded = [c.id for c in self.scenario.phase.checks if self.state.evaluation(c.id) is None]
        if ungraded:
            raise ToolError(f"not yet: checks of this phase not graded: {', '.join(ungraded)}. Ask them and call log_evaluation.")
        if self.scenario.is_last_phase:
            self.state.finished = True
            return SCENARIO_COMPLETE
        return await self.scenario.enter(self.state.phase + 1)

    async def facts_read(self, file: str) -> str:
        ff = self._file(file)
        if ff.name not in self.state.loaded_files:
            self.state.loaded_files.append(ff.name)
        return ff.render()

    async def facts_mark_told(self, file: str, ids: list[str]) -> str:
        ff = self._file(file)
        ids = [ids] if isinstance(ids, str) else ids
        unknown = [i for i in ids if ff.get(str(i)) is None]
        if unknown:
            raise ToolError(f"{ff.name} has no fact {', '.join(map(str, unknown))}")
        for i in ids:
            fact = ff.get(str(i))
            if fact.told_turn is None:
                fact.told_turn = self.state.turn
        return f"Marked {len(ids)} as told; {len(ff.untold())} untold left in {ff.name}."

    async def facts_get_untold(self, file: str) -> str:
        ff = self._file(file)
        untold = ff.untold()
        if not untold:
            return f"All facts of {ff.name} are told."
        return ff.render(untold)

    async def facts_edit(self, file: str, id: str, text: str) -> str:  # noqa: A002 - the tool's argument name
        ff = self._file(file)
        fact = ff.get(str(id))
        if fact is None:
            raise ToolError(f"{ff.name} has no fact {id}; ids are {', '.join(f.id for f in ff.all_facts())}")
        fact.text = text.strip() or DELETED
        fact.changed_turn = self.state.turn
        fact.told_turn = fact.told_turn if fact.told_turn is not None else self.state.turn
        return f"{ff.name} {fact.id} is now: {fact.text}"

    async def facts_add(self, file: str, section: int, text: str) -> str:
        ff = self._file(file)
        try:
            fact = ff.add(int(section), text.strip())
        except (KeyError, ValueError):
            sections = ", ".join(f"{s.number} ({s.title})" for s in ff.sections)
            raise ToolError(f"{ff.name} has no section {section}; sections: {sections}") from None
        fact.told_turn = fact.changed_turn = self.state.turn
        return f"Added {ff.name} {fact.id}: {fact.text}"

    async def log_evaluation(self, check_id: str, score: float, answer: str, comment: str,
                             second_attempt: bool = False) -> str:
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
        own = Grade(grader="persona", raw_score=score, score=final_score(score, bool(second_attempt)),
                    second_attempt=bool(second_attempt), comment=str(comment))
        last = self.state.evaluations[-1].turn if self.state.evaluations else 0
        turns = answer_turns(self.exchanges()[:self.state.transcript_len], check.question, last, self.state.phase)
        record = own if self.judge is None else await self._judged(check, turns)
        self.state.evaluations.append(Evaluation(
            check_id=check.id, category=check.category, question=check.question, expected=check.answer,
            answer=str(answer), **record.model_dump(), persona_grade=own if self.judge else None,
            agent_turns=turns, phase=self.state.phase, turn=self.state.turn, session=self.state.session,
        ))
        if self.judge is not None:  # the judge's score would tell the persona what the answer was not
            return f"Logged {check.id}; the grader scores it."
        return f"Logged {check.id}: {record.score:g}/10."

    async def _judged(self, check: Check, turns: list[QuotedTurn]) -> Grade:
        """The judge's grade of what the agent said, its cost and any answers it had to give again counted."""
        assert self.judge is not None
        if not turns:
            raise ToolError(f"nothing was said in the chat since the last grade: ask {check.id} first, "
                            "then call log_evaluation with the agent's answer")
        judged = await self.judge.grade(check, turns)
        self.state.judge_usage.add(self.state.phase, judged.prompt_tokens, judged.completion_tokens, judged.calls)
        self.state.judge_notes += [f"{check.id}: {note}"[:300] for note in judged.notes]
        return judged.grade

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
