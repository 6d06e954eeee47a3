"""results/leaderboard.md and .html: every run in results/, grouped by benchmark, ranked by mean score.

Built from the state.json files alone, so it covers runs of older configs too. Within a benchmark,
runs rank by mean score over their graded checks; ties go to the run that graded more checks.
The coverage column tells a run that stopped early (a high mean over two checks) from a full one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from drivers.files import atomic_write
from persona.report.gradings import ORIGINAL, load_set, shown_with
from persona.report.repeats import Interval, interval
from persona.report.scores import CATEGORIES, Group, by_category, mean
from persona.report.templating import render_page
from persona.state import STATE_FILE, RunState

log = logging.getLogger(__name__)

MARKDOWN_FILE = "leaderboard.md"
HTML_FILE = "leaderboard.html"


@dataclass
class Entry:
    run_id: str
    benchmark: str  # the folder's name
    title: str
    driver: str
    persona: str
    judge: str  # who graded the scores shown: "persona", "rules" or the judge model
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
    grading: str = ORIGINAL  # the grading set shown
    repeat_of: str | None = None  # the configured run, when this is one of its repeats

    @property
    def agent(self) -> str:
        """What repeats are pooled under: the configured run's id."""
        return self.repeat_of or self.run_id

    @property
    def graded_by(self) -> str:
        return self.judge if self.grading == ORIGINAL else f"{self.judge} [{self.grading}]"

    @property
    def coverage(self) -> str:
        return f"{self.graded}/{self.planned}" if self.planned is not None else str(self.graded)


def _entry(state: RunState, folder: Path, planned: dict[str, int]) -> Entry:
    bench = Path(state.benchmark).name
    return Entry(run_id=state.run_id, benchmark=bench, title=state.benchmark_title or bench, driver=state.driver,
                 persona=state.persona_model, judge=state.judge, grading=state.grading_set, status=state.status,
                 mean=mean(state.evaluations),
                 graded=len(state.evaluations), planned=planned.get(bench), categories=by_category(state.evaluations),
                 turns=state.turn, tokens_in=state.usage.prompt_tokens, tokens_out=state.usage.completion_tokens,
                 seconds=state.active_seconds, has_html=(folder / "report.html").exists(), repeat_of=state.repeat_of)


def collect(results_dir: Path, planned: dict[str, int] | None = None,
            grading: str | None = None) -> dict[tuple[str, str], list[Entry]]:
    """(benchmark folder, title) -> its runs, best first. `planned`: checks per benchmark folder name;
    `grading`: the grading set to show where a run has it (else its original grades, marked so)."""
    groups: dict[tuple[str, str], list[Entry]] = {}
    for path in sorted(results_dir.glob(f"*/{STATE_FILE}")):
        try:
            state = RunState.model_validate_json(path.read_bytes())
        except ValueError as e:  # a run being written right now is saved atomically; this is a broken one
            log.warning("leaderboard: skipping %s (%s)", path, str(e).splitlines()[0])
            continue
        state = shown_with(state, load_set(path.parent, grading) if grading else None)
        e = _entry(state, path.parent, planned or {})
        groups.setdefault((e.benchmark, e.title), []).append(e)
    for runs in groups.values():
        runs.sort(key=lambda e: (e.mean is None, -(e.mean or 0), -e.graded, e.run_id))
    return dict(sorted(groups.items()))


@dataclass
class Pooled:
    """An agent over its finished repeats: mean ± 95 % CI, overall and per category."""

    agent: str
    graded_by: str
    overall: Interval
    categories: dict[str, Interval]
    left_out: list[str]  # repeats not finished, not pooled
    overlaps: list[str] = field(default_factory=list)  # agents whose interval overlaps this one's


def pooled(runs: list[Entry]) -> list[Pooled]:
    """Every agent of a benchmark with more than one repeat, best first; says whose intervals overlap.
    Empty when no run was repeated."""
    by_agent: dict[str, list[Entry]] = {}
    for e in runs:
        by_agent.setdefault(e.agent, []).append(e)
    if all(len(v) == 1 for v in by_agent.values()):
        return []
    out = []
    for agent, entries in by_agent.items():
        done = [e for e in entries if e.status == "finished" and e.mean is not None]
        overall = interval([e.mean for e in done if e.mean is not None])
        if overall is None:
            continue
        cats = {c: iv for c in _columns(done) if (iv := interval([e.categories[c].mean for e in done if c in e.categories]))}
        out.append(Pooled(agent, done[0].graded_by, overall, cats, sorted(e.run_id for e in entries if e not in done)))
    for a in out:
        a.overlaps = [b.agent for b in out if b is not a and a.overall.overlaps(b.overall)]
    return sorted(out, key=lambda a: (-a.overall.mean, a.agent))


