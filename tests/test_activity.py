"""The agent's visible work (tool cards, thoughts, status lines): recorded, counted and shown, never the answer.

A whole run in-process: an agent whose tool cards and thoughts hold every right answer while its answers
say it does not know, an LLM persona and a model judge on the local OpenAI-compatible server. Nothing of
the work reaches the persona, the judge or a grade; the transcript keeps it, the reports count and show
it inert, and the memory autopsy calls each such miss `retrieved, not used`."""

from __future__ import annotations

import json

import pytest

from drivers.base import Activity, Reply, SendJournal
from persona.config import JudgeConfig, PersonaConfig
from persona.engine.judge import make_judge
from persona.engine.llm import OpenAIPersona
from persona.report.activity import ActivityCounts, tool_name
from persona.report.export import rows_of_run
from persona.report.html import write_run_report
from persona.report.markdown import render_entry
from persona.report.publish import entry_parts, read_run
from persona.state import AgentActivity, Exchange
from persona.tokens import TokenCounter
from tests.support.quirk_server import QuirkServer, scripted_responder
from tests.test_faults_gaming import ScriptedAgent, play_against
from tests.test_judge import SHORT

MARK = "wrk-7f3a"  # in every piece of work the agent shows, in none of its answers
EVIL = "<script>alert(1)</script>"


@pytest.mark.parametrize("title, name", [
    ("🔧 Used tool memory_search", "memory_search"),
    ("Using memory_search", "memory_search"),
    ("View Result from memory_search", "memory_search"),
    ("Executing memory_search...", "memory_search"),
    ("Tool call memory_search", "memory_search"),
    ("🛠️ Used tool: web.fetch", "web.fetch"),
    ("Called getWeather", "getWeather"),
    ('memory_search(query="partner")', "memory_search"),
    ("View Result from `search`", "search"),
    ("Used Retriever", "Retriever"),
    ("Executing search… (0.4s)", "search"),
    ("Used tool search in 2.1 s", "search"),
    ("Tool output", "Tool output"),  # no name in it: the title is kept
    ("Searching   the web\nnow", "Searching the web now"),
    ("", "(untitled)"),
])
def test_a_tool_s_name_is_read_from_the_title_the_chat_showed(title, name):
    assert tool_name(title) == name


def test_counts_per_run_and_per_span_of_turns():
    def ex(turn: int, *work: tuple[str, str]) -> Exchange:
        return Exchange(turn=turn, session=0, phase=0, sent="q", reply=["a"],
                        activity=[AgentActivity(kind=k, title=t) for k, t in work])  # type: ignore[arg-type]

    exchanges = [ex(1), ex(2, ("status", "Searching memory…"), ("tool", "Using memory_search"),
                            ("tool", "Used memory_search"), ("thought", "Thinking")),
                 ex(3, ("tool", "Tool call web_fetch")), ex(4, ("thought", "Thought for 2 s"))]
    run = ActivityCounts.of(exchanges)
    assert (run.turns, run.turns_with_work, run.turns_with_tools, run.thoughts, run.status) == (4, 3, 2, 2, 1)
    assert run.by_tool() == [("memory_search", 2), ("web_fetch", 1)] and run.tool_cards == 3
    span = ActivityCounts.of(exchanges, 3, 4)
    assert (span.tool_cards, span.thoughts, span.status) == (1, 1, 0)
    assert not ActivityCounts.of([ex(1)]).any


class ToolShowingAgent(ScriptedAgent):
    """Answers every question "I don't know", after a memory search whose result, and a thought, hold the
    facts the persona told: the work shows what the answer does not use."""

    def __init__(self) -> None:
        super().__init__(["Noted."])

    async def send(self, text: str, journal: SendJournal | None = None) -> Reply:
        if "?" not in text:
            return await super().send(text, journal)
        self.received.append(text)
        return Reply(bubbles=["Sorry, I don't know, you never told me."], signal="in-process", activity=[
            Activity("status", "Searching memory…", ""),
            Activity("tool", "🔧 Used tool memory_search",
                     f"{MARK} results:\n- My best 10 km is 52:30\n- I run on Tuesdays and Sundays\n{EVIL}"),
            Activity("thought", "Thought for 2 seconds", f"{MARK} The notes say 52:30, Tuesday and Sunday.")])


