"""Every benchmark we ship validates without a warning and dry-runs ready: coverage 100 %, every check 10."""

from __future__ import annotations

import asyncio

import pytest

from persona.benchmark.lint import lint
from persona.benchmark.loader import load_benchmark
from persona.benchmark.phases import Category
from persona.config import CompactionConfig
from persona.engine.dry import dry_run, summary, targets_from_paths
from tests.conftest import REPO

SHIPPED = sorted(p.parent for p in (REPO / "benchmarks").glob("*/benchmark.json"))


def test_the_marathons_are_shipped():
    assert {"demo", "marathon-en", "marathon-ru"} <= {p.name for p in SHIPPED}


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_it_validates_without_warnings(folder):
    bench = load_benchmark(folder)
    assert [str(w) for w in lint(bench)] == []
    assert {c.category for c in bench.checks} == set(Category), "every category is tested"


@pytest.mark.timeout(900)  # a marathon is hundreds of turns; the machine may be busy
@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_it_dry_runs_ready(folder, tmp_path):
    compaction = CompactionConfig()  # the defaults a config without a compaction section gets
    target, = targets_from_paths([folder])
    result = asyncio.run(dry_run(target, tmp_path, compaction))
    assert result.ok, summary(result, compaction)
    assert len(result.state.evaluations) == len(target.bench.checks)
    assert all(e.score == 10 for e in result.state.evaluations)
    assert result.state.quirks == {}, "the message guard takes nothing out of a persona that tells its facts"
