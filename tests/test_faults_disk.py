"""A disk that fills, or turns read-only, under a running `mmb run`: the run stops with one line (what
failed, where, how much space is left, what to do), exit 1, no traceback; its saved state says
`failed` when that can still be written (space set aside at the start is given back for it), else a
lock nobody holds tells `mmb list` and the next start that the run is dead. Freeing space and running
the same command again goes on and loses nothing.

The disk is a real tmpfs of its own (mounting one needs root: the tests skip elsewhere), filled by
the test with a file of zeros; the agent is DemoMind in a process of its own, its memory elsewhere,
so that only mmb's own writes meet the full disk."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DEMO_ENGINE, REPO, mmb, tiny_run
from tests.support.demo_process import DemoAgentProcess
from tests.support.run_process import PROCESS_TIMEOUT_S, Results, safe
from tests.support.tiny import TINY

pytestmark = pytest.mark.usefixtures("chromium")


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MB tmpfs mounted for this test alone."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root only): {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[DemoAgentProcess]:
    server = DemoAgentProcess(tmp_path / "agent-data")
    server.start()
    yield server
    server.stop()


def config_on(disk: Path, tmp_path: Path, agent: DemoAgentProcess) -> tuple[Path, Results]:
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(disk / "results"), "runs": [tiny_run(bench_root=tmp_path, url=agent.url)],
                                  **DEMO_ENGINE}))
    return config, Results(disk / "results", disk / "results" / "demo")


def run_until_turn(config: Path, results: Results, turn: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "persona", "run", "-c", str(config)], cwd=REPO,
                            env=os.environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    state = results.run / "state.json"
    while safe(lambda: json.loads(state.read_text())["turn"]) < turn:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    return proc


def fill(disk: Path) -> None:
    """Every free byte of the disk taken by one file."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for chunk in (1024 * 1024, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)


def ended(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=PROCESS_TIMEOUT_S)
    return proc.returncode, out, err


def assert_one_clear_line(code: int, out: str, err: str, reason: str) -> str:
    assert code == 1, out + err
    assert "Traceback" not in out + err and "Logging error" not in err, out + err
    line = out.splitlines()[-1]
    assert line.startswith("[demo] failed: cannot ") and reason in line, out
    assert " free on " in line and "free space and run the same command again" in line, line
    assert err == "", err
    return line


def test_a_full_disk_ends_the_run_with_one_line_and_a_recorded_end(tiny_reference, disk, agent, tmp_path):
    config, results = config_on(disk, tmp_path, agent)
    proc = run_until_turn(config, results, 2)
    fill(disk)
    code, out, err = ended(proc)
    line = assert_one_clear_line(code, out, err, "No space left on device (ENOSPC)")
    state = results.state()
    assert state["status"] == "failed" and "ENOSPC" in state["error"], "the space set aside took the end"
    assert state["ends"] == 1 and state["error"] in line
    entries = [e for e in (results.folder / "report.md").read_text().split("\n## ")[1:]]
    assert len(entries) == 1 and "failed" in entries[0]
    assert not list(results.run.glob(".*.tmp")), "no temp file of a save that failed is left"

    (disk / "filler").unlink()
    code, out, err = ended(run_until_turn(config, results, 0))
    assert code == 0, out + err
    assert results.state()["status"] == "finished"
    # Nothing was lost or sent twice: the agent took in exactly what an uninterrupted run sends.
    assert agent.received() == tiny_reference.agent_received()


