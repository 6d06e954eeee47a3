"""`mmb probe` against the chat lab and the demo agent, as a user runs it (real CLI, real Chromium)."""

from __future__ import annotations

import re
import shutil
import time

import pytest

from demo_agent.web import DemoChatServer
from drivers.probe import DEFAULT_TEXT, ProbeReport, probe_message
from tests.conftest import mmb
from tests.support.chat_lab import ChatLab, LabScenario
from tests.support.static_site import serve

pytestmark = pytest.mark.usefixtures("chromium")

LAB_SELECTORS = ["input=#box", "send=#send", "assistant_message=#log .bubble.bot", "user_message=#log .bubble.me",
                 "busy=#stop", "new_chat=#new-chat", "ignore=.welcome"]


def flags(pairs: list[str]) -> list[str]:
    return [arg for pair in pairs for arg in ("--selector", pair)]


def row(output: str, key: str) -> str:
    return next(line for line in output.splitlines() if line.strip().startswith(key + " "))


def test_probe_reports_each_selector_one_marked_round_trip_and_a_new_chat(tmp_path):
    with ChatLab(LabScenario(welcome="Hi, I am the lab.")) as lab:
        done = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS), "--send", "hello lab", "--out", str(tmp_path))
        received = list(lab.received)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "HeadlessChrome" in out and "; 0 open shadow roots" in out  # the page line names the browser that was used
    assert row(out, "input").split()[2:] == ["1", "match,", "1", "visible,", "editable", "ok"]
    assert "0 matches, 0 visible" in row(out, "user_message") and "matches after a message is sent" in row(out, "user_message")
    assert "1 match, 0 visible" in row(out, "busy")
    marked = probe_message("hello lab")
    assert received == [marked] and marked.startswith("[mmb probe] hello lab (a test message")
    assert f"send {marked!r}: reply in" in out and "1 bubble(s), signal busy-gone+stable(" in out
    assert f"  reply[0]: {'echo: ' + marked!r}" in out
    after = out.split("after the reply:")[1]
    assert "1 match, 1 visible" in row(after, "user_message")
    assert "2 matches, 2 visible" in row(after, "assistant_message")  # the welcome and the reply
    assert re.search(r"^new chat \(button\): url changed \S+/c/\w+ -> \S+/c/\w+; no messages left \(1 before\)$", out, re.M), out
    assert out.rstrip().endswith("OK: the profile fits this page")
    shots = list(tmp_path.glob("probe-generic-*.png"))
    assert len(shots) == 1 and f"screenshot: {shots[0]}" in out


def test_probe_with_no_send_types_nothing_and_still_tries_new_chat(tmp_path):
    with ChatLab() as lab:
        done = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS), "--no-send", "--out", str(tmp_path))
        received = list(lab.received)
    assert done.returncode == 0, done.stdout + done.stderr
    assert received == [] and "\nsend " not in done.stdout
    assert "no messages left (0 before)" in done.stdout


def test_probe_flags_what_does_not_fit_and_exits_non_zero(tmp_path):
    wrong = [*LAB_SELECTORS, "input=#log", "send=button.nope", "done=.never"]
    with ChatLab() as lab:
        done = mmb("probe", lab.url + "/", *flags(wrong), "--send", "hello", "--wait", "2", "--out", str(tmp_path))
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert row(out, "input").split()[2:] == ["1", "match,", "1", "visible,", "NOT", "editable", "NOT", "EDITABLE"]
    assert "0 matches, 0 visible" in row(out, "send") and "may show only once text is typed" in row(out, "send")
    assert "shows on a finished reply" in row(out, "done")
    assert "send '[mmb probe] hello" in out and "FAILED: not tried: a selector above does not fit" in out
    assert "FAILED: fix the selectors marked above" in out
    assert list(tmp_path.glob("probe-generic-*.png"))
    assert lab.received == []


