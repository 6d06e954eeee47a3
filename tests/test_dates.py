"""Dated phases: a `📅` line gives the story's date, bad ones are errors at their line, the date holds until
the next one, the persona is told to say it (and the guard lets it through), the scripted persona says it,
and `mmb validate` warns where a check needs a date no phase gives."""

from __future__ import annotations

from datetime import date

import pytest

from persona.benchmark.dates import StoryDate, asks_for_time, dates_in, parse_date_line, spoken
from persona.benchmark.lint import lint
from persona.benchmark.loader import load_benchmark
from persona.engine.guard import PromptEcho, guard_message
from persona.engine.scenario import opening_message, phase_brief, system_prompt
from persona.engine.scripted import ScriptedPersona
from persona.errors import InputError
from persona.state import RunState


def files(chapter1: str, chapter2: str = "## Exam\nAsk.\n❓ q1 [single] Who is my wife? Correct answer: Ana\n",
          instructions: str = "You are Tom.") -> dict:
    return {
        "benchmark.json": {"chapters": ["chapter1.md", "chapter2.md"], "fact_files": ["family.md"]},
        "instructions.md": instructions,
        "profile.md": "# Tom\n\n## 1. Me\n1.1 I'm Tom\n",
        "family.md": "# Family\n\n## 1. Wife\n1.1 My wife is Ana\n1.2 I went to the dentist yesterday\n",
        "chapter1.md": chapter1,
        "chapter2.md": chapter2,
    }


def test_a_date_line_parses_with_or_without_its_time():
    story, why = parse_date_line("📅 2023-05-08 13:56")
    assert why is None and story.when.isoformat() == "2023-05-08T13:56:00" and story.has_time
    story, _ = parse_date_line("  📅️ 2023-5-8  ")
    assert story.iso() == "2023-05-08" and not story.has_time and story.line_text() == "📅 2023-05-08"
    assert parse_date_line("📅 8 May 2023")[0] is None
    assert "no date or time" in parse_date_line("📅 2023-02-30")[1]
    assert "no date or time" in parse_date_line("📅 2023-05-08 25:00")[1]


def test_bad_date_lines_are_errors_at_their_line(write_bench):
    chapter1 = ("## Start\n📅 8 May 2023\nTell the facts from family.\n\n## Two dates\n📅 2023-05-09\n"
                "📅 2023-05-10\nHello.\n\n## No such day\n📅 2023-02-30 10:00\nHello.\n")
    folder = write_bench(files("Note 📅 2023-01-01\n" + chapter1, instructions="You are Tom. 📅 2023-01-01"))
    with pytest.raises(InputError) as e:
        load_benchmark(folder)
    found = {(p.file.rsplit("/", 1)[-1], p.line): p.message for p in e.value.problems}
    assert "must read '📅 YYYY-MM-DD' or '📅 YYYY-MM-DD HH:MM'" in found[("chapter1.md", 3)]
    assert "a second date line in one phase (the first is at line 7)" in found[("chapter1.md", 8)]
    assert "2023-02-30 10:00 is no date or time" in found[("chapter1.md", 12)]
    assert "this date line in the note before the first '## ' is never shown" in found[("chapter1.md", 1)]
    assert "this date line in the instructions is never shown" in found[("instructions.md", 1)]


CHAPTER1 = ("## Before\nSay hello.\n\n## Morning\n📅 2023-05-08 09:15\nTell the facts from family.\n\n"
            "## Later\nChat a little.\n")
CHAPTER2 = ("## Next day\n```js\nawait bench.newSession();\n```\nAsk.\n"
            "❓ q1 [temporal] When did I go to the dentist? Correct answer: 7 May 2023 🔗 family 1.2\n")


def test_a_date_holds_until_the_next_and_is_told_once_per_dated_phase_and_in_each_new_chat(write_bench):
    bench = load_benchmark(write_bench(files(CHAPTER1, CHAPTER2)))
    dates = bench.phase_dates()
    assert [(d.date.iso() if d.date else None, d.own, d.tell) for d in dates] == [
        (None, False, False), ("2023-05-08 09:15", True, True), ("2023-05-08 09:15", False, False),
        ("2023-05-08 09:15", False, True)]  # the new chat of the last phase never heard it
    morning, later, exam = (phase_brief(bench, p) for p in bench.phases[1:])
    assert "📅 2023-05-08 09:15\nIn the story it is now Monday, 8 May 2023, 9:15 am." in morning
    assert "tell it as you start this phase" in morning and "with the day, the month and the year" in morning
    assert "📅" not in later and "(In the story it is still Monday, 8 May 2023, 9:15 am: the assistant heard" in later
    assert "📅 2023-05-08 09:15\nIn the story it is still Monday, 8 May 2023, 9:15 am. This phase opens a new chat" in exam
    assert "📅" not in phase_brief(bench, bench.phases[0])
    assert "📅 2023-05-08 13:56" in system_prompt(bench), "the universal prompt explains the date line"


