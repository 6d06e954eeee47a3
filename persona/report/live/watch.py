"""One watcher of a results folder, shared by every page `mmb view` serves; it only reads.

A poll stats each run folder's entries: nothing is parsed unless something changed. A run's state
is read again (through state.read_state, as every report reads it) only when a file or folder
beside it changed its size, mtime or inode; state.json is saved by write-then-rename, so a read
sees a whole save, old or new. transcript.jsonl is read on from the offset the last poll stopped
at, whole lines only: a line still being appended is left for the next poll. Whether a process
plays a run comes from the kernel's lock table (locks.py): the run's .lock is never opened.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from persona.report.live.locks import held_inodes
from persona.state import STATE_FILE, TRANSCRIPT_FILE, Exchange, RunState, read_state

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"  # persona.state.RunStore's
# Entries of a run folder that change no page, or change too often to mean anything alone: the log
# grows with every event, and the transcript is followed by offset.
NOT_WATCHED = {TRANSCRIPT_FILE, "run.log"}

Signature = tuple[tuple[str, int, int, int], ...]


def signature(folder: Path) -> Signature:
    """What a change to anything a page shows changes: each entry's name, mtime, size and inode. A
    folder (traces/, memory/) changes when a file is added to it. Hidden names are temporaries and the lock."""
    entries = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name.startswith(".") or e.name in NOT_WATCHED:
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:  # removed between the listing and the stat: the next poll sees it
                    continue
                entries.append((e.name, st.st_mtime_ns, st.st_size, st.st_ino))
    except FileNotFoundError:
        return ()
    return tuple(sorted(entries))


@dataclass
class TranscriptTail:
    """transcript.jsonl read incrementally. A file that shrank or was replaced (a restart trims a
    transcript that ran ahead of its state, by rename) is read again from the start."""

    path: Path
    exchanges: list[Exchange] = field(default_factory=list)
    offset: int = 0
    inode: int | None = None
    edge: bytes = b""  # the bytes just before `offset`: when they differ, the file was rewritten in place
    unreadable: int = 0  # lines that are not an exchange, skipped (counted and logged, never shown half)

    def poll(self) -> bool:
        """True when the exchanges changed."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            changed = bool(self.exchanges)
            self.exchanges, self.offset, self.inode = [], 0, None
            return changed
        changed = False
        if st.st_ino != self.inode or st.st_size < self.offset:
            changed = self._restart(st.st_ino)
        if st.st_size == self.offset:
            return changed
        with open(self.path, "rb") as f:
            f.seek(self.offset - len(self.edge))
            data = f.read(st.st_size - self.offset + len(self.edge))
        if not data.startswith(self.edge):
            changed = self._restart(st.st_ino)
            return self.poll() or changed
        data = data[len(self.edge):]
        end = data.rfind(b"\n")
        if end < 0:  # only part of a line so far
            return changed
        for line in data[:end].split(b"\n"):
            if not line.strip():
                continue
            try:
                self.exchanges.append(Exchange.model_validate_json(line))
            except ValueError as e:
                self.unreadable += 1
                log.warning("%s: a line at byte %d is not an exchange, skipped (%s)", self.path,
                            self.offset, str(e).splitlines()[0])
        self.offset += end + 1
        self.edge = (self.edge + data[:end + 1])[-64:]
        return True

    def _restart(self, inode: int) -> bool:
        changed = bool(self.exchanges)
        self.exchanges, self.offset, self.inode, self.edge, self.unreadable = [], 0, inode, b"", 0
        return changed


@dataclass(frozen=True)
class RunView:
    """One run as the pages show it, at one moment; never changed once made."""

    name: str  # its folder's name
    folder: Path
    state: RunState
    exchanges: list[Exchange]  # the lines the state knows of (transcript_len), as `mmb report` reads them
    held: bool | None  # a process holds the run's lock (None: this system cannot tell)
    version: int  # grows whenever anything above changed
    unreadable: int = 0  # transcript lines skipped


class RunWatch:
    """One run folder: its state parsed again only when its signature changed."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.sig: Signature | None = None
        self.state: RunState | None = None
        self.problem: str | None = None  # why the state does not read, when it does not
        self.tail = TranscriptTail(folder / TRANSCRIPT_FILE)
        self.held: bool | None = None
        self.version = 0
        self.view: RunView | None = None

    def poll(self, held: set[int] | None) -> bool:
        changed = False
        sig = signature(self.folder)
        if sig != self.sig:
            self.sig = sig
            try:
                self.state, self.problem = read_state(self.folder), None
            except (ValueError, OSError) as e:  # atomic saves are never seen half-written: this one is broken
                problem = str(e).splitlines()[0]
                if problem != self.problem:
                    log.warning("run %s: %s", self.folder.name, problem)
                self.problem = problem
            changed = True
        if self.tail.poll():
            changed = True
        now_held = self._held(held)
        if now_held != self.held:
            self.held, changed = now_held, True
        if changed:
            self.version += 1
            self.view = None if self.state is None else RunView(
                self.folder.name, self.folder, self.state, self.tail.exchanges[:self.state.transcript_len],
                self.held, self.version, self.tail.unreadable)
        return changed

    def _held(self, held: set[int] | None) -> bool | None:
        if held is None:
            return None
        try:
            return (self.folder / LOCK_FILE).stat().st_ino in held
        except FileNotFoundError:
            return False


class Watcher:
    """Every run folder of results_dir (each holding a state.json); poll() is called by one task for
    all clients, and before a page is served."""

    def __init__(self, results_dir: Path):
        self.results_dir = results_dir
        self.runs: dict[str, RunWatch] = {}
        self.version = 0
        self.polls = 0
        self._lock = threading.Lock()

    def poll(self) -> bool:
        """Look at the folder once; True when any run changed, appeared or went."""
        with self._lock:
            self.polls += 1
            found = {p.parent.name: p.parent for p in sorted(self.results_dir.glob(f"*/{STATE_FILE}"))}
            held = held_inodes()
            changed = False
            for gone in set(self.runs) - set(found):
                del self.runs[gone]
                changed = True
            for name, folder in found.items():
                changed |= self.runs.setdefault(name, RunWatch(folder)).poll(held)
            if changed:
                self.version += 1
            return changed

    def views(self) -> dict[str, RunView]:
        """Every run that reads, by folder name: a snapshot, safe to use while the next poll runs."""
        with self._lock:
            return {name: w.view for name, w in self.runs.items() if w.view is not None}

    def problems(self) -> dict[str, str]:
        """Run folders whose state does not read, and why."""
        with self._lock:
            return {name: w.problem for name, w in self.runs.items() if w.problem and w.view is None}
