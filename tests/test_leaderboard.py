"""The leaderboard: runs grouped by benchmark, ranked by mean score, a column per category."""

from __future__ import annotations

from persona.benchmark.phases import Category
from persona.report.catalog import scan
from persona.report.leaderboard import collect, render_markdown, write_leaderboard
from persona.report.publish import write_overview
from persona.state import Evaluation, read_state
from tests.support.runs import demo_run, write_run


def evaluation(check_id: str, category: Category, score: float) -> Evaluation:
    return Evaluation(check_id=check_id, category=category, question="q", expected="e", answer="a", raw_score=score,
                      score=score, phase=0, turn=1, session=0)


def add_run(results, run_id, scores, benchmark=None, title=None):
    state, exchanges, _ = demo_run(run_id)
    state.evaluations = [evaluation(f"c{i}", cat, s) for i, (cat, s) in enumerate(scores)]
    if benchmark:
        state.benchmark, state.benchmark_title = benchmark, title
    return write_run(results, state, exchanges)


def test_runs_rank_by_mean_then_by_checks_graded(tmp_path):
    add_run(tmp_path, "low", [(Category.single, 2), (Category.updated, 4)])
    add_run(tmp_path, "high-few", [(Category.single, 8)])
    add_run(tmp_path, "high-many", [(Category.single, 8), (Category.absent, 8)])
    add_run(tmp_path, "none", [])
    add_run(tmp_path, "other", [(Category.single, 1)], benchmark="/x/other-bench", title="Other")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "state.json").write_text("{not json")
    groups = collect(tmp_path, {"demo": 10}).agents
    demo = groups[("demo", "Demo: a week in Maya's life")]
    assert [e.run_id for e in demo] == ["high-many", "high-few", "low", "none"]
    assert demo[2].mean == 3 and demo[2].categories["updated"].mean == 4 and demo[2].coverage == "2/10"
    assert [e.run_id for e in groups[("other-bench", "Other")]] == ["other"]
    assert groups[("other-bench", "Other")][0].coverage == "1"  # planned unknown


def test_markdown_has_a_column_per_category_seen(tmp_path):
    add_run(tmp_path, "a", [(Category.single, 10), (Category.temporal, 5)])
    add_run(tmp_path, "b", [(Category.single, 0)])
    md = render_markdown(collect(tmp_path))
    header = next(line for line in md.splitlines() if line.startswith("| # |"))
    assert "| mean | single | temporal | checks |" in header and "updated" not in header
    rows = [line for line in md.splitlines() if line.startswith("| 1 |") or line.startswith("| 2 |")]
    assert rows[0].startswith("| 1 | a |") and "| **7.50** | 10.0 | 5.0 | 2 |" in rows[0]
    assert rows[1].startswith("| 2 | b |") and "| **0.00** | 0.0 | — | 1 |" in rows[1]


def test_written_files_link_runs_that_have_a_page(tmp_path):
    folder = add_run(tmp_path, "a", [(Category.single, 10)])
    add_run(tmp_path, "b", [(Category.single, 5)])
    (folder / "report.html").write_text("<html></html>")
    md, html = write_leaderboard(tmp_path, scan(tmp_path))
    assert "[a](a/report.html)" in md.read_text() and "[b]" not in md.read_text()
    text = html.read_text()
    assert 'href="a/report.html"' in text and 'href="b/report.html"' not in text and "<script" not in text


def test_oracle_runs_get_a_table_of_their_own_and_never_a_rank(tmp_path):
    add_run(tmp_path, "agent", [(Category.single, 4)])
    oracle = add_run(tmp_path, "dry-demo", [(Category.single, 10)])
    state = read_state(oracle)
    state.driver = "oracle"
    (oracle / "state.json").write_text(state.model_dump_json())
    board = collect(tmp_path)
    assert [e.run_id for runs in board.agents.values() for e in runs] == ["agent"]
    assert [e.run_id for e in board.oracle] == ["dry-demo"]
    md = render_markdown(board)
    agents, dry = md.split("## Oracle runs (dry runs, not ranked)")
    assert "| 1 | agent |" in agents and "dry-demo" not in agents
    assert "| dry-demo | Demo: a week in Maya's life (`demo`) | finished | 10.00 |" in dry


def test_a_run_without_a_score_is_listed_but_never_ranked(tmp_path):
    """Issue 26: a run that failed its preflight (or stalled) before any grade was '#1' when alone."""
    failed = add_run(tmp_path, "failed", [])
    state = read_state(failed)
    state.status = "failed"
    (failed / "state.json").write_text(state.model_dump_json())
    md, html = write_leaderboard(tmp_path, scan(tmp_path))
    assert "| — | failed | demo |" in md.read_text() and "| 1 |" not in md.read_text()
    assert '<tr><td class="num">—</td><td>failed</td>' in html.read_text()
    add_run(tmp_path, "graded", [(Category.single, 4)])
    md, _ = write_leaderboard(tmp_path, scan(tmp_path))
    assert "| 1 | graded |" in md.read_text() and "| — | failed |" in md.read_text()


def test_no_runs_no_leaderboard(tmp_path):
    assert write_overview(tmp_path) == []
    assert list(tmp_path.iterdir()) == []


def test_cost_columns(tmp_path):
    folder = add_run(tmp_path, "a", [(Category.single, 10), (Category.single, 0)])
    state = read_state(folder)
    state.persona_model = "gpt-4o"  # 4,000 in, 300 out: $0.01 + $0.003
    (folder / "state.json").write_text(state.model_dump_json())
    md = render_markdown(collect(tmp_path))
    assert "| persona tokens in / out | cost | per check |" in md and "| 4,000 / 300 | $0.0130 | $0.0065 |" in md
