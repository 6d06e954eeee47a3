"""Reading results: `mmb report`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from persona.cli.common import ConfigOption, RunIdsOption, config_or_fail, fail


def report(
    config: ConfigOption = Path("config.jsonc"),
    run_ids: RunIdsOption = None,
    results: Annotated[Path | None, typer.Option("--results", help="Results folder (default: the config's)")] = None,
) -> None:
    """Rebuild results/<id>/report.html of every run and results/leaderboard.{md,html} from the saved states."""
    from persona.benchmark.loader import load_benchmark
    from persona.errors import InputError
    from persona.report.publish import rebuild
    from persona.tokens import TokenCounter

    cfg = config_or_fail(config) if config.exists() else None
    folder = results or (cfg.results_path() if cfg else Path("results"))
    if not folder.is_dir():
        fail(f"no results folder at {folder}")
    benches = {}
    for run in cfg.runs if cfg else []:  # benchmarks found through the config; others get a report without titles
        try:
            benches[run.id] = load_benchmark(cfg.benchmark_path(run))
        except InputError:
            typer.secho(f"{run.id}: benchmark {run.benchmark} does not load; its report has no phase titles", err=True)
    counter = TokenCounter(cfg.compaction.encoding) if cfg else None
    for path in rebuild(folder, benches, run_ids, counter):
        typer.echo(str(path))
