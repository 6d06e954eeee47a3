"""Reading results: `mmb report` (and --merge), `mmb list`, `mmb export`, `mmb compare`, `mmb state`.

All of them read a results folder: --results, else the config's `results_dir` (when a config file
is there), else ./results. None of them changes a run. A run whose state a newer mmb wrote stops
those that write from it (report, export, compare, state) with one line, before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from persona.cli.common import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_GATE, ConfigOption, RunIdsOption, config_or_fail, fail
from persona.config import Config

if TYPE_CHECKING:  # imported where used: `mmb --help` stays quick
    from persona.report.compare import Side
    from persona.report.cost import PriceTable
    from persona.tokens import TokenCounter

ResultsOption = Annotated[Path | None, typer.Option("--results", help="Results folder (default: the config's)")]


def _config(config: Path) -> Config | None:
    """The config when its file exists: reading results needs none, but takes its folder and prices."""
    return config_or_fail(config) if config.exists() else None


def _results(cfg: Config | None, results: Path | None, *, must_exist: bool = True) -> Path:
    folder = results or (cfg.results_path() if cfg else Path("results"))
    if must_exist and not folder.is_dir():
        fail(f"no results folder at {folder}")
    return folder


def _prices(cfg: Config | None) -> PriceTable:
    from persona.report.cost import PriceTable

    return PriceTable(cfg.prices if cfg else None)


def _known_runs(folder: Path, run_ids: list[str] | None) -> None:
    from persona.report.catalog import unknown_runs

    if run_ids and (problem := unknown_runs(folder, run_ids)):
        fail(problem)


def _none_newer(folder: Path, run_ids: list[str] | None = None) -> None:
    """Stop, before anything is written, at a run whose state a newer mmb wrote: one line (and how many more)."""
    from persona.report.catalog import newer_runs

    if folder.is_dir() and (newer := newer_runs(folder, run_ids)):
        fail(newer[0] + (f" (and {len(newer) - 1} more run(s) of {folder})" if len(newer) > 1 else ""), EXIT_FAILED)


def report(
    config: ConfigOption = Path("config.jsonc"),
    run_ids: RunIdsOption = None,
    results: ResultsOption = None,
    merge: Annotated[bool, typer.Option("--merge", help="First copy the runs of the DIRS (other machines' results "
                                        "folders, shards) into the results folder")] = False,
    dirs: Annotated[list[Path] | None, typer.Argument(help="With --merge: results folders to merge", show_default=False)] = None,
    grading: Annotated[str | None, typer.Option("--grading", help="Show this grading set (`mmb regrade`) where a run "
                                                "has it; the pages say which they show")] = None,
) -> None:
    """Rebuild every run's report.html, the leaderboard and index.html from the saved states, and write
    the report.md entries a kill left unwritten."""
    from persona.benchmark.loader import load_benchmark
    from persona.errors import InputError
    from persona.report.publish import complete_entries, rebuild
    from persona.tokens import TokenCounter

    cfg = _config(config)
    if dirs and not merge:
        fail("folders are read only with --merge: mmb report --merge DIR...")
    for folder in [*(dirs or []), _results(cfg, results, must_exist=False)]:  # the overview pages cover every run
        _none_newer(folder)
    if merge:
        _merge(dirs or [], _results(cfg, results, must_exist=False))
    folder = _results(cfg, results)
    _known_runs(folder, run_ids)
    benches = {}
    for run in cfg.runs if cfg else []:  # benchmarks found through the config; others get a report without titles
        try:
            benches[run.id] = load_benchmark(cfg.benchmark_path(run))
        except InputError:
            typer.secho(f"{run.id}: benchmark {run.benchmark} does not load; its report has no phase titles", err=True)
    counter = TokenCounter(cfg.compaction.encoding) if cfg else None
    for run in complete_entries(folder, benches, run_ids, _prices(cfg)):
        typer.echo(f"{folder / 'report.md'}: wrote the entry of {run.name}'s last end (a kill had left it unwritten)")
    written = rebuild(folder, benches, run_ids, counter, _prices(cfg), grading)
    if not written:
        fail(f"no runs in {folder}", EXIT_BAD_INPUT)
    for path in written:
        typer.echo(str(path))


def _merge(dirs: list[Path], target: Path) -> None:
    from persona.report.merge import MergeConflict, merge_results

    if not dirs:
        fail("--merge needs the results folders to merge: mmb report --merge DIR...")
    if missing := [d for d in dirs if not d.is_dir()]:
        fail(f"no results folder at {', '.join(map(str, missing))}")
    try:
        merged = merge_results(dirs, target)
    except MergeConflict as e:
        fail(str(e))
    typer.echo(f"merged into {target}: {len(merged.copied)} run(s) copied, {len(merged.present)} already there, "
               f"{merged.entries} report.md entries", err=True)
    if merged.not_runs:
        typer.echo(f"not runs (no state.json), not copied: {', '.join(map(str, merged.not_runs))}", err=True)


def list_runs(
    config: ConfigOption = Path("config.jsonc"),
    results: ResultsOption = None,
) -> None:
    """Every run in the results folder: status, progress, mean, cost, started, duration; newest first."""
    from persona.report.catalog import LIST_COLUMNS, list_rows, scan

    cfg = _config(config)
    rows = list_rows(scan(_results(cfg, results), prices=_prices(cfg)))
    if not rows:
        typer.echo(f"no runs in {_results(cfg, results)}")
        return
    widths = [max(len(r[i]) for r in [LIST_COLUMNS, *rows]) for i in range(len(LIST_COLUMNS))]
    for r in [LIST_COLUMNS, *rows]:
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


def export(
    config: ConfigOption = Path("config.jsonc"),
    run_ids: RunIdsOption = None,
    results: ResultsOption = None,
    fmt: Annotated[str | None, typer.Option("--format", "-f", help="json | jsonl | csv (default: from -o's suffix, "
                                            "else jsonl)")] = None,
    out: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of to stdout")] = None,
) -> None:
    """One row per graded check (run, agent, question, expected and given answer, score, turns...): see README."""
    from drivers.files import atomic_write
    from persona.report.export import FORMATS, format_of, render, rows_of_results

    cfg = _config(config)
    fmt = fmt or (format_of(out) if out else None) or "jsonl"
    if fmt not in FORMATS:
        fail(f"--format must be json, jsonl or csv, not {fmt!r}")
    folder = _results(cfg, results)
    _known_runs(folder, run_ids)
    _none_newer(folder, run_ids)
    text, guarded = render(rows_of_results(folder, run_ids, _counter(cfg)), fmt)  # type: ignore[arg-type]
    if out is None:
        typer.echo(text, nl=False)
    else:
        atomic_write(out, text)
    if guarded:
        typer.echo(f"csv: {guarded} text cell(s) start with = + - @ or ': written with a ' in front so spreadsheets "
                   "do not run them as formulas (mmb compare reads them back exactly)", err=True)


def _counter(cfg: Config | None) -> TokenCounter:
    from persona.tokens import TokenCounter

    return TokenCounter(cfg.compaction.encoding) if cfg else TokenCounter()


def compare(
    a: Annotated[str, typer.Argument(help="A run id, or an export file of one run (.json, .jsonl, .csv)")],
    b: Annotated[str, typer.Argument(help="The run to compare with A (B − A)")],
    config: ConfigOption = Path("config.jsonc"),
    results: ResultsOption = None,
    fail_on_regression: Annotated[bool, typer.Option("--fail-on-regression", help="Exit 3 when a check scores lower "
                                                     "in B, or A graded it and B did not")] = False,
) -> None:
    """Two runs of one benchmark, check by check: regressions first, then the mean difference with its CI."""
    from persona.report.compare import compare as compare_sides
    from persona.report.compare import render

    cfg = _config(config)
    sides = [_side(spec, cfg, results) for spec in (a, b)]
    try:
        comparison = compare_sides(*sides)
    except ValueError as e:
        fail(str(e))
    typer.echo(render(comparison), nl=False)
    if fail_on_regression and comparison.regressed:
        raise typer.Exit(EXIT_GATE)


def _side(spec: str, cfg: Config | None, results: Path | None) -> Side:
    """A run id of the results folder, or an export file holding one run."""
    from persona.report.catalog import run_folders
    from persona.report.compare import Side
    from persona.report.export import ExportFileError, format_of, read_rows, rows_of_results

    path = Path(spec)
    if path.is_file() and format_of(path):
        try:
            rows = read_rows(path)
        except ExportFileError as e:
            fail(str(e))
        if len(runs := sorted({r.run_id for r in rows})) > 1:
            fail(f"{path} holds {len(runs)} runs ({', '.join(runs)}): export one run per file (mmb export -r ID)")
        return Side(spec, rows)
    folder = _results(cfg, results)
    if spec not in (runs := run_folders(folder)):
        fail(f"{spec} is neither an export file (.json, .jsonl, .csv) nor a run in {folder} (runs: {', '.join(runs) or 'none'})")
    _none_newer(folder, [spec])
    return Side(spec, rows_of_results(folder, [spec], _counter(cfg)))


def state(
    run: Annotated[str, typer.Argument(help="A run id of the results folder, or a run's folder")],
    config: ConfigOption = Path("config.jsonc"),
    results: ResultsOption = None,
    field: Annotated[str | None, typer.Option("--field", help="Print this field alone: evaluations, facts, log, "
                                              "usage, ... (mmb schema state lists them)")] = None,
) -> None:
    """Print the whole state of a run as one JSON document, the parts saved beside state.json put back (JSON
    Schema: mmb schema state). Safe beside a running run: it reads as the reports and mmb view do."""
    from persona.state import RunState, StateUnreadable, read_state

    fields = [name for name, info in RunState.model_fields.items() if not info.exclude]
    if field is not None and field not in fields:
        fail(f"--field must be one of {', '.join(fields)}, not {field!r}")
    folder = _run_folder(run, _config(config), results)
    try:
        whole = read_state(folder)
    except StateUnreadable as e:
        fail(str(e), EXIT_FAILED)
    except FileNotFoundError:  # removed between the look and the read
        fail(f"no run at {folder}: its state.json is gone", EXIT_FAILED)
    if field is None:
        typer.echo(whole.model_dump_json(indent=2))
    else:
        typer.echo(json.dumps(whole.model_dump(mode="json", include={field})[field], indent=2, ensure_ascii=False))


def _run_folder(run: str, cfg: Config | None, results: Path | None) -> Path:
    """A run id of the results folder, else a folder holding a run's state.json."""
    from persona.report.catalog import run_folders
    from persona.state import STATE_FILE

    folder = _results(cfg, results, must_exist=False)
    runs = run_folders(folder) if folder.is_dir() else {}
    if run in runs:
        return runs[run]
    if (Path(run) / STATE_FILE).is_file():
        return Path(run)
    fail(f"{run} is neither a run in {folder} (runs: {', '.join(runs) or 'none'}) nor a run's folder")
