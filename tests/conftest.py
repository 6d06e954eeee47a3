"""Shared fixtures: benchmark and config folders in tmp, the Chromium to use (and a harness on it), running `mmb`."""

from __future__ import annotations

import json
import os
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


@pytest.fixture(scope="session")
def chromium() -> str:
    path = find_system_chromium()
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
