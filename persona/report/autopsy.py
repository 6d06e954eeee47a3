"""The memory autopsy: for each check, what the agent's memory held when the question was asked.

With `agent.memory` set, the run keeps snapshots of the agent's memory (memory/, see snapshots.py).
Each graded check is judged against the last snapshot taken before its question, and gets one class:

- `retrieved`: the memory held the answer and the agent gave it (10/10);
- `stored`: the memory held the answer (or part of it), and the agent's answer was partly right
  (a list half given, a right answer only after "search your memory");
- `stored, not retrieved`: the memory held the answer; the agent's answer missed it (0/10);
- `stale`: the memory held an older value of the fact, and not the new one;
- `never stored`: the memory held neither (a right answer then came from the chat's context);
- `retrieved, not used`: a tool card the chat showed between the question and the grade (a memory
  search and its result, a file read) held an item the agent's answer then missed: the memory worked,
  the answer did not use it. Read from the transcript's activity, it needs no snapshot and comes
  before the snapshot's class; a right answer whose tool cards held it is `retrieved` the same way.

"Held" is decided line by line, like the scripted grader: every number of the expected value in
one line (number words read as digits: "two kids" holds 2), or its words; the line must also share
a word with the question or the linked facts, so a stray "2" elsewhere does not count. A computed
answer (a sum, a count) is held when every fact it is linked to is. Where this finds nothing, a
judge model's verdict on the snapshot (memory/judged.json, written at the run's end when a judge
is configured) may find a paraphrase. `absent` checks are not classified: they have no fact.
A tool card is matched the same way, line by line (its title and text); thoughts and status lines
are the agent's own words, not something it retrieved, and are not read. A run without snapshots
gets an autopsy when its chat showed any tool card: the checks its cards decide are classified, the
others are listed as not classified.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from persona.benchmark.facts import DELETED, Fact, FactEvent, FactFile
from persona.benchmark.grading import matches, stems
from persona.benchmark.links import NUMBER_WORDS, CheckLinks
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Category
from persona.report.activity import tool_cards, tool_name
from persona.report.decay import asked_turn, run_links
from persona.report.snapshots import JudgedMemory, MemoryIndex, MemoryStore, Snapshot
from persona.state import Evaluation, Exchange, RunState

Class = Literal["retrieved", "stored", "retrieved, not used", "stored, not retrieved", "stale", "never stored"]
CLASSES: list[Class] = ["retrieved", "stored", "retrieved, not used", "stored, not retrieved", "stale", "never stored"]
CSS_CLASS = {"retrieved": "s10", "stored": "s5", "retrieved, not used": "s0", "stored, not retrieved": "s0", "stale": "s0",
             "never stored": "s0"}
MAX_DIFF_LINES = 400
_NUMBER_WORD = re.compile(r"\b(" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class MemoryLine:
    file: str  # a snapshot's file; for a tool card the chat showed, the tool's name
    line: int
    text: str
    turn: int | None = None  # a tool card's turn

    @property
    def where(self) -> str:
        if self.turn is None:
            return f"{self.file}:{self.line}"
        return f"turn {self.turn}, {self.file}, " + (f"line {self.line}" if self.line else "its title")


@dataclass
class CheckAutopsy:
    evaluation: Evaluation
    klass: Class
    why: str  # one sentence for the report
    snapshot: Snapshot | None  # the last before the question; None: classified from the chat's tool cards alone
    asked_turn: int
    found: list[MemoryLine] = field(default_factory=list)  # lines that hold the answer (or its facts)
    old: list[MemoryLine] = field(default_factory=list)  # lines that hold an older value
    history: list[str] = field(default_factory=list)  # each linked fact's life in the run
    by_judge: str | None = None  # the judge that found a paraphrase


@dataclass
class SessionGrowth:
    session: int
    first: Snapshot
    last: Snapshot

    @property
    def added_lines(self) -> int:
        return self.last.lines - self.first.lines


@dataclass
class FileDiff:
    name: str
    lines: list[tuple[str, str]]  # ("add" | "del" | "same" | "gap", text)
    omitted: int = 0  # lines past MAX_DIFF_LINES, left out of the page (the snapshot folders have them)


@dataclass
class SnapshotDiff:
    before: Snapshot
    after: Snapshot
    files: list[FileDiff]

    @property
    def added(self) -> int:
        return sum(kind == "add" for f in self.files for kind, _ in f.lines)

    @property
    def removed(self) -> int:
        return sum(kind == "del" for f in self.files for kind, _ in f.lines)


@dataclass
class Autopsy:
    index: MemoryIndex | None  # None: no memory snapshots, only the chat's tool cards
    checks: list[CheckAutopsy]
    unclassified: list[tuple[Evaluation, str]]  # and why: absent, no snapshot before it

    def counts(self) -> dict[Class, int]:
        return {k: sum(c.klass == k for c in self.checks) for k in CLASSES}

    def by_category(self) -> list[tuple[str, dict[Class, int]]]:
        rows = []
        for cat in Category:
            mine = [c for c in self.checks if c.evaluation.category is cat]
            if mine:
                rows.append((cat.value, {k: sum(c.klass == k for c in mine) for k in CLASSES}))
        return rows

    @property
    def misses(self) -> list[CheckAutopsy]:
        return [c for c in self.checks if c.klass != "retrieved"]


def memory_autopsy(folder: Path, state: RunState, exchanges: list[Exchange],
                   bench: Benchmark | None = None) -> Autopsy | None:
    """The autopsy of a run, or None when it kept no memory snapshots (no agent.memory) and its chat
    showed no tool card."""
    store = MemoryStore(folder)
    index = store.load()
    if index is None and not any(a.kind == "tool" for ex in exchanges for a in ex.activity):
        return None
    judged = store.load_judged() if index is not None else {}
    texts: dict[int, list[MemoryLine]] = {}
    links = run_links(state, bench)
    original = bench.fact_files if bench else {}
    checks, unclassified = [], []
    by_turn = {ex.turn: ex for ex in exchanges}
    for e in state.evaluations:
        if e.category is Category.absent:
            unclassified.append((e, "absent: it asks about something never told"))
            continue
        asked = asked_turn(e, exchanges)
        linked = _linked_texts(links[e.check_id], state.facts, original, asked)
        window = [by_turn[t] for t in range(asked, e.turn + 1) if t in by_turn]  # from the question to the grade
        if shown := from_tool_cards(e, asked, tool_lines(window, asked, e.turn), linked):
            checks.append(shown)
            continue
        snapshot = next((s for s in reversed(index.snapshots) if s.turn < asked), None) if index else None
        if snapshot is None:
            unclassified.append((e, "no snapshot of the memory was taken before it was asked" if index else
                                 "no memory snapshot (agent.memory not set), and no tool card of its turns held the answer"))
            continue
        if snapshot.n not in texts:
            texts[snapshot.n] = memory_lines(store.read_snapshot(snapshot))
        checks.append(classify(e, asked, snapshot, texts[snapshot.n], linked, judged.get(e.check_id)))
    return Autopsy(index, checks, unclassified)


def memory_lines(files: dict[str, str]) -> list[MemoryLine]:
    return [MemoryLine(name, i, line.strip()) for name, text in sorted(files.items())
            for i, line in enumerate(text.splitlines(), 1) if line.strip()]


def tool_lines(exchanges: list[Exchange], first: int, last: int) -> list[MemoryLine]:
    """The lines of every tool card the chat showed in turns first..last, each with its tool and turn: its
    title as line 0, then its text's."""
    return [MemoryLine(tool_name(card.title), i, line.strip(), turn) for turn, card in tool_cards(exchanges, first, last)
            for i, line in enumerate([card.title, *card.text.splitlines()]) if line.strip()]