@pytest.mark.parametrize("bad", ["assistant_message=text=echo", "busy=div["])
def test_an_invalid_selector_is_an_error_with_exit_2_never_ok(tmp_path, bad):
    """A message selector in Playwright's own syntax used to print a CSS error, then "OK", exit 0."""
    with ChatLab() as lab:
        done = mmb("probe", lab.url + "/", *flags([*LAB_SELECTORS, bad]), "--out", str(tmp_path))
        received = list(lab.received)
    out = done.stdout
    assert done.returncode == 2, out + done.stderr
    key = bad.split("=")[0]
    assert "INVALID" in row(out, key) and ("not plain CSS" in row(out, key) or "while parsing css selector" in row(out, key))
    assert "OK:" not in out and out.rstrip().endswith("FAILED: fix the selectors marked above "
                                                      "(override them with --selector key=css, then in config.jsonc "
                                                      "agent.selectors)")
    assert received == []


@pytest.mark.slow  # it waits out the probe's whole budget, 15 s: the slow set
def test_a_failing_probe_answers_within_its_budget_with_what_each_selector_matched(tmp_path):
    """The agent stays busy and never answers; the profile would wait 10 minutes, the probe 25 s at most."""
    with ChatLab(LabScenario(never_reply=True, placeholder="Thinking…")) as lab:
        started = time.monotonic()
        done = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS), "-o", "completion.timeout_s=600",
                   "-o", "completion.first_bubble_timeout_s=120", "--out", str(tmp_path))
        took = time.monotonic() - started
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert took < 25 + 10, took  # the budget, and a start-up margin for a loaded machine
    assert "FAILED: no complete reply" in out and "busy '#stop' visible" in out
    after = out.split("after the reply:")[1]
    assert "1 match, 1 visible" in row(after, "user_message") and "1 match, 1 visible" in row(after, "busy")


def test_a_new_chat_that_does_not_reset_fails_the_probe(tmp_path):
    with ChatLab(LabScenario(new_chat="noop")) as lab:
        done = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS), "--out", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "new chat (button): FAILED: the chat did not reset after new session (button): 1 of 1 message(s)" in done.stdout


@pytest.mark.parametrize("shadow", ["open", pytest.param("nested", marks=pytest.mark.slow)])  # nested: 11 s, slow set
def test_probe_in_shadow_roots_agrees_with_the_run_and_flags_a_selector_across_a_boundary(tmp_path, shadow):
    with ChatLab(LabScenario(shadow=shadow)) as lab:
        fits = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS), "--out", str(tmp_path))
        across = mmb("probe", lab.url + "/", *flags([*LAB_SELECTORS, "user_message=chat-app .bubble.me"]),
                     "--out", str(tmp_path))
    assert fits.returncode == 0, fits.stdout + fits.stderr
    roots = 1 if shadow == "open" else 3
    assert f"; {roots} open shadow root{'s' if roots > 1 else ''}" in fits.stdout
    assert "1 match, 1 visible" in row(fits.stdout.split("after the reply:")[1], "user_message")
    assert across.returncode == 1, across.stdout
    after = across.stdout.split("after the reply:")[1]  # our message is there for Playwright, not for the page scripts
    assert "SPLIT" in row(after, "user_message") and "must not cross a shadow boundary" in after


def test_probe_the_demo_agent_with_its_profile(tmp_path):
    with DemoChatServer(tmp_path / "agent", token_delay_s=0.002, think_delay_s=0.05) as server:
        base = server.url
        done = mmb("probe", base + "/", "--profile", "demo", "--send", "Hello there.", "--out", str(tmp_path))
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert out.startswith(f"probe demo @ {base}/c/")
    assert "signal busy-gone+done+" in out
    assert "ok" in row(out.split("after the reply:")[1], "new_chat").split()  # checked once the chat has messages


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


