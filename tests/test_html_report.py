"""report.html: offline, escaped, every section there, checks marked in the transcript, failure links."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from persona.report.html import RunReport, write_run_report
from persona.tokens import TokenCounter
from tests.support.runs import EVIL, demo_run


class Elements(HTMLParser):
    """Collects tags with their attributes, and the text under each id'd element."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def render(tmp_path, **changes):
    state, exchanges, bench = demo_run()
    folder = tmp_path / state.run_id
    folder.mkdir()
    for name, data in changes.get("files", {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    path = write_run_report(folder, state, exchanges, None if changes.get("no_bench") else bench, TokenCounter())
    text = path.read_text()
    parser = Elements()
    parser.feed(text)
    return text, parser.tags


def test_the_page_is_self_contained_and_escapes_what_the_agent_wrote(tmp_path):
    text, tags = render(tmp_path)
    assert not [t for t, a in tags if t in ("script", "link", "iframe")]
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert EVIL not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_scores_by_category_and_phase_and_the_persona_cost(tmp_path):
    text, _ = render(tmp_path)
    assert re.search(r"<td>single</td><td class=\"num\">1</td><td class=\"num\">5.0</td>", text)
    assert re.search(r"<td>updated</td><td class=\"num\">1</td><td class=\"num\">0.0</td>", text)
    assert "4. The next morning" in text and "5. Before lunch" in text  # phase titles from the benchmark
    assert "<b>4,000</b>" in text and "<b>300</b>" in text and "1. Getting to know each other" in text


def test_the_decay_plot_has_a_point_per_dated_check(tmp_path):
    text, tags = render(tmp_path)
    circles = [a for t, a in tags if t == "circle"]
    assert len(circles) == 2 * 2  # d1 and d2 have ages (d9 is absent), on both plots
    assert all(a["class"] == "dot-b" for a in circles)  # both were asked after the new chat
    assert "family 1.1: My partner Jonas is a carpenter" in text


def test_checks_are_marked_where_asked_and_where_graded(tmp_path):
    _, tags = render(tmp_path)
    ids = {a.get("id"): a.get("class", "") for t, a in tags if a.get("id")}
    assert "check" in ids["turn-7"] and "check" in ids["turn-8"]  # d1 asked at 7, graded at 8 after a search
    assert "check" not in ids["turn-4"]
    assert ids["check-d1"] == "card s5" and ids["check-d2"] == "card s0" and ids["check-d9"] == "card s10"


def test_failures_link_the_session_trace_and_show_the_screenshot(tmp_path):
    text, tags = render(tmp_path, files={"traces/session-1.trace.zip": b"zip", "traces/session-0.trace.zip": b"zip",
                                         "failure-20260101-1.png": b"png"})
    card = text[text.index('id="failed-d2"'):]
    card = card[:card.index("<h")]  # d2 is the last imperfect answer
    assert 'href="traces/session-1.trace.zip"' in card and "session-0" not in card  # d2 was in session 1
    assert ("img", {"src": "failure-20260101-1.png", "alt": "failure-20260101-1.png",
                    "style": "max-width:100%;border:1px solid var(--line)"}) in tags
    assert "playwright show-trace traces/session-0.trace.zip" in text
    assert 'id="failed-d9"' not in text  # a perfect answer is not a failure


def test_without_the_benchmark_the_page_still_renders(tmp_path):
    text, _ = render(tmp_path, no_bench=True)
    assert "phase 4" in text and "of 10 planned" not in text and "Memory decay" in text


def test_an_empty_run_renders(tmp_path):
    state, _, _ = demo_run()
    state = state.model_copy(update={"evaluations": [], "turn": 0})
    html = RunReport(state, [], tmp_path, None, TokenCounter()).render()
    assert "No check graded yet" in html and "(0 turns)" in html


def test_a_card_quotes_every_bubble_the_grader_read_and_the_personas_own_grade(tmp_path):
    text, _ = render(tmp_path)
    card = text[text.index('id="failed-d1"'):text.index('id="failed-d2"')]
    assert "<summary>The chat from the question to the grade (what the grader read)</summary>" in card
    assert "turn 7: What does my partner do for a living?" in card and "I don&#39;t think you told me that." in card
    assert "turn 8: Please search your memory" in card and "<div class=reply>He is a carpenter.</div>" in card
    assert "The persona's summary: He is a carpenter." in card and "graded by rules" in card
    d2 = text[text.index('id="failed-d2"'):]
    assert "The persona's own grade: 10/10 — looks right" in d2[:d2.index("<h")]
    assert "<td>Graded by</td><td>the offline rule judge; the persona&#39;s own scores against it: exact 67 %" in text


def test_each_turn_s_work_is_shown_collapsed_beside_the_answer_escaped_and_cut(tmp_path):
    from persona.report.activity import SHOWN_CHARS
    from persona.state import AgentActivity

    state, exchanges, bench = demo_run()
    exchanges[8].activity = [
        AgentActivity(kind="status", title="Searching memory…"),
        AgentActivity(kind="tool", title=f"View Result from memory_search {EVIL}", text=f"- best 52:30 {EVIL}"),
        AgentActivity(kind="tool", title="Executing web_fetch...", text="x" * (SHOWN_CHARS + 123)),
        AgentActivity(kind="thought", title="Thought for 2 seconds", text="The note says 52:30.")]
    folder = tmp_path / state.run_id
    folder.mkdir()
    text = write_run_report(folder, state, exchanges, bench, TokenCounter()).read_text()
    row = text[text.index('id="row-9"'):text.index('id="row-10"')]
    work = row[row.index("<details class=work>"):row.index("</details>")]
    assert row.index("<details class=work>") < row.index('<div class="reply">')  # before the answer, as the chat shows it
    assert "<summary>the agent's work, not its answer: memory_search, web_fetch · 1 thought · 1 status line</summary>" in work
    assert '<div class="act act-tool"><div class=at>tool <code>memory_search</code> — View Result from memory_search ' \
           "&lt;script&gt;" in work
    assert "x" * SHOWN_CHARS + "<span class=muted>\n… 123 more character(s): transcript.jsonl has them all" in work
    assert EVIL not in text and text.count("<details class=work>") == 1
    assert "<tr><td>Agent activity</td><td>1 of 10 turn(s) showed work; tool use in 1 turn(s), 2 tool card(s): " \
           "memory_search ×1, web_fetch ×1; 1 thought(s); 1 status line(s)" in text
