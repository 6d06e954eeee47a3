"""Whether a process holds a run's lock, read without touching the lock.

`mmb run` holds results/<id>/.lock with flock(2) while it plays the run. Trying that lock would
take it for a moment and could keep a starting run out, so the viewer reads the kernel's table of
locks instead (/proc/locks on Linux: "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2252998 0 EOF", the
last number of the device field being the inode). Elsewhere it cannot tell, and says nothing.
"""

from __future__ import annotations

from pathlib import Path

PROC_LOCKS = Path("/proc/locks")


def parse_locks(text: str) -> set[int]:
    """The inodes of the files locked with flock(2) in a /proc/locks text."""
    inodes = set()
    for line in text.splitlines():
        fields = line.split()
        if "->" in fields:  # a process waiting for the lock, not holding it
            continue
        if len(fields) >= 6 and fields[1] == "FLOCK":
            inode = fields[5].rsplit(":", 1)[-1]
            if inode.isdigit():
                inodes.add(int(inode))
    return inodes


def held_inodes(path: Path = PROC_LOCKS) -> set[int] | None:
    """Inodes of the files some process holds a flock on; None where the system does not say."""
    try:
        return parse_locks(path.read_text(encoding="ascii", errors="replace"))
    except OSError:
        return None
