"""`mmb`: the command line."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .benchmark import manifest_schema, validate
from .config import Config, load_config
from .errors import InputError, RunError
from .secrets import RedactingFilter

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
    handler.addFilter(RedactingFilter())
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
    config: ConfigOption = Path("config.jsonc"),
    run_ids: Annotated[Optional[list[str]], typer.Option("--run", "-r", help="Only these run ids")] = None,
    headed: Annotated[bool, typer.Option("--headed", help="Show the browser")] = False,
    slow_mo: Annotated[Optional[int], typer.Option("--slow-mo", help="Slow each browser action by MS")] = None,
    trace: Annotated[Optional[str], typer.Option("--trace", help="on | off | retain-on-failure")] = None,
    video: Annotated[bool, typer.Option("--video", help="Record a video of each chat")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Play the runs of the config (all, or --run ID...). Reruns continue where they stopped."""
    from .runner import Runner, plan_runs

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


@app.command("validate")
def validate_cmd(benchmarks: Annotated[list[Path], typer.Argument(help="Benchmark folders")]) -> None:
    """Check benchmarks; every problem is reported with its file and line."""
    bad = 0
    for folder in benchmarks:
        problems = validate(folder)
        if problems:
            bad += 1
            for p in problems:
                typer.secho(str(p), fg="red", err=True)
        else:
            typer.echo(f"{folder}: ok")
    if bad:
        raise typer.Exit(2)


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
