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


def test_report_md_shows_the_agents_own_words_beside_the_personas_summary_and_both_grades():
    state, _, bench = demo_run()
    d1 = state.evaluations[0]
    d1.agent_turns[1].reply = ["Let me look...", "He is a carpenter."]  # a reply in two bubbles
    entry = render_entry(bench, state)
    d1_block = entry[entry.index("#### d1"):entry.index("#### d2")]
    assert ("> ```text\n> [turn 7] persona: What does my partner do for a living?\n"
            "> [turn 7] agent: I don't think you told me that.\n"
            "> [turn 8] persona: Please search your memory or notes, I'm sure I told you.\n"
            "> [turn 8] agent: Let me look...\n> [turn 8] agent: He is a carpenter.\n> ```") in d1_block
    assert "- **The persona's summary of the answer:**\n\n> ```text\n> He is a carpenter.\n> ```" in d1_block
    assert "(graded by rules)" in d1_block and "- **Grader:** ` graded ` (✓ carpenter)" in d1_block
    d2_block = entry[entry.index("#### d2"):]
    assert "- **The persona's own grade:** 10/10 — ` looks right `" in d2_block
    assert ("- **Graded by:** the offline rule judge; the persona's own scores against it: exact 67 % · "
            "mean |difference| 3.33 · weighted κ 0.00 over 3 checks") in entry


def test_agent_text_stays_inside_its_code_block_in_report_md():
    state, _, bench = demo_run()
    breakout = "```\n</pre><img src=x onerror=alert(1)>\n````"
    state.evaluations[1].agent_turns[0].reply = [breakout]
    state.evaluations[1].answer = breakout
    entry = render_entry(bench, state)
    fences = [line for line in entry.splitlines() if line.startswith("> `````")]  # issue 14's quote_block
    assert fences.count("> `````text") == 2 and fences.count("> `````") == 2, "a fence longer than any inside"
    d2 = entry[entry.index("#### d2"):].split("\n### ")[0]
    assert all(line.startswith("> ") for line in d2.splitlines() if "onerror" in line or line.startswith("```"))
