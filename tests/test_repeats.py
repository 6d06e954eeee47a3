"""Repeats: a run played N times with stable ids and folders; the leaderboard pools them into a mean with
its 95 % confidence interval, overall and per category, and says whose intervals overlap."""

from __future__ import annotations

import asyncio
import json

import pytest

from persona.benchmark.phases import Category
from persona.config import load_config
from persona.engine.runner import Runner, plan_runs
from persona.errors import InputError
from persona.report.catalog import scan
from persona.report.leaderboard import collect, render_markdown, write_leaderboard
from persona.report.repeats import ci_text, interval, overlaps
from persona.state import RunStore
from tests.support.runs import demo_run
from tests.test_judge import SHORT
from tests.test_leaderboard import add_run, evaluation


def test_the_interval_is_students_t_and_overlap_is_told():
    iv = interval([6, 8, 7])
    assert (iv.mean, iv.n) == (7, 3) and iv.high - iv.mean == pytest.approx(4.303 / 3 ** 0.5, abs=1e-3)
    assert ci_text(iv) == "7.00 ± 2.48" and ci_text(interval([4])) == "4.00" and interval([]) is None
    assert interval([5, 5, 5]).high == 5
    assert overlaps(interval([6, 8, 7]), interval([7.5, 9.5, 8.5]))
    assert not overlaps(interval([1, 2, 1.5]), interval([8, 9, 8.5]))
    assert overlaps(interval([4]), interval([4, 5])) is None


def write(tmp_path, runs: list[dict], **engine):
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), "runs": runs, **engine}, indent=1))
    return load_config(config)


def test_repeats_expand_into_stable_ids_and_folders(tmp_path, write_bench):
    bench = str(write_bench(SHORT))
    cfg = write(tmp_path, [{"id": "a", "benchmark": bench, "repeat": 3}, {"id": "b", "benchmark": bench}])
    plans = plan_runs(cfg)
    assert [(p.run.id, p.folder.name, p.repeat_of, p.repeat) for p in plans] == [
        ("a.r1", "a.r1", "a", 1), ("a.r2", "a.r2", "a", 2), ("a.r3", "a.r3", "a", 3), ("b", "b", None, None)]
    assert [p.run.id for p in plan_runs(cfg, repeat=2)] == ["a.r1", "a.r2", "b.r1", "b.r2"]  # --repeat 2
    assert [p.run.id for p in plan_runs(cfg, ["a"])] == ["a.r1", "a.r2", "a.r3"]
    assert [p.run.id for p in plan_runs(cfg, ["a.r2", "b"])] == ["a.r2", "b"]


def test_a_repeat_that_would_share_a_folder_is_refused_with_its_line(tmp_path, write_bench):
    bench = str(write_bench(SHORT))
    with pytest.raises(InputError, match=r"config.jsonc:\d+: run id 'a.r1' repeats run 0"):
        write(tmp_path, [{"id": "a", "benchmark": bench, "repeat": 2}, {"id": "a.r1", "benchmark": bench}])
    with pytest.raises(InputError, match=r"config.jsonc:\d+: run id 'a.r2' \(a repeat of 'a'\) repeats run 0"):
        write(tmp_path, [{"id": "a.r2", "benchmark": bench}, {"id": "a", "benchmark": bench, "repeat": 2}])


def test_a_repeated_run_plays_each_repeat_in_its_own_folder(tmp_path, write_bench):
    cfg = write(tmp_path, [{"id": "r", "benchmark": str(write_bench(SHORT)), "repeat": 2, "agent": {"driver": "oracle"}}])
    outcomes = asyncio.run(Runner(cfg, print_line=lambda _: None).run_all(plan_runs(cfg)))
    assert [(o.run_id, o.status) for o in outcomes] == [("r.r1", "finished"), ("r.r2", "finished")]
    states = [RunStore(tmp_path / "results" / f"r.r{k}").load() for k in (1, 2)]
    assert [(s.run_id, s.repeat_of, s.repeat, s.finished) for s in states] == [("r.r1", "r", 1, True), ("r.r2", "r", 2, True)]


def test_the_leaderboard_shows_mean_and_interval_per_agent_and_category_and_overlaps(tmp_path):
    base, _, _ = demo_run()

    def repeats(agent: str, scores: list[tuple[float, float]]) -> None:
        for k, (single, updated) in enumerate(scores, 1):
            state = base.model_copy(update={"run_id": f"{agent}.r{k}", "repeat_of": agent, "repeat": k, "evaluations": [
                evaluation("c1", Category.single, single), evaluation("c2", Category.updated, updated)]})
            (tmp_path / state.run_id).mkdir()
            (tmp_path / state.run_id / "state.json").write_text(state.model_dump_json())  # all the leaderboard reads

    repeats("a", [(8, 6), (10, 6), (9, 6)])  # means 7, 8, 7.5
    repeats("b", [(7, 5), (9, 5), (8, 5)])  # means 6, 7, 6.5: overlaps a
    repeats("c", [(1, 1), (2, 1), (1, 1)])  # means 1, 1.5, 1: apart
    add_run(tmp_path, "d", [(Category.single, 5)])  # played once
    md = render_markdown(collect(tmp_path))
    rows = {line.split(" | ")[0][2:]: line for line in md.splitlines() if line.startswith("| ") and " ± " in line}
    assert rows["a"] == "| a | rules | 3 | **7.50 ± 1.24** | 9.00 ± 2.48 | 6.00 ± 0.00 | b |"
    assert rows["b"].endswith("| a |") and rows["c"].endswith("| none |")
    assert "| d | rules | 1 | **5.00** | 5.00 | — | — (one finished run: no interval) |" in md
    _, html = write_leaderboard(tmp_path, scan(tmp_path))
    text = html.read_text()
    assert "<h3>Over repeats: mean ± 95 % confidence interval</h3>" in text and "<b>7.50 ± 1.24</b>" in text
