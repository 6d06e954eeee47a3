"""Errors that point the user at a file and line instead of a traceback."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a user-written file."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


class InputError(Exception):
    """Bad user input (config, benchmark). Raised before anything is started or recorded."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

    @classmethod
    def single(cls, file: str | Path, line: int | None, message: str) -> InputError:
        return cls([Problem(str(file), line, message)])


class RunError(Exception):
    """A run cannot go on (agent unreachable, persona model failing past its limits...).

    The state stays resumable: rerunning continues from the last saved step.
    """

    status = "failed"  # what the run's state says when this stops it


class StalledError(RunError):
    """The persona made no progress (no fact told, check graded or phase entered) for too many calls."""

    status = "stalled"


class BudgetError(RunError):
    """The run spent its persona budget (tokens or money)."""

    status = "budget"
