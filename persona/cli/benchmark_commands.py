"""Writing benchmarks and configs: `mmb validate`, `mmb new`, `mmb schema benchmark|config|export|state`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from persona.benchmark.loader import load_benchmark, manifest_schema
from persona.cli.common import EXIT_BAD_INPUT, config_or_fail, fail
from persona.config import CompactionConfig, config_schema
from persona.errors import InputError
from persona.report.export import export_schema
from persona.state import state_schema


def validate(
    benchmarks: Annotated[list[Path], typer.Argument(help="Benchmark folders")],
    strict: Annotated[bool, typer.Option("--strict", help="Fail on warnings too")] = False,
    links: Annotated[bool, typer.Option("--links/--no-links", help="List the facts each check tests")] = True,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Check against this config's compaction "
                                                "settings (default: the defaults)")] = None,
) -> None:
    """Check benchmarks: errors (unplayable) and warnings (likely mistakes), each with its file and line."""
    from persona.benchmark.links import describe, link_checks, scenario_facts
    from persona.benchmark.lint import lint
    from persona.engine.fit import fit_problems

    compaction, setting = CompactionConfig(), None
    if config is not None:
        cfg = config_or_fail(config)
        compaction, setting = cfg.compaction, cfg.problem(("compaction", "max_tokens"), "")
    bad = 0
    for folder in benchmarks:
        try:
            bench = load_benchmark(folder)
            if problems := fit_problems(bench, compaction, setting):  # what would stop a run however long it played
                raise InputError(problems)
        except InputError as e:
            bad += 1
            for p in e.problems:
                typer.secho(f"{p}", fg="red", err=True)
            typer.echo(f"{folder}: {len(e.problems)} error(s)")
            continue
        warnings = lint(bench)
        for w in warnings:
            typer.secho(f"warning: {w}", fg="yellow", err=True)
        bad += bool(warnings and strict)
        counts = f"{len(bench.phases)} phases, {sum(len(f.live_facts()) for f in bench.fact_files.values())} facts, " \
                 f"{len(bench.checks)} checks"
        typer.echo(f"{folder}: ok ({counts})" + (f", {len(warnings)} warning(s)" if warnings else ""))
        if links:
            typer.echo("  checks and the facts they test (state them with 🔗 FILE ID on the check line):")
            facts = scenario_facts(bench)
            for check_links in link_checks(bench).values():
                typer.echo(f"    {describe(check_links, facts)}")
    if bad:
        raise typer.Exit(EXIT_BAD_INPUT)


def new(
    name: Annotated[str, typer.Argument(help="Folder name of the new benchmark")],
    folder: Annotated[Path, typer.Option("--dir", help="Where benchmark folders live")] = Path("benchmarks"),
    language: Annotated[str, typer.Option("--language", "-l", help="en or ru")] = "en",
) -> None:
    """Create a skeleton benchmark that validates and dry-runs; replace its content with yours."""
    from persona.benchmark.skeleton import create_skeleton

    try:
        files = create_skeleton(name, folder, language)
    except InputError as e:
        fail(e)
    for f in files:
        typer.echo(f"wrote {f}")
    target = folder / name
    typer.echo(f"next: edit the files (see benchmarks/AUTHORING.md), then\n  mmb validate {target}\n"
               f"  mmb run --dry --benchmark {target}")


SCHEMAS = {"benchmark": manifest_schema, "config": config_schema, "export": export_schema, "state": state_schema}


def schema(
    what: Annotated[str, typer.Argument(help="benchmark (benchmark.json), config (config.jsonc), export "
                                        "(a row of mmb export) or state (what mmb state prints)")] = "benchmark",
) -> None:
    """Print a JSON Schema: of benchmark.json, config.jsonc, an exported row, or a run's whole state. The
    repository publishes them (schemas/)."""
    if what not in SCHEMAS:
        fail(f"no schema of {what!r}: benchmark, config, export or state")
    typer.echo(json.dumps(SCHEMAS[what](), indent=2, ensure_ascii=False))
