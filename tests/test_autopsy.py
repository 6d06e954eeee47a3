"""The memory autopsy: each check's class from the memory snapshot before its question, in report.md and
report.html (counts per class and category, each miss annotated, growth per session, a diff view)."""

from __future__ import annotations

import asyncio

from persona.benchmark.facts import FactEvent
from persona.benchmark.phases import Category
from persona.engine.memory import judge_paraphrases
from persona.report.autopsy import MemoryLine, holding, memory_autopsy
from persona.report.html import write_run_report
from persona.report.markdown import render_entry
from persona.report.snapshots import JudgedMemory, MemoryIndex, MemoryStore
from persona.state import AgentActivity, Evaluation, ItemMark
from persona.tokens import TokenCounter
from tests.support.runs import EVIL, demo_run, write_run

MEMORY = ("# Notes\n- My partner Jonas is a carpenter.\n- My 10 km personal best is 54:10.\n"
          "- My sister Klara has two kids, Ebba and Noah.\n")
HOSTILE = f"- {EVIL} [click](javascript:alert(1)) | *bold*\n"


def extra(check_id: str, category: Category, question: str, expected: str, answer: str, score: float) -> Evaluation:
    return Evaluation(check_id=check_id, category=category, question=question, expected=expected, answer=answer,
                      raw_score=score, score=score, comment="graded", phase=4, turn=10, session=1)


def run_with_memory(tmp_path, judged: dict[str, JudgedMemory] | None = None):
    """The hand-made demo run (d1 5/10 after a search, d2 0/10 with the old value, d9 absent) plus three
    checks, and the memory as DemoMind would keep it: empty at the start, its notes at the new session."""
    state, exchanges, bench = demo_run()
    state.evaluations += [
        extra("d7", Category.single, "What are the names of my sister's kids?", "Ebba; Noah", "Ebba and Noah", 10),
        extra("d6", Category.aggregate, "How many grandchildren do my parents have?", "2", f"{EVIL} [x](javascript:alert(1))", 0),
        extra("d5", Category.preference, "What kind of weather do I hate running in?", "rain", "Sun?", 0),
    ]
    folder = tmp_path / state.run_id
    store = MemoryStore(folder)
    index = MemoryIndex(source="folder agent/memory (*.md)", every="session")
    store.write_snapshot(index, "start", 0, 0, {})
    store.write_snapshot(index, "session", 6, 1, {"notes.md": MEMORY + HOSTILE})
    store.write_snapshot(index, "end", 10, 1, {"notes.md": MEMORY + HOSTILE, "more.md": "- rain is fine\n"})
    if judged:
        store.save_judged(judged)
    return state, exchanges, bench, folder


def test_every_class_from_the_snapshot_before_the_question(tmp_path):
    state, exchanges, bench, folder = run_with_memory(tmp_path)
    autopsy = memory_autopsy(folder, state, exchanges, bench)
    got = {c.evaluation.check_id: c for c in autopsy.checks}
    assert {k: c.klass for k, c in got.items()} == {
        "d1": "stored",  # held; right only after "search your memory": 5/10
        "d2": "stale",  # 54:10 held, 52:30 not
        "d7": "retrieved",
        "d6": "stored, not retrieved",  # "two kids" holds 2, by its stated link 🔗 family 3.1
        "d5": "never stored",  # "rain" came only in the end snapshot, after the question
    }
    assert [(e.check_id, why) for e, why in autopsy.unclassified] == [("d9", "absent: it asks about something never told")]
    assert got["d2"].old == [MemoryLine("notes.md", 3, "- My 10 km personal best is 54:10.")]
    assert got["d2"].why.startswith("the memory at new session 1 held an older value (notes.md:3:")
    assert got["d2"].history == ["running 1.2: told at turn 2 'My 10 km personal best is 54:10', "
                                 "edited at turn 5 'My 10 km personal best is now 52:30'"]
    assert got["d1"].asked_turn == 7 and got["d1"].snapshot.reason == "session"
    assert autopsy.counts() == {"retrieved": 1, "stored": 1, "retrieved, not used": 0, "stored, not retrieved": 1, "stale": 1,
                                "never stored": 1}


def test_the_recorded_history_decides_what_was_current_when_asked(tmp_path):
    state, exchanges, bench, folder = run_with_memory(tmp_path)
    pb = state.facts["running"].get("1.2")
    pb.history = [FactEvent(turn=2, kind="told", text="My 10 km personal best is 54:10"),
                  FactEvent(turn=50, kind="edited", text="My 10 km personal best is now 52:30")]
    d2 = next(c for c in memory_autopsy(folder, state, exchanges, bench).checks if c.evaluation.check_id == "d2")
    assert "edited at turn 50 (after the question)" in d2.history[0]
    assert d2.klass == "stored, not retrieved"  # when d2 was asked, 54:10 was the value, and memory held it


