"""DemoMind in a process of its own (`python -m demo_agent`), as a real agent's server runs: a test can
kill it and start it again on the same port with the same memory, as a restart or a deploy does."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO
from tests.support.run_process import agent_received


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DemoAgentProcess:
    def __init__(self, data: Path, env: dict[str, str] | None = None):
        self.data = data
        self.env = env or {}  # e.g. DEMO_ENV: slow streaming
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "demo_agent", "--port", str(self.port), "--data", str(self.data)],
                                     cwd=REPO, env={**os.environ, **self.env}, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while True:  # listening once a connection is taken
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"DemoMind did not start on port {self.port}") from None
                time.sleep(0.05)

    def stop(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)
        self.proc = None

    def received(self) -> list[str]:
        return agent_received(self.data)
