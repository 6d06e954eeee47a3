"""Shared fixtures: benchmark and config folders in tmp, the Chromium to use (and a harness on it), running `mmb`."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from drivers.browser import find_system_chromium

REPO = Path(__file__).resolve().parent.parent
DEMO_BENCH = REPO / "benchmarks" / "demo"
# Test runs record no trace unless a test is about traces (tests/test_debugging.py): recording one
# to throw away (retain-on-failure) costs about 40 % of a demo run's CPU, and the suite is CPU-bound.
NO_TRACE = {"trace": "off"}
# The engine settings of whole test runs of the demo benchmark: a compaction limit small enough that
# the persona's history is compacted during the run.
DEMO_ENGINE = {"compaction": {"max_tokens": 4000, "trim_to_tokens": 1500, "encoding": "cl100k_base"},
               "browser": NO_TRACE}
DEMO_MEMORY = {"folder": "{run_dir}/agent-data/memory", "glob": ["*.md"], "every": "turn"}  # as config.jsonc has it

# With --dist loadfile the suite ends when its last file does: the files that take longest (summed
# --durations=0 of one run, most first) start first, the rest follow in their usual order.
LONGEST_FILES = ("test_telegram_web.py", "test_probe.py", "test_discover.py", "test_faults_disk.py", "test_end_to_end.py",
                 "test_faults_outage.py", "test_faults_signals.py", "test_faults_browser_crash.py", "test_frames.py",
                 "test_send_accounting.py", "test_faults_driver.py", "test_reply_detection.py",
                 "test_persona_protocol.py", "test_faults_llm.py", "test_debugging.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FILES)))  # a stable sort


@pytest.fixture(scope="session")
def chromium() -> str:
    path = find_system_chromium(headless=True)  # what a headless `mmb run` launches
    if path is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    return path


@pytest.fixture(scope="module")
def harness(chromium: str):
    """A real headless Chromium on an event loop of the module's own, for async driver tests."""
    from tests.support.async_browser import BrowserHarness

    h = BrowserHarness(chromium)
    yield h
    h.close()


@pytest.fixture
def write_bench(tmp_path: Path) -> Callable[..., Path]:
    """write_bench({"benchmark.json": {...}, "chapter1.md": "..."}) -> folder; dicts become JSON."""

    def write(files: dict[str, str | dict], name: str = "bench") -> Path:
        folder = tmp_path / name
        folder.mkdir(parents=True, exist_ok=True)
        for rel, content in files.items():
            text = json.dumps(content, ensure_ascii=False, indent=1) if isinstance(content, dict) else content
            (folder / rel).write_text(text, encoding="utf-8")
        return folder

    return write


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[..., Path]:
    """A config.jsonc in tmp with results in tmp/results; `runs` and engine sections as given."""

    def write(runs: list[dict], **engine: object) -> Path:
        config = {"results_dir": str(tmp_path / "results"), "browser": NO_TRACE, "runs": runs, **engine}
        path = tmp_path / "config.jsonc"
        path.write_text("// test config\n" + json.dumps(config, indent=1), encoding="utf-8")
        return path

    return write


def mmb(*args: str, timeout: float = 240, env: dict[str, str] | None = None,
        wrapper: list[str] | None = None) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess, as a user would (`wrapper` goes first, e.g. xvfb-run -a)."""
    return subprocess.run([*(wrapper or []), sys.executable, "-m", "persona", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL,
                          timeout=timeout, cwd=REPO, env={**os.environ, **(env or {})})


def demo_run(run_id: str = "demo", **agent: object) -> dict:
    return {"id": run_id, "benchmark": str(DEMO_BENCH), "agent": {"driver": "demo", **agent}}


def tiny_run(run_id: str = "demo", bench_root: Path | None = None, **agent: object) -> dict:
    """A run of the tiny benchmark (tests/support/tiny.py, five messages) against DemoMind, its benchmark
    written under `bench_root` (once)."""
    from tests.support.tiny import TINY

    folder = (bench_root or Path.cwd()) / "tiny-bench"
    if not (folder / "benchmark.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in TINY.items():
            (folder / name).write_text(json.dumps(content) if isinstance(content, dict) else content, encoding="utf-8")
    return {"id": run_id, "benchmark": str(folder), "agent": {"driver": "demo", **agent}}


@pytest.fixture(scope="session")
def tiny_reference(tmp_path_factory, chromium):
    """One uninterrupted run of the tiny benchmark against DemoMind (3 s), shared as demo_reference is: for
    fault tests that need a whole run before and after the fault, cheaply."""
    from tests.support.run_process import Results

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    shared = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()
    folder = shared / "tiny-reference"
    with (shared / "tiny-reference.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "printed.txt").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            config = folder / "config.jsonc"
            config.write_text(json.dumps({"results_dir": str(folder / "results"), "runs": [tiny_run(bench_root=folder)],
                                          **DEMO_ENGINE}))
            done = mmb("run", "-c", str(config))
            assert done.returncode == 0, done.stderr + done.stdout
            (folder / "printed.txt").write_text(done.stdout)
    return Results(folder / "results", folder / "results" / "demo", (folder / "printed.txt").read_text())


@pytest.fixture(scope="session")
def demo_reference(tmp_path_factory, chromium):
    """One uninterrupted scripted run of the demo benchmark (the agent's memory read as config.jsonc
    reads it), made once per test session and shared by every xdist worker: a whole run costs 15-20 s
    of a 2-core machine. Tests only read it; one that writes into results copies it first."""
    from tests.support.run_process import Results

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    shared = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()
    folder = shared / "demo-reference"
    with (shared / "demo-reference.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker runs it; the others wait and read
        if not (folder / "printed.txt").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a run that failed in another worker
            folder.mkdir()
            config = folder / "config.jsonc"
            run = demo_run(memory=DEMO_MEMORY)
            config.write_text(json.dumps({"results_dir": str(folder / "results"), "runs": [run], **DEMO_ENGINE}))
            done = mmb("run", "-c", str(config))
            assert done.returncode == 0, done.stderr + done.stdout
            (folder / "printed.txt").write_text(done.stdout)
    return Results(folder / "results", folder / "results" / "demo", (folder / "printed.txt").read_text())
