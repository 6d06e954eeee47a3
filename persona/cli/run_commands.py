"""`mmb run`: play the runs of the config, or dry-run benchmarks against the oracle."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from persona.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    TRACE_MODES,
    HeadedOption,
    RunIdsOption,
    SlowMoOption,
    TraceOption,
    VerboseOption,
    VideoOption,
    apply_overrides,
    console_logging,
    fail,
)
from persona.config import load_config
from persona.errors import InputError, RunError


def run(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="The config file [default: config.jsonc]")] = None,
    run_ids: RunIdsOption = None,
    headed: HeadedOption = False,
    slow_mo: SlowMoOption = None,
    trace: TraceOption = None,
    video: VideoOption = False,
    verbose: VerboseOption = False,
    dry: Annotated[bool, typer.Option("--dry", help="Scripted persona against an agent that knows every answer, "
                                      "in process: is every check reachable and gradable, how long is it?")] = False,
    benchmark: Annotated[list[Path] | None, typer.Option("--benchmark", "-b", help="With --dry: this benchmark "
                                                            "folder, no config needed")] = None,
) -> None:
    """Play the runs of the config (all, or --run ID...). Reruns continue where they stopped."""
    from persona.engine.runner import Runner, plan_runs
    from persona.report.progress import make_progress

    if dry or benchmark:
        _dry(config, run_ids, benchmark or [], dry)
        return
    config = config or Path("config.jsonc")
    if trace not in (None, *TRACE_MODES):
        fail(f"--trace must be on, off or retain-on-failure, not {trace!r}")
    console_logging(verbose)
    try:
        cfg = load_config(config)
        plans = plan_runs(cfg, run_ids)
    except InputError as e:
        fail(e)
    apply_overrides(cfg, headed, slow_mo, trace, video)
    try:
        with make_progress() as progress:
            outcomes = asyncio.run(Runner(cfg, progress=progress).run_all(plans))
    except KeyboardInterrupt:
        typer.echo("interrupted: the state is saved; run the same command again to continue", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except RunError as e:
        fail(str(e), EXIT_FAILED)
    if any(o.status != "finished" for o in outcomes):
        raise typer.Exit(EXIT_FAILED)


def _dry(config: Path | None, run_ids: list[str] | None, benchmarks: list[Path], dry: bool) -> None:
    """`run --dry`: exit 1 unless every benchmark reaches coverage 100 % with every check at 10."""
    from persona.engine.dry import play_dry

    if not dry:
        fail("--benchmark plays a folder without a config only in a dry run: add --dry", EXIT_BAD_INPUT)
    console_logging(False)
    try:
        ready = play_dry(config, run_ids, benchmarks, typer.echo)
    except InputError as e:
        fail(e)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if not ready:
        raise typer.Exit(EXIT_FAILED)
