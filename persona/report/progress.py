"""Live progress of the runs in the terminal: one line per run, redrawn in place.

On a TTY each run gets a line (phase k/n, facts told, checks graded, persona tokens, elapsed)
that refreshes as the run's state changes (PersonaLoop's on_change). Anywhere else (a pipe, a log
file, CI) nothing is redrawn: the runner's own start and end lines are all that is printed.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import IO, Protocol

from rich.console import Console
from rich.live import Live
from rich.table import Table

from persona.benchmark.loader import Benchmark
from persona.report.scores import facts_told
from persona.state import RunState


class Progress(Protocol):
    def begin(self, bench: Benchmark, state: RunState) -> None: ...

    def update(self, state: RunState) -> None: ...

    def end(self, state: RunState) -> None: ...

    def __enter__(self) -> Progress: ...

    def __exit__(self, *exc: object) -> None: ...


@dataclass
class RunLine:
    """What one run's line shows; `at` and `active` let the elapsed time tick between saves."""

    run_id: str
    phases: int
    checks: int
    profile: str | None = None
    phase: int = 0
    told: int = 0
    facts: int = 0
    graded: int = 0
    tokens: int = 0
    active: float = 0.0
    at: float = 0.0
    status: str = "starting"

    def take(self, state: RunState) -> None:
        self.phase = min(state.phase + 1, self.phases)
        self.told, self.facts = facts_told(state, self.profile)
        self.graded = len(state.evaluations)
        self.tokens = state.usage.prompt_tokens + state.usage.completion_tokens
        self.active, self.at = state.active_seconds, time.monotonic()
        self.status = state.status

    def elapsed(self) -> float:
        return self.active + (time.monotonic() - self.at if self.status == "running" else 0.0)

    def cells(self) -> list[str]:
        return [self.run_id, self.status, f"phase {self.phase}/{self.phases}", f"facts {self.told}/{self.facts}",
                f"checks {self.graded}/{self.checks}", f"{_tokens(self.tokens)} tokens", _clock(self.elapsed())]


def _tokens(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else str(n)


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class QuietProgress:
    """Not a terminal: no redrawing; the runner's start and end lines say it all."""

    def begin(self, bench: Benchmark, state: RunState) -> None:
        pass

    def update(self, state: RunState) -> None:
        pass

    def end(self, state: RunState) -> None:
        pass

    def __enter__(self) -> QuietProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class LiveProgress:
    """A rich Live table, one row per run; prints (the runner's lines) scroll above it."""

    def __init__(self, console: Console, refresh_per_second: float = 4):
        self.console = console
        self.lines: dict[str, RunLine] = {}
        self._live = Live(console=console, refresh_per_second=refresh_per_second, transient=False,
                          redirect_stdout=True, redirect_stderr=True, get_renderable=self.render)

    def render(self) -> Table:
        table = Table.grid(padding=(0, 2))
        for line in self.lines.values():
            table.add_row(*line.cells())
        return table

    def begin(self, bench: Benchmark, state: RunState) -> None:
        line = RunLine(state.run_id, phases=len(bench.phases), checks=len(bench.checks), profile=bench.profile.name)
        line.take(state)
        self.lines[state.run_id] = line

    def update(self, state: RunState) -> None:
        line = self.lines.get(state.run_id)
        if line is not None:
            line.take(state)

    def end(self, state: RunState) -> None:
        self.update(state)
        self._live.refresh()

    def __enter__(self) -> LiveProgress:
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.stop()


def make_progress(stream: IO[str] | None = None) -> Progress:
    """Live lines on a terminal, quiet anywhere else."""
    stream = stream or sys.stdout
    if stream.isatty():
        return LiveProgress(Console(file=stream))
    return QuietProgress()
