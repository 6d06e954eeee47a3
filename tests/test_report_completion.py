"""A kill -9 after the state says a run finished, before its reports are all written: the rerun (or
`mmb report`) writes what is missing, report.md's entry exactly once, report.html and the leaderboard.
Through the real CLI, killed at named points (persona/crashpoints.py END_POINTS)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from persona.crashpoints import ENV as CRASH_ENV
from tests.conftest import mmb
from tests.test_faults_input import cli
from tests.test_faults_secrets import TINY


@pytest.fixture
def run(write_bench, write_config, tmp_path) -> tuple[str, Path]:
    config = write_config([{"id": "k", "benchmark": str(write_bench(TINY)), "agent": {"driver": "oracle"}}])
    return str(config), tmp_path / "results"


def entries(results: Path) -> list[str]:
    report = results / "report.md"
    return [line for line in report.read_text().splitlines() if line.startswith("## ")] if report.exists() else []


def outputs_complete(results: Path) -> None:
    assert len(entries(results)) == 1, entries(results)
    assert "— k: Tiny @ oracle" in entries(results)[0]
    assert (results / "k" / "report.html").exists()
    assert "[k](k/report.html)" in (results / "leaderboard.md").read_text()
    state = json.loads((results / "k" / "state.json").read_text())
    assert state["ends"] == state["reported_ends"] == 1


@pytest.mark.parametrize("point, entries_left", [("run.ended", 0), ("report.appended", 1)])
def test_a_rerun_writes_what_a_kill_at_the_end_left_unwritten(run, point, entries_left):
    config, results = run
    killed = mmb("run", "-c", config, env={CRASH_ENV: point})
    assert killed.returncode == -9, killed.stderr
    assert json.loads((results / "k" / "state.json").read_text())["status"] == "finished"
    assert len(entries(results)) == entries_left and not (results / "k" / "report.html").exists()

    code, output = cli("run", "-c", config)
    assert code == 0, output
    assert "[k] wrote what its last end (finished) had left unwritten" in output and "[k] already finished" in output, output
    outputs_complete(results)
    code, output = cli("run", "-c", config)
    assert code == 0 and "left unwritten" not in output and "[k] already finished" in output, output
    outputs_complete(results)


def test_mmb_report_writes_the_missing_entry_too(run):
    config, results = run
    assert mmb("run", "-c", config, env={CRASH_ENV: "run.ended"}).returncode == -9
    code, output = cli("report", "-c", config)
    assert code == 0 and "wrote the entry of k's last end" in output, output
    outputs_complete(results)
    code, output = cli("run", "-c", config)
    assert code == 0 and "left unwritten" not in output and "[k] already finished" in output, output
    outputs_complete(results)
