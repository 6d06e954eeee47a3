"""`mmb`: the command line."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .benchmark import load_benchmark, manifest_schema
from .config import Config, load_config
from .errors import InputError, RunError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="MarathonMemBench: test an AI agent's long-term memory through its chat UI.")

ConfigOption = Annotated[Path, typer.Option("--config", "-c", help="The config file")]


def _fail(problems: InputError | str, code: int = 2) -> None:
    text = "\n".join(str(p) for p in problems.problems) if isinstance(problems, InputError) else problems
    typer.secho(text, fg="red", err=True)
    raise typer.Exit(code)


def _console_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.DEBUG if verbose else logging.WARNING)
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.DEBUG if verbose else logging.INFO)


def _apply_overrides(config: Config, headed: bool, slow_mo: int | None, trace: str | None, video: bool) -> None:
    b = config.browser
    b.headless = b.headless and not headed
    b.slow_mo_ms = slow_mo if slow_mo is not None else b.slow_mo_ms
    b.trace = trace or b.trace
    b.video = b.video or video


@app.command()
def run(
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="The config file [default: config.jsonc]")] = None,
    run_ids: Annotated[Optional[list[str]], typer.Option("--run", "-r", help="Only these run ids")] = None,
    headed: Annotated[bool, typer.Option("--headed", help="Show the browser")] = False,
    slow_mo: Annotated[Optional[int], typer.Option("--slow-mo", help="Slow each browser action by MS")] = None,
    trace: Annotated[Optional[str], typer.Option("--trace", help="on | off | retain-on-failure")] = None,
    video: Annotated[bool, typer.Option("--video", help="Record a video of each chat")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    dry: Annotated[bool, typer.Option("--dry", help="Scripted persona against an agent that knows every answer, "
                                      "in process: is every check reachable and gradable, how long is it?")] = False,
    benchmark: Annotated[Optional[list[Path]], typer.Option("--benchmark", "-b", help="With --dry: this benchmark "
                                                            "folder, no config needed")] = None,
) -> None:
    """Play the runs of the config (all, or --run ID...). Reruns continue where they stopped."""
    from .runner import Runner, plan_runs

    if dry or benchmark:
        _dry(config, run_ids, benchmark or [], dry)
        return
    config = config or Path("config.jsonc")
    if trace not in (None, "on", "off", "retain-on-failure"):
        _fail(f"--trace must be on, off or retain-on-failure, not {trace!r}")
    _console_logging(verbose)
    try:
        cfg = load_config(config)
        plans = plan_runs(cfg, run_ids)
    except InputError as e:
        _fail(e)
    _apply_overrides(cfg, headed, slow_mo, trace, video)
    try:
        outcomes = asyncio.run(Runner(cfg).run_all(plans))
    except KeyboardInterrupt:
        typer.echo("interrupted: the state is saved; run the same command again to continue", err=True)
        raise typer.Exit(130) from None
    except RunError as e:
        _fail(str(e), 1)
    if any(o.status != "finished" for o in outcomes):
        raise typer.Exit(1)


def _dry(config: Path | None, run_ids: list[str] | None, benchmarks: list[Path], dry: bool) -> None:
    """`run --dry`: exit 1 unless every benchmark reaches coverage 100 % with every check at 10."""
    from .dry import play_dry

    if not dry:
        _fail("--benchmark plays a folder without a config only in a dry run: add --dry")
    _console_logging(False)
    try:
        ready = play_dry(config, run_ids, benchmarks, typer.echo)
    except InputError as e:
        _fail(e)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    if not ready:
        raise typer.Exit(1)


@app.command("validate")
def validate_cmd(
    benchmarks: Annotated[list[Path], typer.Argument(help="Benchmark folders")],
    strict: Annotated[bool, typer.Option("--strict", help="Fail on warnings too")] = False,
) -> None:
    """Check benchmarks: errors (unplayable) and warnings (likely mistakes), each with its file and line."""
    from .lint import lint

    bad = 0
    for folder in benchmarks:
        try:
            bench = load_benchmark(folder)
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
    if bad:
        raise typer.Exit(2)


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="Folder name of the new benchmark")],
    folder: Annotated[Path, typer.Option("--dir", help="Where benchmark folders live")] = Path("benchmarks"),
    language: Annotated[str, typer.Option("--language", "-l", help="en or ru")] = "en",
) -> None:
    """Create a skeleton benchmark that validates and dry-runs; replace its content with yours."""
    from .skeleton import create_skeleton

    try:
        files = create_skeleton(name, folder, language)
    except InputError as e:
        _fail(e)
    for f in files:
        typer.echo(f"wrote {f}")
    target = folder / name
    typer.echo(f"next: edit the files (see benchmarks/AUTHORING.md), then\n  mmb validate {target}\n"
               f"  mmb run --dry --benchmark {target}")


@app.command()
def schema() -> None:
    """Print the JSON Schema of benchmark.json."""
    typer.echo(json.dumps(manifest_schema(), indent=2, ensure_ascii=False))


@app.command("demo-agent")
def demo_agent(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1")] = 8765,
    data: Annotated[Optional[Path], typer.Option(help="Memory folder (default: in memory)")] = None,
) -> None:
    """Serve the bundled demo chat agent, to try it by hand or point a profile at it."""
    from demo_agent.web import DemoChatServer

    server = DemoChatServer(data)
    typer.echo(f"DemoMind at {server.start(port=port)}  (Ctrl-C stops)")
    try:
        asyncio.run(asyncio.Event().wait())
    except KeyboardInterrupt:
        server.stop()


def main() -> None:  # pragma: no cover - console entry point
    app()
