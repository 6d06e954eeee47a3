"""`mmb export` rows and `mmb compare`: the agent's own words, the turns, three formats read back exactly."""

from __future__ import annotations

import csv
import io
import json

import pytest

from persona.report.compare import Side, compare, render
from persona.report.export import EXPORT_SCHEMA_VERSION, ExportRow, read_rows, rows_of_run
from persona.report.export import render as render_export
from persona.tokens import TokenCounter
from tests.support.runs import EVIL, demo_run


@pytest.fixture(scope="module")
def rows() -> list[ExportRow]:
    state, exchanges, _ = demo_run()
    return rows_of_run(state, exchanges, TokenCounter())


def test_a_row_per_check_with_the_agents_own_words_and_the_turns(rows):
    by_id = {r.check_id: r for r in rows}
    assert list(by_id) == ["d1", "d2", "d9"] and all(r.schema_version == EXPORT_SCHEMA_VERSION for r in rows)
    d1 = by_id["d1"]  # asked at turn 7 ("you never told me"), answered after a memory search at turn 8
    assert (d1.run_id, d1.agent, d1.persona, d1.benchmark, d1.category, d1.phase) == ("r1", "demo", "scripted", "demo", "single", 4)
    assert d1.agent_reply == "I don't think you told me that.\n\nHe is a carpenter."
    assert d1.persona_summary == "He is a carpenter." and d1.grader == "rules" and d1.grader_comment == "graded"
    assert (d1.score, d1.raw_score, d1.retry, d1.session) == (5, 10, True, 1)
    assert (d1.fact, d1.fact_turn, d1.fact_basis, d1.asked_turn, d1.graded_turn) == ("family 1.1", 1, "told", 7, 8)
    d2 = by_id["d2"]  # the personal best was told at turn 2 and changed at turn 5
    assert (d2.fact, d2.fact_turn, d2.fact_basis, d2.asked_turn) == ("running 1.2", 5, "changed", 9)
    assert d2.agent_reply == f"{EVIL} It is 54:10."
    assert (by_id["d9"].fact, by_id["d9"].fact_turn, by_id["d9"].category) == (None, None, "absent")


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_every_format_reads_back_exactly(rows, fmt, tmp_path):
    tricky = [rows[0].model_copy(update={"agent_reply": "=HYPERLINK(\"http://x\")", "question": "'quoted", "expected": "-5",
                                         "grader_comment": "a, \"b\"\nc"}), *rows[1:]]
    text, guarded = render_export(tricky, fmt)
    path = tmp_path / f"out.{fmt}"
    path.write_text(text)
    assert read_rows(path) == tricky
    if fmt == "csv":
        assert guarded == 3, "the formula, the quote and the minus got a ' in front"
        assert "'=HYPERLINK" in text and "\n1,r1," in text
    else:
        assert guarded == 0 and "=HYPERLINK" in text


def test_the_agent_s_work_is_counted_per_check_never_its_reply_and_older_files_still_read(tmp_path):
    from persona.state import AgentActivity

    state, exchanges, _ = demo_run()
    exchanges[6].activity = [AgentActivity(kind="tool", title="Using memory_search", text="Jonas: carpenter"),
                             AgentActivity(kind="status", title="Searching…")]
    exchanges[7].activity = [AgentActivity(kind="thought", title="Thinking", text="carpenter")]
    by_id = {r.check_id: r for r in rows_of_run(state, exchanges, TokenCounter())}
    d1 = by_id["d1"]  # turns 7 and 8
    assert (d1.tool_cards, d1.thoughts, d1.status_lines) == (1, 1, 1)
    assert d1.agent_reply == "I don't think you told me that.\n\nHe is a carpenter." and "Jonas" not in d1.agent_reply
    assert (by_id["d2"].tool_cards, by_id["d2"].thoughts, by_id["d2"].status_lines) == (0, 0, 0)
    counts = {"tool_cards", "thoughts", "status_lines"}
    old = {k: v for k, v in d1.model_dump(mode="json").items() if k not in counts}  # a row from before the counts
    (tmp_path / "old.jsonl").write_text(json.dumps(old) + "\n")
    out = io.StringIO()
    writer = csv.DictWriter(out, list(old), lineterminator="\n")
    writer.writeheader()
    writer.writerow(old)
    (tmp_path / "old.csv").write_text(out.getvalue())
    for name in ("old.jsonl", "old.csv"):
        assert read_rows(tmp_path / name) == [d1.model_copy(update=dict.fromkeys(counts, 0))]


def test_a_file_that_is_not_an_export_is_named_with_its_line(tmp_path):
    from persona.report.export import ExportFileError

    path = tmp_path / "x.jsonl"
    path.write_text('{"run_id": "a"}\n')
    with pytest.raises(ExportFileError, match=r"x.jsonl:1: not an export row"):
        read_rows(path)


def side(rows, label, scores: dict[str, float | None]) -> Side:
    """The rows with some scores changed; None drops the check."""
    out = [r.model_copy(update={"run_id": label, "score": scores.get(r.check_id, r.score)})
           for r in rows if scores.get(r.check_id, 0) is not None]
    return Side(label, out)


def test_compare_puts_regressions_first_with_a_paired_interval(rows):
    a = side(rows, "a", {})  # d1 5, d2 0, d9 10
    b = side(rows, "b", {"d1": 10, "d2": 0, "d9": 0})
    cmp = compare(a, b)
    assert [c.check_id for c in cmp.regressions] == ["d9"] and [c.check_id for c in cmp.improvements] == ["d1"]
    assert [c.check_id for c in cmp.unchanged] == ["d2"] and cmp.regressed
    d = cmp.difference
    assert d.n == 3 and d.mean == pytest.approx(-5 / 3)
    # deltas +5, 0, -10: sd 7.64, t(0.975, 2) = 4.303 -> half width 18.98
    assert d.low == pytest.approx(-5 / 3 - 18.98, abs=0.01) and d.high == pytest.approx(-5 / 3 + 18.98, abs=0.01)
    text = render(cmp)
    assert text.index("regressions (1):\n  d9 [absent] 10 -> 0 (-10)") < text.index("improvements (1):\n  d1 [single] 5 -> 10 (+5)")
    assert "mean difference (B - A): -1.67 over 3 paired checks, 95% CI [-20.64, +17.31] (paired t): no clear difference" in text


def test_a_check_b_did_not_grade_is_a_regression(rows):
    cmp = compare(side(rows, "a", {}), side(rows, "b", {"d2": None}))
    assert [(c.check_id, c.b) for c in cmp.regressions] == [("d2", None)]
    assert "d2 [updated] 0 -> — (not graded in B)" in render(cmp)


def test_runs_of_different_benchmarks_do_not_compare(rows):
    other = Side("b", [r.model_copy(update={"benchmark": "other"}) for r in rows])
    with pytest.raises(ValueError, match="play different benchmarks"):
        compare(Side("a", rows), other)