def test_the_date_is_said_in_the_benchmark_language():
    story = StoryDate.model_validate({"when": "2023-05-08T13:56", "has_time": True})
    assert spoken(story) == "Monday, 8 May 2023, 1:56 pm"
    assert spoken(story, "ru") == "понедельник, 8 мая 2023 года, 13:56"
    assert spoken(story.model_copy(update={"has_time": False}), "de") == "Monday, 8 May 2023"


def test_the_scripted_persona_says_the_date_first_and_the_guard_lets_it_through(write_bench):
    bench = load_benchmark(write_bench(files(CHAPTER1, CHAPTER2)))
    state = RunState(run_id="r", benchmark="b", driver="d", persona_model="m", facts=bench.fact_files)
    system = system_prompt(bench)
    brief = phase_brief(bench, bench.phases[1])
    opening = opening_message(bench, state, brief)
    move = ScriptedPersona("en").decide([{"role": "user", "content": opening}])
    assert move.text == "Hi! It's Monday, 8 May 2023, 9:15 am here."
    assert [c.name for c in move.calls] == ["facts_get_untold"]
    echo = PromptEcho(system, [brief], notes=[opening])
    for typed in [move.text, "Morning! Monday, 8 May 2023 here, coffee in hand.",
                  "It is Monday, 8 May 2023, 9:15 am in the story.", "2023-05-08, a Monday."]:
        guarded = guard_message(typed, echo)
        assert guarded.text == typed and not guarded.quirks(), typed
    assert ScriptedPersona("ru").decide([{"role": "user", "content": opening}]).text == \
        "Привет! У меня сейчас понедельник, 8 мая 2023 года, 09:15."
    later = ScriptedPersona("en").decide([{"role": "user", "content": opening_message(
        bench, state, phase_brief(bench, bench.phases[2]))}])
    assert later.text is None, "a date already told in this chat is not told again"


def test_a_typed_date_is_heard_in_any_common_form_with_its_year():
    may8 = date(2023, 5, 8)
    for text in ["Hi! It's Monday, 8 May 2023, 1:56 pm here.", "Morning! May 8th, 2023 here", "the 8th of May, 2023",
                 "8 мая 2023 года", "Сегодня 8-е мая 2023", "2023-05-08", "08.05.2023", "on 5/8/2023 (US)",
                 "8 Mai... no: 8 May, 2023"]:
        assert may8 in dates_in(text), text
    for text in ["Monday 8 May here", "May 2023", "8 мая", "18 May 2023", "8 March 2023", "2023"]:
        assert may8 not in dates_in(text), text


def test_which_answers_ask_for_a_time():
    assert asks_for_time("temporal", "the Met Office")
    for answer in ["The week before 9 June 2023", "4 years", "10 years ago", "2022", "June 2023", "19 days",
                   "22 года", "15 декабря", "7 дней", "Since 2016", "the sunday before 25 May 2023"]:
        assert asks_for_time("single", answer), answer
    for answer in ["Paris", "£690", "2", "Ebba; Noah", "52:30", "Brave by Sara Bareilles", "Майя Плисецкая"]:
        assert not asks_for_time("single", answer), answer


def test_validate_warns_about_a_time_check_whose_facts_no_phase_dates_and_a_date_going_back(write_bench):
    undated = CHAPTER1.replace("📅 2023-05-08 09:15\n", "")
    warnings = [str(w) for w in lint(load_benchmark(write_bench(files(undated, CHAPTER2), name="undated")))]
    assert any("chapter2.md:6: check q1: its answer is a date or a time span, but family 1.2 (phase 2) is told in a "
               "phase with no date" in w for w in warnings), warnings
    assert lint(load_benchmark(write_bench(files(CHAPTER1, CHAPTER2), name="dated"))) == []
    # A date the fact itself gives needs no phase date.
    self_dated = CHAPTER2.replace("Correct answer: 7 May 2023", "Correct answer: yesterday")
    assert lint(load_benchmark(write_bench(files(undated, self_dated), name="self-dated"))) == []
    back = CHAPTER2.replace("Ask.\n", "📅 2023-05-01\nAsk.\n")
    warnings = [str(w) for w in lint(load_benchmark(write_bench(files(CHAPTER1, back), name="back")))]
    assert any("chapter2.md:5: the story's date goes back, from 2023-05-08 09:15 to 2023-05-01" in w for w in warnings)
