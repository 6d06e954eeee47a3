"""agent.memory: the agent's memory read (never written) from a folder, a command or SQLite, snapshotted
at each session boundary under results/<id>/memory/; a missing source is a counted problem, not a failure."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import sys
from pathlib import Path

import pytest

from persona.benchmark.loader import load_benchmark
from persona.config import MemoryConfig, load_config
from persona.engine.memory import COMMAND_FILE, QUERY_FILE, MemorySnapshots, MemorySource, MemoryWatch, watch_memory
from persona.engine.oracle import OracleDriver
from persona.errors import InputError
from persona.report.snapshots import MemoryStore
from persona.secrets import register_secret
from persona.state import AgentSession, RunState
from tests.conftest import DEMO_BENCH


def read(config: dict, base: Path, run_dir: Path | None = None):
    return asyncio.run(MemorySource(MemoryConfig(**config), base, run_dir or base / "run").read())


def fingerprint(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under `folder`: size, modification time and content hash."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_folder_is_read_by_glob_with_what_it_skips_counted(tmp_path):
    agent = tmp_path / "agent"
    (agent / "memory").mkdir(parents=True)
    (agent / "MEMORY.md").write_text("# Memory\n- Jonas is a carpenter\n")
    (agent / "memory" / "2026-11-02.md").write_text("- ran 14 km\n")
    (agent / "memory" / "photo.md").write_bytes(b"\xff\xfe\x00binary")
    (agent / "memory" / "big.md").write_text("x" * 300)
    (agent / "notes.txt").write_text("not matched by the glob")
    got = read({"folder": "agent", "glob": ["MEMORY.md", "memory/*.md"], "max_bytes": 100}, tmp_path)
    assert got.files == {"MEMORY.md": "# Memory\n- Jonas is a carpenter\n", "memory/2026-11-02.md": "- ran 14 km\n"}
    assert sorted(got.problems) == ["memory/big.md: past max_bytes (100 per snapshot), skipped",
                                    "memory/photo.md: not UTF-8 text, skipped"]
    assert read({"folder": "nowhere"}, tmp_path).problems == [f"memory folder {tmp_path / 'nowhere'} not found"]
    run_dir = tmp_path / "results" / "r1"
    (run_dir / "agent-data").mkdir(parents=True)
    (run_dir / "agent-data" / "a.md").write_text("a\n")
    assert read({"folder": "{run_dir}/agent-data"}, tmp_path, run_dir).files == {"a.md": "a\n"}


def test_a_command_prints_the_memory_and_its_failures_are_problems(tmp_path):
    ok = read({"command": [sys.executable, "-c", "print('- Jonas is a carpenter')"]}, tmp_path)
    assert ok.files == {COMMAND_FILE: "- Jonas is a carpenter\n"} and not ok.problems
    secret = "sk-memory-test-0123456789"
    register_secret(secret)
    failing = read({"command": f"{sys.executable} -c \"import sys; sys.exit('no access with {secret}')\""}, tmp_path)
    assert failing.files == {} and failing.problems[0].startswith(f"memory command {sys.executable!r} exited with 1")
    snapshots = MemorySnapshots(MemorySource(MemoryConfig(command=[sys.executable, "-c", f"1/0 # {secret}"]), tmp_path,
                                             tmp_path / "run"), MemoryStore(tmp_path / "run"))
    asyncio.run(snapshots.take("start", 0, 0))
    assert secret not in (tmp_path / "run" / "memory" / "index.json").read_text()
    slow = read({"command": [sys.executable, "-c", "import time; time.sleep(30)"], "timeout_s": 0.5}, tmp_path)
    assert slow.problems == [f"memory command {sys.executable!r} took longer than 0.5 s"]
    missing = read({"command": ["/nonexistent/agent-export"]}, tmp_path)
    assert missing.problems[0].startswith("memory command '/nonexistent/agent-export' cannot start")


def test_sqlite_is_queried_on_a_copy_and_the_agent_s_files_never_change(tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "MEMORY.md").write_text("- Jonas is a carpenter\n")
    writer = sqlite3.connect(agent / "memory.db")  # the agent, running: its newest rows are still in the WAL
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, deleted INTEGER)")
    writer.executemany("INSERT INTO memories (content, deleted) VALUES (?, ?)",
                       [("My 10 km best is 54:10", 1), ("My 10 km best is 52:30", 0), ("Ebba and Noah", None)])
    writer.commit()
    try:
        assert (agent / "memory.db-wal").exists()
        before = fingerprint(agent)
        got = read({"sqlite": "agent/memory.db", "query": "SELECT content, deleted FROM memories ORDER BY id"}, tmp_path)
        folder = read({"folder": "agent", "glob": ["*"]}, tmp_path)
        assert fingerprint(agent) == before, "reading the memory changed the agent's files"
    finally:
        writer.close()
    assert got.files == {QUERY_FILE: "My 10 km best is 54:10\t1\nMy 10 km best is 52:30\t0\nEbba and Noah\t\n"}
    assert "MEMORY.md" in folder.files
    bad = read({"sqlite": "agent/memory.db", "query": "SELECT nope FROM memories"}, tmp_path)
    assert bad.problems == ["memory query on memory.db failed: no such column: nope"]
    assert read({"sqlite": "agent/none.db", "query": "SELECT 1"}, tmp_path).problems[0].startswith("memory database ")


def test_the_config_wants_exactly_one_source(write_config):
    run = {"id": "r", "benchmark": str(DEMO_BENCH), "agent": {"driver": "demo", "memory": {"folder": "m", "command": "x"}}}
    with pytest.raises(InputError) as e:
        load_config(write_config([run]))
    assert "give exactly one of folder, command or sqlite (got folder, command)" in str(e.value)
    run["agent"]["memory"] = {"sqlite": "m.db"}
    with pytest.raises(InputError, match="sqlite and query go together"):
        load_config(write_config([run]))


def watched(tmp_path: Path, every: str = "turn", folder: str = "agent") -> tuple[MemoryWatch, RunState, Path]:
    state = RunState(run_id="r", benchmark="b", driver="oracle", persona_model="scripted")
    run_dir = tmp_path / "results" / "r"
    driver = watch_memory(OracleDriver(load_benchmark(DEMO_BENCH)), MemoryConfig(folder=folder, every=every),
                          tmp_path, run_dir, state)
    assert isinstance(driver, MemoryWatch)
    return driver, state, run_dir


def test_snapshots_at_the_start_each_changed_turn_each_new_session_and_the_end(tmp_path):
    driver, state, run_dir = watched(tmp_path)
    agent = tmp_path / "agent"
    agent.mkdir()

    async def play() -> None:
        await driver.open(None)
        state.sessions.append(AgentSession(index=0, started_turn=0))  # as the channel records them
        (agent / "notes.md").write_text("- Jonas is a carpenter\n")
        state.turn = 1
        await driver.send("My partner Jonas is a carpenter.")  # changed since the start: kept
        state.turn = 2
        await driver.send("Nice weather today.")  # unchanged: not kept
        (agent / "notes.md").write_text("- Jonas is a carpenter\n- 52:30\n")
        await driver.new_session()
        state.sessions.append(AgentSession(index=1, started_turn=2, reason="newSession"))
        state.status = "finished"
        await driver.close()

    asyncio.run(play())
    index = MemoryStore(run_dir).load()
    assert [(s.reason, s.turn, s.session, s.lines) for s in index.snapshots] == [
        ("start", 0, 0, 0), ("turn", 1, 0, 1), ("session", 2, 1, 2), ("end", 2, 1, 2)]
    assert [s.folder for s in index.snapshots] == ["000-start", "001-turn-1", "002-session-1", "003-end"]
    memory = run_dir / "memory"
    assert (memory / "000-start").is_dir() and not list((memory / "000-start").iterdir())  # empty, but there to diff
    assert (memory / "002-session-1" / "notes.md").read_text() == "- Jonas is a carpenter\n- 52:30\n"
    assert (memory / "003-end" / "notes.md").samefile(memory / "002-session-1" / "notes.md")  # unchanged: linked, not copied
    assert not (memory / "002-session-1" / "notes.md").samefile(memory / "001-turn-1" / "notes.md")
    assert fingerprint(agent) == {"notes.md": fingerprint(agent)["notes.md"]}  # nothing added to the agent's folder


def test_session_snapshots_only_and_a_missing_folder_is_counted_not_fatal(tmp_path):
    driver, state, run_dir = watched(tmp_path, every="session", folder="gone")

    async def play() -> None:
        await driver.open(None)
        for turn in (1, 2, 3):
            state.turn = turn
            await driver.send("hello")
        await driver.new_session()
        state.status = "failed"
        await driver.close(failed=True)

    asyncio.run(play())
    index = MemoryStore(run_dir).load()
    assert [s.reason for s in index.snapshots] == ["start", "session", "failed"]
    problem, = index.problems
    assert problem.message == f"memory folder {tmp_path / 'gone'} not found"
    assert (problem.count, problem.first_turn, problem.last_turn) == (3, 0, 3)
