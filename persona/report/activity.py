"""The agent's visible work (tool cards, thoughts, status lines), counted for the reports.

A driver records each turn's work beside the answer (`Exchange.activity`); it is never the answer.
This module names the tools it shows and counts it all: per run for report.md and report.html, per
check (the turns from its question to its grade) for `mmb export`.

A tool's name is read from the title the chat showed ("🔧 Used tool memory_search", "Using
memory_search", "View Result from memory_search", "Executing memory_search...", "Tool call
memory_search") by general rules, not per chat UI: the first name in it that is called with
arguments, quoted, or shaped like an identifier (memory_search, web.fetch, getWeather); else the one
word left once the words that frame a tool card (use, used, tool, call, result, from, ...) and
durations are taken out. A title
none of these reads (a bare "Tool output") is kept whole as the name, so nothing is dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from persona.state import AgentActivity, Exchange

_CALLED = re.compile(r"([A-Za-z_][\w.:/-]*?)\(")  # memory_search(query=...)
_QUOTED = re.compile(r"""[`"'“‘«*]+([^`"'”’»*\s]{1,80})[`"'”’»*]+""")  # `memory_search`, **search**
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*(?:[._:/-]\w+)+|\b\w*[A-Za-z]_\w*|\b\w*_[A-Za-z]\w*|\b[a-z]+[A-Z]\w*")
_WORD = re.compile(r"[^\W\d_][\w-]*")
_ASIDE = re.compile(r"\([^)]*\)|\[[^]]*\]|\d[\d.,:]*\s*[^\W\d_]{0,7}\b")  # "(0.4s)", "in 2.1 s": not a name
# Words that frame a tool card's title in the UIs' own wording, not names of tools.
_FRAMING = {
    "a", "an", "the", "of", "from", "for", "with", "to", "by", "in", "on",
    "tool", "tools", "function", "functions", "call", "calls", "called", "calling",
    "use", "used", "uses", "using", "run", "ran", "runs", "running", "execute", "executed", "executing",
    "invoke", "invoked", "invoking", "view", "viewing", "result", "results", "output", "input", "response",
    "completed", "finished", "done", "started", "starting", "step",
}
MAX_NAME = 80


def tool_name(title: str) -> str:
    """The tool a card's title names; the title itself (whitespace collapsed) when no name can be read."""
    flat = " ".join(title.split())
    named = []  # (where it starts, the name) of each pattern's first name; the first in the title wins
    for pattern in (_CALLED, _QUOTED, _IDENTIFIER):
        for found in pattern.finditer(flat):
            name = (found.group(1) if pattern.groups else found.group(0)).strip(" .:…")
            if name and name.lower() not in _FRAMING:
                named.append((found.start(), name))
                break
    if named:
        return min(named, key=lambda n: n[0])[1][:MAX_NAME]
    left = [w for w in _WORD.findall(_ASIDE.sub(" ", flat)) if w.lower() not in _FRAMING]
    return left[0][:MAX_NAME] if len(left) == 1 else flat[:MAX_NAME] or "(untitled)"


@dataclass
class ActivityCounts:
    """What the agent showed beside its answers over some turns."""

    turns: int = 0  # turns counted
    turns_with_work: int = 0  # turns that showed any work
    turns_with_tools: int = 0
    tools: Counter[str] = field(default_factory=Counter)  # tool name -> cards shown
    thoughts: int = 0
    status: int = 0

    @property
    def tool_cards(self) -> int:
        return sum(self.tools.values())

    @property
    def any(self) -> bool:
        return self.turns_with_work > 0

    def add(self, activity: list[AgentActivity]) -> None:
        self.turns += 1
        self.turns_with_work += bool(activity)
        self.turns_with_tools += any(a.kind == "tool" for a in activity)
        self.tools.update(tool_name(a.title) for a in activity if a.kind == "tool")
        self.thoughts += sum(a.kind == "thought" for a in activity)
        self.status += sum(a.kind == "status" for a in activity)

    @classmethod
    def of(cls, exchanges: list[Exchange], first: int | None = None, last: int | None = None) -> ActivityCounts:
        """Over every exchange, or those of turns first..last."""
        out = cls()
        for ex in exchanges:
            if (first is None or ex.turn >= first) and (last is None or ex.turn <= last):
                out.add(ex.activity)
        return out

    def by_tool(self) -> list[tuple[str, int]]:
        """Each tool with its count, most used first (ties by name)."""
        return sorted(self.tools.items(), key=lambda kv: (-kv[1], kv[0]))


def tool_cards(exchanges: list[Exchange], first: int, last: int) -> list[tuple[int, AgentActivity]]:
    """Each tool card of turns first..last, with its turn."""
    return [(ex.turn, a) for ex in exchanges if first <= ex.turn <= last for a in ex.activity if a.kind == "tool"]


SHOWN_CHARS = 4000  # of one card's text in report.html; transcript.jsonl keeps it all


@dataclass(frozen=True)
class ShownWork:
    """One item of a turn's activity as report.html shows it: a tool's name read from its title, the text
    cut at SHOWN_CHARS (`cut` says how many characters were left out)."""

    kind: str
    title: str
    tool: str | None
    text: str
    cut: int

    @classmethod
    def of(cls, a: AgentActivity) -> ShownWork:
        cut = max(len(a.text) - SHOWN_CHARS, 0)
        return cls(a.kind, a.title, tool_name(a.title) if a.kind == "tool" else None, a.text[:SHOWN_CHARS], cut)


def turn_summary(activity: list[AgentActivity]) -> str:
    """One turn's work in a few words: "memory_search ×2, web_fetch · 1 thought · 1 status line"."""
    counts = ActivityCounts()
    counts.add(activity)
    parts = [", ".join(name if n == 1 else f"{name} ×{n}" for name, n in counts.by_tool())] if counts.tools else []
    parts += [f"{counts.thoughts} thought{'s' if counts.thoughts > 1 else ''}"] if counts.thoughts else []
    parts += [f"{counts.status} status line{'s' if counts.status > 1 else ''}"] if counts.status else []
    return " · ".join(parts)
