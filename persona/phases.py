"""Chapters split into phases at `## `, and the lines inside a phase that the engine reads.

The same parser serves `mmb validate`, the run, and the scripted persona (which reads the phase
text it was shown), so a line means the same thing everywhere.
"""

from __future__ import annotations

import re
from enum import Enum

from pydantic import BaseModel

from .errors import Problem


class Category(str, Enum):
    single = "single"
    updated = "updated"
    aggregate = "aggregate"
    temporal = "temporal"
    preference = "preference"
    absent = "absent"


class Check(BaseModel):
    id: str
    category: Category = Category.single
    question: str
    answer: str
    line: int = 0

    @property
    def items(self) -> list[str]:
        """Expected list items; a single-value answer is a list of one."""
        return [p.strip() for p in self.answer.split(";") if p.strip()]

    @property
    def is_list(self) -> bool:
        return len(self.items) > 1


class FactEdit(BaseModel):
    file: str
    fact_id: str
    text: str
    line: int = 0


class FactAddition(BaseModel):
    file: str
    section: int
    text: str
    line: int = 0


class Phase(BaseModel):
    index: int  # position in the whole scenario, 0-based
    chapter: str
    title: str
    line: int  # of the '## ' heading
    body: str  # what the persona is shown (the JS block removed)
    script: str | None = None
    script_line: int = 0  # line of the first code line in the chapter file
    checks: list[Check] = []
    edits: list[FactEdit] = []
    additions: list[FactAddition] = []
    fact_refs: list[str] = []  # fact files the phase asks to tell, in order of appearance


ANSWER_MARKERS = ("Correct answer", "Правильный ответ")
_CHECK = re.compile(
    r"^\s*❓\s*(?P<id>\S+)\s+(?:\[(?P<cat>[^\]]*)\]\s*)?(?P<rest>.*)$"
)
_ANSWER = re.compile(r"\s*(?:" + "|".join(ANSWER_MARKERS) + r")\s*:\s*", re.IGNORECASE)
_EDIT = re.compile(r"^\s*✏\ufe0f?\s*(?P<file>[\w.-]+)\s+(?P<id>\d+\.\d+)\s*:\s*(?P<text>.*?)\s*$")
_ADD = re.compile(r"^\s*➕\s*(?P<file>[\w.-]+)\s+(?P<section>\d+)\s*:\s*(?P<text>.*?)\s*$")
_FACT_REF = re.compile(r"(?:facts\s+from|факты\s+из)\s+`?(?P<name>[\w-]+)(?:\.md)?`?", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^```\s*(js|javascript)\s*$", re.IGNORECASE)


def parse_directives(text: str, file: str, first_line: int = 1) -> tuple[dict, list[Problem]]:
    """Checks, edits, additions and fact-file references in phase text."""
    out: dict = {"checks": [], "edits": [], "additions": [], "fact_refs": []}
    problems: list[Problem] = []
    for offset, line in enumerate(text.splitlines()):
        lineno = first_line + offset
        if "❓" in line:
            check = _parse_check(line, file, lineno, problems)
            if check:
                out["checks"].append(check)
        elif "✏" in line:
            if m := _EDIT.match(line):
                out["edits"].append(FactEdit(file=m["file"], fact_id=m["id"], text=m["text"], line=lineno))
            else:
                problems.append(Problem(file, lineno, "an edit line must read '✏️ FILE ID: NEW TEXT'"))
        elif "➕" in line:
            if m := _ADD.match(line):
                out["additions"].append(
                    FactAddition(file=m["file"], section=int(m["section"]), text=m["text"], line=lineno)
                )
            else:
                problems.append(Problem(file, lineno, "an addition line must read '➕ FILE SECTION: TEXT'"))
        for m in _FACT_REF.finditer(line):
            if m["name"] not in out["fact_refs"]:
                out["fact_refs"].append(m["name"])
    return out, problems


def _parse_check(line: str, file: str, lineno: int, problems: list[Problem]) -> Check | None:
    m = _CHECK.match(line)
    if not m:
        problems.append(Problem(file, lineno, "a check must read '❓ ID [CATEGORY] QUESTION Correct answer: ANSWER'"))
        return None
    parts = _ANSWER.split(m["rest"], maxsplit=1)
    if len(parts) < 2 or not parts[1].strip():
        problems.append(Problem(file, lineno, f"check {m['id']} has no expected answer ('Correct answer: ...')"))
        return None
    category = (m["cat"] or "single").strip().lower()
    if category not in Category.__members__:
        allowed = ", ".join(Category.__members__)
        problems.append(Problem(file, lineno, f"check {m['id']}: unknown category [{category}] (one of: {allowed})"))
        return None
    question = parts[0].strip()
    if not question:
        problems.append(Problem(file, lineno, f"check {m['id']} has no question"))
        return None
    return Check(id=m["id"], category=Category(category), question=question, answer=parts[1].strip(), line=lineno)


def split_chapter(text: str, chapter: str, first_index: int) -> tuple[list[Phase], list[Problem]]:
    """Split a chapter into phases; text before the first '## ' is an author's note."""
    problems: list[Problem] = []
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("## ")]
    if not heads:
        return [], [Problem(chapter, 1, "no phases: a chapter needs at least one '## ' section")]
    phases = []
    for n, start in enumerate(heads):
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        phase, phase_problems = _parse_phase(lines, start, end, chapter, first_index + n)
        phases.append(phase)
        problems += phase_problems
    return phases, problems


def _parse_phase(lines: list[str], start: int, end: int, chapter: str, index: int) -> tuple[Phase, list[Problem]]:
    problems: list[Problem] = []
    title = lines[start][3:].strip() or f"Phase {index + 1}"
    body_start = start + 1
    while body_start < end and not lines[body_start].strip():
        body_start += 1
    script, script_line = None, 0
    if body_start < end and _FENCE_OPEN.match(lines[body_start].strip()):
        close = next((i for i in range(body_start + 1, end) if lines[i].strip() == "```"), None)
        if close is None:
            problems.append(Problem(chapter, body_start + 1, "JS block is not closed with ```"))
            close = end
        script = "\n".join(lines[body_start + 1 : close])
        script_line = body_start + 2
        body_start = close + 1
    body = "\n".join(lines[body_start:end]).strip()
    for i in range(body_start, end):
        if _FENCE_OPEN.match(lines[i].strip()):
            problems.append(Problem(chapter, i + 1, "a JS block must come first in its phase, right after the '## ' heading"))
    directives, directive_problems = parse_directives("\n".join(lines[body_start:end]), chapter, body_start + 1)
    phase = Phase(
        index=index, chapter=chapter, title=title, line=start + 1, body=body,
        script=script, script_line=script_line, **directives,
    )
    return phase, problems + directive_problems
