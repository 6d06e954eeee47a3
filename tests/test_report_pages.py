"""report.md's persona cost, and rebuilding the HTML pages from saved runs without touching them."""

from __future__ import annotations

import json

from persona.report.markdown import render_entry
from persona.report.publish import read_run
from tests.conftest import mmb
from tests.support.runs import demo_run, write_run


def test_report_md_shows_persona_tokens_per_phase_with_titles_and_total():
    state, _, bench = demo_run()
    entry = render_entry(bench, state)
    assert "### Persona tokens by phase" in entry
    assert "| 1. Getting to know each other | 1,000 | 100 |" in entry
    assert "| 4. The next morning | 3,000 | 200 |" in entry
    assert "| **total** | **4,000** | **300** |" in entry
    assert "- **By category:** single 5.0 (1) · updated 0.0 (1) · absent 10.0 (1)" in entry


def test_reading_a_run_never_trims_a_transcript_that_runs_ahead(tmp_path):
    state, exchanges, _ = demo_run()
    folder = write_run(tmp_path, state, exchanges)
    transcript = folder / "transcript.jsonl"
    ahead = transcript.read_text() + json.dumps(exchanges[0].model_dump(mode="json")) + "\n" + '{"turn": 12, "sess'
    transcript.write_text(ahead)  # a live run appended a line (and half of one) before saving its state
    got_state, got = read_run(folder)
    assert len(got) == state.transcript_len == 10 and got_state.turn == 10
    assert transcript.read_text() == ahead


def test_mmb_report_rebuilds_every_page(tmp_path):
    for run_id in ("a", "b"):
        state, exchanges, _ = demo_run(run_id)
        write_run(tmp_path / "results", state, exchanges)
    config = tmp_path / "config.jsonc"
    config.write_text(json.dumps({"results_dir": str(tmp_path / "results"),
                                  "runs": [{"id": "a", "benchmark": state.benchmark}]}))
    done = mmb("report", "-c", str(config))
    assert done.returncode == 0, done.stderr
    written = done.stdout.split()
    assert written == [str(tmp_path / "results" / p) for p in
                       ("a/report.html", "b/report.html", "leaderboard.md", "leaderboard.html", "index.html")]
    board = (tmp_path / "results" / "leaderboard.md").read_text()
    assert "| 3/10 |" in board  # planned checks known from the benchmark
    assert "4. The next morning" in (tmp_path / "results" / "b" / "report.html").read_text()  # found via its state
