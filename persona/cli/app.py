"""`mmb`: the command line. This module only assembles it; each group of commands has its own module.

    run_commands.py        run (and run --dry), check
    result_commands.py     report (--merge), list, export, compare, state
    view_commands.py       view (the pages live, in a browser)
    grading_commands.py    regrade
    benchmark_commands.py  validate, new, schema
    import_commands.py     import locomo|longmemeval
    browser_commands.py    probe, discover, login, browsers-path, demo-agent
    common.py              exit codes, failing with one line, logging, the browser flags
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from persona.cli import (
    benchmark_commands,
    browser_commands,
    grading_commands,
    import_commands,
    result_commands,
    run_commands,
    view_commands,
)
from persona.cli.common import interrupted_code, say, stop_on_signals


class OneLineErrors(TyperGroup):
    """Bad arguments end with one line on stderr (`mmb run: No such option: --x (mmb run --help)`), exit 2.

    Typer would draw a box around a usage text instead; a script's log wants the line.
    """

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        stop_on_signals()
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except typer.TyperException as e:  # click's ClickException, UsageError and their kind
            ctx = getattr(e, "ctx", None)
            if type(e).__name__ == "NoArgsIsHelpError":  # `mmb` alone: the help (rich has printed it already)
                typer.echo(e.format_message(), nl=False, err=True)
            else:
                where = ctx.command_path if ctx is not None else "mmb"
                hint = f" ({where} --help)" if ctx is not None else ""
                typer.echo(f"{where}: {e.format_message()}{hint}", err=True)
            sys.exit(e.exit_code)
        except typer.Abort as e:
            if isinstance(e.__cause__, KeyboardInterrupt):  # Ctrl-C, SIGTERM or SIGHUP outside a run
                say("interrupted", err=True)
                sys.exit(interrupted_code())
            say("aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def package_version() -> str:
    try:
        return version("marathonmembench")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"mmb (MarathonMemBench) {package_version()}")
        raise typer.Exit()


app = typer.Typer(cls=OneLineErrors, add_completion=False, no_args_is_help=True,
                  help="MarathonMemBench: test an AI agent's long-term memory through its chat UI.")


@app.callback()
def _main(
    show_version: Annotated[bool, typer.Option("--version", callback=_show_version, is_eager=True,
                                               help="Print the version and exit")] = False,
) -> None:
    """MarathonMemBench: test an AI agent's long-term memory through its chat UI."""


app.command()(run_commands.run)
app.command()(run_commands.check)
app.command()(result_commands.report)
app.command("list")(result_commands.list_runs)
app.command()(result_commands.export)
app.command()(result_commands.compare)
app.command()(result_commands.state)
app.command()(view_commands.view)
app.command()(grading_commands.regrade)
app.command()(benchmark_commands.validate)
app.command()(benchmark_commands.new)
app.command()(benchmark_commands.schema)
app.command()(browser_commands.probe)
app.command()(browser_commands.discover)
app.command()(browser_commands.login)
app.command("browsers-path")(browser_commands.browsers_path)
app.command("demo-agent")(browser_commands.demo_agent)
app.add_typer(import_commands.app, name="import")


def main() -> None:  # pragma: no cover - console entry point
    app()
