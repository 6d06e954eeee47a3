"""The commands that read results: list, export, compare, report (-r, --merge); run --shard and --fail-under;
exit codes; files written with the user's umask; config paths from the config file's folder."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from persona.cli.app import app
from persona.engine.shard import parse_shard, select_shard
from persona.report.export import read_rows
from persona.state import SCHEMA_VERSION, RunStore, read_state
from tests.conftest import REPO
from tests.support.runs import MICRO, demo_run, write_run


def mmb(*args: str | Path):
    """The real command, in process; every path absolute so the working directory never matters."""
    return CliRunner().invoke(app, [str(a) for a in args], prog_name="mmb")


@pytest.fixture
def results(tmp_path) -> Path:
    """Two hand-written runs of the demo: r1 (5, 0, 10) and r2 (10, 0, 0)."""
    folder = tmp_path / "results"
    for run_id, scores in (("r1", None), ("r2", {"d1": 10, "d9": 0})):
        state, exchanges, _ = demo_run(run_id)
        for e in state.evaluations:
            e.score = (scores or {}).get(e.check_id, e.score)
        write_run(folder, state, exchanges)
    return folder


def test_list_shows_every_run(results):
    done = mmb("list", "--results", results)
    assert done.exit_code == 0, done.output
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["run", "agent", "benchmark", "status", "progress", "checks", "mean", "cost", "per", "check",
                              "started", "(UTC)", "duration"]
    assert sorted(r.split()[:8] for r in rows) == [["r1", "demo", "demo", "finished", "phase", "5", "3", "5.00"],
                                                   ["r2", "demo", "demo", "finished", "phase", "5", "3", "3.33"]]
    assert all(r.split()[8:10] == ["$0", "$0"] and r.endswith("1 min 15 s") for r in rows)


def test_unknown_run_ids_exit_2_with_one_line(results):
    for command in (["report"], ["export"]):
        done = mmb(*command, "--results", results, "-r", "r1", "-r", "nope")
        assert done.exit_code == 2, command
        assert done.stderr == f"no run with id 'nope' in {results} (runs: r1, r2)\n"
    done = mmb("compare", "--results", results, "r1", "nope.jsonl")
    assert done.exit_code == 2
    assert done.stderr == f"nope.jsonl is neither an export file (.json, .jsonl, .csv) nor a run in {results} (runs: r1, r2)\n"
    empty = results.parent / "empty"
    empty.mkdir()
    assert mmb("report", "--results", empty).stderr == f"no runs in {empty}\n"


def test_export_writes_each_format_to_a_file_or_stdout(results, tmp_path):
    out = tmp_path / "all.csv"
    done = mmb("export", "--results", results, "-o", out)
    assert done.exit_code == 0 and done.stdout == ""
    rows = read_rows(out)
    assert [(r.run_id, r.check_id) for r in rows] == [("r1", "d1"), ("r1", "d2"), ("r1", "d9"), ("r2", "d1"), ("r2", "d2"), ("r2", "d9")]
    one = mmb("export", "--results", results, "-r", "r2", "--format", "json")
    assert [r["score"] for r in json.loads(one.stdout)] == [10, 0, 0]
    lines = mmb("export", "--results", results, "-r", "r1").stdout.splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["schema_version"] == 1, "JSON Lines by default"
    bad = mmb("export", "--results", results, "--format", "xml")
    assert bad.exit_code == 2 and bad.stderr == "--format must be json, jsonl or csv, not 'xml'\n"


def test_compare_runs_and_files_and_fail_on_regression(results, tmp_path):
    done = mmb("compare", "--results", results, "r1", "r2")
    assert done.exit_code == 0, done.output
    assert "regressions (1):\n  d9 [absent] 10 -> 0 (-10)" in done.stdout
    gate = mmb("compare", "--results", results, "r1", "r2", "--fail-on-regression")
    assert gate.exit_code == 3
    mmb("export", "--results", results, "-r", "r2", "-o", tmp_path / "r2.jsonl")
    better = mmb("compare", "--results", results, tmp_path / "r2.jsonl", "r2", "--fail-on-regression")
    assert better.exit_code == 0 and "unchanged (3)" in better.stdout, "a file against the same run: no change"
    mmb("export", "--results", results, "-o", tmp_path / "both.json")
    two = mmb("compare", "--results", results, tmp_path / "both.json", "r1")
    assert two.exit_code == 2 and "holds 2 runs (r1, r2): export one run per file" in two.stderr


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (the lock aside: empty, taken by whoever runs), by its path there."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}


def test_state_prints_the_whole_state_of_a_run_with_its_parts_put_back(results):
    folder = results / "r1"
    done = mmb("state", "r1", "--results", results)
    assert done.exit_code == 0, done.output
    printed = json.loads(done.stdout)
    assert printed == read_state(folder).model_dump(mode="json")
    assert [e["check_id"] for e in printed["evaluations"]] == ["d1", "d2", "d9"] and "running" in printed["facts"]
    assert json.loads((folder / "state.json").read_text())["evaluations"]["file"] == "state.evaluations.jsonl", \
        "state.json itself only names where the grades are"
    grades = mmb("state", folder, "--field", "evaluations")  # a run's folder, from anywhere
    assert grades.exit_code == 0 and json.loads(grades.stdout) == printed["evaluations"]
    bad = mmb("state", "r1", "--results", results, "--field", "grades")
    assert bad.exit_code == 2 and bad.stderr.startswith("--field must be one of schema_version, run_id, ")
    assert bad.stderr.endswith(", provenance, not 'grades'\n") and "evaluations, " in bad.stderr
    unknown = mmb("state", "nope", "--results", results)
    assert unknown.exit_code == 2 and unknown.stderr == f"nope is neither a run in {results} (runs: r1, r2) nor a run's folder\n"


def test_state_beside_a_running_run_reads_what_its_state_counts_and_changes_nothing(results):
    folder = results / "r1"
    store = RunStore(folder)
    store.lock()  # the run is playing
    try:
        grade = read_state(folder).evaluations[0].model_copy(update={"check_id": "d7"})
        with open(folder / "state.evaluations.jsonl", "a") as f:  # a save appending, state.json not yet renamed
            f.write(grade.model_dump_json() + "\n" + grade.model_dump_json()[:40])
        before = tree(folder)
        done = mmb("state", "r1", "--results", results, "--field", "evaluations")
        assert done.exit_code == 0, done.output
        assert [e["check_id"] for e in json.loads(done.stdout)] == ["d1", "d2", "d9"]
        assert tree(folder) == before
    finally:
        store.unlock()


def newer(folder: Path) -> str:
    """The run's state.json made one of a newer mmb; the line that refuses it."""
    path = folder / "state.json"
    data = json.loads(path.read_text())
    data["schema_version"] = SCHEMA_VERSION + 1
    path.write_text(json.dumps(data))
    return f"{path} is schema_version {SCHEMA_VERSION + 1}, newer than this mmb knows ({SCHEMA_VERSION}): read it with a newer mmb\n"


