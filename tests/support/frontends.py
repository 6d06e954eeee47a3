"""Installing and starting real chat frontends for the integration tests.

Each frontend gets its own virtual environment under `.frontends/<name>/venv` (git-ignored, or
$MMB_FRONTENDS_DIR), installed from the package registry with pinned versions and reused while
its requirements are unchanged. uv (itself from PyPI, kept in `.frontends/_uv`) installs them: on
two busy cores it takes seconds where pip takes minutes. Requirements listed in `pip_first` go
through pip before, because pip honours the machine's own wheel folders (torch's CPU build here). A started frontend runs in its own process group on 127.0.0.1,
logs to a file, and is stopped with its whole group, so no test leaves a server behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APPS = Path(__file__).resolve().parent / "apps"


def frontends_dir() -> Path:
    return Path(os.environ.get("MMB_FRONTENDS_DIR") or REPO / ".frontends")


@dataclass(frozen=True)
class Launch:
    """What a frontend needs to start: the port to bind, the model server, a scratch folder."""

    port: int
    model_url: str  # OpenAI-compatible base URL, ending in /v1
    model: str
    workdir: Path


@dataclass(frozen=True)
class Frontend:
    name: str  # also the driver profile's name
    requirements: tuple[str, ...]
    command: Callable[[Path, Launch], list[str]]  # (venv bin folder, launch) -> argv
    env: Callable[[Launch], dict[str, str]] = lambda launch: {}
    pip_first: tuple[str, ...] = ()  # installed with pip before the rest (see the module's docstring)
    app: str | None = None  # file under tests/support/apps, copied into the workdir as app.py
    ready_path: str = "/"
    ready_timeout_s: float = 120
    path: str = "/"  # the chat page, relative to the server
    # Where `mmb discover` is known not to find a working profile yet: what its stderr must say (a
    # regex). The gap is pinned, not skipped: once discovery finds one, the test says so.
    discovery_gap: str | None = None

    @property
    def home(self) -> Path:
        return frontends_dir() / self.name

    @property
    def bin(self) -> Path:
        return self.home / "venv" / "bin"


@dataclass
class Installed:
    frontend: Frontend
    seconds: float  # 0 when reused
    versions: dict[str, str] = field(default_factory=dict)


UV = "uv==0.13.9"


def install(frontend: Frontend, timeout_s: float = 1800) -> Installed:
    """The frontend's venv, created or reused; a stamp records what it was installed with."""
    home = frontend.home
    home.mkdir(parents=True, exist_ok=True)
    stamp = home / "installed.json"
    wanted = [*frontend.pip_first, *frontend.requirements]
    with open(home / ".lock", "w") as lock:  # two test runs must not install into one venv at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and json.loads(stamp.read_text()).get("requirements") == wanted \
                and (frontend.bin / "python").exists():
            return Installed(frontend, 0.0, json.loads(stamp.read_text())["versions"])
        started = time.monotonic()
        stamp.unlink(missing_ok=True)
        shutil.rmtree(home / "venv", ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True, timeout=300)
        log = home / "install.log"
        python = str(frontend.bin / "python")
        with open(log, "w") as out:
            if frontend.pip_first:
                _logged([python, "-m", "pip", "install", "--progress-bar", "off", *frontend.pip_first], out, timeout_s)
            _logged([str(_uv(timeout_s)), "pip", "install", "--python", python, *frontend.requirements], out, timeout_s)
        versions = _versions(frontend)
        seconds = time.monotonic() - started
        stamp.write_text(json.dumps({"requirements": wanted, "versions": versions, "seconds": round(seconds)}))
        return Installed(frontend, seconds, versions)


def _logged(argv: list[str], out, timeout_s: float) -> None:
    out.write(f"$ {' '.join(argv)}\n")
    out.flush()
    done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s)
    if done.returncode != 0:
        out.flush()
        raise RuntimeError(f"{' '.join(argv[:3])} ... failed with {done.returncode}; see {out.name}:\n{_tail(Path(out.name))}")


def _uv(timeout_s: float) -> Path:
    """The uv binary, installed once from PyPI into its own venv."""
    home = frontends_dir() / "_uv"
    uv = home / "venv" / "bin" / "uv"
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not uv.exists():
            subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True, timeout=300)
            subprocess.run([str(home / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", UV], check=True,
                           timeout=timeout_s, capture_output=True)
    return uv


def _versions(frontend: Frontend) -> dict[str, str]:
    names = [r.split(" @ ")[0].split("==")[0].split(">")[0].split("<")[0]  # " @ ": a direct reference (a wheel file)
             for r in (*frontend.pip_first, *frontend.requirements)]
    code = ("import importlib.metadata as m, json, sys; "
            "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))")
    done = subprocess.run([str(frontend.bin / "python"), "-c", code, *names], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Running:
    url: str  # the chat page
    log: Path
    started_s: float  # from spawn to ready


@contextlib.contextmanager
def start(frontend: Frontend, *, model_url: str, model: str, workdir: Path) -> Iterator[Running]:
    """Run the installed frontend until the block ends; raises with its log tail if it never gets ready."""
    workdir.mkdir(parents=True, exist_ok=True)
    launch = Launch(port=free_port(), model_url=model_url, model=model, workdir=workdir)
    if frontend.app:
        shutil.copy(APPS / frontend.app, workdir / "app.py")
        shutil.copy(APPS / "agent_loop.py", workdir / "agent_loop.py")  # the apps' tool loop in agent mode
    env = {**os.environ, "PATH": f"{frontend.bin}{os.pathsep}{os.environ.get('PATH', '')}",
           "HOME": str(workdir), "PYTHONUNBUFFERED": "1", "OPENAI_BASE_URL": model_url,
           "OPENAI_API_KEY": "sk-local-test", "MMB_TEST_MODEL": model, **frontend.env(launch)}
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTEST_CURRENT_TEST", None)  # NiceGUI takes a process that has it for one of its own screen tests
    log = workdir / f"{frontend.name}.log"
    started = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(frontend.command(frontend.bin, launch), cwd=workdir, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{launch.port}"
    try:
        _wait_ready(proc, base + frontend.ready_path, frontend.ready_timeout_s, log)
        yield Running(url=base + frontend.path, log=log, started_s=time.monotonic() - started)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen, grace_s: float = 15) -> None:
    """SIGTERM the process group, SIGKILL what is left after the grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace_s)
            # the leader is gone; children it spawned may still hold the group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait_ready(proc: subprocess.Popen, url: str, timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the frontend exited with {proc.returncode} before it was ready:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(0.5)  # polling a server that is still importing; nothing to wait on instead
    raise RuntimeError(f"the frontend was not ready at {url} within {timeout_s:g} s:\n{_tail(log)}")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
