"""What imported benchmarks need of the check format and the graders: a dataset's own category
(`[single; source: single-hop]`), a trap answer (`Wrong answer: ...`) that the persona never sees
and the judge must not accept, and an oracle that answers what it was told."""

from __future__ import annotations

import asyncio
import json

from persona.benchmark.grading import says_unknown
from persona.benchmark.loader import load_benchmark
from persona.benchmark.phases import Category, hide_answers, parse_directives
from persona.config import CompactionConfig
from persona.engine.dry import dry_run, targets_from_paths
from persona.engine.judge import judge_request, memory_request
from persona.engine.regrade import check_of
from persona.state import QuotedTurn

LINE = ("❓ q6 [absent; source: adversarial] What did I realize after my charity race? "
        "Correct answer: Not mentioned in the conversation Wrong answer: self-care is important 🔗 none")


def parsed(line: str, **kw):
    out, problems = parse_directives(line, "c.md", **kw)
    return (out["checks"][0] if out["checks"] else None), [p.message for p in problems]


def test_a_check_keeps_its_source_category_and_its_trap():
    check, problems = parsed(LINE)
    assert not problems
    assert (check.category, check.source_category, check.answer, check.wrong_answer, check.links) == (
        Category.absent, "adversarial", "Not mentioned in the conversation", "self-care is important", [])
    plain, _ = parsed("❓ q1 [single] Where? Correct answer: Sweden")
    assert (plain.source_category, plain.wrong_answer) == (None, None)


def test_the_persona_never_sees_the_trap():
    assert hide_answers(LINE) == "❓ q6 [absent; source: adversarial] What did I realize after my charity race?"
    check, problems = parsed(hide_answers(LINE), answers_required=False)
    assert not problems and check.source_category == "adversarial" and check.wrong_answer is None


def test_badly_written_sources_and_traps_are_errors_with_their_line():
    for line, message in [
        ("❓ q1 [single; adversarial] Q? Correct answer: A", "write the dataset's own category as 'source: NAME'"),
        ("❓ q1 [single] Q? Wrong answer: B Correct answer: A", "'Wrong answer:' goes after 'Correct answer:'"),
        ("❓ q1 [single] Q? Correct answer: A Wrong answer:", "'Wrong answer:' with nothing after it"),
        ("❓ q1 [single] Q? Correct answer: Wrong answer: B", "has no expected answer"),
    ]:
        check, problems = parsed(line)
        assert check is None and len(problems) == 1 and message in problems[0], (line, problems)


def test_the_judge_is_told_the_trap_and_a_regrade_keeps_it():
    check, _ = parsed(LINE)
    turns = [QuotedTurn(turn=3, sent="What did I realize?", reply=["You never mentioned a race."])]
    asked = json.loads(judge_request(check, turns))
    assert asked["wrong_answer"] == "self-care is important" and asked["expected_items"] == [check.answer]
    assert json.loads(memory_request(check, "notes"))["wrong_answer"] == "self-care is important"
    plain, _ = parsed("❓ q1 [single] Where? Correct answer: Sweden")
    assert "wrong_answer" not in json.loads(judge_request(plain, turns))


def test_the_rubric_reads_relative_dates_years_and_traps():
    from persona.engine.judge import rubric

    text = rubric()
    for said in ["the week before 9 June 2023", "only a year", "not mentioned", "`wrong_answer`"]:
        assert said in text


def test_only_the_speaker_not_knowing_counts_as_unknown():
    assert says_unknown("I don't have that information.") and says_unknown("I don't remember.")
    assert not says_unknown("Hairless cats, since they don't have fur.")


def test_an_answer_that_sounds_unknowing_still_dry_runs_ready(tmp_path, write_bench):
    """Failed before: the oracle answered "you didn't tell me" to it, and the scripted persona took a
    reply with "don't have" for one."""
    folder = write_bench({
        "benchmark.json": {"title": "T", "chapters": ["chapter1.md"]},
        "instructions.md": "You are Tom.",
        "profile.md": "# Me\n\n## 1. Pets\n1.1 Fur makes me sneeze, so hairless cats would suit me: they don't have fur\n",
        "chapter1.md": (
            "## Tell\n```js\nvars.require_all_facts = \"profile\";\n```\nTell the facts from profile.\n\n"
            "## Ask\n```js\nawait bench.newSession();\n```\nAsk.\n"
            "❓ q1 [single; source: open-domain] What pets suit me? Correct answer: hairless cats, they don't have fur "
            "Wrong answer: dogs 🔗 profile 1.1\n")})
    bench = load_benchmark(folder)
    target, = targets_from_paths([folder])
    result = asyncio.run(dry_run(target, tmp_path / "results", CompactionConfig(max_tokens=8000, trim_to_tokens=3000)))
    assert result.ok, result.failures
    e, = result.state.evaluations
    assert (e.source_category, e.wrong_answer) == ("open-domain", "dogs")
    assert check_of(e).wrong_answer == "dogs" and bench.checks[0].source_category == "open-domain"
