"""`mmb` and `python -m persona`: the command line, with stop signals honoured from the first moment.

Assembling the command line imports typer, pydantic and more (most of a second); a Ctrl-C, SIGTERM
or SIGHUP in that time ends mmb quietly with its exit code, as it would a moment later.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from types import FrameType

INTERRUPTED_CODES = {128 + signal.SIGINT, 128 + signal.SIGTERM, 128 + signal.SIGHUP}


class _Stopped(BaseException):
    def __init__(self, signum: int):
        self.signum = signum


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signum)


def main() -> None:
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _stop)  # persona.cli.common.stop_on_signals takes over once the app is built
        from persona.cli.app import app
    except KeyboardInterrupt:
        _say("interrupted")
        _exit_now(128 + signal.SIGINT)
    except _Stopped as e:
        _say("interrupted")
        _exit_now(128 + e.signum)
    try:
        app(prog_name="mmb")
    except SystemExit as e:
        if e.code in INTERRUPTED_CODES:
            _exit_now(e.code)
        raise


def _say(text: str) -> None:
    try:
        sys.stderr.write(text + "\n")
    except OSError:  # the terminal is gone (SIGHUP)
        pass


def _exit_now(code: int) -> None:
    """Exit with `code`, everything written. Not by SystemExit: under `python -m`, CPython ends a process
    by SIGINT, whatever its exit code, once a Ctrl-C passed through code compiled at run time (the
    methods dataclasses build with exec), even a Ctrl-C that was caught."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    main()
