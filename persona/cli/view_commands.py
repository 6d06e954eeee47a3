"""`mmb view`: serve the results folder's pages live (persona/report/live/), until Ctrl-C."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from persona.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, ConfigOption, fail, interrupted_code
from persona.cli.result_commands import ResultsOption, _config, _prices, _results


def view(
    config: ConfigOption = Path("config.jsonc"),
    results: ResultsOption = None,
    port: Annotated[int, typer.Option("--port", help="Port to listen on (0: any free one)", min=0, max=65535)] = 8765,
    host: Annotated[str, typer.Option("--host", help="Address to listen on; anything but loopback lets others read "
                                      "every transcript")] = "127.0.0.1",
    open_browser: Annotated[bool, typer.Option("--open", help="Open the index in the default browser")] = False,
) -> None:
    """Watch runs live in a browser: every run, a run's conversation and grades as they happen, the
    leaderboard, two runs compared. Reads the results folder only."""
    from persona.report.live.server import PortTaken, Viewer, beyond_loopback, bind, url_of
    from persona.tokens import TokenCounter

    cfg = _config(config)
    folder = _results(cfg, results, must_exist=False)
    if not folder.is_dir():
        if results is not None:
            fail(f"no results folder at {folder}")
        typer.echo(f"mmb view: {folder} does not exist yet; runs show as they start", err=True)
    try:
        sock = bind(host, port)
    except PortTaken as e:
        fail(f"mmb view: {e}", EXIT_FAILED)
    url = url_of(sock)
    viewer = Viewer(folder, {r.id: cfg.benchmark_path(r) for r in cfg.runs} if cfg else None,
                    TokenCounter(cfg.compaction.encoding) if cfg else None, _prices(cfg))

    def started() -> None:
        typer.echo(f"mmb view: serving {folder} at {url} (Ctrl-C to stop)", err=True)
        if beyond_loopback(sock):
            typer.secho(f"mmb view: WARNING: listening on {sock.getsockname()[0]}, beyond this machine: anyone who "
                        "can reach it reads every run's transcript (--host 127.0.0.1 keeps it local)", fg="yellow", err=True)
        if open_browser:
            webbrowser.open(url)

    server = viewer.server(started)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn hands the signal on once its streams are closed
        _stopped(interrupted_code())
    finally:
        sock.close()
    if server.stopped_by is not None:  # a signal it was started ignoring (a script's `mmb view &`): uvicorn stops all the same
        _stopped(128 + server.stopped_by)


def _stopped(code: int) -> NoReturn:
    if code == EXIT_INTERRUPTED:  # Ctrl-C at a terminal; SIGTERM and SIGHUP stop it quietly
        typer.echo("mmb view: stopped", err=True)
    raise typer.Exit(code) from None  # the KeyboardInterrupt it may come from is no part of the story
