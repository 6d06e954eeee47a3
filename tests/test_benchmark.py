"""Benchmark loading: the demo parses as designed, and every broken input names its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from persona.benchmark.loader import load_benchmark, manifest_schema, validate
from persona.benchmark.phases import Category
from tests.conftest import DEMO_BENCH, REPO

PROFILE = "# Me\n\n## 1. About\n1.1 I am Tom, 40\n1.2 I live in Porto\n"
FAMILY = "# Family\n\n## 1. Wife\n1.1 My wife is Ana\n1.2 Ana is 38\n\n## 2. Kids\n2.1 We have a son, Rui\n"
CHAPTER = """# Chapter

## Start
```js
vars.require_all_facts = "family";
```
Tell the facts from family.
❓ q1 [single] Who is my wife? Correct answer: Ana

## Later
✏️ family 1.2: Ana is 39
➕ family 2: We have a daughter, Rita
❓ q2 [updated] How old is Ana? Correct answer: 39
❓ q3 What are my kids called? Correct answer: Rui; Rita
"""


def good_files() -> dict:
    return {
        "benchmark.json": {"title": "T", "chapters": ["chapter1.md"], "fact_files": ["family.md"]},
        "instructions.md": "You are Tom.", "profile.md": PROFILE, "family.md": FAMILY, "chapter1.md": CHAPTER,
    }


def problems_of(write_bench, **changes) -> list[str]:
    files = good_files()
    for name, content in changes.items():
        name = name.replace("_md", ".md").replace("_json", ".json")
        if content is None:
            files.pop(name)
        else:
            files[name] = content
    folder = write_bench(files)
    return [f"{Path(p.file).name}:{p.line}: {p.message}" for p in validate(folder)]


def test_demo_benchmark_loads_with_every_feature():
    bench = load_benchmark(DEMO_BENCH)
    assert [p.title for p in bench.phases][:2] == ["Getting to know each other", "Running"]
    assert bench.phases[0].script.strip() == 'vars.require_all_facts = "family";'
    assert bench.phases[0].fact_refs == ["family"]
    assert any("newSession" in (p.script or "") for p in bench.phases)
    assert {e.fact_id for p in bench.phases for e in p.edits} == {"1.2", "1.3", "3.2"}
    categories = {c.category for c in bench.checks}
    assert categories == set(Category)
    assert bench.profile.name == "profile" and bench.profile.get("1.1").text.startswith("I'm Maya")


def test_phases_checks_and_js_blocks_are_parsed(write_bench):
    bench = load_benchmark(write_bench(good_files()))
    start, later = bench.phases
    assert start.script_line == 5 and start.body.startswith("Tell the facts")
    q1, = start.checks
    assert (q1.id, q1.category, q1.question, q1.answer, q1.line) == ("q1", Category.single, "Who is my wife?", "Ana", 8)
    q3 = later.checks[1]
    assert q3.is_list and q3.items == ["Rui", "Rita"] and q3.category is Category.single
    assert later.edits[0].fact_id == "1.2" and later.additions[0].section == 2


def test_russian_answer_marker(write_bench):
    files = good_files()
    files["chapter1.md"] = "## Фаза\n❓ r1 [temporal] Когда у Аны день рождения? Правильный ответ: 14 марта\n"
    check, = load_benchmark(write_bench(files)).checks
    assert check.answer == "14 марта" and check.category is Category.temporal


@pytest.mark.parametrize("changes, expected", [
    ({"benchmark_json": '{"chapters": ["chapter1.md"],\n "fact_files": ["family.md"]\n "title": 1}'},
     "benchmark.json:3: syntax error"),
    ({"benchmark_json": {"chapters": "chapter1.md"}}, "benchmark.json:2: chapters: Input should be a valid list"),
    ({"benchmark_json": {"chapters": ["chapter1.md"], "fact_files": ["family.md"], "colour": "red"}},
     "benchmark.json:8: colour: unknown field"),
    ({"benchmark_json": {"chapters": ["chapter1.md", "chapter2.md"], "fact_files": ["family.md"]}},
     "benchmark.json:4: chapter chapter2.md not found"),
    ({"chapter1_md": CHAPTER.replace('vars.require_all_facts = "family";', "vars.x = ;")},
     "chapter1.md:5: JS block does not compile: SyntaxError"),
    ({"chapter1_md": CHAPTER.replace("✏️ family 1.2", "✏️ family 1.9")}, "chapter1.md:11: fact 1.9 does not exist in family.md"),
    ({"chapter1_md": CHAPTER.replace("➕ family 2", "➕ family 7")}, "chapter1.md:12: family.md has no section 7"),
    ({"chapter1_md": CHAPTER.replace(" Correct answer: Ana", "")}, "chapter1.md:8: check q1 has no expected answer"),
    ({"chapter1_md": CHAPTER.replace("q2 [updated]", "q1 [updated]")}, "chapter1.md:13: check id q1 repeats"),
    ({"chapter1_md": CHAPTER.replace("[updated]", "[fresh]")}, "chapter1.md:13: check q2: unknown category [fresh]"),
    ({"chapter1_md": CHAPTER.replace("facts from family", "facts from pets")}, "refers to fact file 'pets'"),
    ({"chapter1_md": CHAPTER.replace('require_all_facts = "family"', 'require_all_facts = "pets"')},
     "chapter1.md:5: require_all_facts names unknown fact file 'pets'"),
    ({"chapter1_md": "no phases here\n"}, "chapter1.md:1: no phases"),
    # A file in two roles, or a chapter twice: its phases would be played twice or skipped.
    ({"benchmark_json": {"chapters": ["chapter1.md", "chapter1.md"], "fact_files": ["family.md"]}},
     "benchmark.json:4: chapter1.md is listed twice as a chapter"),
    ({"benchmark_json": {"chapters": ["chapter1.md"], "fact_files": ["family.md", "profile.md"]}},
     "benchmark.json:7: profile.md is listed as a fact file and as the profile"),
    ({"benchmark_json": {"chapters": ["chapter1.md", "family.md"], "fact_files": ["family.md"]}},
     "benchmark.json:4: family.md is listed as a chapter and as a fact file"),
    # Lines no phase reads are never asked: an error, not a silent gap.
    ({"chapter1_md": "# Chapter\n❓ q0 Who am I? Correct answer: Tom\n" + CHAPTER.split("\n", 1)[1]},
     "chapter1.md:2: this check line in the note before the first '## ' is never shown"),
    ({"instructions_md": "You are Tom.\n✏️ family 1.2: Ana is 40\n"},
     "instructions.md:2: this edit line in the instructions is never shown"),
    # Facts named by id in prose must exist.
    ({"chapter1_md": CHAPTER.replace("Tell the facts from family.", "Tell the facts from family.\nMention fact family 2.7.")},
     "chapter1.md:8: fact 2.7 does not exist in family.md"),
    ({"chapter1_md": CHAPTER.replace("Tell the facts from family.", "Tell the facts from family.\nRecall fact 1.1 of pets.")},
     "chapter1.md:8: 'fact pets 1.1': unknown fact file 'pets'"),
    # JS blocks are played in order at load time: runtime errors and computed require_all_facts.
    ({"chapter1_md": CHAPTER.replace('vars.require_all_facts = "family";', 'vars.n = 1;\nvars.require_all_facts = nope;')},
     "chapter1.md:6: JS block of phase 'Start' fails when played: ReferenceError"),
    ({"chapter1_md": CHAPTER.replace('vars.require_all_facts = "family";', 'vars.f = "pe" + "ts";\nvars.require_all_facts = [vars.f];')},
     "chapter1.md:6: require_all_facts names unknown fact file 'pets': next_phase could never accept"),
    ({"family_md": FAMILY + "1.1 again\n"}, "family.md:9: fact 1.1 is under section 2"),
    ({"family_md": FAMILY.replace("2.1 We", "2.1 We") + "2.1 twice\n"}, "family.md:9: fact id 2.1 repeats line 8"),
    ({"family_md": FAMILY + "just a sentence\n"}, "family.md:9: not a fact line"),
    ({"profile_md": None}, "profile.md:None: file not found"),
    ({"notes_md": "# stray"}, "notes.md:None: not listed in benchmark.json"),
])
def test_bad_input_is_reported_with_file_and_line(write_bench, changes, expected):
    found = problems_of(write_bench, **changes)
    assert any(expected in p for p in found), found


def test_all_problems_come_at_once(write_bench):
    found = problems_of(write_bench, notes_md="x", chapter1_md=CHAPTER.replace(" Correct answer: Ana", "").replace("1.2:", "1.8:"))
    assert len(found) == 3, found


def test_committed_schema_matches_the_model():
    committed = json.loads((REPO / "benchmarks" / "benchmark.schema.json").read_text())
    assert committed == manifest_schema(), "run: mmb schema > benchmarks/benchmark.schema.json"


def test_vars_flow_between_played_blocks(write_bench):
    """A later block may use what an earlier one stored; played in order, that is not an error."""
    files = good_files()
    files["chapter1.md"] = CHAPTER.replace('vars.require_all_facts = "family";', 'vars.file = "family";').replace(
        "## Later\n", '## Later\n```js\nvars.require_all_facts = vars.file;\nawait bench.newSession();\n```\n')
    bench = load_benchmark(write_bench(files))
    assert [(p.required, p.new_sessions) for p in bench.plays] == [([], 0), (["family"], 1)]


def test_fact_mentions_in_prose():
    from persona.benchmark.phases import fact_mentions

    found = lambda line: [(m.file, m.fact_id) for m in fact_mentions(line)]  # noqa: E731
    assert found("Tell fact family 2.3 again.") == [("family", "2.3")]
    assert found("Bring up facts `work` 1.1, 1.2 and 2.4 today.") == [("work", "1.1"), ("work", "1.2"), ("work", "2.4")]
    assert found("Remind it of fact 3.1 of running.") == [("running", "3.1")]
    assert found("Напомни факт 1.2 из family и факт profile 2.1.") == [("family", "1.2"), ("profile", "2.1")]
    assert found("I ran 2.5 km home, then tell the facts from family.") == []
