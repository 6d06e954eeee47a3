"""Every run in a results folder, summed up once for the leaderboard, the index page and `mmb list`.

Built from the state.json files alone (results/<id>/state.json, the dry runs' results/dry-*/
included), so it covers runs of older configs and other machines too. A state that does not
parse is skipped and named, never silently.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from persona.report.cost import Cost, PriceTable, money
from persona.report.gradings import ORIGINAL, load_set, shown_with
from persona.report.markdown import duration
from persona.report.scores import Group, by_category, mean
from persona.state import STATE_FILE, RunState, read_state, run_is_live, written_by_newer

log = logging.getLogger(__name__)

# The pages of a results folder, which link to each other by these names.
RUN_PAGE = "report.html"  # results/<id>/report.html (html.py)
INDEX_FILE = "index.html"  # every run (index.py)
LEADERBOARD_PAGE = "leaderboard.html"  # the agents ranked (leaderboard.py)


@dataclass
class Entry:
    run_id: str
    benchmark: str  # the folder's name
    title: str
    driver: str
    persona: str
    status: str
    mean: float | None
    graded: int
    planned: int | None
    categories: dict[str, Group] = field(default_factory=dict)
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    has_html: bool = False
    oracle: bool = False  # a dry run: the agent knew every answer
    phase: int = 0  # 1-based, the phase the run is in (or ended in)
    phases: int | None = None
    started: datetime | None = None
    updated: datetime | None = None  # the state's last save: the run's last activity
    cost: Cost = field(default_factory=lambda: Cost("", None))
    judge: str = "persona"  # who graded the scores shown: "persona", "rules" or the judge model
    grading: str = ORIGINAL  # the grading set shown (`mmb regrade`)
    repeat_of: str | None = None  # the configured run, when this is one of its repeats
    note: str = ""  # what a reader knows beside the state, e.g. that no process holds a "running" run (mmb view)

    @property
    def graded_by(self) -> str:
        return self.judge if self.grading == ORIGINAL else f"{self.judge} [{self.grading}]"

    @property
    def agent(self) -> str:
        """What repeats are pooled under: the configured run's id."""
        return self.repeat_of or self.run_id

    @property
    def coverage(self) -> str:
        return f"{self.graded}/{self.planned}" if self.planned is not None else str(self.graded)

    @property
    def progress(self) -> str:
        return f"phase {self.phase}/{self.phases}" if self.phases else f"phase {self.phase}"

    @property
    def page(self) -> str | None:
        """The run's report.html, relative to the results folder."""
        return f"{self.run_id}/{RUN_PAGE}" if self.has_html else None


DEAD = "dead"  # its state says running, but no mmb process holds it: killed, or stopped by a full disk


def entry(state: RunState, folder: Path, planned: dict[str, int], prices: PriceTable) -> Entry:
    bench = Path(state.benchmark).name
    phases = state.phase_count
    status = DEAD if state.status == "running" and not run_is_live(folder) else state.status
    return Entry(run_id=state.run_id, benchmark=bench, title=state.benchmark_title or bench, driver=state.driver,
                 persona=state.persona_model, status=status, mean=mean(state.evaluations),
                 graded=len(state.evaluations), planned=state.checks_planned or planned.get(bench),
                 categories=by_category(state.evaluations), turns=state.turn, tokens_in=state.usage.prompt_tokens,
                 tokens_out=state.usage.completion_tokens, seconds=state.active_seconds,
                 has_html=(folder / RUN_PAGE).exists(), oracle=state.oracle,
                 phase=min(state.phase + 1, phases) if phases else state.phase + 1, phases=phases,
                 started=state.created_at, updated=state.updated_at, cost=prices.run_cost(state), judge=state.judge, grading=state.grading_set,
                 repeat_of=state.repeat_of)


def read_states(results_dir: Path) -> list[tuple[RunState, Path]]:
    """Every readable run state under results_dir, with its folder, by run folder name."""
    found = []
    for path in sorted(results_dir.glob(f"*/{STATE_FILE}")):
        try:
            found.append((read_state(path.parent), path.parent))
        except (ValueError, OSError) as e:  # a run being written right now is saved atomically; this is a broken one
            log.warning("skipping run %s: %s", path.parent.name, str(e).splitlines()[0])
    return found


def scan(results_dir: Path, planned: dict[str, int] | None = None, prices: PriceTable | None = None,
         grading: str | None = None) -> list[Entry]:
    """One Entry per run, by run folder name. `planned`: checks per benchmark folder name, for older states;
    `grading`: the grading set to show where a run has it (else its original grades, marked so)."""
    prices = prices or PriceTable()
    return [entry(shown_with(state, load_set(folder, grading) if grading else None), folder, planned or {}, prices)
            for state, folder in read_states(results_dir)]


def run_folders(results_dir: Path) -> dict[str, Path]:
    """Run id -> folder, for every folder of results_dir that holds a state."""
    return {p.parent.name: p.parent for p in sorted(results_dir.glob(f"*/{STATE_FILE}"))}


def newer_runs(results_dir: Path, only: list[str] | None = None) -> list[str]:
    """Why this mmb must not write pages or rows from results_dir: a line for each run (of `only`) whose state a
    newer mmb wrote. Read, it would be half a run; skipped, the pages would lose it."""
    return [why for run_id, folder in run_folders(results_dir).items()
            if (not only or run_id in only) and (why := written_by_newer(folder))]


def unknown_runs(results_dir: Path, wanted: list[str]) -> str | None:
    """One line naming the ids that are not runs of results_dir, or None when all are."""
    known = run_folders(results_dir)
    missing = [w for w in wanted if w not in known]
    if not missing:
        return None
    runs = ", ".join(known) or "none"
    return f"no run with id {', '.join(map(repr, missing))} in {results_dir} (runs: {runs})"


LIST_COLUMNS = ("run", "agent", "benchmark", "status", "progress", "checks", "mean", "cost", "per check", "started (UTC)",
                "duration")


def list_rows(entries: list[Entry]) -> list[tuple[str, ...]]:
    """`mmb list`: a row per run, newest first (the same order as index.html)."""
    return [(e.run_id, e.driver, e.benchmark, e.status, e.progress, e.coverage,
             f"{e.mean:.2f}" if e.mean is not None else "—", money(e.cost.usd), money(e.cost.per_check),
             e.started.strftime("%Y-%m-%d %H:%M") if e.started else "—", duration(e.seconds))
            for e in newest_first(entries)]


def newest_first(entries: list[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.started is None, -(e.started.timestamp() if e.started else 0), e.run_id))
