"""Play every phase's JS block in order, before a run, with `bench.newSession` stubbed out.

Compiling catches syntax errors; playing also catches what only shows when the blocks run
(a ReferenceError, a loop that hits the time limit, `require_all_facts` set from a variable to a
file that does not exist) and tells the linter where new sessions really happen.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel

from persona.benchmark.js_sandbox import ScriptError, run_block
from persona.benchmark.phases import Phase
from persona.errors import Problem


class PhasePlay(BaseModel):
    index: int
    new_sessions: int = 0  # bench.newSession() calls when this phase is entered
    required: list[str] = []  # require_all_facts as the block left it


def _drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a block's coroutine to its end on an event loop of its own, in a thread of its own:
    `load_benchmark` is sync and may be called from inside a running loop, where asyncio.run fails."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="js-check") as pool:
        return pool.submit(asyncio.run, coro).result()


def _required_refs(value: Any) -> list[Any]:
    if value is None or value == [] or value == "":
        return []
    return [value] if isinstance(value, str) else list(value) if isinstance(value, list) else [value]


def _assignment_line(phase: Phase) -> int:
    """The line that sets require_all_facts, else the block's first line."""
    m = re.search(r"require_all_facts", phase.script or "")
    return phase.script_line + (phase.script[: m.start()].count("\n") if m else 0)


def play_scripts(phases: list[Phase], resolve: Callable[[str], str | None],
                 static_problems: set[int] = frozenset()) -> tuple[list[PhasePlay], list[Problem]]:
    """Each phase's outcome and the problems found; `static_problems`: phases whose block already failed to compile."""
    plays: list[PhasePlay] = []
    problems: list[Problem] = []
    vars_: dict[str, Any] = {}
    for phase in phases:
        play = PhasePlay(index=phase.index)
        plays.append(play)
        vars_ = {k: v for k, v in vars_.items() if k != "require_all_facts"}  # reset at each phase, as in a run
        if phase.script is None or phase.index in static_problems:
            continue

        async def new_session(play: PhasePlay = play) -> None:  # this phase's play, bound now
            play.new_sessions += 1

        try:
            result = _drive(run_block(phase.script, vars_, {"newSession": new_session}))
        except ScriptError as e:
            problems.append(Problem(phase.chapter, phase.script_line + (e.line or 1) - 1,
                                    f"JS block of phase '{phase.title}' fails when played: {e.message}"))
            continue
        vars_ = result.vars
        refs = _required_refs(vars_.get("require_all_facts"))
        bad = [r for r in refs if not isinstance(r, str) or resolve(r) is None]
        if bad:
            shown = ", ".join(repr(r) for r in bad)
            problems.append(Problem(phase.chapter, _assignment_line(phase),
                                    f"require_all_facts names unknown fact file {shown}: next_phase could never "
                                    "accept, so no later phase would be reached"))
        play.required = [resolve(r) for r in refs if r not in bad]
    return plays, problems
