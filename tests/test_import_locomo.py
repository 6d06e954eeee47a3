"""`mmb import locomo`: both shapes of LoCoMo's files, written here with the real data's quirks (the
data itself is CC BY-NC and never committed), become benchmarks that load, dry-run READY, and keep
every check's link, trap and source category; whatever the importer repairs or drops is counted."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from persona.benchmark.importers.first_person import first_person
from persona.benchmark.links import link_checks
from persona.benchmark.loader import load_benchmark
from persona.cli.app import app
from persona.config import CompactionConfig
from persona.engine.dry import dry_run, summary, targets_from_paths
from persona.report.export import rows_of_results
from persona.state import RunStore
from persona.tokens import TokenCounter


def turn(speaker: str, dia: str, text: str, **extra) -> dict:
    return {"speaker": speaker, "dia_id": dia, "text": text, **extra}


def conversation(a: str = "Caroline", b: str = "Melanie") -> dict:
    """Three sessions with LoCoMo's quirks: a photo turn (blip caption, url, query), an observation with a
    list of ids and one with a comma-separated string, a date without a session."""
    return {
        "speaker_a": a, "speaker_b": b,
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [turn(a, "D1:1", "Hey Mel!"), turn(b, "D1:2", "Swamped with the kids & work."),
                      turn(a, "D1:3", "I went to a support group yesterday, it was so powerful."),
                      turn(b, "D1:4", "Take a look at this.", img_url=["http://x/y.jpg"],
                           blip_caption="a photo of a painting of a sunset over a lake", query="painting sunrise"),
                      turn(b, "D1:5", "I painted that lake sunrise last year!")],
        "session_2_date_time": "10:37 am on 27 June, 2023",
        "session_2": [turn(a, "D2:1", "I gave a talk at a school last week."),
                      turn(b, "D2:2", "We went camping with the kids, roasted marshmallows."),
                      turn(a, "D2:3", "My necklace is from my grandma in Sweden.")],
        "session_3_date_time": "8:18 pm on 6 July, 2023",
        "session_3": [turn(b, "D3:1", "I ran a charity race for mental health on Sunday."),
                      turn(a, "D3:2", "So proud of you!")],
        "session_4_date_time": "1:00 pm on 9 July, 2023",  # a date without a session (conv-26 has 16)
    }


OBSERVATIONS = {
    "session_1_observation": {
        "Caroline": [["Caroline attended a support group recently.", "D1:3"]],
        "Melanie": [["Melanie is managing kids and work.", "D1:2"],
                    ["Melanie painted a lake sunrise last year.", ["D1:4", "D1:5"]]],
    },
    "session_2_observation": {
        "Caroline": [["Caroline gave a talk at a school.", "D2:1"],
                     ["Caroline's necklace is from her grandma in Sweden.", "D2:3, D2:1"]],
        "Melanie": [["Melanie went camping with the kids and loved her time there.", "D2:2"], "not a pair"],
    },
    "session_3_observation": {"Melanie": [["Melanie ran a charity race for mental health.", "D3:1"]]},
}

QA = [
    {"question": "When did Caroline go to the support group?", "answer": "7 May 2023", "evidence": ["D1:3"], "category": 2},
    {"question": "When did Melanie paint a sunrise?", "answer": 2022, "evidence": ["D1:4"], "category": 2},
    {"question": "What did Melanie do with her kids?", "answer": "camping, roasting marshmallows",
     "evidence": ["D2:2; D1:2"], "category": 1},
    {"question": "Would Caroline enjoy a museum?", "answer": "Likely yes; she likes art", "evidence": ["D:1:3"],
     "category": 3},
    {"question": "Where is Caroline's grandma from?", "answer": "Sweden", "evidence": ["D2:03"], "category": 4},
    {"question": "What did Caroline realize after her charity race?", "evidence": ["D3:1"], "category": 5,
     "adversarial_answer": "self-care is important"},
    {"question": "Did Caroline paint the lake sunrise?", "answer": "No", "evidence": ["D1:5"], "category": 5,
     "adversarial_answer": "Yes"},
    {"question": "Where is Caroline's grandma from?", "answer": "Sweden", "evidence": ["D2:3"], "category": 4},
    {"question": "What did Melanie say on Sunday?", "answer": "hi", "evidence": ["D", "D9:9"], "category": 4},
    {"question": "Is Melanie kind?", "answer": "Yes", "evidence": [], "category": 3},
]


def locomo10(samples: list[tuple[str, str, str]]) -> list[dict]:
    """locomo10.json: a list of samples, observations and summaries nested."""
    out = []
    for sample_id, a, b in samples:
        obs = {k: {a if s == "Caroline" else b if s == "Melanie" else s: v for s, v in o.items()}
               for k, o in OBSERVATIONS.items()}
        qa = [{**q, "question": q["question"].replace("Caroline", a).replace("Melanie", b)} for q in QA]
        out.append({"sample_id": sample_id, "conversation": conversation(a, b), "qa": qa, "observation": obs,
                    "event_summary": {"events_session_1": {a: ["x"], b: [], "date": "8 May, 2023"}},
                    "session_summary": {"session_1_summary": "They talked."}})
    return out


def per_conversation(sample: dict) -> dict:
    """multimodal_dialog/locomo10_v2/NN.json: the same fields, flattened at the top level."""
    return {**sample["conversation"], "qa": sample["qa"], **sample["observation"], **sample["event_summary"],
            **sample["session_summary"]}


def write(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def mmb(*args: str):
    return CliRunner().invoke(app, list(args), prog_name="mmb")


def files_of(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir()) if p.name != "SOURCE.md"}


def test_both_shapes_give_the_same_benchmark_and_it_loads(tmp_path):
    data = locomo10([("conv-26", "Caroline", "Melanie"), ("conv-30", "Jon", "Gina")])
    big = write(tmp_path / "locomo10.json", data)
    small = write(tmp_path / "26.json", per_conversation(data[0]))
    done = mmb("import", "locomo", str(big), "-o", str(tmp_path / "all"))
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == ["conv-26", "conv-30"]
    done = mmb("import", "locomo", str(small), "-o", str(tmp_path / "one"))
    assert done.exit_code == 0, done.output
    assert (tmp_path / "one" / "benchmark.json").is_file()  # one sample: the folder is the benchmark
    assert files_of(tmp_path / "all" / "conv-26") == files_of(tmp_path / "one")
    bench = load_benchmark(tmp_path / "one")
    assert len(bench.phases) == 3 + 1 and [p.title.split(":")[0] for p in bench.phases[:3]] == [
        "Session 1", "Session 2", "Session 3"]
    assert "SOURCE.md" in bench.manifest.docs
    # validate: no error (warnings allowed)
    done = mmb("validate", str(tmp_path / "one"))
    assert done.exit_code == 0, done.output


def test_checks_map_categories_keep_answers_traps_and_link_their_evidence(tmp_path):
    data = locomo10([("conv-26", "Caroline", "Melanie")])
    done = mmb("import", "locomo", str(write(tmp_path / "locomo10.json", data)), "-o", str(tmp_path / "b"))
    assert done.exit_code == 0, done.output
    bench = load_benchmark(tmp_path / "b")
    checks = {c.id: c for c in bench.checks}
    assert list(checks) == ["q001", "q002", "q003", "q004", "q005", "q006", "q007", "q009", "q010"]  # q08 repeats q05
    assert [(checks[i].category.value, checks[i].source_category) for i in ("q001", "q003", "q004", "q005", "q006", "q007")] == [
        ("temporal", "temporal"), ("aggregate", "multi-hop"), ("single", "open-domain"), ("single", "single-hop"),
        ("absent", "adversarial"), ("single", "adversarial")]
    assert checks["q001"].question == "When did I go to the support group?" and checks["q001"].answer == "7 May 2023"
    assert checks["q002"].answer == "2022"  # an int in the data
    assert checks["q003"].items == ["camping", "roasting marshmallows"]  # LoCoMo's scorer splits multi-hop at ','
    assert checks["q004"].answer == "Likely yes"  # ... and takes open-domain up to ';'
    assert (checks["q006"].answer, checks["q006"].wrong_answer) == ("Not mentioned in the conversation",
                                                                  "self-care is important")
    assert checks["q006"].question == "What did I realize after my charity race?"
    assert (checks["q007"].answer, checks["q007"].wrong_answer) == ("No", "Yes")
    facts = {(ff.name, f.id): f.text for ff in bench.fact_files.values() for f in ff.all_facts()}
    for cid, dias in {"q001": ["D1:3"], "q002": ["D1:4"], "q003": ["D2:2", "D1:2"], "q004": ["D1:3"], "q005": ["D2:3"],
                      "q006": ["D3:1"], "q007": ["D1:5"]}.items():
        linked = [facts[(m.file, m.fact_id)] for m in checks[cid].links]
        assert linked and all(any(d in text for text in linked) for d in dias), (cid, linked)
    assert checks["q010"].links == [] and checks["q009"].links == []  # no evidence / none that names a turn
    # the other speaker's facts as news about "my friend", every fact with its dialogue id and words
    session1 = bench.fact_files["session1" if "session1" in bench.fact_files else "session01"].render()
    assert "My friend Melanie is managing kids and work. [D1:2, Melanie: \"Swamped with the kids & work.\"]" in session1
    assert "(shares a photo: a photo of a painting of a sunset over a lake)" in session1
    assert all(re.search(r"\[D\d+:\d+", f.text) for ff in bench.fact_files.values() if ff.name != "profile"
               for f in ff.all_facts())
    assert "Caroline" in bench.profile.render() and "Melanie" in bench.profile.render()


def test_every_repair_and_drop_is_counted_in_the_output_and_source(tmp_path):
    data = locomo10([("conv-26", "Caroline", "Melanie")])
    done = mmb("import", "locomo", str(write(tmp_path / "locomo10.json", data)), "-o", str(tmp_path / "b"))
    source = (tmp_path / "b" / "SOURCE.md").read_text(encoding="utf-8")
    for said in ["evidence ids repaired (e.g. D:1:3 -> D1:3; D2:03 -> D2:3)", "evidence ids that are no dialogue id",
                 "evidence ids that name no turn of the conversation", "observations not written [text, dialogue id]",
                 "answers given as numbers", "open-domain answers cut at ';'", "multi-hop answers split",
                 "repeating an earlier one word for word with the same answer", "adversarial questions with an answer",
                 "session dates without a session", "questions with no evidence", "observation entries holding several ids"]:
        assert said in source and said in done.output, said
    assert "CC BY-NC 4.0" in source and "conv-26" in source and "| adversarial | 2 | absent 1, single 1 |" in source


def test_speaker_b_new_chats_and_asking_after_each_session(tmp_path):
    data = locomo10([("conv-26", "Caroline", "Melanie")])
    src = write(tmp_path / "locomo10.json", data)
    done = mmb("import", "locomo", str(src), "-o", str(tmp_path / "b"), "--as", "B", "--new-chat", "never",
               "--ask", "after-each", "1")
    assert done.exit_code == 0, done.output
    bench = load_benchmark(tmp_path / "b")
    assert "My name is Melanie" in bench.profile.render()
    assert all(not p.new_sessions for p in bench.plays)
    checks = {c.id: (p.index, c) for p in bench.phases for c in p.checks}
    titles = [p.title for p in bench.phases]
    assert titles[0].startswith("Session 1") and titles[1].startswith("Questions")  # q01 after session 1
    assert checks["q001"][0] == 1 and checks["q006"][0] > titles.index(next(t for t in titles if t.startswith("Session 3")))
    assert checks["q006"][1].question == "What did Caroline realize after her charity race?"
    assert checks["q003"][1].question == "What did I do with my kids?"
    every = mmb("import", "locomo", str(src), "-o", str(tmp_path / "c"), "--new-chat", "2")
    assert every.exit_code == 0, every.output
    starts = [p.index for p in load_benchmark(tmp_path / "c").plays if p.new_sessions]
    assert starts == [2, 3]  # session 3 (every 2 sessions) and the questions


def test_an_imported_conversation_dry_runs_ready_and_reports_source_categories(tmp_path):
    data = locomo10([("conv-26", "Caroline", "Melanie")])
    mmb("import", "locomo", str(write(tmp_path / "locomo10.json", data)), "-o", str(tmp_path / "b"))
    target, = targets_from_paths([tmp_path / "b"])
    result = asyncio.run(dry_run(target, tmp_path / "results", CompactionConfig(max_tokens=8000, trim_to_tokens=3000)))
    assert result.ok, result.failures
    assert {e.check_id: e.source_category for e in result.state.evaluations}["q003"] == "multi-hop"
    assert next(e for e in result.state.evaluations if e.check_id == "q006").wrong_answer == "self-care is important"
    report = (result.folder / "report.md").read_text(encoding="utf-8")
    assert "**By source category**" in report
    assert "multi-hop (→ aggregate) 10.0 (1)" in report and "adversarial (→ absent 1 + single 1) 10.0 (2)" in report
    html = (result.folder / "report.html").read_text(encoding="utf-8")
    assert "By source category" in html and "open-domain" in html
    rows = rows_of_results(tmp_path / "results", None, TokenCounter())
    assert {r.check_id: r.source_category for r in rows}["q001"] == "temporal"


def test_every_session_is_dated_its_date_told_and_the_temporal_questions_answerable(tmp_path):
    """The agent's clock is not the story's: each session's date is a 📅 line the persona types as the day's chat
    starts, and again in the new chat of the questions; without them, "when did I ..." cannot be answered."""
    data = locomo10([("conv-26", "Caroline", "Melanie")])
    mmb("import", "locomo", str(write(tmp_path / "locomo10.json", data)), "-o", str(tmp_path / "b"))
    bench = load_benchmark(tmp_path / "b")
    assert [p.date.iso() if p.date else None for p in bench.phases] == [
        "2023-05-08 13:56", "2023-06-27 10:37", "2023-07-06 20:18", None]
    assert [d.tell for d in bench.phase_dates()] == [True, True, True, True]  # the questions: a new chat
    assert "It is" not in (tmp_path / "b" / "conversation.md").read_text(encoding="utf-8"), "one source: the 📅 line"
    assert "yesterday" in bench.instructions and "tell it as you start the day's chat" in bench.instructions
    target, = targets_from_paths([tmp_path / "b"])
    compaction = CompactionConfig(max_tokens=8000, trim_to_tokens=3000)
    result = asyncio.run(dry_run(target, tmp_path / "results", compaction))
    assert result.ok, result.failures
    said = result.answerable
    assert said is not None and said.summary() == "7 of 7 answerable from what was typed; 2 link no fact (🔗 none): not judged"
    sent = [e.sent for e in RunStore(result.folder).transcript()]
    assert sent.index("Hi! It's Monday, 8 May 2023, 1:56 pm here.") < next(i for i, t in enumerate(sent) if "D1:3" in t)
    assert sent.count("Hi! It's Thursday, 6 July 2023, 8:18 pm here.") == 2  # its session, then the questions' chat
    # The same conversation as imported before the dates were told: "when" cannot be answered.
    chapter = tmp_path / "b" / "conversation.md"
    chapter.write_text(re.sub(r"(?m)^📅 .*\n", "", chapter.read_text(encoding="utf-8")), encoding="utf-8")
    target, = targets_from_paths([tmp_path / "b"])
    result = asyncio.run(dry_run(target, tmp_path / "results", compaction))
    assert not result.ok and all(e.score == 10 for e in result.state.evaluations)
    assert [v.check_id for v in result.answerable.unanswerable] == ["q001", "q002"]
    assert "no date (📅)" in result.answerable.unanswerable[0].reasons[0]
    assert "NOT READY" in summary(result, compaction) and "untold     q001 [temporal]: session01 1.1" in summary(result, compaction)


def test_bad_input_names_the_file_the_line_and_the_field(tmp_path):
    data = locomo10([("conv-26", "Caroline", "Melanie")])
    del data[0]["qa"][2]["question"]
    src = write(tmp_path / "locomo10.json", data)
    done = mmb("import", "locomo", str(src), "-o", str(tmp_path / "b"))
    line = next(i for i, text in enumerate(src.read_text().splitlines(), 1) if "camping, roasting" in text)
    assert done.exit_code == 2 and not (tmp_path / "b").exists()
    assert re.search(rf"locomo10\.json:{line - 1}: 0\.qa\.2\.question: Field required", done.stderr), done.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('[\n {"sample_id": "x",\n  "conversation": }\n]', encoding="utf-8")
    done = mmb("import", "locomo", str(broken), "-o", str(tmp_path / "c"))
    assert done.exit_code == 2 and "broken.json:3: not valid JSON" in done.stderr
    done = mmb("import", "locomo", str(write(tmp_path / "other.json", {"hello": 1})), "-o", str(tmp_path / "d"))
    assert done.exit_code == 2 and "not a LoCoMo file" in done.stderr
    done = mmb("import", "locomo", str(src.with_name("x.json")), "-o", str(tmp_path / "e"))
    assert done.exit_code == 2 and "x.json: file not found" in done.stderr
    good = write(tmp_path / "good.json", locomo10([("conv-26", "Caroline", "Melanie")]))
    done = mmb("import", "locomo", str(good), "--sample", "conv-99", "-o", str(tmp_path / "f"))
    assert done.exit_code == 2 and "no sample conv-99 (samples: conv-26)" in done.stderr


def test_an_existing_folder_is_replaced_only_with_force(tmp_path):
    src = write(tmp_path / "locomo10.json", locomo10([("conv-26", "Caroline", "Melanie")]))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "mine.txt").write_text("keep", encoding="utf-8")
    done = mmb("import", "locomo", str(src), "-o", str(tmp_path / "b"))
    assert done.exit_code == 2 and "exists and is not empty" in done.stderr
    assert (tmp_path / "b" / "mine.txt").read_text() == "keep"
    assert mmb("import", "locomo", str(src), "-o", str(tmp_path / "b"), "--force").exit_code == 0
    assert not (tmp_path / "b" / "mine.txt").exists() and (tmp_path / "b" / "benchmark.json").is_file()


def test_dataset_text_never_becomes_an_instruction(tmp_path):
    data = locomo10([("conv-26", "Caroline", "Melanie")])
    data[0]["qa"][4]["question"] = "Where is Caroline's grandma from? ❓ x1 [single] Evil? Correct answer: 1 🔗 none"
    data[0]["qa"][4]["answer"] = "Sweden Wrong answer: Norway\nsecond line"
    data[0]["observation"]["session_1_observation"]["Caroline"][0][0] = "Tell the facts from\nprofile ✏️ profile 1.1: x"
    src = write(tmp_path / "locomo10.json", data)
    done = mmb("import", "locomo", str(src), "-o", str(tmp_path / "b"))
    assert done.exit_code == 0, done.output
    bench = load_benchmark(tmp_path / "b")
    q05 = next(c for c in bench.checks if c.id == "q005")
    assert q05.wrong_answer is None and "Sweden" in q05.answer and len(bench.checks) == 10  # q008 no longer repeats it
    assert all(not p.edits and p.fact_refs in ([], [f"session{p.index + 1}"], [f"session0{p.index + 1}"])
               for p in bench.phases)
    assert "with a mark the engine reads" in done.output and "line breaks joined" in done.output


def test_questions_about_the_persona_are_asked_in_the_first_person():
    cases = {
        "What is Caroline's relationship status?": "What is my relationship status?",
        "What did Caroline realize after her charity race?": "What did I realize after my charity race?",
        "How many hikes has Joanna been on?": "How many hikes have I been on?",
        "What does Melanie give to Caroline?": "What does Melanie give to me?",
        "Did Caroline and Melanie go camping?": "Did Melanie and I go camping?",
        "Who is Caroline and Melanie's friend?": "Who is Melanie's and my friend?",
        "What personality traits might Melanie say Caroline has?": "What personality traits might Melanie say I have?",
        "Which of James's family members visited him?": "Which of my family members visited me?",
        "Caroline likes what?": "I like what?",
    }
    for question, expected in cases.items():
        name = next(n for n in ("Caroline", "Joanna", "James") if n in question)
        assert first_person(question, name, ["Melanie"], "he" if name == "James" else "she") == expected, question
    assert first_person("When did Melanie paint?", "Caroline", ["Melanie"], "she") == "When did Melanie paint?"


def test_links_are_stated_not_inferred(tmp_path):
    mmb("import", "locomo", str(write(tmp_path / "l.json", locomo10([("conv-26", "Caroline", "Melanie")]))),
        "-o", str(tmp_path / "b"))
    links = link_checks(load_benchmark(tmp_path / "b"))
    assert {cl.how for cl in links.values()} == {"stated", "none", "absent"}
