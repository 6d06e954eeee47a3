"""`mmb`: the command line. This module only assembles it; each group of commands has its own module.

    run_commands.py        run (and run --dry)
    result_commands.py     report
    benchmark_commands.py  validate, new, schema
    browser_commands.py    probe, login, browsers-path, demo-agent
    common.py              exit codes, failing with one line, logging, the browser flags
"""

from __future__ import annotations

import typer

from persona.cli import benchmark_commands, browser_commands, result_commands, run_commands

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="MarathonMemBench: test an AI agent's long-term memory through its chat UI.")


app.command()(run_commands.run)
app.command()(result_commands.report)
app.command()(benchmark_commands.validate)
app.command()(benchmark_commands.new)
app.command()(benchmark_commands.schema)
app.command()(browser_commands.probe)
app.command()(browser_commands.login)
app.command("browsers-path")(browser_commands.browsers_path)
app.command("demo-agent")(browser_commands.demo_agent)


def main() -> None:  # pragma: no cover - console entry point
    app()
