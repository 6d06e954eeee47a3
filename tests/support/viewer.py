"""`mmb view` for tests: the server in a thread of the test process (port 0, a quick poll), its
server-sent events read with the standard library, and `mmb view` as a process of its own."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from persona.report.live.server import Viewer, bind, url_of
from tests.conftest import REPO

TEST_POLL_S = 0.1


@contextmanager
def serving(results: Path, **options) -> Iterator[str]:
    """The viewer of `results` on a free port, until the block ends; yields its base URL."""
    sock = bind("127.0.0.1", 0)
    ready = threading.Event()
    server = Viewer(results, poll_s=TEST_POLL_S, **options).server(ready.set)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        assert ready.wait(15), "the viewer did not start"
        yield url_of(sock)
    finally:
        server.stop()
        thread.join(15)
        sock.close()
        assert not thread.is_alive(), "the viewer did not stop"


def get(url: str, path: str) -> tuple[int, str]:
    """A GET of `path` exactly as written (no normalising of '..'): status and body."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=15)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def live_events_url(page_html: str) -> str:
    """The events address a served page follows (from its script's `live` object)."""
    found = re.search(r'var live = (\{.*?\})', page_html)
    assert found, "not a live page"
    return json.loads(found.group(1))["events"]


class Events:
    """An open stream of server-sent events."""

    def __init__(self, url: str, path: str, timeout: float = 15):
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        self.conn.request("GET", path)
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.status

    def next(self) -> tuple[str, dict]:
        """The next named event and its data (comments and `retry:` lines skipped)."""
        name, data = "message", []
        while True:
            line = self.response.readline().decode("utf-8")
            if line == "":
                raise EOFError("the stream ended")
            line = line.rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif line == "" and data:
                return name, json.loads("\n".join(data))

    def until(self, predicate, timeout: float = 20) -> tuple[str, dict]:
        """Events until one satisfies `predicate(name, data)`; bounded."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            name, data = self.next()
            if predicate(name, data):
                return name, data
        raise TimeoutError("no such event")

    def close(self) -> None:
        self.conn.close()


def spawn_view(*args: str, env: dict[str, str] | None = None, ctrl_c: bool = True) -> subprocess.Popen:
    """`mmb view ARGS --port 0` in a process of its own (served_at tells its URL), hearing Ctrl-C as a
    terminal's job does (whatever this suite's own handling of it) or, `ctrl_c=False`, ignoring it as a
    script's `mmb view &` does."""
    handling = signal.SIG_DFL if ctrl_c else signal.SIG_IGN
    return subprocess.Popen([sys.executable, "-m", "persona", "view", "--port", "0", *args], cwd=REPO,
                            env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, handling))


def served_at(proc: subprocess.Popen) -> str:
    """The URL a spawned `mmb view` says it serves at, once it says it (bounded by the process: it serves or ends)."""
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if found := re.search(r" at (http://\S+) ", line):
            return found.group(1)
    proc.wait(15)
    raise AssertionError(f"mmb view did not start: {''.join(lines)}")