def test_a_folder_made_read_only_leaves_a_run_that_list_and_the_next_start_know_is_dead(disk, agent, tmp_path):
    """The run's folder made immutable (chattr +i: nothing can be created or renamed in it, root or not):
    not even the end can be saved, so state.json still says running; nobody holds its lock."""
    config, results = config_on(disk, tmp_path, agent)
    proc = run_until_turn(config, results, 2)
    subprocess.run(["chattr", "+i", str(results.run)], check=True)
    try:
        code, out, err = ended(proc)
    finally:
        subprocess.run(["chattr", "-i", str(results.run)], check=True)
    line = assert_one_clear_line(code, out, err, "Operation not permitted (EPERM)")
    assert "make it writable" in line and "its state could not be written either" in line
    assert results.state()["status"] == "running", "nothing could be written"
    listed = mmb("list", "-c", str(config))
    assert listed.returncode == 0, listed.stderr
    row = next(r for r in listed.stdout.splitlines() if r.startswith("demo "))
    assert row.split()[3] == "dead", listed.stdout

    # The next start says so, and goes on (stopped here by a SIGTERM: the full-disk test plays a rerun to the end).
    rerun = run_until_turn(config, results, 0)
    assert rerun.stdout is not None
    said = [rerun.stdout.readline() for _ in range(2)]
    assert said[0].startswith("[demo] the mmb before this one ended without recording its end (killed, or its disk "
                              "filled); going on from its last save"), said
    assert said[1].startswith("[demo] resuming"), said
    rerun.send_signal(signal.SIGTERM)
    code, out, err = ended(rerun)
    assert code == 143, out + err
    assert results.state()["status"] == "interrupted"


def test_a_trace_that_cannot_be_written_is_a_warning_not_a_sick_chat(write_bench, tmp_path):
    """traces/ turned into a file mid-run (no trace can be written there, as on a full disk): the new
    chat's trace fails, and the run says so in its log and goes on tracing nothing, with no chat opened
    again for it, no message typed again, no partial trace left."""
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), "browser": {"trace": "on"},
                                  "runs": [{"id": "demo", "benchmark": str(write_bench(TINY)), "agent": {"driver": "demo"}}]}))
    results = Results(tmp_path / "results", tmp_path / "results" / "demo")
    proc = run_until_turn(config, results, 1)  # the new chat comes in the last phase
    traces = results.run / "traces"
    shutil.rmtree(traces)
    traces.write_text("not a folder")
    code, out, err = ended(proc)
    assert code == 0, out + err
    state = results.state()
    assert state["status"] == "finished" and state["sends"]["resent"] == []
    assert [s["reason"] for s in state["sessions"]] == ["start", "newSession"]
    assert results.agent_received() == [t["sent"] for t in results.transcript()], "each message taken once"
    log = (results.run / "run.log").read_text()
    assert "trace session-0.trace.zip not written" in log and "tracing stops for the rest of this run" in log
    assert "WARNING drivers.tracing: trace session-0.trace.zip not written" in err
    assert traces.read_text() == "not a folder" and not list(results.run.rglob("*.trace.zip"))


def test_a_storage_error_inside_a_js_block_is_the_runs_never_the_blocks():
    """bench.newSession() saves the new chat; a full disk then is no error of the benchmark's JS (before,
    `chapter2.md:7: JS block ... failed: Error: OSError: [Errno 28]`): it reaches the run as it is."""
    from persona.benchmark.js_sandbox import run_block
    from persona.errors import StorageError

    async def full_disk() -> None:
        raise StorageError("save the run's state to", "/x/state.json", OSError(errno.ENOSPC, "No space left on device"))

    async def flaky() -> None:
        raise ValueError("the block may catch this")

    with pytest.raises(StorageError, match="No space left on device"):
        asyncio.run(run_block("await bench.newSession();", {}, {"newSession": full_disk}))
    with pytest.raises(OSError):
        asyncio.run(run_block("await bench.newSession();", {}, {"newSession": lambda: _raise(OSError(errno.EIO, "EIO"))}))
    caught = asyncio.run(run_block("try { await bench.newSession(); } catch (e) { vars.seen = String(e); }", {},
                                   {"newSession": flaky}))
    assert "the block may catch this" in caught.vars["seen"], "other failures of a handler stay the block's to catch"


async def _raise(error: Exception) -> None:
    raise error
