"""Fact files: `# Title`, `## N. Section`, `N.M fact`; parsed once, then kept as live copies in the run state.

The benchmark's files are never written: edits go to the copies in state.json.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, PrivateAttr

from persona.errors import InputError, Problem
from persona.textfile import read_user_text

DELETED = "—"
_TITLE = re.compile(r"^#\s+(?P<title>\S.*?)\s*$")
_SECTION = re.compile(r"^##\s+(?P<num>\d+)\.\s*(?P<title>\S.*?)\s*$")
_FACT = re.compile(r"^(?P<id>(?P<sec>\d+)\.(?P<n>\d+))\.?\s+(?P<text>\S.*?)\s*$")


class FactEvent(BaseModel):
    """Something that happened to a fact in a run: told at turn T, edited at T2, deleted, added."""

    turn: int
    kind: Literal["told", "edited", "deleted", "added"]
    text: str  # the fact's text from then on


class FactChanges:
    """The facts of a run's live copies that changed since its store last saved them: a save appends
    those alone (persona/state_parts.py), never all the facts again."""

    def __init__(self) -> None:
        self._changed: dict[int, tuple[str, Fact]] = {}
        self.count = 0  # changes ever noted: it grows whenever the run tells, edits or adds a fact

    def note(self, file: str, fact: Fact) -> None:
        self._changed[id(fact)] = (file, fact)
        self.count += 1

    def take(self) -> list[tuple[str, Fact]]:
        """(fact file, fact) of each fact changed since the last take, in the order they first changed."""
        changed, self._changed = list(self._changed.values()), {}
        return changed

    def __deepcopy__(self, memo: dict) -> None:
        return None  # a copy of the facts is not the run's: its changes are nobody's to save


class Fact(BaseModel):
    id: str
    text: str
    told_turn: int | None = None  # agent turn after which it counted as told; None = not told yet
    changed_turn: int | None = None  # last facts_edit, for memory-decay analysis
    history: list[FactEvent] = []  # in a run's live copy: its events, in order
    _changes: FactChanges | None = PrivateAttr(None)  # a run's live copy: who saves each change
    _file: str = PrivateAttr("")

    @property
    def deleted(self) -> bool:
        return self.text == DELETED

    def mark_told(self, turn: int) -> None:
        if self.told_turn is None:
            self.told_turn = turn
            self.history.append(FactEvent(turn=turn, kind="told", text=self.text))
            self._changed()

    def change(self, text: str, turn: int) -> None:
        """A new text (`—` deletes); a change the persona tells counts as telling the fact."""
        self.text = text.strip() or DELETED
        self.changed_turn = turn
        self.told_turn = self.told_turn if self.told_turn is not None else turn
        self.history.append(FactEvent(turn=turn, kind="deleted" if self.deleted else "edited", text=self.text))
        self._changed()

    def _changed(self) -> None:
        if self._changes is not None:
            self._changes.note(self._file, self)

    def __eq__(self, other: object) -> bool:  # who saves a fact's changes is no part of its value
        return type(other) is type(self) and self.__dict__ == other.__dict__


class FactSection(BaseModel):
    number: int
    title: str
    facts: list[Fact] = []


class FactFile(BaseModel):
    name: str  # file stem: how phases and tools refer to it ("family")
    title: str
    sections: list[FactSection] = []
    _changes: FactChanges | None = PrivateAttr(None)

    def __eq__(self, other: object) -> bool:  # as for Fact: the fields alone
        return type(other) is type(self) and self.__dict__ == other.__dict__

    def track(self, changes: FactChanges) -> None:
        """From now on each change of a fact of this file (a fact added too) is noted in `changes`."""
        self._changes = changes
        for fact in self.all_facts():
            fact._changes, fact._file = changes, self.name

    def all_facts(self) -> list[Fact]:
        return [f for s in self.sections for f in s.facts]

    def live_facts(self) -> list[Fact]:
        return [f for f in self.all_facts() if not f.deleted]

    def get(self, fact_id: str) -> Fact | None:
        return next((f for f in self.all_facts() if f.id == fact_id), None)

    def section(self, number: int) -> FactSection | None:
        return next((s for s in self.sections if s.number == number), None)

    def untold(self) -> list[Fact]:
        return [f for f in self.live_facts() if f.told_turn is None]

    def add(self, section_number: int, text: str, turn: int | None = None) -> Fact:
        """A new fact with the next free id of its section; with `turn`, told then (a run's facts_add)."""
        section = self.section(section_number)
        if section is None:
            raise KeyError(section_number)
        taken = [int(f.id.split(".")[1]) for f in section.facts]
        fact = Fact(id=f"{section_number}.{max(taken, default=0) + 1}", text=text)
        if turn is not None:
            fact.told_turn = fact.changed_turn = turn
            fact.history.append(FactEvent(turn=turn, kind="added", text=text))
        section.facts.append(fact)
        fact._changes, fact._file = self._changes, self.name
        fact._changed()
        return fact

    def render(self, facts: list[Fact] | None = None) -> str:
        """The file as markdown; with `facts`, only those (and their section headings)."""
        keep = None if facts is None else {f.id for f in facts}
        lines = [f"# {self.title}"]
        for s in self.sections:
            shown = [f for f in s.facts if keep is None or f.id in keep]
            if keep is not None and not shown:
                continue
            lines += ["", f"## {s.number}. {s.title}"] + [f"{f.id} {f.text}" for f in shown]
        return "\n".join(lines) + "\n"


def parse_fact_file(text: str, name: str, file: str) -> tuple[FactFile, list[Problem]]:
    """Parse fact-file markdown; problems carry file:line, and parsing goes on past them."""
    problems: list[Problem] = []
    title: str | None = None
    sections: list[FactSection] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("<!--"):
            continue
        if m := _SECTION.match(line):
            number = int(m["num"])
            if any(s.number == number for s in sections):
                problems.append(Problem(file, lineno, f"section {number} appears twice"))
            sections.append(FactSection(number=number, title=m["title"]))
        elif m := _TITLE.match(line):
            if title is not None:
                problems.append(Problem(file, lineno, "a second '# ' title; a fact file has one"))
            title = m["title"]
        elif m := _FACT.match(line):
            fid = m["id"]
            if not sections:
                problems.append(Problem(file, lineno, f"fact {fid} before any '## N. Section' heading"))
                continue
            if int(m["sec"]) != sections[-1].number:
                problems.append(
                    Problem(file, lineno, f"fact {fid} is under section {sections[-1].number}; "
                            f"its id must start with {sections[-1].number}.")
                )
            if fid in seen:
                problems.append(Problem(file, lineno, f"fact id {fid} repeats line {seen[fid]}"))
                continue
            seen[fid] = lineno
            sections[-1].facts.append(Fact(id=fid, text=m["text"]))
        else:
            problems.append(
                Problem(file, lineno, f"not a fact line (expected '# Title', '## N. Section' or 'N.M text'): {line[:60]!r}")
            )
    if title is None:
        problems.append(Problem(file, 1, "missing '# Title' line"))
    if not any(s.facts for s in sections):
        problems.append(Problem(file, 1, "no facts (lines like '1.1 text' under '## 1. Section')"))
    return FactFile(name=name, title=title or name, sections=sections), problems


def load_fact_file(path: Path, display: str) -> tuple[FactFile, list[Problem]]:
    try:
        text = read_user_text(path, display)
    except InputError as e:
        return FactFile(name=path.stem, title=path.stem), e.problems
    return parse_fact_file(text, path.stem, display)


def fact_file_name(ref: str) -> str:
    """'family', 'family.md', '`Family`' all name the fact file 'family'."""
    ref = ref.strip().strip("`'\"").strip()
    return ref[:-3] if ref.lower().endswith(".md") else ref
