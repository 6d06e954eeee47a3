"""What would stop a run however long it played is an error before it starts: a fact file whose reading
alone, or a phase whose brief alone, cannot fit under compaction.max_tokens beside the system prompt,
the tools and a compaction's note. `mmb validate`, the dry run and `mmb run` say so at once with the
file and line; the dry run played without the check does stop there, at the same turn."""

from __future__ import annotations

import asyncio

from persona.benchmark.loader import load_benchmark
from persona.config import CompactionConfig
from persona.engine.dry import dry_run, targets_from_paths
from persona.engine.fit import fit_problems
from tests.support.tiny import TINY
from tests.test_faults_input import cli

SMALL = {"max_tokens": 4000, "trim_to_tokens": 1500}


def big_pets(n: int) -> str:
    return "# Pets\n\n## 1. Cats\n" + "".join(f"1.{i} My cat number {i} is called Whisker{i} and sleeps on shelf {i}\n"
                                              for i in range(1, n + 1))


def test_a_fact_file_too_big_to_read_stops_validate_the_dry_run_and_a_run_at_once(write_bench, write_config, tmp_path):
    bench = write_bench({**TINY, "pets.md": big_pets(300)})
    config = write_config([{"id": "t", "benchmark": str(bench), "agent": {"driver": "oracle"}}], compaction=SMALL)
    code, output = cli("validate", str(bench), "-c", str(config), "--no-links")
    assert code == 2, output
    error = output.splitlines()[0]
    assert error.startswith(f"{bench / 'pets.md'}:1: reading this fact file (facts_read, facts_get_untold) takes ")
    assert "over compaction.max_tokens (4,000)" in error and "split it into smaller fact files" in error
    assert cli("validate", str(bench), "--no-links")[0] == 0, "the default max_tokens (30,000) holds it"

    code, output = cli("run", "--dry", "-c", str(config))  # the config names the benchmark and the compaction
    assert code == 2 and output.splitlines()[0] == error, output
    code, output = cli("run", "-c", str(config))
    assert code == 2 and error in output, output
    assert not (tmp_path / "results" / "t").exists(), "refused before a folder is made"

    # The dry run played anyway stops at that very turn, after playing what came before.
    target, = targets_from_paths([bench])
    played = asyncio.run(dry_run(target, tmp_path / "played", CompactionConfig(**SMALL)))
    assert played.state.status == "failed" and "no cut brings it under" in (played.state.error or "")


def test_a_phase_too_big_to_fit_is_an_error_at_its_line(write_bench):
    chapter = TINY["chapter1.md"].replace("## News\n", "## News\n" + "Talk about the weather at length. " * 700 + "\n")
    bench = write_bench({**TINY, "chapter1.md": chapter})
    problems = fit_problems(load_benchmark(bench), CompactionConfig(**SMALL))
    assert [(p.file.endswith("chapter1.md"), p.line) for p in problems] == [(True, 7)], problems  # its '## News' line
    assert problems[0].message.startswith("phase 'News' is too big to fit: entering it takes ")
    assert fit_problems(load_benchmark(bench), CompactionConfig()) == []


def test_a_first_phase_too_big_for_the_opening_message_is_an_error_at_its_line(write_bench):
    chapter = TINY["chapter1.md"].replace("Tell the facts from pets.\n", "Tell the facts from pets. " * 900 + "\n")
    bench = write_bench({**TINY, "chapter1.md": chapter})
    problems = fit_problems(load_benchmark(bench), CompactionConfig(**SMALL))
    # The '## Start' line; and pets.md, told in that phase, whose reading there comes beside a compaction's
    # note that repeats the phase's brief.
    assert [(p.file.rsplit("/", 1)[-1], p.line) for p in problems] == [("chapter1.md", 1), ("pets.md", 1)], problems
    assert problems[0].message.startswith("the opening message (the profile, the fact files, the first phase) takes ")
    assert "shorten the profile or the first phase" in problems[0].message
    assert fit_problems(load_benchmark(bench), CompactionConfig()) == []


def test_compaction_settings_that_leave_no_room_are_an_error_at_the_config(write_bench, write_config):
    bench = write_bench(TINY)
    config = write_config([{"id": "t", "benchmark": str(bench), "agent": {"driver": "oracle"}}],
                          compaction={"max_tokens": 2500, "trim_to_tokens": 1000})
    code, output = cli("validate", str(bench), "-c", str(config), "--no-links")
    assert code == 2
    assert output.startswith(f"{config}:") and "a compacted history would not fit" in output, output
