"""`mmb run` through real chat frontends, installed from the registry and started on 127.0.0.1.

Each frontend talks to a local OpenAI-compatible server whose "model" (tests/support/chat_model.py)
remembers only the conversation it is sent and streams slowly. The scripted persona plays
tests/support/frontend_bench through the frontend's profile, so one run proves the profile: every
reply is scraped whole (it equals what the model streamed, so completion waited for the end of
the stream, and welcome bubbles or placeholders were never taken for a reply), the new chat really
reset (the model never again saw a fact from the first chat, and the check about it scores 0),
and the run's state.json and report.md are written.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from drivers.registry import build_profile
from tests.conftest import mmb
from tests.support.chat_model import ChatModel, text_of
from tests.support.frontend_specs import DISCOVERED_ONLY, FRONTENDS
from tests.support.frontends import Frontend, Installed, install, start
from tests.support.quirk_server import QuirkServer
from tests.support.run_process import saved_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("chromium")]

BENCH = Path(__file__).resolve().parents[1] / "support" / "frontend_bench"
MODEL = "mmb-test-model"
KEY = "sk-local-test"  # what the frontends are given as their model key; must not reach the results
EXPECTED_SCORES = {"s1": 10, "n1": 0, "n2": 10}  # see frontend_bench/chapter2.md
OLD_CHAT_FACT = "Biscuit"  # told in the first chat
NEW_CHAT_QUESTION = "What is my dog called?"  # n1, asked only in the new chat


def _squash(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.timeout(3600)  # a first install of Open WebUI alone takes many minutes on a busy machine
@pytest.mark.parametrize("frontend", FRONTENDS, ids=lambda f: f.name)
def test_a_benchmark_plays_through_the_real_frontend(frontend: Frontend, tmp_path: Path, write_config) -> None:
    """The ready profile, then the profile `mmb discover` finds on the same page: each plays the benchmark."""
    installed = install(frontend)
    model = ChatModel(think_s=0.8)  # a pause before the first token: the UI shows its placeholder
    # vLLM's rules: a frontend may send request fields of its own, which vLLM ignores and OpenAI refuses.
    with QuirkServer(model, profile="vllm", model=MODEL, chunk_delay_s=0.12) as server, \
            start(frontend, model_url=server.base_url, model=MODEL, workdir=tmp_path / "frontend") as running:
        ready = {"driver": frontend.name, "url": running.url}
        began = time.monotonic()
        done = mmb("run", "-c", str(write_config([{"id": frontend.name, "benchmark": str(BENCH), "agent": ready}],
                                                 browser={"trace": "retain-on-failure"})), timeout=1200)
        played = time.monotonic() - began
        _assert_played(frontend.name, done, tmp_path / "results", model, done_marker=True)
        agent, discovered_s = _discover_and_play(frontend, running.url, model, tmp_path, write_config)
    print(_timings(frontend.name, installed, running.started_s, played, discovered_s))
    print(compare_profiles(frontend.name, agent) if agent else f"{frontend.name}: discovery's known gap")


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("frontend", DISCOVERED_ONLY, ids=lambda f: f.name)
def test_a_benchmark_plays_through_a_real_frontend_with_no_profile(frontend: Frontend, tmp_path: Path,
                                                                   write_config) -> None:
    """A chat UI no profile was written for: the profile `mmb discover` finds plays the benchmark."""
    installed = install(frontend)
    model = ChatModel(think_s=0.8)
    with QuirkServer(model, profile="vllm", model=MODEL, chunk_delay_s=0.12) as server, \
            start(frontend, model_url=server.base_url, model=MODEL, workdir=tmp_path / "frontend") as running:
        agent, discovered_s = _discover_and_play(frontend, running.url, model, tmp_path, write_config)
    print(f"\n{frontend.name} {installed.versions}: install {installed.seconds:.0f} s (0 = cached), ready "
          f"{running.started_s:.0f} s, discovery {discovered_s:.0f} s\n  discovered: {json.dumps(agent)}")


def _discover_and_play(frontend: Frontend, url: str, model: ChatModel, tmp_path: Path,
                       write_config) -> tuple[dict | None, float]:
    """`mmb discover` on the page, then the benchmark through what it found: the agent block (None where
    discovery is known to fail, and does) and the seconds discovery took."""
    model.forget()
    began = time.monotonic()
    found = mmb("discover", url, "--out", str(tmp_path / "discover"), timeout=300)
    discovered_s = time.monotonic() - began
    if frontend.discovery_gap:
        assert found.returncode == 1 and re.search(frontend.discovery_gap, found.stderr), \
            f"discovery was known to fail here; now:\n{found.stderr}\n{found.stdout}"
        return None, discovered_s
    assert found.returncode == 0, found.stderr
    agent = json.loads(found.stdout)
    model.forget()  # the probe's messages
    run_id = f"{frontend.name}-discovered"
    again = mmb("run", "-c", str(write_config([{"id": run_id, "benchmark": str(BENCH), "agent": agent}],
                                              browser={"trace": "retain-on-failure"})), timeout=1200)
    _assert_played(run_id, again, tmp_path / "results", model, done_marker=False)
    return agent, discovered_s


def _timings(name: str, installed: Installed, ready_s: float, played_s: float, discovered_s: float) -> str:
    return (f"\n{name} {installed.versions}: install {installed.seconds:.0f} s (0 = cached), ready {ready_s:.0f} s, "
            f"run {played_s:.0f} s, discovery {discovered_s:.0f} s")


def _assert_played(run_id: str, done, results: Path, model: ChatModel, *, done_marker: bool) -> None:
    folder = results / run_id
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{_tail(folder / 'run.log')}"
    state = saved_state(folder)
    assert state["status"] == "finished"

    # Every reply came back whole: exactly what the model streamed, turn by turn; each message typed once.
    exchanges = [json.loads(line) for line in (folder / "transcript.jsonl").read_text().splitlines()]
    assert [_squash("\n".join(x["reply"])) for x in exchanges] == [_squash(a) for a in model.answers]
    assert state["sends"]["resent"] == [] and state["sends"]["typed"] == len(exchanges)
    # What the model received, request by request (its last user message), is what was typed: once each.
    # A request that carries a tool's result is the same turn going on (an agent at work), not a new message.
    received = [_squash(text_of([m for m in r if m.get("role") == "user"][-1].get("content")))
                for r, step in zip(model.requests, model.completions, strict=True) if not step.tool_results]
    assert received == [_squash(x["sent"]) for x in exchanges]
    if done_marker:
        wanted = ["busy-gone"] + (["done"] if build_profile(run_id, {}, {}).selectors.done else [])
        assert all(w in x["signal"] for x in exchanges for w in wanted), [x["signal"] for x in exchanges]
    assert all(x["reply_seconds"] >= 0.8 for x in exchanges), "replies should take at least the model's pause"

    # The new chat reset the conversation the frontend sends to the model.
    assert [s["reason"] for s in state["sessions"]] == ["start", "newSession"]
    assert "no messages left" in state["sessions"][1]["reset_sign"]
    after_reset = [r for r in model.requests if NEW_CHAT_QUESTION in json.dumps(r)]
    assert after_reset and not any(OLD_CHAT_FACT in json.dumps(r) for r in after_reset)

    # Graded as a memoryless agent must be: right within the chat, nothing from the old one.
    scores = {e["check_id"]: e["score"] for e in state["evaluations"]}
    assert scores == EXPECTED_SCORES
    assert next(e for e in state["evaluations"] if e["check_id"] == "n1")["second_attempt"]
    report = (results / "report.md").read_text()
    assert "3 of 3 planned checks graded" in report and "#### n1" in report

    for path in results.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def compare_profiles(driver: str, discovered: dict) -> str:
    """The ready profile's selectors beside the discovered ones, for a test's output (and the issue's note)."""
    ready = build_profile(driver, {}, {})
    assert ready is not None
    mine, found = ready.selectors.model_dump(), discovered["selectors"]
    keys = [k for k in mine if mine[k] or found.get(k)]
    rows = [f"  {k:<18} ready {mine[k]!s:<48} discovered {found.get(k)!s}" for k in keys]
    options = {k: v for k, v in discovered.items() if k in ("frame", "options")}
    return f"{driver}: ready profile against discovered:\n" + "\n".join(rows) + (f"\n  {options}" if options else "")


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else ""
