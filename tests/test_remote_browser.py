"""browser.connect: use a Playwright server or a Chromium debugging port instead of launching."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from drivers.probe import probe_message
from tests.conftest import mmb
from tests.support.chat_lab import ChatLab
from tests.test_probe import LAB_SELECTORS, flags


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(what: str, ready, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited early ({proc.returncode})")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not come up in {timeout:g} s")
        time.sleep(0.2)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture
def playwright_server(chromium: str, tmp_path: Path) -> Iterator[str]:
    """`playwright run-server` on 127.0.0.1, as the README says: it launches by name, so it gets the
    folder of symlinks that `mmb browsers-path` makes."""
    made = mmb("browsers-path", "--dir", str(tmp_path / "pw-browsers"))
    assert made.returncode == 0, made.stderr
    browsers = made.stdout.strip()
    assert Path(browsers) == tmp_path / "pw-browsers"
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "playwright", "run-server", "--host", "127.0.0.1", "--port", str(port)],
                            env={**os.environ, "PLAYWRIGHT_BROWSERS_PATH": browsers},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for("playwright run-server", lambda: _port_open(port), proc)
        yield f"ws://127.0.0.1:{port}/"
    finally:
        _stop(proc)


@pytest.fixture
def chromium_with_debugging_port(chromium: str, tmp_path: Path) -> Iterator[str]:
    """A Chromium of the user's, started by hand with --remote-debugging-port (0: it picks one)."""
    profile = tmp_path / "chromium-profile"
    proc = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                             f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    active = profile / "DevToolsActivePort"
    try:
        _wait_for("chromium", lambda: active.is_file() and active.read_text().strip(), proc)
        yield f"http://127.0.0.1:{active.read_text().split()[0]}"
    finally:
        _stop(proc)


def probe_through(connect: dict, tmp_path: Path, *extra: str):
    config = tmp_path / "remote.jsonc"
    config.write_text(json.dumps({"browser": {"connect": connect}, "runs": [{"id": "x", "benchmark": "."}]}))
    with ChatLab() as lab:
        done = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS), "--send", "over the wire", "-c", str(config),
                   "--out", str(tmp_path / "out"), "-v", *extra)
        received = list(lab.received)
    return done, received


def test_probe_through_a_playwright_server(playwright_server, tmp_path):
    done, received = probe_through({"ws_endpoint": playwright_server}, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"browser: connected to {playwright_server} (chromium " in done.stderr
    assert f"reply[0]: {'echo: ' + probe_message('over the wire')!r}" in done.stdout
    assert received == [probe_message("over the wire")]


def test_probe_through_a_chromium_debugging_port_with_a_trace(chromium_with_debugging_port, tmp_path):
    done, received = probe_through({"cdp_url": chromium_with_debugging_port}, tmp_path, "--trace", "on")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"browser: connected to {chromium_with_debugging_port} (chromium " in done.stderr
    assert received == [probe_message("over the wire")]
    assert (tmp_path / "out" / "traces" / "session-0.trace.zip").is_file()


def test_nothing_listening_is_a_clear_error(tmp_path):
    port = _free_port()
    done, _ = probe_through({"ws_endpoint": f"ws://127.0.0.1:{port}/?token=tok-s3cret-77", "timeout_s": 5}, tmp_path)
    assert done.returncode == 1
    assert f"cannot connect to the Playwright server at ws://127.0.0.1:{port}/?…:" in done.stderr
    assert "tok-s3cret-77" not in done.stderr + done.stdout


def test_connect_takes_exactly_one_endpoint(tmp_path):
    done, _ = probe_through({"ws_endpoint": "ws://127.0.0.1:1/", "cdp_url": "http://127.0.0.1:2"}, tmp_path)
    assert done.returncode == 2
    assert "remote.jsonc" in done.stderr and "give exactly one of ws_endpoint and cdp_url" in done.stderr
