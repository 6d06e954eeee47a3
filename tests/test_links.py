"""Checks linked to the facts they test (persona/benchmark/links.py): stated on the line, by id, inferred;
each fact's life in the scenario; `mmb validate` lists the links and the dry run agrees with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from persona.benchmark.links import link_checks, scenario_facts
from persona.benchmark.lint import lint
from persona.benchmark.loader import load_benchmark, validate
from persona.benchmark.phases import fact_refs_at, parse_directives
from persona.benchmark.skeleton import create_skeleton
from tests.conftest import DEMO_BENCH
from tests.test_dry import cli, dry

BOAT = "# Boat\n\n## 1. The boat\n1.1 My sailing boat is called Petrel\n1.2 The boat is moored in Whitby harbour\n"
BOAT_CHECKS = ("❓ b1 [single] What is my boat called? Correct answer: Petrel\n"
               "❓ b2 [single] Where is my boat moored? Correct answer: Whitby\n")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def boat_skeleton(tmp_path: Path, instruction: str) -> Path:
    """The `mmb new` skeleton with a boat.md, `instruction` at the end of the News phase, two checks on it."""
    create_skeleton("sk", tmp_path)
    folder = tmp_path / "sk"
    (folder / "boat.md").write_text(BOAT, encoding="utf-8")
    manifest = json.loads((folder / "benchmark.json").read_text())
    manifest["fact_files"].append("boat.md")
    (folder / "benchmark.json").write_text(json.dumps(manifest))
    edit(folder / "chapter1.md", "and your mum adopted a cat.\n", f"and your mum adopted a cat. {instruction}\n")
    edit(folder / "chapter2.md", "❓ s8", BOAT_CHECKS + "❓ s8")
    return folder


def test_an_instruction_wrapped_over_two_lines_is_read_everywhere():
    text = "Say hello. Then tell the facts\nfrom boat, and the\nfacts from `family.md`.\n\nfacts\n\nfrom pets"
    assert fact_refs_at(text, 10) == [(10, "boat"), (12, "family")]  # a blank line ends an instruction
    mentions = parse_directives("Mention fact\nfamily 2.3 and fact 1.1\nof boat.", "c.md", 5)[0]["mentions"]
    assert [(m.file, m.fact_id, m.line) for m in mentions] == [("family", "2.3", 5), ("boat", "1.1", 6)]


def test_the_dry_run_agrees_with_the_validator_on_a_wrapped_instruction(tmp_path):
    """The case of the issue: the scripted persona used to skip it while the validator warned about it."""
    folder = boat_skeleton(tmp_path, "Then tell the facts\nfrom boat.")
    assert lint(load_benchmark(folder)) == []
    result, text = dry(folder, tmp_path / "results")
    assert result.ok, text
    assert all(f.told_turn is not None for f in result.state.facts["boat"].all_facts())
    assert "READY: every check reachable" in text


def test_a_file_never_told_fails_the_dry_run_as_the_validator_warns(tmp_path):
    folder = boat_skeleton(tmp_path, "Then talk about your boat.")
    warnings = [p.message for p in lint(load_benchmark(folder))]
    assert any("boat.md is never told" in w for w in warnings)
    result, text = dry(folder, tmp_path / "results")
    assert not result.ok
    assert "NOT READY: 2 check(s) cannot be answered from what was typed before them: b1, b2" in text
    assert "untold     b1 [single]: boat 1.1 ('" in text and "was never typed before the question" in text


def test_links_stated_on_the_check_line(write_bench):
    files = {
        "benchmark.json": {"chapters": ["chapter1.md"], "fact_files": ["family.md"]},
        "instructions.md": "You are Tom.",
        "profile.md": "# Tom\n\n## 1. Me\n1.1 I'm Tom\n",
        "family.md": "# Family\n\n## 1. Wife\n1.1 My wife Ana is 40\n1.2 Ana is a pilot\n\n## 2. Kids\n2.1 Rui is 9\n",
        "chapter1.md": "## Start\nTell the facts from family.\n➕ family 2: Rita is 7\n"
                       "❓ q1 [aggregate] How old are my kids together? Correct answer: 16 🔗 family 2.1, 2.2\n"
                       "❓ q2 [single] Who flies planes? Correct answer: Ana 🔗 family 1.2; profile 1.1\n"
                       "❓ q3 [temporal] What day is it? Correct answer: Monday 🔗 none\n"
                       "❓ family.1.1 [single] How old is she? Correct answer: 40\n",
    }
    bench = load_benchmark(write_bench(files))
    q1 = bench.checks[0]
    assert q1.answer == "16" and [(m.file, m.fact_id) for m in q1.links] == [("family", "2.1"), ("family", "2.2")]
    links = link_checks(bench)
    assert links["q1"].how == "stated" and links["q1"].facts[1].text == "Rita is 7"  # 2.2 is the ➕ addition
    assert [link.key for link in links["q2"].facts] == [("family", "1.2"), ("profile", "1.1")]
    assert links["q3"].how == "none" and links["q3"].facts == []
    assert links["family.1.1"].how == "id"
    rita = scenario_facts(bench)[("family", "2.2")]
    assert rita.versions[0].kind == "added" and rita.told_phase == 0


@pytest.mark.parametrize(("line", "error"), [
    ("Correct answer: 16 🔗 family 9.9", "check q1: 🔗 family 9.9: fact 9.9 does not exist in family.md"),
    ("Correct answer: 16 🔗 pets 1.1", "check q1: 🔗 pets 1.1: unknown fact file 'pets'"),
    ("Correct answer: 16 🔗 the kids", "check q1: after 🔗 name its facts ('family 1.2, 1.3; running 2.1') or write 'none'"),
])
def test_a_stated_link_must_name_facts_that_exist(write_bench, line, error):
    files = {
        "benchmark.json": {"chapters": ["chapter1.md"], "fact_files": ["family.md"]},
        "instructions.md": "You are Tom.",
        "profile.md": "# Tom\n\n## 1. Me\n1.1 I'm Tom\n",
        "family.md": "# Family\n\n## 1. Kids\n1.1 Rui is 9\n",
        "chapter1.md": f"## Start\nTell the facts from family.\n❓ q1 [aggregate] How old are my kids? {line}\n",
    }
    problems = [f"{Path(p.file).name}:{p.line}: {p.message}" for p in validate(write_bench(files))]
    assert problems == [f"chapter1.md:3: {error}"]


def test_inference_weighs_the_answer_and_prefers_changing_facts_for_updated_checks(write_bench):
    files = {
        "benchmark.json": {"chapters": ["chapter1.md"], "fact_files": ["bike.md"]},
        "instructions.md": "You are Tom.",
        "profile.md": "# Tom\n\n## 1. Me\n1.1 I'm Tom\n",
        "bike.md": "# Bike\n\n## 1. Road bike\n1.1 My road bike is a Canyon that I bought for my road rides\n"
                   "1.2 The Canyon is green and I call her Gertie\n1.3 I ride 100 km a week on my road bike\n",
        "chapter1.md": "## Start\nTell the facts from bike.\n✏️ bike 1.3: I ride 150 km a week now\n"
                       "❓ q1 [single] What did I name my road bike? Correct answer: Gertie\n"
                       "❓ q2 [updated] How far do I ride my road bike a week? Correct answer: 150 km\n"
                       "❓ q3 [aggregate] How many km do I ride in two weeks? Correct answer: 300 km\n",
    }
    links = link_checks(load_benchmark(write_bench(files)))
    assert links["q1"].facts[0].fact_id == "1.2"  # "Gertie", the answer, outweighs "road bike" of the question
    assert [link.fact_id for link in links["q2"].facts] == ["1.3"]  # the fact that changed
    assert "2" not in links["q3"].facts[0].shared  # "two" and "300" are worked out: they link nothing


def test_validate_lists_every_link_with_the_fact_s_life(tmp_path):
    done = cli("validate", str(DEMO_BENCH), cwd=tmp_path)
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert sum(line.startswith("    ") for line in lines) == len(load_benchmark(DEMO_BENCH).checks)
    d2 = next(line for line in lines if line.strip().startswith("d2 "))
    assert "running 1.2 'My 10 km personal best is now 52:30'" in d2
    assert "told in phase 2, edited in phase 3 (" in d2 and "chapter1.md:23)" in d2
    d6 = next(line for line in lines if line.strip().startswith("d6 "))
    assert "d6 [stated]: family 3.1" in d6
    assert "d9: no fact (absent" in done.output
    quiet = cli("validate", "--no-links", str(DEMO_BENCH), cwd=tmp_path)
    assert quiet.exit_code == 0 and "d2" not in quiet.output
