"""results/<id>/report.html: one run, readable offline, built from state.json and transcript.jsonl alone.

Scores by category and phase, memory decay (score against the age of the fact a check asks about,
see decay.py), the memory autopsy when the run read the agent's memory (autopsy.py: classes, growth
per session, a diff between snapshots), the persona's token cost, every imperfect answer with links
to the chat session's trace and the failure screenshots, and the whole transcript with each check
marked where it was asked and where it was graded. It can be rebuilt at any time (`mmb report`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers.files import atomic_write
from persona.benchmark.loader import Benchmark
from persona.report.activity import ActivityCounts, ShownWork, turn_summary
from persona.report.autopsy import CLASSES, CSS_CLASS, diffs, growth, memory_autopsy
from persona.report.catalog import INDEX_FILE, LEADERBOARD_PAGE, RUN_PAGE
from persona.report.charts import Point, Scatter, scatter
from persona.report.cost import PriceTable
from persona.report.decay import check_ages
from persona.report.markdown import (
    activity_line,
    duration,
    grading_line,
    phase_title,
    provenance_changes,
    provenance_summary,
    run_log,
    typed_into_chat,
)
from persona.report.persona_lines import compaction_lines, quirks_line, usage_line
from persona.report.scores import by_category, by_phase, by_source_category, distribution, facts_told, mean, phase_costs
from persona.report.snapshots import MemoryStore
from persona.report.templating import render_page
from persona.state import AgentSession, Evaluation, Exchange, RunState
from persona.tokens import TokenCounter

HTML_FILE = RUN_PAGE


@dataclass
class TranscriptRow:
    ex: Exchange
    session: AgentSession | None  # a chat session that starts at this turn
    phase_starts: bool
    asked: list[Evaluation]  # checks whose question was this turn's message
    graded: list[Evaluation]  # checks graded after this turn's reply
    notices: list[str]  # compaction notices the agent's UI showed

    @property
    def work(self) -> list[ShownWork]:
        """The turn's activity (tool cards, thoughts, status lines), shown collapsed beside the answer."""
        return [ShownWork.of(a) for a in self.ex.activity]

    @property
    def work_summary(self) -> str:
        return turn_summary(self.ex.activity)


class RunReport:
    """Everything the page shows, gathered once; templates/run.html lays it out."""

    def __init__(self, state: RunState, exchanges: list[Exchange], folder: Path, bench: Benchmark | None = None,
                 counter: TokenCounter | None = None, prices: PriceTable | None = None):
        self.state, self.exchanges, self.folder, self.bench = state, exchanges, folder, bench
        self.note = ""  # what a live reader knows beside the state (`mmb view`: no process plays a "running" run)
        self.cost = (prices or PriceTable()).run_cost(state)
        # The folder's pages, one level up (written by publish.write_overview), linked back from this one.
        self.index, self.leaderboard = f"../{INDEX_FILE}", f"../{LEADERBOARD_PAGE}"
        self.ages = {a.check_id: a for a in check_ages(state, exchanges, counter or TokenCounter(), bench)}
        self.traces = sorted((folder / "traces").glob("*.trace.zip")) if (folder / "traces").is_dir() else []
        self.shots = sorted(folder.glob("failure-*.png"))
        self.videos = sorted((folder / "videos").glob("*.webm")) if (folder / "videos").is_dir() else []
        evs = state.evaluations
        self.title = bench.title if bench else state.benchmark_title or state.benchmark
        self.mean = mean(evs)
        self.planned = len(bench.checks) if bench else None
        self.distribution = distribution(evs)
        self.facts_told = facts_told(state, bench.profile.name if bench else None)
        self.active = duration(state.active_seconds)
        self.grading = grading_line(state, prices)
        self.provenance = provenance_summary(state)
        self.provenance_changes = provenance_changes(state)
        self.typed = typed_into_chat(state)
        self.activity = activity_line(ActivityCounts.of(exchanges))
        self.log_count, self.log_shown = run_log(state)
        self.categories = list(by_category(evs).values())
        self.source_categories = by_source_category(evs)
        self.phases = list(by_phase(evs).items())
        self.costs = phase_costs(state)
        self.persona_usage = usage_line(state)
        self.persona_compactions = compaction_lines(state)
        self.persona_quirks = quirks_line(state)
        self.top_cost = max((c.total for c in self.costs), default=0)
        self.imperfect = [e for e in evs if e.score < 10]
        self.decay_rows = [(e, self.ages.get(e.check_id)) for e in evs]
        self.decay_plots = self._decay_plots()
        self.autopsy = memory_autopsy(folder, state, exchanges, bench)
        index = self.autopsy.index if self.autopsy else None
        self.memory_growth = growth(index) if index else []
        self.memory_diffs = diffs(MemoryStore(folder), index) if index else []
        self.top_memory = max((g.last.lines for g in self.memory_growth), default=0)

    def phase_name(self, phase: int) -> str:
        return phase_title(self.bench, phase) if self.bench else f"phase {phase + 1}"

    def rel(self, path: Path) -> str:
        return path.relative_to(self.folder).as_posix()

    def session_traces(self, session: int) -> list[Path]:
        return [t for t in self.traces if t.name.startswith(f"session-{session}.")]

    def asked_turn(self, e: Evaluation) -> int:
        return self.ages[e.check_id].asked_turn if e.check_id in self.ages else e.turn

    def _decay_plots(self) -> list[Scatter]:
        evs = {e.check_id: e for e in self.state.evaluations}
        dated = [(evs[a.check_id], a) for a in self.ages.values() if a.turns is not None]
        if not dated:
            return []

        def points(attr: str) -> list[Point]:
            return [Point(getattr(a, attr), e.score, "b" if a.new_session_between else "a",
                          f"{e.check_id} [{e.category.value}] {e.score:g}/10 — {e.question}") for e, a in dated]

        return [scatter(points("turns"), "turns since the fact was told or last changed"),
                scatter(points("tokens"), "tokens in the chat since then")]

    def transcript_rows(self) -> list[TranscriptRow]:
        asked: dict[int, list[Evaluation]] = {}
        graded: dict[int, list[Evaluation]] = {}
        for e in self.state.evaluations:
            asked.setdefault(self.asked_turn(e), []).append(e)
            graded.setdefault(e.turn, []).append(e)
        starts = {s.started_turn: s for s in self.state.sessions}
        notices: dict[int, list[str]] = {}
        for n in self.state.agent_notices:
            notices.setdefault(n.turn, []).append(n.text)
        rows, phase = [], None
        for ex in self.exchanges:
            rows.append(TranscriptRow(ex=ex, session=starts.get(ex.turn - 1), phase_starts=ex.phase != phase,
                                      asked=asked.get(ex.turn, []), graded=graded.get(ex.turn, []),
                                      notices=notices.get(ex.turn, [])))
            phase = ex.phase
        return rows

    def context(self) -> dict[str, Any]:
        """What run.html and each of its partials (live in `mmb view`) are rendered with."""
        return dict(r=self, classes=CLASSES, class_css=CSS_CLASS)

    def render(self) -> str:
        return render_page("run.html", **self.context())


def write_run_report(folder: Path, state: RunState, exchanges: list[Exchange], bench: Benchmark | None = None,
                     counter: TokenCounter | None = None, prices: PriceTable | None = None) -> Path:
    path = folder / HTML_FILE
    atomic_write(path, RunReport(state, exchanges, folder, bench, counter, prices).render())
    return path
