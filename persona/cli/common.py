"""What every `mmb` command shares: failing with one clear line, console logging, browser flags.

Exit codes (README, "Exit codes"): 0 success; 1 a run failed or stopped, or a step could not
act; 2 bad input (arguments, config, benchmark, unknown run ids); 3 a quality gate failed
(`run --fail-under`, `compare --fail-on-regression`); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from drivers.settings import BrowserConfig
from persona.config import Config, load_config
from persona.errors import InputError
from persona.secrets import RedactingFilter

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
