"""Writing a run's reports: report.html beside its state; the leaderboard and the index over all runs.

The runner calls `publish_run` at every run's end (after report.md); `mmb report` calls
`rebuild` to regenerate every page from the state files, e.g. after an upgrade or during a run,
after `complete_entries` has written the report.md entries of run ends a kill left unreported
(of runs no process holds). Reading never changes a run's files (RunStore.load would trim a
transcript that runs ahead of its state, which is right for a restart but wrong for a reader
beside a live run).
"""

from __future__ import annotations

import logging
from pathlib import Path

from persona.benchmark.loader import Benchmark, load_benchmark
from persona.errors import InputError, RunError
from persona.report.activity import ActivityCounts
from persona.report.autopsy import Autopsy, memory_autopsy
from persona.report.catalog import scan
from persona.report.cost import PriceTable
from persona.report.gradings import load_set, shown_with
from persona.report.html import write_run_report
from persona.report.index import write_index
from persona.report.leaderboard import write_leaderboard
from persona.report.markdown import append_entry_once
from persona.state import STATE_FILE, TRANSCRIPT_FILE, Exchange, RunState, RunStore, read_state, transcript_shortfall
from persona.tokens import TokenCounter

log = logging.getLogger(__name__)


def read_run(folder: Path) -> tuple[RunState, list[Exchange]]:
    """The state and the transcript lines it knows of, read only. A transcript shorter than the state counts
    is said (its pages show what there is)."""
    state = read_state(folder)
    exchanges = []
    path = folder / TRANSCRIPT_FILE
    if path.exists():
        with open(path, encoding="utf-8") as f:
            for line in f:
                if len(exchanges) >= state.transcript_len or not line.endswith("\n"):
                    break
                exchanges.append(Exchange.model_validate_json(line))
    if len(exchanges) < state.transcript_len:
        log.warning("run %s: %s: turns are missing from its transcript", folder.name,
                    transcript_shortfall(path, state.transcript_len))
    return state, exchanges


def entry_parts(folder: Path, state: RunState, bench: Benchmark | None) -> tuple[Autopsy | None, ActivityCounts | None]:
    """What report.md's entry reads from the transcript: the memory autopsy (from memory snapshots, or the
    tool results the chat showed) and the agent's activity counted. A failure is logged, never raised:
    the run's outcome stands."""
    try:
        exchanges = read_run(folder)[1]
    except Exception as e:
        log.warning("the transcript of %s could not be read for its report.md entry: %s", folder, e)
        return None, None
    try:
        autopsy = memory_autopsy(folder, state, exchanges, bench)
    except Exception as e:
        log.warning("the memory autopsy of %s failed: %s", folder, e)
        autopsy = None
    return autopsy, ActivityCounts.of(exchanges)


def write_overview(results_dir: Path, planned: dict[str, int] | None = None, prices: PriceTable | None = None,
                   grading: str | None = None) -> list[Path]:
    """The folder's own pages: leaderboard.md, leaderboard.html and index.html; none without a run.
    `grading`: the grading set shown where a run has it."""
    entries = scan(results_dir, planned, prices, grading)
    return [*write_leaderboard(results_dir, entries, grading), *write_index(results_dir, entries)]


def publish_run(folder: Path, state: RunState, bench: Benchmark | None, results_dir: Path,
                counter: TokenCounter, prices: PriceTable) -> list[Path]:
    """report.html, the leaderboard and the index; a failure is logged, never raised: the run's outcome stands."""
    try:
        _, exchanges = read_run(folder)
        return [write_run_report(folder, state, exchanges, bench, counter, prices), *write_overview(results_dir, None, prices)]
    except Exception as e:  # reporting must never turn a finished run into a failed one
        log.warning("writing the HTML report of %s failed: %s", folder, e)
        return []


def benchmark_at(path: str) -> Benchmark | None:
    """The run's benchmark where its state says it is (absolute, or relative to here), if it loads."""
    try:
        return load_benchmark(Path(path)) if Path(path).is_dir() else None
    except InputError:
        return None


def complete_entries(results_dir: Path, benches: dict[str, Benchmark], only: list[str] | None = None,
                     prices: PriceTable | None = None) -> list[Path]:
    """The report.md entry of every run whose last end a kill left unreported (`ends` > `reported_ends`),
    appended once; the folders of runs whose entry was written. A running run is left to its process."""
    done = []
    for path in sorted(results_dir.glob(f"*/{STATE_FILE}")):
        if only and path.parent.name not in only:
            continue
        store = RunStore(path.parent)
        try:
            store.lock()
        except RunError:
            continue  # an mmb process plays it, and reports its end itself
        try:
            state = store.load()
            if state is None or state.ends <= state.reported_ends:
                continue
            bench = benches.get(state.run_id) or benchmark_at(state.benchmark)
            if bench is None:
                log.warning("%s: its benchmark %s does not load, so its report.md entry cannot be written",
                            state.run_id, state.benchmark)
                continue
            append_entry_once(results_dir, bench, state, prices, *entry_parts(path.parent, state, bench))
            state.reported_ends = state.ends  # report.html and the leaderboard: rebuild() writes them next
            store.save(state)
            done.append(path.parent)
        except RunError as e:
            log.warning("skipping %s: %s", path, e)
        finally:
            store.unlock()
    return done


def rebuild(results_dir: Path, benches: dict[str, Benchmark], only: list[str] | None = None,
            counter: TokenCounter | None = None, prices: PriceTable | None = None,
            grading: str | None = None) -> list[Path]:
    """Every run's report.html (or those in `only`), the leaderboard and the index; `benches` by run id.
    `grading`: show that grading set wherever a run has it (the pages say which they show)."""
    counter, prices = counter or TokenCounter(), prices or PriceTable()
    written = []
    planned = {b.root.name: len(b.checks) for b in benches.values()}
    for path in sorted(results_dir.glob(f"*/{STATE_FILE}")):
        run_id = path.parent.name
        if only and run_id not in only:
            continue
        try:
            state, exchanges = read_run(path.parent)
        except ValueError as e:
            log.warning("skipping run %s: %s", run_id, str(e).splitlines()[0])
            continue
        bench = benches.get(run_id) or benchmark_at(state.benchmark)
        state = shown_with(state, load_set(path.parent, grading) if grading else None)
        if bench is not None:
            planned.setdefault(bench.root.name, len(bench.checks))
        written.append(write_run_report(path.parent, state, exchanges, bench, counter, prices))
    return written + write_overview(results_dir, planned, prices, grading)
