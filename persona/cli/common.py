"""What every `mmb` command shares: failing with one clear line, console logging, browser flags.

Exit codes (README, "Exit codes"): 0 success; 1 a run failed or stopped, or a step could not
act; 2 bad input (arguments, config, benchmark, unknown run ids); 3 a quality gate failed
(`run --fail-under`, `compare --fail-on-regression`); 130 interrupted (Ctrl-C), 143 stopped by
SIGTERM, 129 by SIGHUP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from drivers.settings import BrowserConfig
from persona.config import Config, load_config
from persona.errors import InputError
from persona.secrets import RedactingFilter

T = TypeVar("T")
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_GATE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

ConfigOption = Annotated[Path, typer.Option("--config", "-c", help="The config file")]
RunIdsOption = Annotated[list[str] | None, typer.Option("--run", "-r", help="Only these run ids")]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v")]

TRACE_MODES = ("on", "off", "retain-on-failure")
HeadedOption = Annotated[bool, typer.Option("--headed", help="Show the browser (needs a display, or xvfb-run -a)")]
SlowMoOption = Annotated[int | None, typer.Option("--slow-mo", help="Slow each browser action by MS", min=0)]
TraceOption = Annotated[str | None, typer.Option(
    "--trace", help="on | off | retain-on-failure: a Playwright trace.zip per chat session")]
VideoOption = Annotated[bool, typer.Option("--video", help="Record a video (.webm) of each chat")]


# SIGTERM: docker stop, systemd, Kubernetes, CI time-outs; SIGHUP: the terminal went away.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_stopped_by: int | None = None  # the stop signal this process got first, for its exit code


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP stop every command as Ctrl-C does: a run's state says `interrupted`, its
    report entry is written, and mmb exits 128 + the signal's number (143 for SIGTERM)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, _stop)
    asyncio_log = logging.getLogger("asyncio")
    if not any(isinstance(f, _DriverGone) for f in asyncio_log.filters):  # commands run in one process in tests
        asyncio_log.addFilter(_DriverGone())


_main: asyncio.Task | None = None  # the task run_stoppable runs


def run_stoppable(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run, which SIGTERM and SIGHUP stop as Ctrl-C does even where SIGINT is ignored (a job a
    script started with `&`: asyncio then installs no Ctrl-C handler of its own to lend them)."""

    async def main() -> T:
        global _main
        _main = asyncio.current_task()
        try:
            return await coro
        finally:
            _main = None

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if _stopped_by is not None:
            raise KeyboardInterrupt from None
        raise


def _stop(signum: int, frame: FrameType | None) -> None:
    global _stopped_by
    if _stopped_by is not None:
        return  # a second TERM or HUP (a whole process group, a closing terminal): the first is being honoured
    _stopped_by = signum
    on_interrupt = signal.getsignal(signal.SIGINT)  # asyncio.run's own while a loop runs: it cancels the main task
    if callable(on_interrupt) and on_interrupt is not signal.default_int_handler:
        on_interrupt(signal.SIGINT, frame)
    elif _main is not None and not _main.done():  # SIGINT ignored: cancel the main task as asyncio would
        _main.cancel()
        _main.get_loop().call_soon_threadsafe(lambda: None)  # wake the loop if it sleeps in select()
    else:
        raise KeyboardInterrupt


def interrupted_code() -> int:
    """130 after Ctrl-C; 128 + the signal after SIGTERM or SIGHUP."""
    return 128 + _stopped_by if _stopped_by is not None else EXIT_INTERRUPTED


def say(text: str, *, err: bool = False) -> None:
    """A line for the terminal, which may be gone (SIGHUP): then there is no one to tell, and no error."""
    with contextlib.suppress(OSError):
        typer.echo(text, err=err)


_GONE = re.compile(r"connection closed|target page, context or browser has been closed|browser has been closed",
                   re.IGNORECASE)


class _DriverGone(logging.Filter):
    """asyncio's lines about what a stop leaves behind, made debug lines (shown with -v): 'exception was
    never retrieved' for Playwright calls whose driver or browser went away (a Ctrl-C to the whole process
    group stops Playwright's node driver too), and 'Unknown child process' for a JS block's process
    reaped while its start was cancelled. The run handles both itself; they would be noise after its
    own clear end."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        gone = ("exception was never retrieved" in message and error is not None and _GONE.search(str(error))) \
            or message.startswith("Unknown child process pid")
        if gone:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def fail(problems: InputError | str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    text = "\n".join(str(p) for p in problems.problems) if isinstance(problems, InputError) else problems
    typer.secho(text, fg="red", err=True)
    raise typer.Exit(code)


class _ConsoleHandler(logging.StreamHandler):
    """mmb's own console handler: one at a time, however often a process runs a command."""


def _for_console(record: logging.LogRecord) -> bool:
    """Warnings and worse, and lines meant for the console whatever their level (a wait's heartbeat)."""
    return record.levelno >= logging.WARNING or getattr(record, "console", False)


def console_logging(verbose: bool) -> None:
    root = logging.getLogger()
    # An earlier command's handler (commands run in one process, as tests run them) may write to a closed stream.
    for old in [h for h in root.handlers if isinstance(h, _ConsoleHandler)]:
        root.removeHandler(old)
    handler = _ConsoleHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.DEBUG if verbose else logging.INFO)
    if not verbose:
        handler.addFilter(_for_console)
    handler.addFilter(RedactingFilter())
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)


def config_or_fail(path: Path) -> Config:
    try:
        return load_config(path)
    except InputError as e:
        fail(e)


def apply_overrides(config: Config | BrowserConfig, headed: bool, slow_mo: int | None, trace: str | None,
                    video: bool) -> None:
    """The browser flags over the config's `browser` section."""
    if trace not in (None, *TRACE_MODES):
        fail(f"--trace must be on, off or retain-on-failure, not {trace!r}")
    b = config.browser if isinstance(config, Config) else config
    b.headless = b.headless and not headed
    b.slow_mo_ms = slow_mo if slow_mo is not None else b.slow_mo_ms
    b.trace = trace or b.trace  # type: ignore[assignment]
    b.video = b.video or video


def browser_config(config: Path | None) -> tuple[BrowserConfig, Path]:
    """The `browser` section of --config (or the defaults) and the folder relative paths start from."""
    if config is None:
        return BrowserConfig(), Path.cwd()
    cfg = config_or_fail(config)
    return cfg.browser, cfg.base_dir
