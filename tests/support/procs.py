"""The processes of a process tree, read from /proc: a test kills the Chromium of a running `mmb` by pid."""

from __future__ import annotations

import os
from pathlib import Path


def children(pid: int) -> list[int]:
    """Every descendant of `pid`, from /proc/<pid>/task/*/children."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def chromium_of(pid: int) -> list[int]:
    """The Chromium processes (browser, renderers, GPU, utility) under `pid`."""
    return [p for p in children(pid) if "chrom" in os.path.basename(command(p).split(" ")[0]).lower()]
