"""`mmb run` in a process of its own, as a user starts it, that a test can watch and kill -9; and the
results folder as that run writes it (state, transcript, what the demo agent itself took in)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from demo_agent.faults import ENV as DEMO_FAULTS_ENV
from persona.state import read_state
from tests.conftest import REPO

# Slow streaming (about 0.3 s a reply) so that kills land while the agent is still writing.
DEMO_ENV = {DEMO_FAULTS_ENV: json.dumps({"token_delay_s": 0.025})}
PROCESS_TIMEOUT_S = 300


@dataclass
class Results:
    folder: Path  # results/
    run: Path  # results/<run id>/
    printed: str = ""  # what mmb printed to stdout, where a test kept it

    def state(self) -> dict:
        """The whole saved state (state.json and the parts saved beside it), as JSON."""
        return saved_state(self.run)

    def agent_received(self) -> list[str]:
        """The user messages DemoMind took in, in order, from its own memory file."""
        return agent_received(self.run / "agent-data")

    def transcript(self) -> list[dict]:
        path = self.run / "transcript.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def saved_state(folder: Path) -> dict:
    """The whole state a run saved in `folder` (state.json and the parts beside it), as JSON."""
    return read_state(folder).model_dump(mode="json")


def agent_received(data: Path) -> list[str]:
    """The user messages DemoMind took in, in order, from the memory file in its data folder."""
    memory = json.loads((data / "memory.json").read_text())
    messages = [m for c in memory["conversations"].values() for m in c["messages"] if m["role"] == "user"]
    return [m["text"] for m in sorted(messages, key=lambda m: m["seq"])]


def start(config: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "persona", "run", "-c", str(config)], cwd=REPO,
                            env={**os.environ, **DEMO_ENV, **env}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    """Wait for mmb to end: its exit code and what it wrote to stderr."""
    try:
        _, err = proc.communicate(timeout=PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"mmb did not end within {PROCESS_TIMEOUT_S} s: {err[-2000:]}")
    return proc.returncode, err


def safe(read: Callable[[], int]) -> int:
    """A reading of a file another process is writing; -1 while it is missing or mid-write."""
    try:
        return read()
    except (FileNotFoundError, json.JSONDecodeError, KeyError, ValueError):
        return -1


def evaluation_key(e: dict) -> tuple:
    """What two runs of one benchmark must agree on, check by check."""
    return e["check_id"], e["score"], e["second_attempt"], e["answer"], e["phase"], e["turn"], e["session"]