def _pooled_markdown(agents: list[Pooled], cats: list[str]) -> list[str]:
    lines = ["### Over repeats: mean ± 95 % confidence interval", "",
             "Finished repeats only. Overlapping intervals: these repeats do not tell the agents apart.", "",
             "| agent | graded by | repeats | mean | " + "".join(f"{c} | " for c in cats) + "overlaps with |",
             "|---|---|---:|---:|" + "---:|" * len(cats) + "---|"]
    for a in agents:
        left = f" ({len(a.left_out)} unfinished left out)" if a.left_out else ""
        lines.append(f"| {a.agent} | {a.graded_by} | {a.overall.n}{left} | **{a.overall}** | "
                     + "".join(f"{a.categories.get(c, '—')} | " for c in cats) + f"{overlap_text(a)} |")
    return lines + [""]


def overlap_text(a: Pooled) -> str:
    if a.overall.half is None:
        return "— (one finished run: no interval)"
    return ", ".join(a.overlaps) or "none"


def _columns(runs: list[Entry]) -> list[str]:
    present = {c for e in runs for c in e.categories}
    return [c for c in CATEGORIES if c in present]


def _score(e: Entry) -> str:
    return f"{e.mean:.2f}" if e.mean is not None else "—"


def _cat(e: Entry, c: str) -> str:
    g = e.categories.get(c)
    return f"{g.mean:.1f}" if g else "—"


def grading_note(grading: str | None) -> str:
    if not grading or grading == ORIGINAL:
        return "Grades: each run's original grading set (`graded by`: its judge, or the persona)."
    return (f"Grades: grading set `{grading}` (`mmb regrade`) where a run has it; runs without it show their "
            "original grades (`graded by` names the set).")


def render_markdown(groups: dict[tuple[str, str], list[Entry]], grading: str | None = None) -> str:
    lines = ["# MarathonMemBench leaderboard", "",
             "Runs of each benchmark ranked by mean score (0–10) over their graded checks; one column per check "
             "category; `checks` is graded/planned.", "", grading_note(grading), ""]
    if not groups:
        lines.append("No runs yet.")
    for (bench, title), runs in groups.items():
        cats = _columns(runs)
        lines += [f"## {title} (`{bench}`)", "",
                  "| # | run | driver | persona | graded by | status | mean | " + " | ".join(cats) + (" | " if cats else "")
                  + "checks | turns | persona tokens in / out |",
                  "|---:|---|---|---|---|---|---:|" + "---:|" * len(cats) + "---:|---:|---:|"]
        for i, e in enumerate(runs, 1):
            name = f"[{e.run_id}]({e.run_id}/report.html)" if e.has_html else e.run_id
            lines.append(f"| {i} | {name} | {e.driver} | {e.persona} | {e.graded_by} | {e.status} | **{_score(e)}** | "
                         + "".join(f"{_cat(e, c)} | " for c in cats)
                         + f"{e.coverage} | {e.turns} | {e.tokens_in:,} / {e.tokens_out:,} |")
        lines.append("")
        if agents := pooled(runs):
            lines += _pooled_markdown(agents, cats)
    return "\n".join(lines) + "\n"


def render_html(groups: dict[tuple[str, str], list[Entry]], grading: str | None = None) -> str:
    return render_page("leaderboard.html", groups=groups, columns=_columns, category_mean=_cat,
                       grading_note=grading_note(grading), pooled=pooled, overlap_text=overlap_text)


def write_leaderboard(results_dir: Path, planned: dict[str, int] | None = None,
                      grading: str | None = None) -> tuple[Path, Path]:
    groups = collect(results_dir, planned, grading)
    md, html = results_dir / MARKDOWN_FILE, results_dir / HTML_FILE
    atomic_write(md, render_markdown(groups, grading))
    atomic_write(html, render_html(groups, grading))
    return md, html