def test_a_chat_inside_an_iframe_is_found_and_driven_in_its_frame(tmp_path):
    """Without --frame the probe lists the frames and names the one whose document has the input; with
    it, the whole probe (round trip, New chat) goes on inside that frame."""
    with ChatLab() as lab:
        chat = base = lab.url
        chat += "/"
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "index.html").write_text(
            f'<!doctype html><iframe class="chat" src="{chat}" style="width: 800px; height: 600px"></iframe>')
        with serve(tmp_path / "site") as site:
            lost = mmb("probe", site, *flags(LAB_SELECTORS), "--wait", "1", "--out", str(tmp_path / "out"))
            found = mmb("probe", site, *flags(LAB_SELECTORS), "--frame", "iframe.chat", "--out", str(tmp_path / "out"))
    assert lost.returncode == 1, lost.stdout + lost.stderr
    assert f"  the input matches in the frame at {base}/c/" in lost.stdout and "the page http" in lost.stdout
    assert found.returncode == 0, found.stdout + found.stderr
    assert f"    frame {base}/c/" in found.stdout and "(cross-origin, HOLDS THE CHAT)" in found.stdout
    assert "reply[0]: 'echo: [mmb probe]" in found.stdout and "new chat (button): no messages left (1 before)" in found.stdout


def test_a_page_that_clears_the_first_typing_gets_it_typed_again_by_the_probe_as_by_a_run(tmp_path):
    """Chainlit's start-up clears what is typed first: a run types it again (nothing was sent), and so
    does the probe, which otherwise failed where the run would not."""
    with ChatLab(LabScenario(wipe_first_typing=True)) as lab:
        done = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS), "--send", "hello lab", "--out", str(tmp_path))
        received = list(lab.received)
    assert done.returncode == 0, done.stdout + done.stderr
    assert received == [probe_message("hello lab")]  # once
    assert "(typed again 1 time(s): the page had cleared the input before send)" in done.stdout


def test_an_input_hidden_a_while_after_it_showed_is_waited_for_as_the_run_waits(tmp_path):
    """An app that suspends its chat area while the rest loads hides the input just after it showed
    (Chainlit's start-up on a busy machine): the run waits for it to show again before typing, so the
    probe, checking the run's way, waits too instead of calling it missing."""
    with ChatLab(LabScenario(input_hidden_ms=(60, 2500))) as lab:
        done = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS), "--send", "hello again", "--out", str(tmp_path))
        received = list(lab.received)
    assert done.returncode == 0, done.stdout + done.stderr
    assert received == [probe_message("hello again")]


def test_the_wait_for_a_hidden_input_is_said():
    said = ProbeReport(profile="lab", url="http://127.0.0.1:9/", input_waited_s=2.46).render()
    assert "the input was hidden just after the chat opened: waited 2.5 s for it to show again" in said


def test_probe_a_chat_told_apart_by_its_authors_names(tmp_path):
    """No selector of either side: every bubble is `.msg`, the author's name in each (once per group)."""
    with ChatLab(LabScenario(authors="name-once", bubbles=2)) as lab:
        done = mmb("probe", lab.url + "/", *flags(["input=#box", "send=#send", "message=#log .msg", "author=.name",
                                                   "busy=#stop", "new_chat=#new-chat"]),
                   "-o", "authors.agent=Memo", "--out", str(tmp_path))
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    marked = probe_message(DEFAULT_TEXT)
    assert f"  reply[0]: {'part 1 of 2: ' + marked!r}" in out and f"  reply[1]: {'part 2 of 2: ' + marked!r}" in out
    after = out.split("after the reply:")[1]
    assert "3 matches, 3 visible" in row(after, "message") and "2 matches, 2 visible" in row(after, "author")
    assert out.rstrip().endswith("OK: the profile fits this page")


def test_probe_shows_the_work_beside_the_answer(tmp_path):
    """A reply that shows a tool card and a thought: the probe prints the answer alone, then the work."""
    with ChatLab(LabScenario(work=["tool", "thought"], work_ms=300)) as lab:
        done = mmb("probe", lab.url + "/", *flags(LAB_SELECTORS + ["tool=.work.tool", "thought=.work.thought"]),
                   "--send", "hello", "--out", str(tmp_path))
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert f"  reply[0]: {'echo: ' + probe_message('hello')!r}" in out
    assert "  work[0] (not the answer): 'tool: 🔧 Used tool memory_search'" in out
    assert "  work[1] (not the answer): 'thought: 💭 Thought for 1 second'" in out