def with_digits(text: str) -> str:
    """Number words as digits, so "two kids" holds the answer 2."""
    return _NUMBER_WORD.sub(lambda m: NUMBER_WORDS[m.group(1).lower()], text)


def holding(value: str, lines: list[MemoryLine], anchors: set[str], *, answer: bool = False) -> list[MemoryLine]:
    """Lines that hold `value` by the grader's rule and share a word with `anchors` (when there are any).

    For an expected answer (`answer`) its own words do not anchor it: "14 km" must come with "run"
    or "Sunday", not just "km".
    """
    wanted = with_digits(value)
    anchors = anchors - stems(value) if answer else anchors
    return [line for line in lines if matches(wanted, with_digits(line.text))
            and (not anchors or stems(line.text) & anchors)]


def versions(fact: Fact, original: Fact | None) -> list[FactEvent]:
    """The fact's texts in the run: its recorded history, or (older states) what told_turn/changed_turn say."""
    if fact.history:
        return fact.history
    out = []
    if original is not None and fact.told_turn is not None:
        out.append(FactEvent(turn=fact.told_turn, kind="told", text=original.text))
    if fact.changed_turn is not None and (original is None or original.text != fact.text):
        out.append(FactEvent(turn=fact.changed_turn, kind="deleted" if fact.deleted else "edited", text=fact.text))
    return out