def test_a_judge_s_verdict_finds_a_paraphrase_only_where_the_matcher_found_nothing(tmp_path):
    verdict = JudgedMemory(snapshot=1, items=[True], evidence="dislikes wet weather", judge="judge-model")
    state, exchanges, bench, folder = run_with_memory(tmp_path, {"d5": verdict, "d7": verdict})
    got = {c.evaluation.check_id: c for c in memory_autopsy(folder, state, exchanges, bench).checks}
    assert got["d5"].klass == "stored, not retrieved" and got["d5"].by_judge == "judge-model"
    assert got["d7"].by_judge is None  # the matcher found it: the judge is not asked to overrule it


def test_a_number_needs_a_word_of_the_question_or_its_facts_beside_it():
    lines = [MemoryLine("m.md", 1, "Flat 2, Rua Nova"), MemoryLine("m.md", 2, "sister Klara: two kids")]
    assert holding("2", lines, {"siste", "kids"}, answer=True) == [lines[1]]
    assert holding("2", lines, {"grand"}, answer=True) == []


def test_report_md_has_the_autopsy_with_counts_per_class_and_category_and_each_miss(tmp_path):
    state, exchanges, bench, folder = run_with_memory(tmp_path)
    entry = render_entry(bench, state, autopsy=memory_autopsy(folder, state, exchanges, bench))
    assert "### Memory autopsy" in entry
    assert "| category | retrieved | stored | retrieved, not used | stored, not retrieved | stale | never stored |" in entry
    assert "| updated | 0 | 0 | 0 | 0 | 1 | 0 |" in entry and "| **all** | **1** | **1** | **0** | **1** | **1** | **1** |" in entry
    assert "- **d2** [updated] 0/10 — **stale**: the memory at new session 1 held an older value" in entry
    assert "- **d5** [preference] 0/10 — **never stored**:" in entry
    section = entry.split("### Memory autopsy")[1].split("\n### ")[0]
    assert "**d7**" not in section  # retrieved: not a miss
    assert "- **Not classified:** d9 (absent" in section
    assert EVIL not in section and "&lt;script&gt;" in section and "\\[x\\](javascript" in section  # shown, inert
    assert "### Memory autopsy" not in render_entry(bench, state)  # a black-box run has none


def test_report_html_shows_the_autopsy_growth_and_diffs_escaped(tmp_path):
    state, exchanges, bench, folder = run_with_memory(tmp_path)
    text = write_run_report(folder, state, exchanges, bench, TokenCounter()).read_text()
    section = text[text.index('id="memory-autopsy"'):text.index("<h2>Persona cost")]
    assert '<td class="s0"><b>stale</b></td>' in section and 'id="autopsy-d2"' in section
    assert section.count('<details class="diff">') == 2  # start -> session 1, session 1 -> end
    assert '<span class="d-add">+- rain is fine' in section and "more.md" in section
    assert "<td>at the start</td><td class=\"num\">0</td><td>after turn 6" not in section  # per session, not per snapshot
    assert "<td>0</td><td>at the start</td>" in section and "<td>1</td><td>at new session 1</td>" in section
    assert EVIL not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in section


def test_a_black_box_run_has_no_autopsy_section(tmp_path):
    state, exchanges, bench = demo_run()
    (tmp_path / "r1").mkdir()
    text = write_run_report(tmp_path / "r1", state, exchanges, bench, TokenCounter()).read_text()
    assert 'id="memory-autopsy"' not in text


def test_the_judge_is_asked_only_where_the_matcher_found_nothing_and_once_per_snapshot(tmp_path):
    state, exchanges, bench, _ = run_with_memory(tmp_path / "x")
    folder = write_run(tmp_path / "x", state, exchanges)
    asked = []

    async def judge(check, memory: str):
        asked.append(check.id)
        assert "## notes.md" in memory and "Klara" in memory
        return [True], "- i skip runs when it pours"

    assert asyncio.run(judge_paraphrases(folder, state, bench, judge, "judge-model")) == 1
    assert asked == ["d5"]  # the only `never stored` check
    assert asyncio.run(judge_paraphrases(folder, state, bench, judge, "judge-model")) == 0  # kept from the first time
    d5 = next(c for c in memory_autopsy(folder, state, exchanges, bench).checks if c.evaluation.check_id == "d5")
    assert (d5.klass, d5.by_judge, d5.found[0].text) == ("stored, not retrieved", "judge-model", "- i skip runs when it pours")


def tool_card(text: str, title: str = "🔧 Used tool memory_search", kind: str = "tool") -> AgentActivity:
    return AgentActivity(kind=kind, title=title, text=text)  # type: ignore[arg-type]


