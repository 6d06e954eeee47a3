"""`mmb probe` against the chat lab and the demo agent, as a user runs it (real CLI, real Chromium)."""

from __future__ import annotations

import shutil

import pytest

from demo_agent.web import DemoChatServer
from tests.conftest import mmb
from tests.support.chat_lab import ChatLab, LabScenario

pytestmark = pytest.mark.usefixtures("chromium")

LAB_SELECTORS = ["input=#box", "send=#send", "assistant_message=#log .bubble.bot", "user_message=#log .bubble.me",
                 "busy=#stop", "new_chat=#new-chat", "ignore=.welcome"]


def flags(pairs: list[str]) -> list[str]:
    return [arg for pair in pairs for arg in ("--selector", pair)]


def row(output: str, key: str) -> str:
    return next(line for line in output.splitlines() if line.strip().startswith(key + " "))


def test_probe_reports_each_selector_and_one_round_trip(tmp_path):
    with ChatLab(LabScenario(welcome="Hi, I am the lab.")) as lab:
        done = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS), "--send", "hello lab", "--out", str(tmp_path))
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "HeadlessChrome" in out  # the page line names the browser that was used
    assert row(out, "input").split()[2:] == ["1", "match,", "1", "visible,", "editable", "ok"]
    assert "0 matches, 0 visible" in row(out, "user_message") and "matches after a message is sent" in row(out, "user_message")
    assert "1 match, 0 visible" in row(out, "busy")
    assert "send 'hello lab': reply in" in out and "1 bubble(s), signal busy-gone+stable(" in out
    assert "  reply[0]: 'echo: hello lab'" in out
    after = out.split("after the reply:")[1]
    assert "1 match, 1 visible" in row(after, "user_message")
    assert "2 matches, 2 visible" in row(after, "assistant_message")  # the welcome and the reply
    assert out.rstrip().endswith("OK: the profile fits this page")
    shots = list(tmp_path.glob("probe-generic-*.png"))
    assert len(shots) == 1 and f"screenshot: {shots[0]}" in out
    assert lab.received == ["hello lab"]


def test_probe_flags_what_does_not_fit_and_exits_non_zero(tmp_path):
    wrong = [*LAB_SELECTORS, "input=#log", "send=button.nope", "busy=div[", "done=.never"]
    with ChatLab() as lab:
        done = mmb("probe", lab.url + "/", *flags(wrong), "--send", "hello", "--wait", "2", "--out", str(tmp_path))
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert row(out, "input").split()[2:] == ["1", "match,", "1", "visible,", "NOT", "editable", "NOT", "EDITABLE"]
    assert "0 matches, 0 visible" in row(out, "send") and "MISSING  (matches nothing)" in row(out, "send")
    assert "INVALID" in row(out, "busy")
    assert "shows on a finished reply" in row(out, "done")
    assert "send 'hello': FAILED: not tried: a required selector does not fit" in out
    assert "FAILED: fix the selectors marked above" in out
    assert list(tmp_path.glob("probe-generic-*.png"))
    assert lab.received == []


def test_probe_the_demo_agent_with_its_profile(tmp_path):
    with DemoChatServer(tmp_path / "agent", token_delay_s=0.002, think_delay_s=0.05) as server:
        base = server.url
        done = mmb("probe", base + "/", "--profile", "demo", "--send", "My cat is Tom.", "--out", str(tmp_path))
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert out.startswith(f"probe demo @ {base}/c/")
    assert "signal busy-gone+done+" in out
    assert "ok" in row(out, "new_chat").split()


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is not installed")
def test_headed_really_shows_a_browser_under_xvfb(tmp_path):
    with ChatLab() as lab:
        done = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS), "--headed", "--slow-mo", "50",
                   "--out", str(tmp_path), wrapper=["xvfb-run", "-a"])
        agents = list(lab.user_agents)
    assert done.returncode == 0, done.stdout + done.stderr
    assert agents and not any("HeadlessChrome" in a for a in agents), agents
    assert "Chrome/" in agents[0]


def test_headed_without_a_display_says_how_to_get_one(tmp_path):
    done = mmb("probe", "http://127.0.0.1:9/", *flags(LAB_SELECTORS), "--headed", "--out", str(tmp_path),
               env={"DISPLAY": "", "WAYLAND_DISPLAY": ""})
    assert done.returncode == 1
    assert "headed mode needs a display: run under `xvfb-run -a mmb ...` or set DISPLAY" in done.stderr
