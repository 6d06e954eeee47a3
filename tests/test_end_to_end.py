"""`mmb run` end to end: real Chromium, the bundled demo chat, the real CLI in a subprocess."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import DEMO_ENGINE, REPO, demo_run, mmb
from tests.support.quirk_server import QuirkServer, scripted_responder
from tests.support.run_process import Results, saved_state
from tests.support.tiny import TINY

# Whole CLI runs in a browser: generous limits, since CI machines may be slow or busy.
pytestmark = [pytest.mark.usefixtures("chromium"), pytest.mark.timeout(900)]
COMPACTION = DEMO_ENGINE["compaction"]


def load_state(results: Path, run_id: str = "demo") -> dict:
    return saved_state(results / run_id)


def evaluations(state: dict) -> list[tuple]:
    return [(e["check_id"], e["score"], e["second_attempt"], e["answer"]) for e in state["evaluations"]]


def test_demo_run_writes_state_and_report(demo_reference):
    state, results = demo_reference.state(), demo_reference.folder
    assert state["status"] == "finished" and state["finished"]
    assert len(state["evaluations"]) == 10
    assert [s["reason"] for s in state["sessions"]] == ["start", "newSession"]
    assert "url changed" in state["sessions"][1]["reset_sign"]
    assert state["persona_compactions"], "the demo config is small enough to compact the persona"
    assert state["facts"]["running"]["sections"][0]["facts"][1]["text"] == "My 10 km personal best is now 52:30"
    scores = [e["score"] for e in state["evaluations"]]
    assert 0 < sum(scores) / len(scores) < 10, "the demo agent should neither ace nor fail the demo"
    assert any(e["second_attempt"] and e["score"] == 5 for e in state["evaluations"])
    report = (results / "report.md").read_text()
    assert "Coverage audit:** 10 of 10 planned checks graded" in report
    provenance, = state["provenance"]
    assert provenance["browser"].startswith("chromium ") and provenance["driver"] == "demo"
    assert len(provenance["profile_sha256"]) == 64 and f"browser {provenance['browser']}" in report
    assert {e["grader"] for e in state["evaluations"]} == {"rules"} and "Graded by:** the offline rule judge" in report
    assert "#### d6 [aggregate] — 0/10" in report and "- **Expected:** 2" in report
    assert "finished: mean" in demo_reference.printed
    transcript = (results / "demo" / "transcript.jsonl").read_text().splitlines()
    assert len(transcript) == state["turn"] and all("busy-gone" in json.loads(t)["signal"] for t in transcript)
    assert not (results / "demo" / "traces").exists() or not list((results / "demo" / "traces").iterdir())


def test_the_demo_run_reads_the_agent_s_memory_and_shows_an_autopsy_with_every_class(demo_reference):
    results = demo_reference.folder
    memory = results / "demo" / "memory"
    index = json.loads((memory / "index.json").read_text())
    reasons = [s["reason"] for s in index["snapshots"]]
    assert reasons[0] == "start" and reasons[-1] == "end" and "session" in reasons and "turn" in reasons
    assert not index["problems"]
    assert (memory / index["snapshots"][-1]["folder"] / "chat-1.md").read_text().startswith("# Notes from chat 1")
    report = (results / "report.md").read_text()
    autopsy = report.split("### Memory autopsy")[1]
    counts = autopsy.split("| **all** |")[1].split("\n")[0]
    # every class of the snapshots at least once; none `retrieved, not used`: DemoMind shows no tool cards
    assert [int(n.strip(" *")) for n in counts.split("|") if n.strip()] == [4, 2, 0, 1, 1, 1]
    assert "**d2** [updated] 0/10 — **stale**" in autopsy and "**d5** [preference] 0/10 — **never stored**" in autopsy
    judged = json.loads((memory / "judged.json").read_text())  # the run's judge (offline: rules) asked where the matcher found nothing
    assert {k: (v["judge"], v["items"]) for k, v in judged.items()} == {"d5": ("rules", [False])}
    assert "memory autopsy: the judge (rules) read the memory for 1 check(s) the matcher found nowhere" in demo_reference.state()["log"]
    html = (results / "demo" / "report.html").read_text()
    assert 'id="memory-autopsy"' in html and '<details class="diff">' in html


def test_a_finished_run_is_not_replayed_and_deleting_it_starts_over(demo_reference, tmp_path):
    results = shutil.copytree(demo_reference.folder, tmp_path / "results")  # the reference is shared: only read
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(results), "runs": [demo_run()]}))
    again = mmb("run", "-c", str(config))
    assert again.returncode == 0 and "already finished" in again.stdout


def _run_until(config: Path, results: Path, turn: int) -> None:
    """Start mmb and kill -9 its whole process group once the state reaches `turn`."""
    proc = subprocess.Popen([sys.executable, "-m", "persona", "run", "-c", str(config)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if load_state(results)["turn"] >= turn:
                    break
            except (FileNotFoundError, json.JSONDecodeError, KeyError):
                pass
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_killed_runs_resume_to_the_same_evaluations(demo_reference, write_config, tmp_path):
    config = write_config([demo_run()], compaction=COMPACTION)
    results = tmp_path / "results"
    # (tests/test_faults_kill.py kills twenty-odd times, at every crash point)
    for turn in (6, 19, 24):  # in the first chat, as the new chat opens, among the checks
        _run_until(config, results, turn)
    done = mmb("run", "-c", str(config))
    assert done.returncode == 0, done.stderr
    state = load_state(results)
    assert evaluations(state) == evaluations(demo_reference.state())
    # No message reached the agent twice: it got exactly what an uninterrupted run sends.
    assert Results(results, results / "demo").agent_received() == demo_reference.agent_received()


def test_parallel_runs_use_their_own_contexts(write_bench, write_config, tmp_path):
    tiny = str(write_bench(TINY))  # a whole run in a few seconds: what counts is that the two overlap
    runs = [{"id": run_id, "benchmark": tiny, "agent": {"driver": "demo"}} for run_id in ("one", "two")]
    config = write_config(runs, parallel=2)
    done = mmb("run", "-c", str(config))
    assert done.returncode == 0, done.stderr
    results = tmp_path / "results"
    spans = []
    for run_id in ("one", "two"):
        assert load_state(results, run_id)["status"] == "finished"
        lines = [json.loads(x) for x in (results / run_id / "transcript.jsonl").read_text().splitlines()]
        spans.append((lines[0]["at"], lines[-1]["at"]))
    assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1], "the two runs should overlap in time"
    assert (results / "report.md").read_text().count("## ") >= 2


def test_the_openai_client_path_plays_like_the_scripted_persona(demo_reference, write_config, tmp_path):
    secret = "sk-test-do-not-leak-1234567890"
    with QuirkServer(scripted_responder("en")) as server:
        persona = {"kind": "openai", "base_url": server.base_url, "model": "test-model", "api_key_env": "MMB_TEST_KEY"}
        config = write_config([demo_run()], persona=persona, compaction=COMPACTION)
        done = mmb("run", "-c", str(config), env={"MMB_TEST_KEY": secret})
    assert done.returncode == 0, done.stderr
    state = load_state(tmp_path / "results")
    assert evaluations(state) == evaluations(demo_reference.state())
    checks, judge_check, played = server.requests[:3], server.requests[3], server.requests[4:]
    assert all("check a tool protocol" in r["messages"][0]["content"] for r in checks), "the preflight comes first"
    assert "persona model test-model: answers: ok" in done.stdout and not server.rejections
    assert judge_check["tools"][0]["function"]["name"] == "grade" and judge_check["temperature"] == 0
    assert "judge model test-model: gives a verdict: ok; grades a plain answer right: ok" in done.stdout
    graded = [r for r in played if r["tools"][0]["function"]["name"] == "grade"]
    first = played[0]
    assert first["model"] == "test-model" and first["messages"][0]["role"] == "system"
    assert [t["function"]["name"] for t in first["tools"]][:3] == ["next_phase", "facts_read", "facts_mark_told"]
    assert "# Your scenario" in first["messages"][0]["content"]
    assert state["usage"]["calls"] == len(played) - len(graded) + len(checks), "the preflight's calls count too"
    assert len(graded) == 10 and state["judge"] == "test-model"  # its judge: the same endpoint
    assert state["judge_usage"]["calls"] == len(graded) + 1, "its preflight call too"
    for path in (tmp_path / "results").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_the_demo_runs_results_list_export_compare_and_index(demo_reference, tmp_path):
    """The commands that read results, on the real demo run (`mmb list`, `export`, `compare`, the index page)."""
    from typer.testing import CliRunner

    from persona.cli.app import app

    def run(*args: str):
        return CliRunner().invoke(app, [*args, "--results", str(demo_reference.folder)], prog_name="mmb")

    results = demo_reference.folder
    listed = run("list")
    assert listed.exit_code == 0 and listed.stdout.splitlines()[1].split()[:7] == \
        ["demo", "demo", "demo", "finished", "phase", "5/5", "10/10"]
    out = tmp_path / "demo.csv"
    assert run("export", "-o", str(out)).exit_code == 0
    same = run("compare", str(out), "demo", "--fail-on-regression")
    assert same.exit_code == 0 and "regressions (0)\nimprovements (0)\nunchanged (10)" in same.stdout
    rows = {r["check_id"]: r for r in csv.DictReader(out.open())}
    retried = next(r for r in rows.values() if r["retry"] == "true")
    assert retried["score"] == "5.0" and int(retried["asked_turn"]) < int(retried["graded_turn"])
    assert "\n\n" in retried["agent_reply"], "both of the agent's answers, the first and the one after the search"
    index = (results / "index.html").read_text()
    assert 'href="demo/report.html"' in index and "leaderboard.html" in index
