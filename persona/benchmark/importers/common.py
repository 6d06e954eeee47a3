"""What every importer builds, what it counts, and how it reads its input.

An importer reads a dataset file, checks it with pydantic (a bad value is an InputError naming the
file, the line and the JSON path), and builds an `Imported` benchmark: fact files, phases, checks.
Whatever it repairs or leaves out is counted in a `Tally`, which the command prints and SOURCE.md
keeps: nothing an import changes is silent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from persona.benchmark.dates import StoryDate, spoken
from persona.benchmark.phases import Category
from persona.errors import InputError, Problem
from persona.jsonc import JsonPath, line_of, pydantic_problems, text_lines
from persona.textfile import read_user_text

EXAMPLES = 3  # examples kept per counted kind


@dataclass
class Tally:
    """What an import repaired or dropped: each kind counted, with a few examples."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, what: str, example: str | None = None, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n
        if example is not None and len(shown := self.examples.setdefault(what, [])) < EXAMPLES:
            shown.append(example[:120])

    def merge(self, other: Tally) -> None:
        for what, n in other.counts.items():
            self.counts[what] = self.counts.get(what, 0) + n
            for example in other.examples.get(what, []):
                self.add(what, example, 0)

    def lines(self) -> list[str]:
        out = []
        for what, n in self.counts.items():
            shown = self.examples.get(what)
            out.append(f"{n} {what}" + (f" (e.g. {'; '.join(shown)})" if shown else ""))
        return out


@dataclass
class Fact:
    text: str
    sources: list[str] = field(default_factory=list)  # the dataset's ids for it (LoCoMo dialogue ids: "D1:3")


@dataclass
class Section:
    title: str
    facts: list[Fact] = field(default_factory=list)


@dataclass
class FactFileOut:
    name: str  # file stem, how phases name it
    title: str
    sections: list[Section] = field(default_factory=list)

    def numbered(self) -> list[tuple[str, Fact]]:
        """Each fact with the id it gets in the file: `N.M`, section N from 1, fact M from 1."""
        return [(f"{s}.{f}", fact) for s, section in enumerate(self.live_sections(), 1)
                for f, fact in enumerate(section.facts, 1)]

    def live_sections(self) -> list[Section]:
        return [s for s in self.sections if s.facts]

    def fact_count(self) -> int:
        return sum(len(s.facts) for s in self.sections)


@dataclass
class CheckOut:
    id: str
    category: Category
    source_category: str
    question: str
    items: list[str]  # the expected answer: one item, or the items of a list
    wrong_answer: str | None = None
    links: list[tuple[str, str]] = field(default_factory=list)  # (fact file, fact id); empty: `🔗 none`


@dataclass
class PhaseOut:
    title: str
    body: str
    require: list[str] = field(default_factory=list)  # fact files every fact of which must be told
    new_session: bool = False
    checks: list[CheckOut] = field(default_factory=list)
    date: StoryDate | None = None  # the phase's `📅` line: the story's date, told to the agent


@dataclass
class ChapterOut:
    name: str  # file name
    title: str
    note: str  # the author's note before the first phase
    phases: list[PhaseOut] = field(default_factory=list)


@dataclass
class Imported:
    """One benchmark an importer built, ready for writer.write_benchmark."""

    folder: str  # the folder name when several are written side by side
    title: str
    description: str
    instructions: str
    profile: FactFileOut
    fact_files: list[FactFileOut]
    chapters: list[ChapterOut]
    source: list[str]  # SOURCE.md before the counts: dataset, sample, licence, the mapping
    tally: Tally = field(default_factory=Tally)
    language: str = "en"

    @property
    def checks(self) -> list[CheckOut]:
        return [c for ch in self.chapters for p in ch.phases for c in p.checks]

    @property
    def phases(self) -> list[PhaseOut]:
        return [p for ch in self.chapters for p in ch.phases]

    def fact_count(self) -> int:
        return sum(ff.fact_count() for ff in self.fact_files)


# -- reading the input ----------------------------------------------------------------------------


