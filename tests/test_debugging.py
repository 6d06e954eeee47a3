"""Debugging a run the Playwright way: traces per chat session, screenshots on failure, video."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, mmb
from tests.support.chat_lab import ChatLab, LabScenario

pytestmark = pytest.mark.usefixtures("chromium")

TINY = {
    "benchmark.json": {"title": "Tiny", "language": "en", "chapters": ["chapter1.md"], "fact_files": ["family.md"]},
    "chapter1.md": "# Chapter 1\n\n## Tell\nTell the facts from family.\n\n## Ask\n```js\nawait bench.newSession();\n```\n"
                   "Ask the question.\n❓ q1 [single] Who is my wife? Correct answer: Ana\n",
    "family.md": "# Family\n\n## 1. Wife\n1.1 My wife is Ana\n",
    "profile.md": "# Bo\n\n## 1. About me\n1.1 I am Bo, 40 years old\n",
    "instructions.md": "You are Bo. Write short messages.\n",
}
LAB_SELECTORS = {"input": "#box", "send": "#send", "assistant_message": "#log .bubble.bot",
                 "user_message": "#log .bubble.me", "busy": "#stop", "new_chat": "#new-chat"}


def groups(trace: Path) -> list[str]:
    """The titles of the tracing groups in a trace.zip, in order."""
    with zipfile.ZipFile(trace) as z:
        events = [json.loads(line) for line in z.read("trace.trace").decode().splitlines() if line.strip()]
    return [e["title"] for e in events if e.get("type") == "before" and e.get("method") == "tracingGroup"]


def test_trace_on_gives_one_trace_per_chat_session_with_a_group_per_turn(write_bench, write_config, tmp_path):
    bench = write_bench(TINY)
    config = write_config([{"id": "t", "benchmark": str(bench), "agent": {"driver": "demo"}}])
    done = mmb("run", "-c", str(config), "--trace", "on")
    assert done.returncode == 0, done.stdout + done.stderr
    traces = tmp_path / "results" / "t" / "traces"
    assert sorted(p.name for p in traces.iterdir()) == ["session-0.trace.zip", "session-1.trace.zip"]
    assert groups(traces / "session-0.trace.zip") == ["turn 1", "new session"]
    assert groups(traces / "session-1.trace.zip") == ["turn 2"]
    for name in ("session-0", "session-1"):
        assert re.search(rf"\[t\] trace: playwright show-trace .*{traces / name}\.trace\.zip", done.stdout), done.stdout


def test_retain_on_failure_keeps_traces_and_a_screenshot_only_for_the_failed_run(write_bench, write_config, tmp_path):
    bench = write_bench(TINY)
    with ChatLab(LabScenario(never_reply=True)) as lab:
        failing = {"id": "bad", "benchmark": str(bench),
                   "agent": {"driver": "generic", "url": lab.url + "/", "selectors": LAB_SELECTORS,
                             "options": {"completion": {"timeout_s": 2}}}}
        config = write_config([{"id": "good", "benchmark": str(bench), "agent": {"driver": "demo"}}, failing],
                              browser={"trace": "retain-on-failure"})
        done = mmb("run", "-c", str(config))
    assert done.returncode == 1
    results = tmp_path / "results"
    assert not (results / "good" / "traces").exists() or not list((results / "good" / "traces").iterdir())
    assert [p.name for p in (results / "bad" / "traces").iterdir()] == ["session-0.trace.zip"]
    assert groups(results / "bad" / "traces" / "session-0.trace.zip") == ["turn 1"]
    state = json.loads((results / "bad" / "state.json").read_text())
    assert state["status"] == "failed" and state["error"].startswith("no complete reply (turn 1): reply not started")
    shot = Path(re.search(r"\(screenshot: (.+?\.png)\)", state["error"]).group(1))
    assert shot.parent == results / "bad" and shot.is_file()
    assert "failed" in done.stdout and "trace: playwright show-trace" in done.stdout


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="no ffmpeg (apt-get install ffmpeg)")
def test_video_writes_a_webm_of_the_chat(write_bench, write_config, tmp_path):
    bench = write_bench(TINY)
    config = write_config([{"id": "v", "benchmark": str(bench), "agent": {"driver": "demo"}}])
    done = mmb("run", "-c", str(config), "--video", env={"PLAYWRIGHT_BROWSERS_PATH": str(tmp_path / "no-browsers")})
    assert done.returncode == 0, done.stdout + done.stderr
    video = tmp_path / "results" / "v" / "videos" / "chat.webm"
    assert video.is_file() and video.read_bytes()[:4] == b"\x1a\x45\xdf\xa3"  # the EBML magic of webm
    assert [p.name for p in video.parent.iterdir()] == ["chat.webm"]
    assert f"[v] video: {video}" in done.stdout
    linked = next((tmp_path / ".ms-playwright").glob("ffmpeg-*/ffmpeg-linux"))
    assert linked.is_symlink() and os.path.samefile(linked, shutil.which("ffmpeg"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_printed_show_trace_command_serves_the_viewer_offline(write_bench, write_config, tmp_path):
    bench = write_bench(TINY)
    config = write_config([{"id": "t", "benchmark": str(bench), "agent": {"driver": "demo"}}])
    done = mmb("run", "-c", str(config), "--trace", "on")
    assert done.returncode == 0, done.stdout + done.stderr
    command = re.search(r"trace: (playwright show-trace .*?session-0\.trace\.zip)", done.stdout).group(1).split()
    port = str(_free_port())
    if "--port" in command:
        command[command.index("--port") + 1] = port
    else:
        pytest.skip("this machine has Playwright's own browser: show-trace opens a window")
    exe = str(Path(sys.executable).with_name("playwright"))
    viewer = subprocess.Popen([exe, *command[1:]], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                    assert page.status == 200 and b"Playwright" in page.read()
                break
            except OSError:
                assert viewer.poll() is None and time.monotonic() < deadline, viewer.stdout.read().decode()
                time.sleep(0.3)
    finally:
        os.killpg(viewer.pid, signal.SIGTERM)
        viewer.wait(timeout=30)