def test_a_miss_whose_tool_card_held_the_answer_is_retrieved_not_used(tmp_path):
    """Between the question and the grade the chat showed a memory search whose result held the fact, and
    the answer missed it: that is the class, before the snapshot's. A thought is the agent's own words, a
    card outside the question's turns is another question's: neither decides."""
    state, exchanges, bench, folder = run_with_memory(tmp_path)
    by_turn = {ex.turn: ex for ex in exchanges}
    by_turn[9].activity = [tool_card("Found 2 notes:\n- 10 km personal best: 52:30 (new record)\n- likes rain")]
    by_turn[7].activity = [tool_card("Ebba and Noah are her kids", kind="thought")]
    by_turn[5].activity = [tool_card("- Jonas is a carpenter")]  # before d1 was asked
    got = {c.evaluation.check_id: c for c in memory_autopsy(folder, state, exchanges, bench).checks}
    d2 = got["d2"]  # 54:10 answered; the memory held only 54:10 (stale), the tool card showed 52:30
    assert d2.klass == "retrieved, not used" and d2.snapshot is None
    assert d2.found == [MemoryLine("memory_search", 2, "- 10 km personal best: 52:30 (new record)", 9)]
    assert d2.why == ("a tool card the chat showed held it (turn 9, memory_search, line 2: '- 10 km personal best: "
                      f"52:30 (new record)'), but the agent answered '{EVIL} It is 54:10.'")
    assert got["d1"].klass == "stored" and got["d6"].klass == "stored, not retrieved"  # as the snapshot says
    assert memory_autopsy(folder, state, exchanges, bench).counts()["retrieved, not used"] == 1


def test_only_the_items_the_answer_missed_count_and_a_right_answer_is_retrieved(tmp_path):
    state, exchanges, bench, folder = run_with_memory(tmp_path)
    d7 = next(e for e in state.evaluations if e.check_id == "d7")
    d7.items = [ItemMark(item="Ebba", correct=True), ItemMark(item="Noah", correct=False)]
    d7.score = d7.raw_score = 5
    exchanges[-1].activity = [tool_card("Klara's kids: Ebba\nBoth of my sister's kids: Ebba and Noah")]
    got = {c.evaluation.check_id: c for c in memory_autopsy(folder, state, exchanges, bench).checks}
    assert got["d7"].klass == "retrieved, not used" and "(Noah of Ebba; Noah)" in got["d7"].why
    d7.items[1].correct, d7.score = True, 10  # the answer used all of it
    got = {c.evaluation.check_id: c for c in memory_autopsy(folder, state, exchanges, bench).checks}
    assert got["d7"].klass == "retrieved" and got["d7"].why.startswith("a tool card the chat showed held it (turn 10,")
    exchanges[-1].activity = [tool_card("Klara's kids: Ebba")]
    d7.items[1].correct, d7.score = False, 5  # the card held only the item the answer gave: the snapshot decides
    got = {c.evaluation.check_id: c for c in memory_autopsy(folder, state, exchanges, bench).checks}
    assert got["d7"].klass == "stored" and got["d7"].snapshot is not None


def test_without_snapshots_the_tool_cards_alone_make_an_autopsy(tmp_path):
    state, exchanges, bench = demo_run()
    folder = write_run(tmp_path, state, exchanges)
    assert memory_autopsy(folder, state, exchanges, bench) is None  # no memory read, no tool card
    exchanges[8].activity = [tool_card(f"- 10 km personal best: 52:30 {EVIL}")]
    autopsy = memory_autopsy(folder, state, exchanges, bench)
    assert autopsy.index is None and [(c.evaluation.check_id, c.klass) for c in autopsy.checks] == [("d2", "retrieved, not used")]
    assert [(e.check_id, why) for e, why in autopsy.unclassified] == [
        ("d1", "no memory snapshot (agent.memory not set), and no tool card of its turns held the answer"),
        ("d9", "absent: it asks about something never told")]
    entry = render_entry(bench, state, autopsy=autopsy)
    section = entry.split("### Memory autopsy")[1].split("\n### ")[0]
    assert "- **Memory read:** none (no `agent.memory`): classified from the tool cards the chat showed alone" in section
    assert "| **all** | **0** | **0** | **1** | **0** | **0** | **0** |" in section
    assert "- **d2** [updated] 0/10 — **retrieved, not used**: a tool card the chat showed held it" in section
    assert EVIL not in section and "&lt;script&gt;" in section
    page = write_run_report(folder, state, exchanges, bench, TokenCounter()).read_text()
    memory = page[page.index('id="memory-autopsy"'):page.index("<h2>Persona cost")]
    assert '<td class="s0"><b>retrieved, not used</b></td>' in memory and "Growth per session" not in memory
    assert "none (no <code>agent.memory</code>)" in memory and EVIL not in page