def test_a_run_of_a_newer_mmb_stops_what_would_read_it_or_write_over_it_with_one_line(results, tmp_path, caplog):
    mmb("report", "--results", results)
    line = newer(results / "r1")
    before = tree(results)
    for command in (["state", "r1"], ["report"], ["report", "-r", "r2"], ["export"], ["export", "-r", "r1", "-o", tmp_path / "rows.csv"],
                    ["compare", "r2", "r1"]):
        done = mmb(*command, "--results", results)
        assert (done.exit_code, done.stdout, done.stderr) == (1, "", line), command
    assert tree(results) == before and not (tmp_path / "rows.csv").exists(), "nothing written"
    rows = mmb("export", "--results", results, "-r", "r2").stdout.splitlines()
    assert [json.loads(r)["run_id"] for r in rows] == ["r2"] * 3, "the other runs are still read"
    listed = mmb("list", "--results", results)  # only reads: the others listed, that one named
    assert [r.split()[0] for r in listed.stdout.splitlines()[1:]] == ["r2"]
    assert f"skipping run r1: {line.strip()}" in caplog.messages


def test_a_run_of_a_newer_mmb_is_not_started_and_nothing_is_written(tmp_path, write_bench):
    config = micro_config(tmp_path, write_bench, "results", run_ids=("a",))
    assert mmb("run", "-c", config).exit_code == 0
    line = newer(tmp_path / "results" / "a")
    before = tree(tmp_path / "results")
    done = mmb("run", "-c", config)
    assert done.exit_code == 1 and f"[a] not started: {line}" in done.stdout, done.output
    assert tree(tmp_path / "results") == before


def test_shard_parsing_and_selection():
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(ValueError, match="write it as i/n"):
            parse_shard(bad)

    class Plan:  # the only part of a RunPlan a shard looks at
        def __init__(self, run_id):
            self.run = type("Run", (), {"id": run_id})

    plans = [Plan(i) for i in ("e", "a", "d", "b", "c", "f", "g")]
    shares = [[p.run.id for p in select_shard(plans, i, 3)] for i in (1, 2, 3)]
    assert shares == [["a", "d", "g"], ["b", "e"], ["c", "f"]]
    assert shares == [[p.run.id for p in select_shard(list(reversed(plans)), i, 3)] for i in (1, 2, 3)], "stable"


def micro_config(tmp_path, write_bench, results: str, run_ids=("a", "b", "c", "d"), **engine) -> Path:
    bench = tmp_path / "micro"
    if not bench.exists():
        write_bench(MICRO, name="micro")
    runs = [{"id": i, "benchmark": str(bench), "agent": {"driver": "oracle"}} for i in run_ids]
    path = tmp_path / f"{results}.jsonc"
    path.write_text(json.dumps({"results_dir": str(tmp_path / results), "runs": runs, **engine}))
    return path


