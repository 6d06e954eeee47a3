"""Reading the agent's memory (agent.memory in config.jsonc) and snapshotting it during a run.

Three sources, all read only: a folder of files (OpenClaw and Hermes keep Markdown files), a
command that prints the memory, an SQLite file and a query (run on a copy: SQLite readers write
lock and WAL-index files, which must not happen to the agent's files). `MemoryWatch` wraps the
run's chat driver and takes a snapshot when the chat opens, after each new session, before each
message with `every: "turn"`, and when the chat closes; persona/report/snapshots.py stores them.

Nothing here can fail a run: a missing folder, a failing command, a locked database, a file too
big or not text is a problem counted in memory/index.json and shown in the report.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import sqlite3
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from drivers.base import ChatBefore, ChatDriver, Presence, Reply, SendJournal, SessionInfo
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Check
from persona.config import RUN_DIR, MemoryConfig
from persona.report.autopsy import memory_autopsy
from persona.report.publish import read_run
from persona.report.snapshots import (
    JudgedMemory,
    MemoryIndex,
    MemoryStore,
    Reason,
    note_problem,
    safe_relative,
    text_sha,
)
from persona.secrets import redact
from persona.state import RunState

log = logging.getLogger(__name__)
COMMAND_FILE = "command-output.txt"
QUERY_FILE = "query.txt"
_NOATIME = getattr(os, "O_NOATIME", 0)


@dataclass
class MemoryRead:
    files: dict[str, str] = field(default_factory=dict)  # relative name -> text
    problems: list[str] = field(default_factory=list)


class MemorySource:
    """agent.memory with its paths resolved: `read()` returns the memory as text files, never raises."""

    def __init__(self, config: MemoryConfig, base_dir: Path, run_dir: Path):
        self.config = config
        self.base_dir = base_dir
        self.run_dir = run_dir

    def path(self, value: str) -> Path:
        path = Path(os.path.expanduser(value.replace(RUN_DIR, str(self.run_dir))))
        return path if path.is_absolute() else self.base_dir / path

    def argv(self) -> list[str]:
        command = self.config.command or []
        parts = shlex.split(command) if isinstance(command, str) else list(command)
        return [p.replace(RUN_DIR, str(self.run_dir)) for p in parts]

    def describe(self) -> str:
        c = self.config
        if c.folder:
            return f"folder {self.path(c.folder)} ({', '.join(c.glob)})"
        if c.sqlite:
            return f"sqlite {self.path(c.sqlite)}: {c.query}"
        return f"command {shlex.join(self.argv())}"

    async def read(self) -> MemoryRead:
        try:
            if self.config.folder:
                return await asyncio.to_thread(self._read_folder)
            if self.config.sqlite:
                return await asyncio.wait_for(asyncio.to_thread(self._read_sqlite), self.config.timeout_s)
            return await self._read_command()
        except Exception as e:  # a snapshot must never stop the run
            return MemoryRead(problems=[f"reading the memory failed: {type(e).__name__}: {e}"])

    # -- a folder -------------------------------------------------------------------------------

    def _read_folder(self) -> MemoryRead:
        root = self.path(self.config.folder or "")
        if not root.is_dir():
            return MemoryRead(problems=[f"memory folder {root} not found"])
        out, budget = MemoryRead(), self.config.max_bytes
        paths = sorted({p for pattern in self.config.glob for p in root.glob(pattern) if p.is_file()})
        for path in paths:
            rel = path.relative_to(root).as_posix()
            if safe_relative(rel) is None:
                out.problems.append(f"{rel}: a name that cannot be stored, skipped")
                continue
            try:
                data = _read_only(path)
            except OSError as e:
                out.problems.append(f"{rel}: unreadable ({e.strerror or e}), skipped")
                continue
            if len(data) > budget:
                out.problems.append(f"{rel}: past max_bytes ({self.config.max_bytes} per snapshot), skipped")
                continue
            try:
                out.files[rel] = data.decode("utf-8")
            except UnicodeDecodeError:
                out.problems.append(f"{rel}: not UTF-8 text, skipped")
                continue
            budget -= len(data)
        return out

    # -- a command ------------------------------------------------------------------------------

    async def _read_command(self) -> MemoryRead:
        argv = self.argv()
        try:
            proc = await asyncio.create_subprocess_exec(*argv, cwd=self.base_dir, stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except OSError as e:
            return MemoryRead(problems=[f"memory command {argv[0]!r} cannot start: {e.strerror or e}"])
        try:
            stdout, stderr = await asyncio.wait_for(proc.communicate(), self.config.timeout_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return MemoryRead(problems=[f"memory command {argv[0]!r} took longer than {self.config.timeout_s:g} s"])
        if proc.returncode != 0:
            tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            return MemoryRead(problems=[f"memory command {argv[0]!r} exited with {proc.returncode}: {tail[0][:300]}"])
        if len(stdout) > self.config.max_bytes:
            return MemoryRead(problems=[f"memory command output past max_bytes ({self.config.max_bytes}), skipped"])
        return MemoryRead(files={COMMAND_FILE: stdout.decode("utf-8", "replace")})

    # -- an SQLite file -------------------------------------------------------------------------

    def _read_sqlite(self) -> MemoryRead:
        db = self.path(self.config.sqlite or "")
        if not db.is_file():
            return MemoryRead(problems=[f"memory database {db} not found"])
        with tempfile.TemporaryDirectory(prefix="mmb-memory-") as tmp:
            copy = Path(tmp) / db.name
            for suffix in ("", "-wal"):  # the write-ahead log holds the newest rows until a checkpoint
                if Path(f"{db}{suffix}").is_file():
                    Path(f"{copy}{suffix}").write_bytes(_read_only(Path(f"{db}{suffix}")))
            try:
                with sqlite3.connect(copy) as conn:
                    rows = conn.execute(self.config.query or "").fetchall()
            except sqlite3.Error as e:
                return MemoryRead(problems=[f"memory query on {db.name} failed: {e}"])
        text = "".join("\t".join("" if v is None else str(v) for v in row) + "\n" for row in rows)
        if len(text.encode()) > self.config.max_bytes:
            return MemoryRead(problems=[f"memory query result past max_bytes ({self.config.max_bytes}), skipped"])
        return MemoryRead(files={QUERY_FILE: text})


def _read_only(path: Path) -> bytes:
    """The file's bytes, opened read only (and, where the OS lets us, without touching its access time)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOATIME)
    except PermissionError:  # O_NOATIME is for the file's owner only
        fd = os.open(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        return f.read()


class MemorySnapshots:
    """A run's snapshots: read the source, store what it gave (a turn snapshot only when it changed)."""

    def __init__(self, source: MemorySource, store: MemoryStore):
        self.source = source
        self.store = store
        self.index = store.load() or MemoryIndex()
        self.index.source, self.index.every = redact(source.describe()), source.config.every

    async def take(self, reason: Reason, turn: int, session: int) -> None:
        try:
            await self._take(reason, turn, session)
        except Exception as e:  # our own disk, or a bug of ours: still no reason to stop the run
            log.warning("agent memory: the snapshot failed: %s", e)
            note_problem(self.index, f"taking a snapshot failed: {type(e).__name__}: {e}", turn)

    async def _take(self, reason: Reason, turn: int, session: int) -> None:
        read = await self.source.read()
        for problem in read.problems:
            if note_problem(self.index, redact(problem), turn):
                log.warning("agent memory: %s", redact(problem))
        last = self.index.snapshots[-1] if self.index.snapshots else None
        if reason in ("turn", "resume") and last is not None and last.sha == text_sha(read.files):
            self.store.save(self.index)  # unchanged: only the problems are counted
            return
        self.store.write_snapshot(self.index, reason, turn, session, read.files)


class MemoryWatch(ChatDriver):
    """The run's driver, with a memory snapshot at each session boundary (and each turn if asked)."""

    def __init__(self, inner: ChatDriver, snapshots: MemorySnapshots, state: RunState):
        self.inner = inner
        self.name = inner.name
        self.snapshots = snapshots
        self.state = state

    async def open(self, session_url: str | None, session_index: int = 0) -> SessionInfo:
        info = await self.inner.open(session_url, session_index)
        await self.snapshots.take("resume" if self.snapshots.index.snapshots else "start",
                                  self.state.turn, max(self.state.session, 0))
        return info

    async def _before_turn(self) -> None:
        if self.snapshots.source.config.every == "turn":
            await self.snapshots.take("turn", self.state.turn, max(self.state.session, 0))

    async def send(self, text: str, journal: SendJournal | None = None) -> Reply:
        await self._before_turn()
        return await self.inner.send(text, journal)

    async def deliver(self, text: str, journal: SendJournal | None = None, *, before: ChatBefore | None = None,
                      submitted: bool = False) -> Reply:
        await self._before_turn()
        return await self.inner.deliver(text, journal, before=before, submitted=submitted)

    async def new_session(self) -> SessionInfo:
        info = await self.inner.new_session()
        # After the reset, not before: some agents save the old session into memory when it ends.
        await self.snapshots.take("session", self.state.turn, self.state.session + 1)
        return info

    async def chat_before(self) -> ChatBefore | None:
        return await self.inner.chat_before()

    async def find_sent(self, text: str, before: ChatBefore | None) -> Presence:
        return await self.inner.find_sent(text, before)

    async def reply_to_last(self, *, first_bubble_s: float | None = None) -> Reply:
        return await self.inner.reply_to_last(first_bubble_s=first_bubble_s)

    @property
    def commands_typed(self) -> int:  # type: ignore[override]
        return self.inner.commands_typed

    @property
    def session_url(self) -> str | None:
        return self.inner.session_url

    async def close(self, failed: bool = False) -> list[Path]:
        status = self.state.status
        reason: Reason = "end" if status == "finished" else status if status in ("interrupted", "stalled", "budget") \
            else "failed"
        await self.snapshots.take(reason, self.state.turn, max(self.state.session, 0))
        return await self.inner.close(failed)


def watch_memory(driver: ChatDriver, config: MemoryConfig | None, base_dir: Path, run_dir: Path,
                 state: RunState) -> ChatDriver:
    """The driver as is without agent.memory; else wrapped to snapshot the memory."""
    if config is None:
        return driver
    source = MemorySource(config, base_dir, run_dir)
    return MemoryWatch(driver, MemorySnapshots(source, MemoryStore(run_dir)), state)



# The judge model for paraphrases: (a check, the memory as text) -> (per expected item: is it there, the words
# that decided it). Issue 15's judge plugs in here; without one, the autopsy is the deterministic matcher's.
MemoryJudge = Callable[[Check, str], Awaitable[tuple[list[bool], str]]]
MAX_JUDGED_CHARS = 60_000  # the memory a judge reads per check; past it, the verdict says it read a part


async def judge_paraphrases(folder: Path, state: RunState, bench: Benchmark, judge: MemoryJudge, label: str) -> int:
    """Ask the judge about each check the matcher found nowhere in memory (`never stored`); the verdicts go to
    memory/judged.json, which the autopsy reads. A verdict is kept per snapshot: a rerun asks only anew."""
    autopsy = memory_autopsy(folder, state, read_run(folder)[1], bench)
    if autopsy is None:
        return 0
    store = MemoryStore(folder)
    verdicts = store.load_judged()
    checks = {c.id: c for c in bench.checks}
    asked = 0
    for c in autopsy.checks:
        check = checks.get(c.evaluation.check_id)
        known = verdicts.get(c.evaluation.check_id)
        if c.klass != "never stored" or c.snapshot is None or check is None or \
                (known is not None and known.snapshot == c.snapshot.n):
            continue
        text = "\n\n".join(f"## {name}\n{body}" for name, body in store.read_snapshot(c.snapshot).items())
        items, evidence = await judge(check, text[:MAX_JUDGED_CHARS])
        if len(items) != len(check.items):
            raise ValueError(f"the judge gave {len(items)} verdicts for the {len(check.items)} items of {check.id}")
        verdicts[check.id] = JudgedMemory(snapshot=c.snapshot.n, items=items, evidence=redact(evidence)[:500], judge=label,
                                          partial=len(text) > MAX_JUDGED_CHARS)
        asked += 1
        store.save_judged(verdicts)
    return asked
