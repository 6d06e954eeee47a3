"""Errors that point the user at a file and line instead of a traceback."""

from __future__ import annotations

import errno
import shutil
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


class StorageError(RunError):
    """Writing a run's files failed: a full disk, a read-only or failing file system. The run stops
    with one line saying what failed, where and how much space is left; what was saved stays
    resumable, so freeing space and running the same command again goes on."""

    def __init__(self, what: str, path: Path | str | None, error: OSError):
        self.path, self.error = Path(path) if path else None, error
        super().__init__(describe_storage_error(what, self.path, error))


def describe_storage_error(what: str, path: Path | None, error: OSError) -> str:
    code = errno.errorcode.get(error.errno or 0)
    reason = f"{error.strerror or error}" + (f" ({code})" if code else "")
    where = f" {path}" if path else ""
    free = free_space(path) if path else None
    space = f"; {_size(free[1])} free on {free[0]}" if free else ""
    fix = "make it writable, " if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM) else ""
    return f"cannot {what}{where}: {reason}{space}: {fix}free space and run the same command again"


def free_space(path: Path) -> tuple[Path, int] | None:
    """The nearest existing folder of `path` and the bytes free on its file system (None if it cannot tell)."""
    for folder in (path, *path.parents):
        try:
            if folder.is_dir():
                return folder, shutil.disk_usage(folder).free
        except OSError:
            continue
    return None


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def storage_error(error: OSError, what: str = "write", path: Path | str | None = None) -> StorageError:
    """An OSError of a write, as the StorageError that stops the run (its own file name, when it has one)."""
    return StorageError(what, error.filename or path, error)
