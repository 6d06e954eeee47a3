"""results/leaderboard.md and .html: the agents' runs in results/, grouped by benchmark, ranked by mean score.

Built from the state.json files alone (catalog.py), so it covers runs of older configs too. Within a
benchmark, runs rank by mean score over their graded checks; ties go to the run that graded more
checks; a run with no graded check (failed or stalled before one) is listed without a rank. The
coverage column tells a run that stopped early (a high mean over two checks) from a full one. Dry
runs (the oracle agent, which knows every answer) measure the benchmark, not an agent: they get a
table of their own, never a rank. With no run at all, no leaderboard is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers.files import atomic_write
from persona.report.catalog import INDEX_FILE, LEADERBOARD_PAGE, Entry, scan
from persona.report.cost import PriceTable, money
from persona.report.gradings import ORIGINAL
from persona.report.repeats import ci_text, pooled, pooled_markdown
from persona.report.scores import CATEGORIES
from persona.report.templating import render_page

MARKDOWN_FILE = "leaderboard.md"
HTML_FILE = LEADERBOARD_PAGE


@dataclass
class Board:
    agents: dict[tuple[str, str], list[Entry]]  # (benchmark folder, title) -> its runs, best first
    oracle: list[Entry]  # dry runs, by benchmark and run id

    @property
    def empty(self) -> bool:
        return not self.agents and not self.oracle


def rank(entries: list[Entry]) -> Board:
    groups: dict[tuple[str, str], list[Entry]] = {}
    for e in entries:
        if not e.oracle:
            groups.setdefault((e.benchmark, e.title), []).append(e)
    for runs in groups.values():
        runs.sort(key=lambda e: (e.mean is None, -(e.mean or 0), -e.graded, e.run_id))
    oracle = sorted((e for e in entries if e.oracle), key=lambda e: (e.benchmark, e.run_id))
    return Board(dict(sorted(groups.items())), oracle)


def collect(results_dir: Path, planned: dict[str, int] | None = None, prices: PriceTable | None = None) -> Board:
    """The board of every run in results_dir. `planned`: checks per benchmark folder name, for older states."""
    return rank(scan(results_dir, planned, prices))


def _columns(runs: list[Entry]) -> list[str]:
    present = {c for e in runs for c in e.categories}
    return [c for c in CATEGORIES if c in present]


def _score(e: Entry) -> str:
    return f"{e.mean:.2f}" if e.mean is not None else "—"


def _cat(e: Entry, c: str) -> str:
    g = e.categories.get(c)
    return f"{g.mean:.1f}" if g else "—"


def _link(e: Entry) -> str:
    return f"[{e.run_id}]({e.page})" if e.page else e.run_id


def grading_note(grading: str | None) -> str:
    if not grading or grading == ORIGINAL:
        return "Grades: each run's original grading set (`graded by`: its judge, or the persona)."
    return (f"Grades: grading set `{grading}` (`mmb regrade`) where a run has it; runs without it show their "
            "original grades (`graded by` names the set).")


def render_markdown(board: Board, grading: str | None = None) -> str:
    lines = ["# MarathonMemBench leaderboard", "",
             "Runs of each benchmark ranked by mean score (0–10) over their graded checks; one column per check "
             "category; `checks` is graded/planned; cost is the persona's tokens at its model's price "
             f"(`mmb list` and [{INDEX_FILE}]({INDEX_FILE}) show every run).", "", grading_note(grading), ""]
    if not board.agents:
        lines += ["No agent's run yet: only dry runs.", ""]
    for (bench, title), runs in board.agents.items():
        cats = _columns(runs)
        lines += [f"## {title} (`{bench}`)", "",
                  "| # | run | driver | persona | graded by | status | mean | " + " | ".join(cats) + (" | " if cats else "")
                  + "checks | turns | persona tokens in / out | cost | per check |",
                  "|---:|---|---|---|---|---|---:|" + "---:|" * len(cats) + "---:|---:|---:|---:|---:|"]
        for i, e in enumerate(runs, 1):  # runs without a score sort last and get no rank
            lines.append(f"| {i if e.mean is not None else '—'} | {_link(e)} | {e.driver} | {e.persona} | {e.graded_by} | {e.status} | **{_score(e)}** | "
                         + "".join(f"{_cat(e, c)} | " for c in cats)
                         + f"{e.coverage} | {e.turns} | {e.tokens_in:,} / {e.tokens_out:,} | {money(e.cost.usd)} | "
                         f"{money(e.cost.per_check)} |")
        lines.append("")
        if agents := pooled(runs):
            lines += pooled_markdown(agents, cats)
    if board.oracle:
        lines += ["## Oracle runs (dry runs, not ranked)", "",
                  "`mmb run --dry`: the scripted persona against an oracle agent that knows every answer. They check "
                  "the benchmark (every check reachable and gradable: 10 everywhere), not an agent.", "",
                  "| run | benchmark | status | mean | checks | turns | persona tokens in / out |",
                  "|---|---|---|---:|---:|---:|---:|"]
        lines += [f"| {_link(e)} | {e.title} (`{e.benchmark}`) | {e.status} | {_score(e)} | {e.coverage} | {e.turns} | "
                  f"{e.tokens_in:,} / {e.tokens_out:,} |" for e in board.oracle]
        lines.append("")
    return "\n".join(lines) + "\n"


def page_context(board: Board, grading: str | None = None) -> dict[str, Any]:
    """What leaderboard.html and its parts (leaderboard_parts.html, live in `mmb view`) are rendered with."""
    return dict(board=board, columns=_columns, category_mean=_cat, index=INDEX_FILE, grading_note=grading_note(grading),
                pooled=pooled, ci_text=ci_text)


def render_html(board: Board, grading: str | None = None) -> str:
    return render_page("leaderboard.html", **page_context(board, grading))


def write_leaderboard(results_dir: Path, entries: list[Entry], grading: str | None = None) -> list[Path]:
    """leaderboard.md and leaderboard.html over `entries` (catalog.scan); none when there is no run.
    `grading`: the grading set the entries show, for the pages to say."""
    board = rank(entries)
    if board.empty:
        return []
    pages = {results_dir / MARKDOWN_FILE: render_markdown(board, grading), results_dir / HTML_FILE: render_html(board, grading)}
    for path, text in pages.items():
        atomic_write(path, text)
    return list(pages)