@dataclass
class Located:
    """A parsed JSON file and how to name the line of any of its values (the map is built only when a
    problem needs it: a dataset file may be hundreds of MB)."""

    path: Path
    data: Any
    text: str
    _lines: dict[JsonPath, int] | None = None

    def line(self, path: JsonPath) -> int | None:
        if self._lines is None:
            self._lines = text_lines(self.text)
        return line_of(self._lines, path)

    def problem(self, path: JsonPath, message: str) -> Problem:
        return Problem(str(self.path), self.line(path), f"{dotted(path)}: {message}")

    def validate(self, model: type[BaseModel], value: Any, path: JsonPath) -> Any:
        """`value` (found at `path`) as `model`; an InputError naming each bad field's line and path."""
        try:
            return model.model_validate(value)
        except ValidationError as e:
            if self._lines is None:
                self._lines = text_lines(self.text)
            raise InputError(pydantic_problems(e, self.path, self._lines, path)) from None


def dotted(path: JsonPath) -> str:
    """("qa", 3, "answer") -> "qa.3.answer", as pydantic's problems name a field; the top level "(top level)"."""
    return ".".join(str(p) for p in path) or "(top level)"


def read_json(path: Path) -> Located:
    """A dataset file: JSON (a byte-order mark is allowed); a syntax error names its line."""
    text = read_user_text(path, path)
    text = text.removeprefix("\ufeff")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError.single(path, e.lineno, f"not valid JSON: {e.msg} (column {e.colno})") from None
    return Located(path, data, text)


# -- text as the benchmark files need it ----------------------------------------------------------


def one_line(text: str, tally: Tally, what: str) -> str:
    """Whitespace runs (line breaks too) as one space: fact and check lines are single lines."""
    flat = " ".join(str(text).split())
    if "\n" in str(text).strip():
        tally.add(f"{what} with line breaks joined into one line", flat[:60])
    return flat


_DATE_TIME = re.compile(  # LoCoMo: "1:56 pm on 8 May, 2023"
    r"^\s*(?P<h>\d{1,2}):(?P<m>\d{2})\s*(?P<ampm>[ap]\.?m\.?)\s+on\s+(?P<d>\d{1,2})\s+(?P<mon>[A-Za-z]+),?\s+(?P<y>\d{4})\s*$",
    re.IGNORECASE)
_SLASHED = re.compile(  # LongMemEval: "2023/05/30 (Tue) 23:40"
    r"^\s*(?P<y>\d{4})[/-](?P<mo>\d{1,2})[/-](?P<d>\d{1,2})(?:\s*\(\w+\))?(?:\s+(?P<h>\d{1,2}):(?P<m>\d{2}))?\s*$")


def parse_when(raw: str) -> datetime | None:
    """A dataset's date (and time), or None when it is in no form we know."""
    try:
        if m := _DATE_TIME.match(raw):
            hour = int(m["h"]) % 12 + (12 if m["ampm"].lower().startswith("p") else 0)
            day = datetime.strptime(f"{m['d']} {m['mon'][:3]} {m['y']}", "%d %b %Y")
            return day.replace(hour=hour, minute=int(m["m"]))
        if m := _SLASHED.match(raw):
            return datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"] or 0), int(m["m"] or 0))
    except ValueError:
        return None
    return None


def story_date(raw: str) -> StoryDate | None:
    """A dataset's date as a phase's `📅` line gives it (with its time when the dataset has one)."""
    when = parse_when(raw)
    return None if when is None else StoryDate(when=when, has_time=bool(re.search(r"\d:\d\d", raw)))


def say_date(raw: str | None, tally: Tally, what: str) -> tuple[str, StoryDate | None]:
    """A dataset date as a phase title says it ('Monday, 8 May 2023, 1:56 pm'), and the date for its
    `📅` line when it could be read."""
    if not raw or not str(raw).strip():
        tally.add(f"{what} without a date (the phase has no date line)")
        return "a day the dataset does not date", None
    story = story_date(str(raw))
    if story is None:
        tally.add(f"{what} with a date in an unknown form (no date line; the brief quotes it)", str(raw))
        return " ".join(str(raw).split()), None
    return spoken(story), story
