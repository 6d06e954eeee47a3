"""`mmb regrade`: a finished run's saved answers re-scored by another judge, into a new grading set."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from persona.cli.common import EXIT_FAILED, ConfigOption, config_or_fail, console_logging, fail, run_stoppable
from persona.errors import RunError


def regrade(
    run_id: Annotated[str, typer.Argument(help="The finished run to re-score (its folder in the results)")],
    judge_model: Annotated[str, typer.Option("--judge-model", "-m", help="The judge model; 'rules': the offline rule judge")],
    base_url: Annotated[str | None, typer.Option("--base-url", help="Its OpenAI-compatible endpoint [default: the "
                                                 "config's judge, else its persona]")] = None,
    api_key_env: Annotated[str | None, typer.Option("--api-key-env", help="Environment variable holding the key "
                                                    "[default: as the config]")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Name of the new grading set [default: judge-MODEL]")] = None,
    config: ConfigOption = Path("config.jsonc"),
    results: Annotated[Path | None, typer.Option("--results", help="Results folder (default: the config's)")] = None,
) -> None:
    """Re-score a finished run's saved answers with another judge into a new grading set; print the agreement."""
    from persona.engine.regrade import agreement_lines, regrade_judge, regrade_run
    from persona.report.gradings import set_name

    console_logging(False)
    cfg = config_or_fail(config) if config.exists() else None
    folder = (results or (cfg.results_path() if cfg else Path("results"))) / run_id
    if not (folder / "state.json").is_file():
        fail(f"no run {run_id!r}: {folder}/state.json not found")
    try:
        judge = regrade_judge(cfg, run_id, judge_model, base_url, api_key_env)
        gset, original, report = run_stoppable(regrade_run(folder, judge, name or set_name(judge.label), typer.echo))
    except RunError as e:
        fail(str(e), EXIT_FAILED)
    typer.echo(f"grading set {gset.name!r} of run {run_id}: {len(gset.grades)} checks graded by {gset.judge}"
               f" -> {folder}/gradings/{gset.name}.json")
    for line in agreement_lines(gset, original):
        typer.echo(line)
    if report:
        typer.echo(f"report entry appended to {report}")
    typer.echo(f"show it: mmb report --grading {gset.name}")
