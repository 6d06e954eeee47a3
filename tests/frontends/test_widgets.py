"""`mmb run` through the chat widgets agents ship with, each the real npm package on a local page.

Each widget (tests/support/widgets/specs.py) is fetched or bundled from the npm registry once per
machine, served on 127.0.0.1 with a backend that speaks its own protocol (tests/support/widgets/
server.py), behind which one agent remembers each session and nothing across sessions. The scripted
persona plays tests/support/frontend_bench through the widget's ready profile, opening the chat
with its launcher where it has one. One run proves the profile: every reply is scraped whole (it
equals what the agent streamed), each message reached the agent exactly once, the new chat made
the widget start a new session on the backend (the agent never saw a fact of the first chat again,
and the check about it scores 0), and state.json and report.md are written.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import mmb
from tests.frontends.test_real_frontends import compare_profiles
from tests.support.run_process import saved_state
from tests.support.widgets.agent import SessionAgent
from tests.support.widgets.server import WidgetServer
from tests.support.widgets.specs import WIDGETS, Widget

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("chromium")]

BENCH = Path(__file__).resolve().parents[1] / "support" / "frontend_bench"
EXPECTED_SCORES = {"s1": 10, "n1": 0, "n2": 10}  # see frontend_bench/chapter2.md
OLD_CHAT_FACT = "Biscuit"  # told in the first chat
NEW_CHAT_QUESTION = "What is my dog called?"  # n1, asked only in the new chat


def _squash(text: str) -> str:
    """Spaces folded, and Web Chat's markdown typography undone (it shows "don't" as "don’t")."""
    return " ".join(text.replace("\u2019", "'").split())


@pytest.mark.timeout(900)
@pytest.mark.parametrize("widget", WIDGETS, ids=lambda w: w.name)
def test_a_benchmark_plays_through_the_real_widget(widget: Widget, tmp_path: Path, write_config) -> None:
    """The ready profile, then the profile `mmb discover` finds on the same page: each plays the benchmark."""
    fetched = widget.fetch()
    agent = SessionAgent(think_s=0.8)  # a pause before the first token: the widget shows it is busy
    # a widget that shows no reply fails in a minute, not in ten
    quick = {"completion": {"first_bubble_timeout_s": 30}}
    with WidgetServer(agent, {widget.package: fetched.folder}) as server:
        url = server.url + widget.page
        config = write_config([{"id": widget.name, "benchmark": str(BENCH),
                                "agent": {"driver": widget.name, "url": url, "options": quick}}],
                              browser={"trace": "retain-on-failure"})
        began = time.monotonic()
        done = mmb("run", "-c", str(config), timeout=600)
        played = time.monotonic() - began
        _assert_played(widget.name, done, tmp_path / "results", agent)

        began = time.monotonic()
        found = mmb("discover", url, "--out", str(tmp_path / "discover"), timeout=300)
        discovered_s = time.monotonic() - began
        assert found.returncode == 0, found.stderr
        discovered = json.loads(found.stdout)
        fresh = SessionAgent(think_s=0.8)  # the probe's messages are not the benchmark's
        agent.__dict__.update({k: v for k, v in fresh.__dict__.items() if k != "_lock"})
        run_id = f"{widget.name}-discovered"
        discovered["options"] = {**discovered.get("options", {}), **quick}
        again = mmb("run", "-c", str(write_config([{"id": run_id, "benchmark": str(BENCH), "agent": discovered}],
                                                  browser={"trace": "retain-on-failure"})), timeout=600)
        _assert_played(run_id, again, tmp_path / "results", agent)
    print(f"\n{widget.name} {fetched.versions} ({widget.mode}): fetch {fetched.seconds:.0f} s (0 = cached), "
          f"run {played:.0f} s, discovery {discovered_s:.0f} s")
    print(compare_profiles(widget.name, discovered))


def _assert_played(run_id: str, done, results: Path, agent: SessionAgent) -> None:
    folder = results / run_id
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{_tail(folder / 'run.log')}"
    state = saved_state(folder)
    assert state["status"] == "finished"

    # Every message reached the agent once, in order, and every reply came back whole.
    exchanges = [json.loads(line) for line in (folder / "transcript.jsonl").read_text().splitlines()]
    assert [_squash(text) for _, text in agent.received] == [_squash(x["sent"]) for x in exchanges]
    assert all(x["typed"] == 1 for x in exchanges)
    assert [_squash("\n".join(x["reply"])) for x in exchanges] == [_squash(a) for a in agent.answers]
    assert all(x["reply_seconds"] >= 0.8 for x in exchanges), "replies should take at least the agent's pause"

    # The new chat was a new session on the backend, which never saw the old chat again.
    assert [s["reason"] for s in state["sessions"]] == ["start", "newSession"]
    assert "no messages left" in state["sessions"][1]["reset_sign"]
    sessions = list(dict.fromkeys(session for session, _ in agent.received))
    assert len(sessions) == 2, sessions
    first_of_new = next(i for i, x in enumerate(exchanges) if x["session"] == 1)
    assert [s for s, _ in agent.received] == [sessions[0]] * first_of_new + [sessions[1]] * (len(exchanges) - first_of_new)
    new_chat = json.dumps(agent.history(sessions[1]))
    assert NEW_CHAT_QUESTION in new_chat and OLD_CHAT_FACT not in new_chat

    # Graded as an agent that forgets across sessions must be: right within the chat, nothing from the old one.
    scores = {e["check_id"]: e["score"] for e in state["evaluations"]}
    assert scores == EXPECTED_SCORES
    report = (results / "report.md").read_text()
    assert "3 of 3 planned checks graded" in report and "#### n1" in report


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else ""
