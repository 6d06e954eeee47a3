"""results/<id>/memory/: snapshots of the agent's memory, as plain files, and index.json listing them.

Each snapshot is a folder, `003-session-1/`, holding what the memory source gave at that moment
(the agent's files under their own relative paths, or `command-output.txt`, or `query.txt`), so
two snapshots compare with any diff tool: `diff -r memory/000-start memory/004-end`. index.json
lists the snapshots (when, why, sizes) and every problem reading the source had, counted, so a
missing or unreadable memory is shown in the report instead of failing the run.

engine/memory.py takes the snapshots; the reports read them through `MemoryStore.load`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field

from drivers.files import atomic_write
from persona.state import now

MEMORY_DIR = "memory"
INDEX_FILE = "index.json"
JUDGED_FILE = "judged.json"
Reason = Literal["start", "resume", "turn", "session", "end", "failed", "interrupted", "stalled", "budget"]


class MemoryFile(BaseModel):
    chars: int
    lines: int
    sha: str


class Snapshot(BaseModel):
    n: int
    reason: Reason
    turn: int  # messages the agent had answered when it was taken
    session: int  # the chat session it opens or belongs to
    folder: str  # under memory/, e.g. "003-session-1"
    taken_at: datetime = Field(default_factory=now)
    files: dict[str, MemoryFile] = {}
    sha: str = ""  # of all files: equal memories have equal shas

    @property
    def label(self) -> str:
        """When it was taken, to follow "the memory": "at the start", "after turn 12", "at new session 1"."""
        return {"start": "at the start", "resume": f"when the run resumed after turn {self.turn}",
                "turn": f"after turn {self.turn}", "session": f"at new session {self.session}",
                "end": f"at the end (turn {self.turn})", "failed": f"when the run failed (turn {self.turn})",
                "interrupted": f"when the run was interrupted (turn {self.turn})",
                "stalled": f"when the run stalled (turn {self.turn})",
                "budget": f"when the run stopped at its budget (turn {self.turn})"}[self.reason]

    @property
    def chars(self) -> int:
        return sum(f.chars for f in self.files.values())

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files.values())


class SourceProblem(BaseModel):
    """A problem reading the memory source, e.g. its folder missing; repeats are counted, not listed."""

    message: str
    count: int = 1
    first_turn: int
    last_turn: int


class JudgedMemory(BaseModel):
    """A judge model's verdict: does this snapshot hold the check's answer, maybe in other words?"""

    snapshot: int  # Snapshot.n it read
    items: list[bool]  # per expected item
    evidence: str = ""  # the memory's words that decided it
    judge: str  # the judge's label (its model)
    partial: bool = False  # the memory was longer than the judge reads: it saw its beginning only


class MemoryIndex(BaseModel):
    source: str = ""  # what was read, for the report ("folder results/demo/agent-data/memory, **/*.md")
    every: str = "session"
    snapshots: list[Snapshot] = []
    problems: list[SourceProblem] = []

    @property
    def problem_count(self) -> int:
        return sum(p.count for p in self.problems)


def text_sha(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return h.hexdigest()[:16]


def safe_relative(name: str) -> PurePosixPath | None:
    """A source file's name as a path inside a snapshot folder; None for one that would leave it."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or not path.parts or any(p in ("..", "") for p in path.parts):
        return None
    return path


class MemoryStore:
    """A run's memory/ folder: write snapshots and problems (the engine), read them (the reports)."""

    def __init__(self, run_folder: Path):
        self.folder = run_folder / MEMORY_DIR
        self.index_path = self.folder / INDEX_FILE

    def load(self) -> MemoryIndex | None:
        if not self.index_path.is_file():
            return None
        return MemoryIndex.model_validate_json(self.index_path.read_bytes())

    def save(self, index: MemoryIndex) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.index_path, index.model_dump_json(indent=1))

    def load_judged(self) -> dict[str, JudgedMemory]:
        path = self.folder / JUDGED_FILE
        if not path.is_file():
            return {}
        return {k: JudgedMemory.model_validate(v) for k, v in json.loads(path.read_bytes()).items()}

    def save_judged(self, judged: dict[str, JudgedMemory]) -> None:
        atomic_write(self.folder / JUDGED_FILE, json.dumps({k: v.model_dump() for k, v in judged.items()}, indent=1,
                                                           ensure_ascii=False))

    def write_snapshot(self, index: MemoryIndex, reason: Reason, turn: int, session: int,
                       files: dict[str, str]) -> Snapshot:
        """Write the files into a new snapshot folder first, then list it in the index."""
        n = len(index.snapshots)
        name = f"{n:03d}-{reason}" + (f"-{session}" if reason == "session" else f"-{turn}" if reason == "turn" else "")
        if (self.folder / name).exists():  # left by a crash before the index listed it: nothing refers to it
            shutil.rmtree(self.folder / name)
        (self.folder / name).mkdir(parents=True)  # even empty: `diff -r` needs the folder
        stats = {rel: MemoryFile(chars=len(text), lines=len(text.splitlines()), sha=text_sha({rel: text}))
                 for rel, text in files.items()}
        last = index.snapshots[-1] if index.snapshots else None
        for rel, text in files.items():
            path = self.folder / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if last is None or last.files.get(rel) != stats[rel] or not self._link(self.folder / last.folder / rel, path):
                atomic_write(path, text, durable=False)  # the index, written last and durable, is what counts
        snapshot = Snapshot(n=n, reason=reason, turn=turn, session=session, folder=name, sha=text_sha(files), files=stats)
        index.snapshots.append(snapshot)
        self.save(index)
        return snapshot

    @staticmethod
    def _link(previous: Path, path: Path) -> bool:
        """A file unchanged since the last snapshot is a hard link to it: a big memory is not copied every turn."""
        try:
            os.link(previous, path)
            return True
        except OSError:  # gone, or a file system without hard links: write it
            return False

    def read_snapshot(self, snapshot: Snapshot) -> dict[str, str]:
        """The snapshot's files as they were written; a file gone since is left out."""
        out = {}
        for rel in snapshot.files:
            path = self.folder / snapshot.folder / rel
            if path.is_file():
                out[rel] = path.read_text(encoding="utf-8", errors="replace")
        return out


def note_problem(index: MemoryIndex, message: str, turn: int) -> bool:
    """Count a problem; True when it is new (worth a line in the run's log)."""
    key = re.sub(r"\d+", "#", message)  # the same problem at another size or turn is the same problem
    for p in index.problems:
        if re.sub(r"\d+", "#", p.message) == key:
            p.count += 1
            p.last_turn = turn
            return False
    index.problems.append(SourceProblem(message=message, first_turn=turn, last_turn=turn))
    return True
