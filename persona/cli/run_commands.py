"""`mmb run`: play the runs of the config, or dry-run benchmarks against the oracle; `mmb check`: see that
each run's persona model and chat page work, without playing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from persona.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_GATE,
    TRACE_MODES,
    ConfigOption,
    HeadedOption,
    RunIdsOption,
    SlowMoOption,
    TraceOption,
    VerboseOption,
    VideoOption,
    apply_overrides,
    console_logging,
    fail,
    interrupted_code,
    run_stoppable,
    say,
)
from persona.config import load_config
from persona.errors import InputError, RunError

if TYPE_CHECKING:  # the runner imports Playwright: only when a run is due
    from persona.engine.runner import RunOutcome


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
    fail_under: Annotated[float | None, typer.Option("--fail-under", min=0, max=10, help="Exit 3 when a run's mean "
                                                     "score is below this (default: the config's fail_under)")] = None,
    shard: Annotated[str | None, typer.Option("--shard", help="i/n: play only this machine's share of the runs "
                                              "(sorted by id, dealt round-robin); mmb report --merge joins the shards")] = None,
    repeat: Annotated[int | None, typer.Option("--repeat", min=1, help="Play each run N times, independently "
                                               "(results/<id>.r1/ ...), over its `repeat` in the config")] = None,
    accept_benchmark_change: Annotated[bool, typer.Option(
        "--accept-benchmark-change", help="Resume runs whose benchmark files changed since they started")] = False,
) -> None:
    """Play the runs of the config (all, or --run ID...). Reruns continue where they stopped."""
    from persona.engine.runner import Runner, plan_runs
    from persona.engine.shard import parse_shard, select_shard
    from persona.report.progress import make_progress

    if dry or benchmark:
        if fail_under is not None or shard:
            fail("--fail-under and --shard are for real runs; a dry run fails (exit 1) unless every check scores 10")
        _dry(config, run_ids, benchmark or [], dry)
        return
    try:
        share = parse_shard(shard) if shard else None
    except ValueError as e:
        fail(str(e))
    config = config or Path("config.jsonc")
    if trace not in (None, *TRACE_MODES):
        fail(f"--trace must be on, off or retain-on-failure, not {trace!r}")
    console_logging(verbose)
    try:
        cfg = load_config(config)
        plans = plan_runs(cfg, run_ids, repeat)
    except InputError as e:
        fail(e)
    apply_overrides(cfg, headed, slow_mo, trace, video)
    if share:
        plans = select_shard(plans, *share)
        typer.echo(f"shard {share[0]}/{share[1]}: {len(plans)} run(s): {', '.join(p.run.id for p in plans) or 'none'}")
    try:
        with make_progress() as progress:
            runner = Runner(cfg, progress=progress, accept_benchmark_change=accept_benchmark_change, print_line=say)
            outcomes = run_stoppable(runner.run_all(plans))
    except KeyboardInterrupt:
        interrupted("the state is saved; run the same command again to continue")
    except RunError as e:
        fail(str(e), EXIT_FAILED)
    if any(o.status != "finished" for o in outcomes):
        raise typer.Exit(EXIT_FAILED)
    _gate(outcomes, fail_under if fail_under is not None else cfg.fail_under)


def _gate(outcomes: list[RunOutcome], threshold: float | None) -> None:
    """--fail-under: exit 3 when a run's mean is below the threshold; a run with no check graded fails it too."""
    if threshold is None:
        return
    below = [o for o in outcomes if o.mean_score is None or o.mean_score < threshold]
    for o in below:
        mean = f"mean {o.mean_score:.2f}" if o.mean_score is not None else "no check graded"
        typer.secho(f"[{o.run_id}] {mean}: below --fail-under {threshold:g}", fg="red", err=True)
    if below:
        raise typer.Exit(EXIT_GATE)


def interrupted(what: str) -> NoReturn:
    """The Ctrl-C (or SIGTERM, SIGHUP) notice, on a line of its own: the terminal echoed `^C` where the
    cursor was, and unless the live progress lines (stdout on a terminal) redrew that line since, the
    notice would follow it."""
    fresh_line = "" if sys.stdout.isatty() or not sys.stderr.isatty() else "\n"
    say(f"{fresh_line}interrupted: {what}", err=True)
    raise typer.Exit(interrupted_code())


def _dry(config: Path | None, run_ids: list[str] | None, benchmarks: list[Path], dry: bool) -> None:
    """`run --dry`: exit 1 unless every benchmark reaches coverage 100 % with every check at 10."""
    from persona.engine.dry import play_dry

    if not dry:
        fail("--benchmark plays a folder without a config only in a dry run: add --dry", EXIT_BAD_INPUT)
    console_logging(False)
    try:
        ready = play_dry(config, run_ids, benchmarks, say, run=run_stoppable)
    except InputError as e:
        fail(e)
    except KeyboardInterrupt:
        interrupted("a dry run starts over the next time")
    if not ready:
        raise typer.Exit(EXIT_FAILED)


def check(
    config: ConfigOption = Path("config.jsonc"),
    run_ids: RunIdsOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Check each run's persona model (a few cheap calls) and chat page (a probe) without playing."""
    from persona.cli.browsing import check_runs
    from persona.engine.runner import plan_runs

    console_logging(verbose)
    try:
        plans = plan_runs(cfg := load_config(config), run_ids)
    except InputError as e:
        fail(e)
    if not run_stoppable(check_runs(cfg, plans, typer.echo)):
        raise typer.Exit(EXIT_FAILED)