def test_the_agent_s_work_is_recorded_counted_and_shown_but_never_graded(tmp_path, write_bench):
    bench = write_bench(SHORT)
    with QuirkServer(scripted_responder()) as server:
        persona = PersonaConfig(kind="openai", base_url=server.base_url, model="m", api_key_env="MMB_TEST_UNSET_KEY")
        state = play_against(ToolShowingAgent(), OpenAIPersona(persona), tmp_path / "run", benchmark=bench,
                             judge=make_judge(JudgeConfig().resolved(persona)))
    assert state.finished
    # Never the answer: not in any request to the persona's model or the judge's, not in a grade.
    assert server.requests and not [r for r in server.requests if MARK in json.dumps(r)]
    assert {e.check_id: e.score for e in state.evaluations} == {"c1": 0, "c2": 0, "c3": 10}
    assert not [e for e in state.evaluations if MARK in e.model_dump_json()]
    # Recorded: every question's turn keeps its work in the transcript, in the order shown.
    folder = tmp_path / "run"
    _, exchanges = read_run(folder)
    asked = [ex for ex in exchanges if "?" in ex.sent]
    assert asked and all([a.kind for a in ex.activity] == ["status", "tool", "thought"] for ex in asked)
    assert all(MARK not in " ".join(ex.reply) for ex in exchanges)
    # Counted in report.md, inert; the misses whose tool cards held the answer are `retrieved, not used`.
    autopsy, activity = entry_parts(folder, state, None)
    entry = render_entry(_bench(bench), state, autopsy=autopsy, activity=activity)
    assert (f"- **Agent activity** (shown beside its answers, never graded): {len(asked)} of {len(exchanges)} turn(s) "
            f"showed work; tool use in {len(asked)} turn(s), {len(asked)} tool card(s): ` memory_search ` ×{len(asked)}; "
            f"{len(asked)} thought(s); {len(asked)} status line(s)") in entry
    assert "- **Memory read:** none (no `agent.memory`)" in entry
    assert "- **c1** [single] 0/10 — **retrieved, not used**: a tool card the chat showed held it (turn " in entry
    assert "**c2** [single] 0/10 — **retrieved, not used**" in entry and MARK not in entry
    # Shown in report.html, collapsed beside the answer, escaped; counted per check in the export.
    page = write_run_report(folder, state, exchanges).read_text()
    assert page.count("<details class=work>") == len(asked) and MARK in page
    assert EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    rows = rows_of_run(state, exchanges, TokenCounter())
    shown = [sum(r.asked_turn <= ex.turn <= r.graded_turn for ex in asked) for r in rows]
    assert [(r.tool_cards, r.thoughts, r.status_lines) for r in rows] == [(n, n, n) for n in shown] and all(shown)
    assert not [r for r in rows if MARK in r.agent_reply or MARK in r.persona_summary]


def _bench(path):
    from persona.benchmark.loader import load_benchmark
    return load_benchmark(path)


def test_the_first_name_in_a_title_wins_over_one_later_in_the_text_it_quotes():
    assert tool_name("View Result from memory_search <script>alert(1)</script>") == "memory_search"
    assert tool_name("Used 'search' on my_notes") == "search"
    assert tool_name("Used tool: search(query='my_partner')") == "search"


@pytest.mark.usefixtures("chromium")
def test_a_chat_page_showing_its_work_plays_a_run_that_keeps_the_work_beside_each_answer(tmp_path, write_bench):
    """In real Chromium through the runner: the chat lab shows a status line, a tool card and a thought before
    each answer; the transcript keeps them as each turn's activity, the answers without them, and the reports
    count them."""
    from tests.conftest import NO_TRACE
    from tests.support.chat_lab import ChatLab, LabScenario
    from tests.support.play import play
    from tests.support.runs import MICRO
    from tests.test_exactly_once import agent_of

    def answers(text: str, history: list) -> list[str]:
        return ["Sorry, I don't know."] if "?" in text else ["Noted."]

    scenario = LabScenario(work=["status", "tool", "thought"], work_ms=50, work_place="beside", chunk_ms=5)
    with ChatLab(scenario, responder=answers) as lab:
        outcome, state = play(tmp_path, browser=NO_TRACE, benchmark=write_bench(MICRO), agent=agent_of(lab.profile()))
    assert outcome.status == "finished", outcome.error
    _, exchanges = read_run(tmp_path / "results" / "r")
    assert exchanges and all(ex.reply in (["Noted."], ["Sorry, I don't know."]) for ex in exchanges)
    assert all([(a.kind, tool_name(a.title)) for a in ex.activity][:2] == [("status", "Searching memory…"),
                                                                          ("tool", "memory_search")] for ex in exchanges)
    assert all("memory_search result: " in ex.activity[1].text for ex in exchanges)
    assert {e.check_id: e.score for e in state.evaluations} == {"m1": 0, "m2": 10}
    n = len(exchanges)
    report = (tmp_path / "results" / "report.md").read_text()
    assert (f"- **Agent activity** (shown beside its answers, never graded): {n} of {n} turn(s) showed work; tool use "
            f"in {n} turn(s), {n} tool card(s): ` memory_search ` ×{n}; {n} thought(s); {n} status line(s)") in report
    assert (tmp_path / "results" / "r" / "report.html").read_text().count("<details class=work>") == n
