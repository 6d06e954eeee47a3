"""Atomic file writes: a crash leaves the old file or the new one, never a torn one. And `PathText`,
a path written in a user's file that the operating system can take.

The one write-then-rename helper of the project. It sits in drivers/, the lowest layer, so the
drivers (logins, scrubbed traces) and the engine (state.json, reports) share it; the demo agent, being
the agent under test, has its own (demo_agent/files.py).
A new file gets the permissions the user's umask gives (mkstemp alone would make it 0600);
secrets pass `mode=0o600`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


@contextlib.contextmanager
def atomic_path(path: Path, *, mode: int | None = None, before_rename: Callable[[], None] | None = None,
                durable: bool = True) -> Iterator[Path]:
    """A temporary path beside `path`; whatever is written there replaces `path` when the block ends.

    `durable` fsyncs the file and its folder (a power cut keeps the new file); `before_rename` runs
    between the write and the rename (crash-point tests stop the process there).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        os.fchmod(fd, mode if mode is not None else 0o666 & ~_umask())
        os.close(fd)
        yield tmp
        if durable:
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
        if before_rename is not None:
            before_rename()
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    if durable:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def atomic_write(path: Path, data: bytes | str, *, mode: int | None = None,
                 before_rename: Callable[[], None] | None = None, durable: bool = True) -> None:
    """Write `data` (text is UTF-8) to `path` atomically; see `atomic_path`."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path, mode=mode, before_rename=before_rename, durable=durable) as tmp:
        tmp.write_bytes(payload)


def usable_path(text: str) -> str:
    """`text` if the operating system can take it as a path: no NUL, no name too long for a file system."""
    if "\0" in text:
        raise ValueError("a path cannot contain a NUL character")
    try:
        names = [os.fsencode(name) for name in text.split("/")]
    except UnicodeEncodeError:
        raise ValueError("a path must be valid Unicode text (this one has a lone surrogate)") from None
    if sum(len(n) + 1 for n in names) > 4000 or any(len(n) > 255 for n in names):
        raise ValueError("path too long for the file system (at most 255 bytes a name, 4000 in all)")
    return text


PathText = Annotated[str, AfterValidator(usable_path)]  # a path field of config.jsonc or benchmark.json
