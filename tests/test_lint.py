"""Warnings: benchmarks that load but likely test something other than what the author meant.

The base is the `mmb new` skeleton, which must lint clean; each case breaks it in one way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from persona.benchmark.lint import lint
from persona.benchmark.loader import load_benchmark
from persona.benchmark.skeleton import create_skeleton


@pytest.fixture
def skeleton(tmp_path: Path) -> Path:
    create_skeleton("sk", tmp_path)
    return tmp_path / "sk"


def edit(folder: Path, file: str, old: str, new: str) -> None:
    path = folder / file
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {file}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def warnings(folder: Path) -> list[str]:
    return [f"{Path(p.file).name}:{p.line}: {p.message}" for p in lint(load_benchmark(folder))]


@pytest.mark.parametrize("language", ["en", "ru"])
def test_the_skeleton_lints_clean(tmp_path, language):
    create_skeleton("sk", tmp_path, language)
    assert warnings(tmp_path / "sk") == []


S2_EN = "❓ s2 [updated] Where do I work now? Correct answer: Leeds General Infirmary"
CASES = [  # (edits of the skeleton, the warning it must give: its start, and its end)
    # An [updated] check asked before the change it tests.
    ([("chapter1.md", "Answer the\nassistant's questions briefly.",
       "Answer the\nassistant's questions briefly.\n" + S2_EN.replace("s2", "s0"))],
     "chapter1.md:14: check s0: asked before the change that gives 'Leeds General Infirmary' (", "chapter1.md:22)"),
    # An [updated] check with no change at all.
    ([("chapter2.md", S2_EN, "❓ s2 [updated] Where do I live now? Correct answer: Manchester")],
     "chapter2.md:15: check s2: no change before it (✏️/➕ line or phase text) gives 'Manchester'", ""),
    # An [updated] answer whose numbers the old value has too: the scripted grader reads only numbers.
    ([("chapter1.md", "➕ family 2:", "✏️ family 1.2: Sam's birthday is on 3 May, I had it wrong\n➕ family 2:"),
      ("chapter2.md", "❓ s4 [temporal] When is Sam's birthday? Correct answer: 3 March",
       "❓ s4 [updated] When is Sam's birthday? Correct answer: 3 May")],
     "chapter2.md:17: check s4: every number of '3 May' is in the old value too (\"Sam's birthday is on 3 March\")", ""),
    # The question gives the answer away (words; a number written the same way).
    ([("chapter2.md", "How do I take my tea?", "Do I take my tea with milk, no sugar?")],
     "chapter2.md:21: check s5: the question gives its answer away (with milk, no sugar)", ""),
    ([("chapter2.md", "How many times a week do I swim?", "Do I swim 2 or 3 times a week?")],
     "chapter2.md:22: check s6: the question gives its answer away (2)", ""),
    # An answer no fact contains: a typo, or a fact missing from the files.
    ([("chapter2.md", "Correct answer: primary school teacher", "Correct answer: music teacher")],
     "chapter2.md:14: check s1: its answer 'music teacher' is in no fact or phase text before it", "missing from the files?"),
    ([("chapter2.md", "Correct answer: Monday; Friday", "Correct answer: Monday; Thursday")],
     "chapter2.md:16: check s3: its answer 'Thursday' is in no fact", ""),
    # The file holding the answer is never told.
    ([("chapter1.md", 'vars.require_all_facts = ["profile", "family"];', 'vars.require_all_facts = ["profile"];'),
      ("chapter1.md", ", then the facts from family", "")],
     "chapter2.md:14: check s1: its answer 'primary school teacher' is in no fact or phase text before it",
     "it is only in fact family 1.1, which no phase tells"),
    # ... or told only after the check.
    ([("chapter1.md", ", then the facts from family", ""),
      ("chapter1.md", 'vars.require_all_facts = ["profile", "family"];', 'vars.require_all_facts = ["profile"];'),
      ("chapter2.md", "Ask a few more questions", "Tell the facts from family. Ask a few more questions")],
     "chapter2.md:14: check s1: its answer 'primary school teacher' is in no fact or phase text before it: "
     "it is told only later (fact family 1.1)", ""),
    # A non-absent check whose answer is an admission.
    ([("chapter2.md", "❓ s8 [absent]", "❓ s8 [single]")],
     "chapter2.md:24: check s8: its answer says it was never told: mark it [absent]", ""),
    # Two checks with the same question.
    ([("chapter2.md", "What is my blood type?", "What does Sam do for a living?")],
     "chapter2.md:24: check s8 asks the same question as s1", ""),
    # No new chat while most checks are recall: the context window is tested, not memory.
    ([("chapter2.md", "await bench.newSession();\n", "")],
     "benchmark.json:None: no phase calls `await bench.newSession()`", ""),
    # A phase with nothing to do.
    ([("chapter1.md", "## News\n", "## Nothing\n\n## News\n")], "chapter1.md:19: phase 'Nothing' is empty", ""),
]


@pytest.mark.parametrize("changes, start, end", CASES)
def test_each_likely_mistake_is_a_warning_with_file_and_line(skeleton, changes, start, end):
    for change in changes:
        edit(skeleton, *change)
    found = warnings(skeleton)
    assert any(w.startswith(start) and w.endswith(end) for w in found), found


def test_a_second_new_session_is_fine(skeleton):
    edit(skeleton, "chapter1.md", "## News\n", "## News\n```js\nawait bench.newSession();\n```\n")
    assert warnings(skeleton) == []


def test_a_new_session_after_every_check_is_a_warning(skeleton):
    (skeleton / "chapter2.md").write_text(
        (skeleton / "chapter2.md").read_text().replace("await bench.newSession();\n", "")
        + "\n## Goodbye\n```js\nawait bench.newSession();\n```\nSay goodbye.\n", encoding="utf-8")
    assert any("no check comes after the first new session" in w for w in warnings(skeleton))


def test_a_fact_file_nobody_tells_is_a_warning(skeleton):
    (skeleton / "pets.md").write_text("# Pets\n\n## 1. Cat\n1.1 I had a cat\n", encoding="utf-8")
    edit(skeleton, "benchmark.json", '"family.md"', '"family.md", "pets.md"')
    assert any(w.startswith("benchmark.json:None: fact file pets.md is never told") for w in warnings(skeleton))


def test_a_fact_told_by_mention_grounds_its_check(skeleton):
    """`fact family 2.1` in prose tells that one fact: a check on it is grounded, the file counts as used."""
    (skeleton / "pets.md").write_text("# Pets\n\n## 1. Cat\n1.1 I had a cat called Toffee\n", encoding="utf-8")
    edit(skeleton, "benchmark.json", '"family.md"', '"family.md", "pets.md"')
    edit(skeleton, "chapter1.md", "No new facts about yourself.", "Mention fact pets 1.1 in passing.")
    edit(skeleton, "chapter2.md", "❓ s1 [single] What does Sam do for a living? Correct answer: primary school teacher",
         "❓ s1 [single] What was my cat called? Correct answer: Toffee")
    assert warnings(skeleton) == []