@dataclass
class _LinkedTexts:
    current: list[str] = field(default_factory=list)  # each linked fact's text when the question was asked
    older: list[str] = field(default_factory=list)  # texts they had before
    history: list[str] = field(default_factory=list)  # each one's life, for the report


def _linked_texts(links: CheckLinks, live: dict[str, FactFile], original: dict[str, FactFile], asked: int) -> _LinkedTexts:
    out = _LinkedTexts()
    for link in links.facts:
        fact = live[link.file].get(link.fact_id) if link.file in live else None
        if fact is None:
            continue
        events = versions(fact, original[link.file].get(link.fact_id) if link.file in original else None)
        before = [ev.text for ev in events if ev.turn < asked] or [fact.text]
        out.current.append(before[-1])
        out.older += [text for text in before[:-1] if text not in (before[-1], DELETED)]
        out.history.append(f"{link.file} {link.fact_id}: " + (", ".join(_event(ev, asked) for ev in events) or "never told"))
    return out


@dataclass
class _Held:
    """What some lines (a memory snapshot, tool cards) hold of a check's answer, by the matcher's rule."""

    items: list[str]
    found_items: list[list[MemoryLine]]  # per expected item
    found_facts: list[list[MemoryLine]]  # per linked fact, as it was when asked

    @property
    def all(self) -> bool:  # every item, or every fact a computed answer comes from
        return all(self.found_items) or (bool(self.found_facts) and all(self.found_facts))

    @property
    def some(self) -> bool:
        return any(self.found_items) or any(self.found_facts)

    @property
    def found(self) -> list[MemoryLine]:
        return _unique([line for hits in self.found_items + self.found_facts for line in hits])

    def item(self, item: str) -> bool:
        at = [i for i, name in enumerate(self.items) if " ".join(name.split()) == " ".join(item.split())]
        return bool(self.found_items[at[0]]) if at else False


def _anchors(e: Evaluation, texts: _LinkedTexts) -> set[str]:
    return stems(e.question).union(*(stems(t) for t in texts.current + texts.older))


def _held(e: Evaluation, lines: list[MemoryLine], texts: _LinkedTexts) -> _Held:
    anchors = _anchors(e, texts)
    items = [i.strip() for i in e.expected.split(";") if i.strip()]
    return _Held(items, [holding(item, lines, anchors, answer=True) for item in items],
                 [holding(text, lines, anchors) for text in texts.current if text != DELETED])


def missed_items(e: Evaluation) -> list[str]:
    """The expected items the agent's answer did not give: as the grader marked them; without marks (a
    persona's grade), every item of a 0, none otherwise (which of a partial answer's is not known)."""
    if e.items:
        return [m.item for m in e.items if not m.correct]
    return [i.strip() for i in e.expected.split(";") if i.strip()] if e.score == 0 else []


def from_tool_cards(e: Evaluation, asked: int, lines: list[MemoryLine], texts: _LinkedTexts) -> CheckAutopsy | None:
    """The class the chat's own tool cards show between the question and the grade, if they show one:
    `retrieved, not used` when they held an item the answer missed, `retrieved` when they held the whole
    answer and the agent gave it; None when they decide nothing (no card, or none held the answer)."""
    if not lines:
        return None
    held = _held(e, lines, texts)
    if not held.some:
        return None
    result = CheckAutopsy(e, "retrieved", "", None, asked, held.found, [], texts.history)
    first = f"{held.found[0].where}: {_short(held.found[0].text)!r}"
    unused = [item for item in missed_items(e) if held.item(item) or held.all]
    if unused:
        which = "" if len(unused) == len(held.items) else f" ({'; '.join(unused)} of {e.expected})"
        result.klass = "retrieved, not used"
        result.why = f"a tool card the chat showed held it{which} ({first}), but the agent answered {_short(e.answer)!r}"
        return result
    if e.score == 10 and held.all:
        result.why = f"a tool card the chat showed held it ({first}) and the agent gave it"
        return result
    return None


