"""promptfoo's browser provider as a bench contender: installed from npm on first use, driven turn by turn.

promptfoo needs Node >= 22, newer than Debian's; Playwright's Python package ships one (v26), so
that one runs it. The provider attaches over CDP to a Chromium we start (see promptfoo_turns.mjs).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright._impl._driver import compute_driver_executable

HERE = Path(__file__).resolve().parent
INSTALL_DIR = HERE / ".promptfoo"  # git-ignored
PACKAGES = ["promptfoo@0.123.1", "playwright@1.65.1", "playwright-extra@4.3.6", "puppeteer-extra-plugin-stealth@2.11.2"]
SCRIPT = "promptfoo_turns.mjs"


def node() -> str:
    return compute_driver_executable()[0]


def ensure_installed() -> str | None:
    """Install promptfoo into bench/.promptfoo once; the reason it can't be used, or None."""
    if not (INSTALL_DIR / "node_modules" / "promptfoo" / "package.json").exists():
        npm = shutil.which("npm")
        if npm is None:
            return "npm not found"
        INSTALL_DIR.mkdir(exist_ok=True)
        (INSTALL_DIR / "package.json").write_text('{"name": "mmb-bench-promptfoo", "private": true}\n')
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--omit=optional", "--loglevel=error", *PACKAGES],
                              cwd=INSTALL_DIR, capture_output=True, text=True, timeout=1800,
                              env={**os.environ, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"})
        if done.returncode != 0:
            return "npm install failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    shutil.copy(HERE / SCRIPT, INSTALL_DIR / SCRIPT)  # ESM resolves `promptfoo` from the script's folder
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PromptfooSession:
    """A Chromium with a CDP port and the node process holding promptfoo's provider; one turn per call."""

    def __init__(self, url: str, wait_ms: int, chromium: str):
        self.url, self.wait_ms, self.chromium = url, wait_ms, chromium
        self._profile = tempfile.mkdtemp(prefix="mmb-bench-pf-")
        self._browser: subprocess.Popen | None = None
        self._node: subprocess.Popen | None = None

    def __enter__(self) -> PromptfooSession:
        port = _free_port()
        self._browser = subprocess.Popen(
            [self.chromium, "--headless", "--no-sandbox", f"--remote-debugging-port={port}",
             "--remote-debugging-address=127.0.0.1", f"--user-data-dir={self._profile}", "--no-first-run",
             "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline or self._browser.poll() is not None:
                    self.__exit__()
                    raise RuntimeError("Chromium with a CDP port did not start") from None
                time.sleep(0.2)
        env = {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
               "PROMPTFOO_CONFIG_DIR": os.path.join(self._profile, "promptfoo"), "NODE_NO_WARNINGS": "1"}
        self._node = subprocess.Popen([node(), str(INSTALL_DIR / SCRIPT), self.url, str(self.wait_ms), str(port)],
                                      cwd=INSTALL_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, env=env, start_new_session=True)
        return self

    def turn(self, prompt: str) -> dict[str, Any]:
        """{"ms", "output": {text, done, turn, extractedAt}, "error"}; promptfoo's log lines are skipped."""
        assert self._node and self._node.stdin and self._node.stdout
        self._node.stdin.write(json.dumps({"prompt": prompt}) + "\n")
        self._node.stdin.flush()
        while True:
            line = self._node.stdout.readline()
            if not line:
                raise RuntimeError("the promptfoo process ended")
            if line.startswith("@@"):
                return json.loads(line[2:])

    def __exit__(self, *exc: object) -> None:
        for proc in (self._node, self._browser):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        shutil.rmtree(self._profile, ignore_errors=True)
