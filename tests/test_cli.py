"""The command line's habits: --version, one clear line for bad arguments, documented exit codes."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from persona.cli.app import app, package_version
from tests.conftest import REPO


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), prog_name="mmb")


def test_version():
    done = invoke("--version")
    assert done.exit_code == 0 and done.stdout == f"mmb (MarathonMemBench) {package_version()}\n"
    assert package_version()[0].isdigit()


def test_bad_arguments_exit_2_with_one_line():
    for args, line in [(["run", "--nope"], "mmb run: No such option: --nope (mmb run --help)"),
                       (["nope"], "mmb: No such command 'nope'. (mmb --help)"),
                       (["validate"], "mmb validate: Missing argument 'benchmarks'. (mmb validate --help)")]:
        done = invoke(*args)
        assert done.exit_code == 2, args
        assert done.stderr.splitlines() == [line] and done.stdout == ""


def test_no_arguments_show_the_help():
    done = invoke()
    assert done.exit_code == 2 and "Usage: mmb" in done.output and "run" in done.output


def _turn(state: Path) -> int:
    """Messages the agent has answered, from a state file another process writes (-1 while unreadable)."""
    try:
        return json.loads(state.read_text())["turn"]
    except (OSError, ValueError, KeyError):
        return -1


def test_the_ctrl_c_notice_is_on_a_line_of_its_own(tmp_path):
    """A real terminal: Ctrl-C typed into the run's pty echoes `^C` and interrupts it; output piped to a file."""
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp_path / "results"),
                                  "runs": [{"id": "m", "benchmark": str(REPO / "benchmarks" / "marathon-en"),
                                            "agent": {"driver": "oracle"}}]}))
    master, slave = pty.openpty()
    # A terminal's foreground job hears Ctrl-C even when this suite was started with it ignored (in the background).
    take_terminal = ("import fcntl, os, signal, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
                     "signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])")
    with open(tmp_path / "stdout", "w") as out:
        proc = subprocess.Popen([sys.executable, "-c", take_terminal, sys.executable, "-m", "persona", "run", "-c", str(config)],
                                stdin=slave, stdout=out, stderr=slave, cwd=REPO, start_new_session=True)
    os.close(slave)
    try:
        state = tmp_path / "results" / "m" / "state.json"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _turn(state) < 1:
            time.sleep(0.05)
        os.write(master, b"\x03")  # what the Ctrl-C key sends
        assert proc.wait(timeout=120) == 130
        terminal = b""
        while select.select([master], [], [], 0.5)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other side is closed
                break
            if not chunk:
                break
            terminal += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    lines = terminal.decode().replace("\r\n", "\n").split("\n")
    assert "interrupted: the state is saved; run the same command again to continue" in lines, terminal