def classify(e: Evaluation, asked: int, snapshot: Snapshot, lines: list[MemoryLine], texts: _LinkedTexts,
             judged: JudgedMemory | None) -> CheckAutopsy:
    held = _held(e, lines, texts)
    items, found_items, held_all, held_some, found = held.items, held.found_items, held.all, held.some, held.found
    anchors = _anchors(e, texts)
    old = [line for text in texts.older for line in holding(text, lines, anchors) if line not in found]
    result = CheckAutopsy(e, "never stored", "", snapshot, asked, found, _unique(old), texts.history)
    judged = judged if judged is not None and judged.snapshot == snapshot.n else None
    if not held_some and judged is not None and any(judged.items):  # a paraphrase the matcher cannot see
        held_all, held_some, result.by_judge = all(judged.items), True, judged.judge
        result.found = [MemoryLine("(judge)", 0, judged.evidence)] if judged.evidence else []
    result.klass, result.why = _verdict(e, snapshot, held_all, held_some, bool(result.old), items, found_items, result)
    if judged is not None and judged.partial:
        result.why += f" (the judge {judged.judge} read only the beginning of this memory)"
    return result


def _verdict(e: Evaluation, snapshot: Snapshot, held_all: bool, held_some: bool, old: bool, items: list[str],
             found_items: list[list[MemoryLine]], r: CheckAutopsy) -> tuple[Class, str]:
    where = f"the memory {snapshot.label}"
    line = f" ({r.found[0].where}: {_short(r.found[0].text)!r})" if r.found else ""
    if held_all or (held_some and not old):
        part = "" if held_all else " (only " + "; ".join(i for i, hits in zip(items, found_items, strict=True)
                                                         if hits) + f" of {e.expected})"
        if e.score == 10 and held_all:
            return "retrieved", f"{where} held it{line} and the agent gave it"
        if e.score == 0 and held_all:
            return "stored, not retrieved", f"{where} held it{line}, but the agent answered {_short(e.answer)!r}"
        how = " after a memory search" if e.second_attempt else ""
        return "stored", f"{where} held it{part}{line}; the answer scored {e.score:g}/10{how}"
    if old:
        return "stale", (f"{where} held an older value ({r.old[0].where}: {_short(r.old[0].text)!r}), "
                         f"not {e.expected!r}")
    tail = "; the right answer came from the chat's context" if e.score == 10 else ""
    return "never stored", f"{where} ({snapshot.lines} lines) held no line with {e.expected!r}{tail}"


def _event(ev: FactEvent, asked: int) -> str:
    late = " (after the question)" if ev.turn >= asked else ""
    return f"{ev.kind} at turn {ev.turn}{late} {_short(ev.text, 50)!r}"


def _unique(lines: list[MemoryLine]) -> list[MemoryLine]:
    return list(dict.fromkeys(lines))


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- how the memory grew ------------------------------------------------------------------------


def growth(index: MemoryIndex) -> list[SessionGrowth]:
    """Per chat session: the memory at its first and its last snapshot."""
    out: dict[int, SessionGrowth] = {}
    for s in index.snapshots:
        if s.session in out:
            out[s.session].last = s
        else:
            out[s.session] = SessionGrowth(s.session, s, s)
    return list(out.values())


def diffs(store: MemoryStore, index: MemoryIndex, context: int = 1) -> list[SnapshotDiff]:
    """What changed from each snapshot to the next, file by file (unchanged files left out)."""
    out = []
    previous: tuple[Snapshot, dict[str, str]] | None = None
    for snapshot in index.snapshots:
        files = store.read_snapshot(snapshot)
        if previous is not None:
            before, old = previous
            changed = [_file_diff(name, old.get(name, ""), files.get(name, ""), context)
                       for name in sorted(set(old) | set(files)) if old.get(name) != files.get(name)]
            if changed:
                out.append(SnapshotDiff(before, snapshot, changed))
        previous = (snapshot, files)
    return out


def _file_diff(name: str, old: str, new: str, context: int) -> FileDiff:
    lines = []
    for raw in list(difflib.unified_diff(old.splitlines(), new.splitlines(), n=context, lineterm=""))[2:]:
        if raw.startswith("@@"):
            lines.append(("gap", raw))
        else:
            lines.append(({"+": "add", "-": "del"}.get(raw[:1], "same"), raw[1:]))
    return FileDiff(name, lines[:MAX_DIFF_LINES], max(0, len(lines) - MAX_DIFF_LINES))
