"""`mmb run --dry`: the scripted persona against the oracle, in process, into results/dry-<name>/."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from persona.benchmark.skeleton import create_skeleton
from persona.cli.app import app
from persona.config import CompactionConfig
from persona.engine.answerable import answerability
from persona.engine.dry import dry_run, summary, targets_from_paths
from persona.report.cost import money
from persona.state import RunStore
from tests.conftest import DEMO_BENCH

SMALL = CompactionConfig(max_tokens=4000, trim_to_tokens=1500)


def dry(folder: Path, results: Path, compaction: CompactionConfig = SMALL):
    target, = targets_from_paths([folder])
    result = asyncio.run(dry_run(target, results, compaction))
    return result, summary(result, compaction)


def cli(*args: str, cwd: Path):
    """The real command in process (no subprocess: the machine is shared and slow)."""
    import os

    before = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, list(args))
    finally:
        os.chdir(before)


@pytest.mark.parametrize("language", ["en", "ru"])
def test_the_skeleton_dry_runs_at_full_coverage_and_ten(tmp_path, language):
    create_skeleton("sk", tmp_path, language)
    result, text = dry(tmp_path / "sk", tmp_path / "results")
    state = result.state
    assert result.ok, text
    assert state.status == "finished" and len(state.evaluations) == 8
    assert all(e.score == 10 and not e.second_attempt and e.grader == "rules" for e in state.evaluations)
    assert [s.reason for s in state.sessions] == ["start", "newSession"]
    assert state.persona_compactions, "SMALL compaction settings apply to the dry run"
    assert "checks     8 of 8 graded (coverage 100 %), mean 10.00 / 10" in text
    assert "facts      10 of 10 told" in text and "READY" in text
    assert f"turns      {state.turn} messages" in text and f"{state.usage.prompt_tokens:,} in" in text
    # A folder of its own, with its own report; the real report is untouched.
    assert result.folder == tmp_path / "results" / "dry-sk"
    assert (result.folder / "state.json").exists() and (result.folder / "report.md").exists()
    assert not (tmp_path / "results" / "report.md").exists()


def test_a_second_dry_run_starts_over(tmp_path):
    create_skeleton("sk", tmp_path)
    first, _ = dry(tmp_path / "sk", tmp_path / "results")
    second, _ = dry(tmp_path / "sk", tmp_path / "results")
    assert second.ok and len(second.state.evaluations) == 8
    assert second.state.created_at > first.state.created_at
    assert (second.folder / "report.md").read_text().count("\n## ") == 1


def test_a_check_the_oracle_cannot_pass_fails_the_dry_run_with_its_reason(tmp_path):
    create_skeleton("sk", tmp_path)
    chapter = tmp_path / "sk" / "chapter2.md"
    # Two checks share a question: the agent cannot know which answer is meant.
    chapter.write_text(chapter.read_text().replace("❓ s8 [absent] What is my blood type? Correct answer: you didn't tell me",
                                                   "❓ s8 [updated] Where do I work now? Correct answer: St Mary's Hospital"))
    result, text = dry(tmp_path / "sk", tmp_path / "results")
    assert not result.ok
    low, = [e for e in result.state.evaluations if e.score < 10]
    assert low.check_id in ("s2", "s8") and low.score == 0 and low.comment.startswith("missing: ")
    assert f"below 10   {low.check_id} [updated] 0/10: {low.comment}" in text
    assert "NOT READY: 1 check(s) scored below 10" in text
    report = (result.folder / "report.md").read_text()
    assert "**By category:** single 10.0 (2) · updated 6.7 (3) · aggregate 10.0 (1) · " \
           "temporal 10.0 (1) · preference 10.0 (1)" in report, "by-category means count the failed check"


def test_a_fact_mention_is_told_by_the_scripted_persona(tmp_path):
    create_skeleton("sk", tmp_path)
    (tmp_path / "sk" / "pets.md").write_text("# Pets\n\n## 1. Cat\n1.1 I had a cat called Toffee\n1.2 Toffee was ginger\n")
    manifest = json.loads((tmp_path / "sk" / "benchmark.json").read_text())
    manifest["fact_files"].append("pets.md")
    (tmp_path / "sk" / "benchmark.json").write_text(json.dumps(manifest))
    chapter1 = tmp_path / "sk" / "chapter1.md"
    chapter1.write_text(chapter1.read_text().replace("No new facts about yourself.", "Mention fact pets 1.1 in passing."))
    result, text = dry(tmp_path / "sk", tmp_path / "results")
    assert result.ok, text
    pets = result.state.facts["pets"]
    assert pets.get("1.1").told_turn is not None and pets.get("1.2").told_turn is None
    assert "untold: pets 1" in text
    sent = [json.loads(line)["sent"] for line in (result.folder / "transcript.jsonl").read_text().splitlines()]
    assert "I had a cat called Toffee." in sent


def test_the_demo_dry_runs_clean(tmp_path):
    result, text = dry(DEMO_BENCH, tmp_path)
    assert result.ok, text
    assert "untold: profile 5 (profile is in the persona's context" in text


def test_the_command_exit_codes(tmp_path):
    create_skeleton("good", tmp_path)
    create_skeleton("bad", tmp_path)
    chapter = tmp_path / "bad" / "chapter2.md"
    chapter.write_text(chapter.read_text().replace("What is my blood type?", "What does Sam do for a living?"))
    done = cli("run", "--dry", "--benchmark", str(tmp_path / "good"), cwd=tmp_path)
    assert done.exit_code == 0, done.output
    assert (tmp_path / "results" / "dry-good" / "state.json").exists(), "results/ of the working directory"
    failed = cli("run", "--dry", "-b", str(tmp_path / "good"), "-b", str(tmp_path / "bad"), cwd=tmp_path)
    assert failed.exit_code == 1 and failed.output.count("dry run: ") == 2
    assert "NOT READY" in failed.output
    assert cli("run", "--benchmark", str(tmp_path / "good"), cwd=tmp_path).exit_code == 2
    (tmp_path / "broken").mkdir()
    broken = cli("run", "--dry", "-b", str(tmp_path / "broken"), cwd=tmp_path)
    assert broken.exit_code == 2 and "benchmark.json: file not found" in broken.output


def test_the_config_runs_dry_with_its_compaction(tmp_path, write_config):
    create_skeleton("sk", tmp_path)
    # An agent no dry run needs (no url, an unknown persona key): the dry run does not care.
    run = {"id": "real-1", "benchmark": str(tmp_path / "sk"), "agent": {"driver": "generic"}}
    config = write_config([run, {**run, "id": "real-2"}], compaction={"max_tokens": 3500, "trim_to_tokens": 1000},
                          persona={"kind": "openai", "api_key_env": "MMB_NO_SUCH_KEY"})
    done = cli("run", "--dry", "-c", str(config), cwd=tmp_path)
    assert done.exit_code == 0, done.output
    assert done.output.count("dry run: ") == 1, "one dry run per benchmark, not per run"
    assert "at max_tokens 3,500 -> 1,000" in done.output
    assert (tmp_path / "results" / "dry-sk" / "state.json").exists()
    unknown = cli("run", "--dry", "-c", str(config), "--run", "nope", cwd=tmp_path)
    assert unknown.exit_code == 2 and "no run with id 'nope'" in unknown.output


def test_a_dry_run_is_an_oracle_run_of_the_folder_and_prices_the_real_one(tmp_path, write_config):
    create_skeleton("sk", tmp_path)
    run = {"id": "real", "benchmark": str(tmp_path / "sk"), "agent": {"driver": "generic"}}
    config = write_config([run], persona={"kind": "openai", "model": "gpt-4o-mini", "api_key_env": "MMB_NO_SUCH_KEY"})
    done = cli("run", "--dry", "-c", str(config), cwd=tmp_path)
    assert done.exit_code == 0, done.output
    state = json.loads((tmp_path / "results" / "dry-sk" / "state.json").read_text())
    usd = (state["usage"]["prompt_tokens"] * 0.15 + state["usage"]["completion_tokens"] * 0.6) / 1e6
    assert f"  cost       ≈ {money(usd)} or more for a real run with gpt-4o-mini: the tokens above at $0.15 in" in done.output
    results = tmp_path / "results"
    assert not (results / "dry-sk" / "leaderboard.md").exists(), "no leaderboard of its own, empty or not"
    board = (results / "leaderboard.md").read_text()
    assert "## Oracle runs (dry runs, not ranked)" in board and "[dry-sk](dry-sk/report.html)" in board
    assert "| # |" not in board, "no agents' table without an agent's run"
    assert 'href="dry-sk/report.html"' in (results / "index.html").read_text()


def _with_days_ago_check(folder: Path) -> None:
    chapter = folder / "chapter2.md"
    chapter.write_text(chapter.read_text().replace(
        "❓ s4 [temporal]", "❓ s9 [temporal] How many days ago did I change jobs? Correct answer: 1 day 🔗 profile 1.2\n"
        "❓ s4 [temporal]"))


def test_what_was_typed_is_what_can_be_asked(tmp_path):
    """Each check's facts, as they stood, and for a date or span their days, were typed before its question."""
    create_skeleton("sk", tmp_path)
    _with_days_ago_check(tmp_path / "sk")
    result, text = dry(tmp_path / "sk", tmp_path / "results")
    assert result.ok, text
    assert "told       9 of 9 answerable from what was typed" in text
    sent = [(e.session, e.sent) for e in RunStore(result.folder).transcript()]
    assert (0, "Hi! It's Saturday, 6 June 2026, 9:30 am here.") in sent
    assert (1, "Hi! It's Sunday, 7 June 2026, 10:00 am here.") in sent, "the new chat hears the day again"
    store = RunStore(result.folder)
    typed = store.transcript()[: result.state.transcript_len]

    def verdict(exchanges):
        return {v.check_id: v for v in answerability(result.target.bench, result.state, exchanges).verdicts}

    # A persona that never said the day of its news, or said the old job instead of the new one:
    no_day = [e for e in typed if "6 June 2026" not in e.sent]
    assert verdict(no_day)["s9"].reasons == [
        "profile 1.2 was told on 6 June 2026, a date never typed in that chat before it"]
    assert verdict(no_day)["s4"].answerable, "the birthday's own words give its date"
    not_today = [e for e in typed if "7 June 2026" not in e.sent]
    assert verdict(not_today)["s9"].reasons == ["the day it was asked (7 June 2026) was never typed in its chat"]
    old_job = [e.model_copy(update={"sent": "I work at a care home."}) if "Leeds General" in e.sent else e for e in typed]
    assert "profile 1.2 ('I now work as a nurse at Leeds General Infirmary') was never typed before the question" in \
        verdict(old_job)["s2"].reasons


