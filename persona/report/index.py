"""results/index.html: every run of the folder (agents' and dry ones), newest first, filterable, each
linked to its report.html, which links back; with the leaderboard beside it the folder can be shared whole."""

from __future__ import annotations

from pathlib import Path

from drivers.files import atomic_write
from persona.report.catalog import INDEX_FILE, LEADERBOARD_PAGE, Entry, newest_first
from persona.report.templating import render_page


def render_index(entries: list[Entry]) -> str:
    return render_page("index.html", runs=newest_first(entries), leaderboard=LEADERBOARD_PAGE,
                       benchmarks=sorted({e.benchmark for e in entries}), statuses=sorted({e.status for e in entries}))


def write_index(results_dir: Path, entries: list[Entry]) -> list[Path]:
    """index.html over `entries` (catalog.scan); none when there is no run."""
    if not entries:
        return []
    path = results_dir / INDEX_FILE
    atomic_write(path, render_index(entries))
    return [path]
