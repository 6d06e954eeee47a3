"""Provenance: what produced a run is in state.json and every report entry, without secrets; a resume
over an edited benchmark is refused unless accepted."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

from persona.config import load_config
from persona.engine.judge import rubric
from persona.engine.provenance import endpoint_host
from persona.engine.runner import Runner, plan_runs
from persona.state import RunState, RunStore
from tests.support.quirk_server import QuirkServer, scripted_responder
from tests.test_judge import SHORT

KEY = "sk-provenance-secret-0123456789"


def run(tmp_path: Path, bench: Path, accept: bool = False, **engine) -> tuple[str, RunState]:
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), **engine,
                                  "runs": [{"id": "p", "benchmark": str(bench), "agent": {"driver": "oracle"}}]}))
    cfg = load_config(config)
    lines: list[str] = []
    asyncio.run(Runner(cfg, print_line=lines.append, accept_benchmark_change=accept).run_all(plan_runs(cfg)))
    state = RunStore(tmp_path / "results" / "p").load()
    assert state is not None
    return "\n".join(lines), state


def test_hosts_only_never_users_paths_or_queries():
    assert endpoint_host("https://user:pw@api.example.com:8443/v1/key-abc?key=abc") == "api.example.com:8443"
    assert endpoint_host("https://openrouter.ai/api/v1") == "openrouter.ai"
    assert endpoint_host(None) is None and endpoint_host("not a url") is None


def test_provenance_is_recorded_and_reported_without_secrets(tmp_path, write_bench, monkeypatch):
    monkeypatch.setenv("MMB_TEST_PROVENANCE_KEY", KEY)
    bench = write_bench(SHORT)
    with QuirkServer(scripted_responder()) as server:
        persona = {"kind": "openai", "base_url": server.base_url, "model": "persona-m", "api_key_env": "MMB_TEST_PROVENANCE_KEY"}
        _, state = run(tmp_path, bench, persona=persona, judge={"model": "judge-m"})
    assert state.status == "finished"
    p, = state.provenance
    host = server.base_url.split("//")[1].split("/")[0]
    assert (p.persona_model, p.persona_host, p.judge, p.judge_host) == ("persona-m", host, "judge-m", host)
    assert p.tool_version == "0.1.0" and p.git_commit and len(p.git_commit.split("+")[0]) == 40
    assert p.benchmark_files == {name: hashlib.sha256((bench / name).read_bytes()).hexdigest()
                                 for name in ("benchmark.json", "instructions.md", "profile.md", "running.md", "chapter1.md")}
    assert p.rubric_sha256 == hashlib.sha256(rubric().encode()).hexdigest()
    system = next(r for r in server.requests if r["model"] == "persona-m"  # the first after the preflight's
                  and "check a tool protocol" not in r["messages"][0]["content"])["messages"][0]["content"]
    assert p.system_prompt_sha256 == hashlib.sha256(system.encode()).hexdigest(), "the prompt as the model got it"
    assert p.driver == "oracle" and p.browser is None

    results = tmp_path / "results"
    report, page = (results / "report.md").read_text(), (results / "p" / "report.html").read_text()
    assert f"persona persona-m @ {host} · judge judge-m @ {host}" in report and f"rubric sha256 {p.rubric_sha256[:12]}" in report
    assert f"benchmark sha256 {p.benchmark_sha256[:12]} over 5 files" in page
    for path in results.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path


def test_a_resume_over_an_edited_benchmark_stops_unless_accepted(tmp_path, write_bench):
    bench = write_bench(SHORT)
    _, state = run(tmp_path, bench, persona={"max_steps": 6})
    assert state.status == "failed" and "max_steps" in state.error  # stopped partway, resumable
    (bench / "running.md").write_text(SHORT["running.md"].replace("52:30", "51:00"), encoding="utf-8")

    printed, after = run(tmp_path, bench)
    assert "the benchmark changed since this run started (running.md (changed)); undo the change" in printed
    assert "--accept-benchmark-change" in printed and after == state, "nothing written"

    _, done = run(tmp_path, bench, accept=True)
    assert done.status == "finished" and len(done.provenance) == 2 and done.provenance[1].accepted_change
    assert done.provenance[0].differences(done.provenance[1]) == ["benchmark_files", "benchmark_sha256"]
    assert any("resumed over a changed benchmark (running.md (changed)), accepted" in line for line in done.log)
    report = (tmp_path / "results" / "report.md").read_text()
    assert "Resumed on something different:** " in report and "benchmark_files, benchmark_sha256 (benchmark change accepted)" in report