def test_a_check_whose_day_was_never_told_is_not_ready(tmp_path):
    create_skeleton("sk", tmp_path)
    _with_days_ago_check(tmp_path / "sk")
    chapter1 = tmp_path / "sk" / "chapter1.md"
    chapter1.write_text(chapter1.read_text().replace("📅 2026-06-06 09:30\n", ""))
    result, text = dry(tmp_path / "sk", tmp_path / "results")
    assert not result.ok and all(e.score == 10 for e in result.state.evaluations), "the oracle knows it anyway"
    assert ("untold     s9 [temporal]: profile 1.2 was told in phase 3, which has no date (📅): the answer is a date "
            "or a span, and the agent cannot tell when it happened") in text
    assert "told       8 of 9 answerable from what was typed" in text
    assert "NOT READY: 1 check(s) cannot be answered from what was typed before them: s9" in text


def test_a_phase_cut_inside_many_times_goes_on_after_what_its_note_kept(tmp_path):
    """Each phase tells 300 facts and asks about the phase before, far over trim_to_tokens: compactions cut
    inside it, and the scripted persona goes on after the messages a note kept (their work listed as
    done), never from the start of the phase again: every check graded once, every fact told."""
    from bench.big_benchmark import write_benchmark

    write_benchmark(tmp_path / "big", facts=900, checks=60, per_file=300)
    result, text = dry(tmp_path / "big", tmp_path / "results", CompactionConfig(max_tokens=12000, trim_to_tokens=4000))
    state = result.state
    assert result.ok, text
    assert sum(c.in_phase for c in state.persona_compactions) >= 10
    graded = [e.check_id for e in state.evaluations]
    assert len(graded) == len(set(graded)) >= 40 and "(coverage 100 %)" in text and "facts      900 of 901 told" in text
