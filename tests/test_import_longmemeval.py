"""`mmb import longmemeval`: LongMemEval instances (written here in its documented shape, with its
quirks: `_abs` questions, int answers, unsorted oracle sessions, a session with no `has_answer`
turn, an assistant question) become bundles where each question comes on its date after its
evidence sessions; what cannot be done on-policy is left out and counted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from persona.benchmark.loader import load_benchmark
from persona.cli.app import app
from persona.config import CompactionConfig
from persona.engine.dry import dry_run, targets_from_paths
from persona.state import RunStore


def instance(qid: str, qtype: str, question: str, answer, date: str, sessions: list[tuple[str, str, list[dict]]]) -> dict:
    return {"question_id": qid, "question_type": qtype, "question": question, "answer": answer, "question_date": date,
            "haystack_session_ids": [s[0] for s in sessions], "haystack_dates": [s[1] for s in sessions],
            "haystack_sessions": [s[2] for s in sessions], "answer_session_ids": [s[0] for s in sessions]}


def user(text: str, evidence: bool = True) -> dict:
    return {"role": "user", "content": text, **({"has_answer": True} if evidence else {})}


DATA = [
    instance("e47becba", "single-session-user", "What degree did I graduate with?", "Business Administration",
             "2023/05/30 (Tue) 23:40", [("answer_1", "2023/05/20 (Sat) 02:21", [
                 user("I graduated with a degree in Business Administration."), {"role": "assistant", "content": "Nice!"}])]),
    instance("6aeb4375", "knowledge-update", "How many Korean restaurants have I tried?", 4, "2023/10/10 (Tue) 10:00",
             [("answer_3", "2023/10/05 (Thu) 18:30", [user("I just tried my 4th Korean restaurant!")]),  # oracle: unsorted
              ("answer_2", "2023/10/01 (Sun) 09:00", [user("I've tried 3 Korean restaurants so far.")])]),
    instance("gpt4_t1", "temporal-reasoning", "How many days ago did I book the Lisbon hotel?", "19 days",
             "2023/06/20 (Tue) 12:00", [("answer_4", "2023/06/01 (Thu) 08:00", [
                 user("Can you help me plan?", evidence=False), user("I booked the hotel in Lisbon today.", evidence=False)])]),
    instance("0862e8bf_abs", "single-session-user", "What is my hamster called?",
             "You did not mention a hamster; you mentioned a cat named Luna", "2023/05/30 (Tue) 23:00",
             [("answer_5", "2023/05/21 (Sun) 10:00", [user("My cat Luna loves the sun.")])]),
    instance("asst01", "single-session-assistant", "What hotel did you recommend?", "Hotel Avenida",
             "2023/05/30 (Tue) 22:00", [("answer_6", "2023/05/22 (Mon) 10:00", [
                 user("Recommend a hotel.", evidence=False), {"role": "assistant", "content": "Avenida.", "has_answer": True}])]),
]


def mmb(*args: str):
    return CliRunner().invoke(app, list(args), prog_name="mmb")


def write(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def test_a_bundle_asks_each_question_on_its_date_after_its_sessions(tmp_path):
    done = mmb("import", "longmemeval", str(write(tmp_path / "longmemeval_oracle.json", DATA)), "-o", str(tmp_path / "b"))
    assert done.exit_code == 0, done.output
    bench = load_benchmark(tmp_path / "b")
    titles = [p.title for p in bench.phases]
    assert [t.split(":")[0] for t in titles] == ["Session 1", "Session 2", "Questions on Tuesday, 30 May 2023, 11",
                                                 "Session 3", "Questions on Tuesday, 20 June 2023, 12",
                                                 "Session 4", "Session 5", "Questions on Tuesday, 10 October 2023, 10"]
    checks = {c.id: c for c in bench.checks}
    assert set(checks) == {"e47becba", "6aeb4375", "gpt4_t1", "0862e8bf_abs"}  # the assistant's question left out
    assert [c.id for c in bench.phases[2].checks] == ["0862e8bf_abs", "e47becba"]  # same day: one phase, by time
    assert (checks["6aeb4375"].category.value, checks["6aeb4375"].source_category, checks["6aeb4375"].answer) == (
        "updated", "knowledge-update", "4")
    assert (checks["0862e8bf_abs"].category.value, checks["0862e8bf_abs"].source_category) == ("absent", "abstention")
    facts = {(ff.name, f.id): f.text for ff in bench.fact_files.values() for f in ff.all_facts()}
    assert [facts[(m.file, m.fact_id)] for m in checks["6aeb4375"].links] == [
        "I've tried 3 Korean restaurants so far. [answer_2#0]", "I just tried my 4th Korean restaurant! [answer_3#0]"]
    assert len(checks["gpt4_t1"].links) == 2  # no turn marked: the whole session told
    assert bench.phases[3].date.iso() == "2023-06-01 08:00" and "It is" not in bench.phases[3].body
    assert [p.date.iso() for p in bench.phases if p.checks] == ["2023-05-30 23:00", "2023-06-20 12:00",
                                                                "2023-10-10 10:00"]  # asked on their own dates
    assert all(d.tell for d in bench.phase_dates()), "every session and every question day is told"
    for said in ["single-session-assistant questions left out", "no user turn marked has_answer",
                 "answers given as numbers", "answers with ';' written with ','"]:
        assert said in done.output and said in (tmp_path / "b" / "SOURCE.md").read_text(encoding="utf-8"), said
    target, = targets_from_paths([tmp_path / "b"])
    result = asyncio.run(dry_run(target, tmp_path / "results", CompactionConfig(max_tokens=8000, trim_to_tokens=3000)))
    assert result.ok, result.failures
    assert result.answerable.summary() == "4 of 4 answerable from what was typed"
    sent = [e.sent for e in RunStore(result.folder).transcript()]
    # "How many days ago" needs the day of the booking and the day of the question, both typed before it
    asked = sent.index("How many days ago did I book the Lisbon hotel?")
    assert "Hi! It's Thursday, 1 June 2023, 8:00 am here." in sent[:asked]
    assert sent[asked - 1] == "Hi! It's Tuesday, 20 June 2023, 12:00 pm here."


def test_the_s_variant_with_its_distractor_sessions_is_answerable_too(tmp_path):
    """longmemeval_s: a haystack of distractor sessions around the evidence, each dated; only the evidence is told."""
    haystack = [(f"sharegpt_{i}", f"2023/05/{10 + i:02d} (Wed) 1{i}:00", [user(f"Tell me a joke number {i}.", False)])
                for i in range(4)]
    items = []
    for item in DATA[:4]:
        s = dict(item)
        s["haystack_session_ids"] = [h[0] for h in haystack] + item["haystack_session_ids"]
        s["haystack_dates"] = [h[1] for h in haystack] + item["haystack_dates"]
        s["haystack_sessions"] = [h[2] for h in haystack] + item["haystack_sessions"]
        items.append(s)
    done = mmb("import", "longmemeval", str(write(tmp_path / "longmemeval_s.json", items)), "-o", str(tmp_path / "b"))
    assert done.exit_code == 0, done.output
    assert "16 distractor sessions left out" in done.output
    target, = targets_from_paths([tmp_path / "b"])
    result = asyncio.run(dry_run(target, tmp_path / "results", CompactionConfig(max_tokens=8000, trim_to_tokens=3000)))
    assert result.ok, result.failures
    assert result.answerable.summary() == "4 of 4 answerable from what was typed"


def test_bundles_split_questions_and_bad_input_names_its_line(tmp_path):
    src = write(tmp_path / "oracle.json", DATA)
    done = mmb("import", "longmemeval", str(src), "-o", str(tmp_path / "out"), "--bundle", "2")
    assert done.exit_code == 0, done.output
    folders = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert folders == ["bundle-01", "bundle-02"]
    assert [len(load_benchmark(tmp_path / "out" / f).checks) for f in folders] == [2, 2]
    done = mmb("import", "longmemeval", str(src), "-o", str(tmp_path / "one"), "--question", "gpt4_t1")
    assert done.exit_code == 0 and [c.id for c in load_benchmark(tmp_path / "one").checks] == ["gpt4_t1"]
    bad = [dict(DATA[0], haystack_dates=[])] + DATA[1:]
    bad[0]["haystack_dates"] = ["2023/05/20", "2023/05/21"]
    src = write(tmp_path / "bad.json", bad)
    line = next(i for i, t in enumerate(src.read_text().splitlines(), 1) if '"haystack_dates"' in t)
    done = mmb("import", "longmemeval", str(src), "-o", str(tmp_path / "c"))
    assert done.exit_code == 2 and f"bad.json:{line}: 0.haystack_dates: needs one date per haystack session" in done.stderr
    done = mmb("import", "longmemeval", str(write(tmp_path / "d.json", [{"question_id": "x"}])), "-o", str(tmp_path / "d"))
    assert done.exit_code == 2 and "d.json:2: 0.question_type: Field required" in done.stderr