def test_three_shards_merged_equal_one_unsharded_run(tmp_path, write_bench):
    whole = mmb("run", "-c", micro_config(tmp_path, write_bench, "whole"))
    assert whole.exit_code == 0, whole.output
    for i in (1, 2, 3):
        done = mmb("run", "-c", micro_config(tmp_path, write_bench, f"shard{i}"), "--shard", f"{i}/3")
        assert done.exit_code == 0, done.output
        assert done.stdout.startswith(f"shard {i}/3: {['2 run(s): a, d', '1 run(s): b', '1 run(s): c'][i - 1]}\n")
    merged = mmb("report", "--results", tmp_path / "merged", "--merge", *(tmp_path / f"shard{i}" for i in (1, 2, 3)))
    assert merged.exit_code == 0, merged.output
    assert "merged into" in merged.stderr and "4 run(s) copied, 0 already there, 4 report.md entries" in merged.stderr
    mmb("report", "--results", tmp_path / "whole")
    for name in ("leaderboard.md",):
        assert (tmp_path / "merged" / name).read_text() == (tmp_path / "whole" / name).read_text()
    assert mmb("export", "--results", tmp_path / "merged").stdout == mmb("export", "--results", tmp_path / "whole").stdout
    index = (tmp_path / "merged" / "index.html").read_text()
    assert all(f'href="{i}/report.html"' in index for i in "abcd")
    entries = (tmp_path / "merged" / "report.md").read_text().split("\n## ")[1:]
    assert sorted(e.split(" — ")[1].split(":")[0] for e in entries) == ["a", "b", "c", "d"]
    again = mmb("report", "--results", tmp_path / "merged", "--merge", tmp_path / "shard1")
    assert again.exit_code == 0 and "0 run(s) copied, 2 already there" in again.stderr, "merging twice changes nothing"
    (tmp_path / "shard2" / "b" / "state.json").write_text((tmp_path / "shard1" / "a" / "state.json").read_text())
    clash = mmb("report", "--results", tmp_path / "merged", "--merge", tmp_path / "shard2")
    assert clash.exit_code == 2 and "run 'b' of" in clash.stderr and "differs from the one already in" in clash.stderr


CONFUSED = {**MICRO, "chapter1.md": MICRO["chapter1.md"].replace(  # two checks, one question: the oracle misses one
    "❓ m2 [absent] What is my blood type? Correct answer: you didn't tell me", "❓ m2 [single] Who is my wife? Correct answer: Eva")}


def test_fail_under_exits_3_below_the_threshold_and_1_when_a_run_failed(tmp_path, write_bench):
    write_bench(CONFUSED, name="micro")
    config = micro_config(tmp_path, write_bench, "results", run_ids=("half",), fail_under=6)
    done = mmb("run", "-c", config)
    assert done.exit_code == 3 and done.stderr == "[half] mean 5.00: below --fail-under 6\n"
    assert mmb("run", "-c", config, "--fail-under", "5").exit_code == 0, "the flag wins over the config"
    assert mmb("run", "-c", config, "--fail-under", "11").exit_code == 2
    broken = micro_config(tmp_path, write_bench, "broken", run_ids=("x",))
    (tmp_path / "broken" / "x").mkdir(parents=True)
    (tmp_path / "broken" / "x" / "state.json").write_text("{not json")  # a run that cannot even start
    assert mmb("run", "-c", broken, "--fail-under", "1").exit_code == 1


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_outputs_follow_the_umask_and_config_paths_start_at_the_config(tmp_path):
    """The real CLI in a subprocess with umask 027, run from elsewhere; the config names its paths relative to itself."""
    project = tmp_path / "project"
    (project / "benches" / "micro").mkdir(parents=True)
    for name, content in MICRO.items():
        (project / "benches" / "micro" / name).write_text(json.dumps(content) if isinstance(content, dict) else content)
    (project / "config.jsonc").write_text(json.dumps({"results_dir": "out", "runs": [
        {"id": "m", "benchmark": "benches/micro", "agent": {"driver": "oracle"}}]}))
    script = (f"umask 027; {sys.executable} -m persona run -c {project}/config.jsonc && "
              f"{sys.executable} -m persona export -c {project}/config.jsonc -o {tmp_path}/rows.csv && "
              f"{sys.executable} -m persona run --dry -c {project}/config.jsonc")
    done = subprocess.run(["sh", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = project / "out"
    assert (out / "m" / "state.json").exists() and not (REPO / "out").exists(), "results_dir from the config's folder"
    files = [p for p in out.rglob("*") if p.is_file()] + [tmp_path / "rows.csv"]
    assert {p.name for p in files} >= {"state.json", "transcript.jsonl", "run.log", "report.md", "report.html",
                                       "leaderboard.md", "leaderboard.html", "index.html", "rows.csv"}
    assert {str(p.relative_to(tmp_path)): oct(mode(p)) for p in files if mode(p) != 0o640} == {}
    assert {str(p.relative_to(tmp_path)): oct(mode(p)) for p in out.rglob("*") if p.is_dir() and mode(p) != 0o750} == {}
