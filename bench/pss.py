"""Memory of a whole process tree as PSS (RSS counts shared pages once per process; PSS splits them)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

PROC = Path("/proc")


def children_map(proc: Path = PROC) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: the ppid is the 2nd field after it.
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def tree(pid: int, proc: Path = PROC) -> list[int]:
    kids = children_map(proc)
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def pss_kb(pid: int, proc: Path = PROC) -> int:
    try:
        for line in (proc / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass  # gone meanwhile, or not ours to read
    return 0


def tree_pss_mb(pid: int, proc: Path = PROC) -> tuple[float, int]:
    """(PSS in MiB, processes) of pid and all its descendants."""
    pids = tree(pid, proc)
    return sum(pss_kb(p, proc) for p in pids) / 1024, len(pids)


class PssSampler:
    """Samples a process tree's PSS in a thread until stopped; keeps the peak and the mean."""

    def __init__(self, pid: int, every_s: float = 0.5):
        self.pid, self.every_s = pid, every_s
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            if not os.path.exists(f"/proc/{self.pid}"):
                return
            self.samples.append(tree_pss_mb(self.pid))
            self._stop.wait(self.every_s)

    def __enter__(self) -> PssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float:
        return max((s[0] for s in self.samples), default=0.0)

    @property
    def peak_processes(self) -> int:
        return max((s[1] for s in self.samples), default=0)

    @property
    def mean_mb(self) -> float:
        return sum(s[0] for s in self.samples) / len(self.samples) if self.samples else 0.0
