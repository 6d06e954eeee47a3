"""Chapters split into phases at `## `, and the lines inside a phase that the engine reads.

The same parser serves `mmb validate`, the run, and the scripted persona (which reads the phase
text it was shown), so a line means the same thing everywhere.
"""

from __future__ import annotations

import re
from enum import Enum

from pydantic import BaseModel

from persona.benchmark.dates import DATE_MARK, StoryDate, parse_date_line
from persona.errors import Problem


class Category(str, Enum):
    single = "single"
    updated = "updated"
    aggregate = "aggregate"
    temporal = "temporal"
    preference = "preference"
    absent = "absent"


class FactMention(BaseModel):
    """`fact family 2.3` in phase prose, or `🔗 family 2.3` on a check line: one fact by its file and id."""

    file: str
    fact_id: str
    line: int = 0


class Check(BaseModel):
    id: str
    category: Category = Category.single
    question: str
    answer: str
    line: int = 0
    links: list[FactMention] | None = None  # stated on the line after 🔗; None: inferred (persona/benchmark/links.py)
    # An imported dataset's own category (`[single; source: single-hop]`), shown beside ours in reports.
    source_category: str | None = None
    # A trap the judge must not accept (`Wrong answer: ...` after the answer): LoCoMo's adversarial answer.
    wrong_answer: str | None = None

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
    body_line: int = 0  # line of the body's first line in the chapter file
    script: str | None = None
    script_line: int = 0  # line of the first code line in the chapter file
    checks: list[Check] = []
    edits: list[FactEdit] = []
    additions: list[FactAddition] = []
    fact_refs: list[str] = []  # fact files the phase asks to tell, in order of appearance
    mentions: list[FactMention] = []  # single facts the phase refers to by id
    date: StoryDate | None = None  # its `📅` line: the story's date (and time) from this phase on


ANSWER_MARKERS = ("Correct answer", "Правильный ответ")
WRONG_ANSWER_MARKERS = ("Wrong answer", "Неверный ответ")
_CHECK = re.compile(
    r"^\s*❓\s*(?P<id>\S+)\s+(?:\[(?P<cat>[^\]]*)\]\s*)?(?P<rest>.*)$"
)
_ANSWER = re.compile(r"\s*(?:" + "|".join(ANSWER_MARKERS) + r")\s*:\s*", re.IGNORECASE)
_WRONG_ANSWER = re.compile(r"\s*(?:" + "|".join(WRONG_ANSWER_MARKERS) + r")\s*:\s*", re.IGNORECASE)
_SOURCE = re.compile(r"^source\s*:\s*(?P<name>\S.*?)\s*$", re.IGNORECASE)  # `[single; source: single-hop]`
_EDIT = re.compile(r"^\s*✏\ufe0f?\s*(?P<file>[\w.-]+)\s+(?P<id>\d+\.\d+)\s*:\s*(?P<text>.*?)\s*$")
_ADD = re.compile(r"^\s*➕\s*(?P<file>[\w.-]+)\s+(?P<section>\d+)\s*:\s*(?P<text>.*?)\s*$")
DIRECTIVE_MARKS = ("❓", "✏", "➕", DATE_MARK)
LINK_MARK = "🔗"
# Whitespace inside an instruction: spaces, or a line break where the author wrapped the paragraph
# ("tell the facts\nfrom boat" is one instruction); a blank line ends it.
_WS = r"(?:[ \t]+(?:\n[ \t]*)?|\n[ \t]*)"
_FACT_REF = re.compile(rf"(?:facts{_WS}from|факты{_WS}из){_WS}`?(?P<name>[\w-]+)(?:\.md)?`?", re.IGNORECASE)
# "fact family 2.3", "facts family 2.3 and 2.4", "fact 2.3 of family", "факт family 2.3", "факт 2.3 из family"
_IDS = rf"\d+\.\d+(?:{_WS}?(?:,|and|и){_WS}?\d+\.\d+)*"
_MENTION = re.compile(
    rf"(?<![\w-])(?:facts?|факт[а-я]*){_WS}(?:`?(?P<file>[A-Za-z_][\w-]*)`?{_WS}(?P<ids>{_IDS})"
    rf"|(?P<ids2>{_IDS}){_WS}(?:of|from|in|из){_WS}`?(?P<file2>[A-Za-z_][\w-]*)`?)",
    re.IGNORECASE,
)
# After 🔗 on a check line: "family 1.2", "family 1.2, 1.3; running 2.1", or "none".
_LINKED = re.compile(r"(?P<file>[A-Za-z_][\w-]*)\s+(?P<ids>\d+\.\d+(?:\s*,\s*\d+\.\d+)*)")
_FENCE_OPEN = re.compile(r"^```\s*(js|javascript)\s*$", re.IGNORECASE)


def parse_directives(text: str, file: str, first_line: int = 1, *,
                     answers_required: bool = True) -> tuple[dict, list[Problem]]:
    """Checks, edits, additions, fact-file references and the date line (`📅`) in phase text.

    `answers_required=False` reads phase text as a persona with a judge sees it (`hide_answers`):
    check lines without their expected answers.
    """
    out: dict = {"checks": [], "edits": [], "additions": [], "fact_refs": [], "mentions": [], "date": None}
    problems: list[Problem] = []
    for offset, line in enumerate(text.splitlines()):
        lineno = first_line + offset
        if "❓" in line:
            check = _parse_check(line, file, lineno, problems, answers_required)
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
        elif DATE_MARK in line:
            story, why = parse_date_line(line)
            if story is None:
                problems.append(Problem(file, lineno, why or ""))
            elif out["date"] is not None:
                problems.append(Problem(file, lineno, f"a second date line in one phase (the first is at line "
                                        f"{out['date'].line}): a phase happens on one date"))
            else:
                out["date"] = story.model_copy(update={"line": lineno})
    prose = _prose(text)
    out["mentions"] = fact_mentions(prose, first_line)
    for _, name in fact_refs_at(text, first_line):
        if name not in out["fact_refs"]:
            out["fact_refs"].append(name)
    return out, problems


def _prose(text: str) -> str:
    """The text with its check, edit and addition lines blanked (kept as empty lines: line numbers hold)."""
    return "\n".join("" if any(mark in line for mark in DIRECTIVE_MARKS) else line for line in text.splitlines())


def _line_at(text: str, pos: int, first_line: int) -> int:
    return first_line + text.count("\n", 0, pos)


def fact_refs_at(text: str, first_line: int = 1) -> list[tuple[int, str]]:
    """'tell the facts from family' in phase text, even wrapped over two lines: (line, file) in order."""
    prose = _prose(text)
    return [(_line_at(prose, m.start(), first_line), m["name"]) for m in _FACT_REF.finditer(prose)]


def fact_mentions(text: str, first_line: int = 1) -> list[FactMention]:
    """Single facts named by id in prose ("fact family 2.3"), each with the line where it starts."""
    found = []
    for m in _MENTION.finditer(text):
        file, ids = (m["file"], m["ids"]) if m["file"] else (m["file2"], m["ids2"])
        lineno = _line_at(text, m.start(), first_line)
        found += [FactMention(file=file, fact_id=i, line=lineno) for i in re.findall(r"\d+\.\d+", ids)]
    return found


def stray_directives(text: str, file: str, first_line: int, where: str) -> list[Problem]:
    """Check, edit and addition lines where no phase reads them: they would be silently ignored."""
    return [Problem(file, first_line + i, f"this {_mark_name(line)} line {where} is never shown to the persona; "
                    "move it into a '## ' phase")
            for i, line in enumerate(text.splitlines()) if any(m in line for m in DIRECTIVE_MARKS)]


def _mark_name(line: str) -> str:
    return "check" if "❓" in line else "edit" if "✏" in line else "addition" if "➕" in line else "date"


def hide_answers(text: str) -> str:
    """Phase text as a persona with a judge sees it: each check line without its expected answer."""
    return "\n".join(_ANSWER.split(line, maxsplit=1)[0].rstrip() if "❓" in line else line for line in text.split("\n"))


def _parse_check(line: str, file: str, lineno: int, problems: list[Problem], answers_required: bool = True) -> Check | None:
    m = _CHECK.match(line)
    if not m:
        problems.append(Problem(file, lineno, "a check must read '❓ ID [CATEGORY] QUESTION Correct answer: ANSWER'"))
        return None
    rest, _, linked = m["rest"].partition(LINK_MARK)
    parts = _ANSWER.split(rest, maxsplit=1)
    if not answers_required and len(parts) == 1:
        parts.append("")
    elif len(parts) < 2 or not parts[1].strip():
        problems.append(Problem(file, lineno, f"check {m['id']} has no expected answer ('Correct answer: ...')"))
        return None
    links = _parse_links(linked, lineno) if LINK_MARK in m["rest"] else None
    if links is not None and not links and linked.strip().lower() != "none":
        problems.append(Problem(file, lineno, f"check {m['id']}: after {LINK_MARK} name its facts "
                                "('family 1.2, 1.3; running 2.1') or write 'none'"))
        return None
    category, _, source = (m["cat"] or "single").partition(";")
    category = category.strip().lower()
    if category not in Category.__members__:
        allowed = ", ".join(Category.__members__)
        problems.append(Problem(file, lineno, f"check {m['id']}: unknown category [{category}] (one of: {allowed})"))
        return None
    source_category = None
    if source.strip():
        if not (s := _SOURCE.match(source.strip())):
            problems.append(Problem(file, lineno, f"check {m['id']}: after ';' in the brackets write the dataset's own "
                                    f"category as 'source: NAME' ([{category}; source: single-hop])"))
            return None
        source_category = s["name"]
    question = parts[0].strip()
    if _WRONG_ANSWER.search(question):  # the persona sees the question part: a trap there would be told
        problems.append(Problem(file, lineno, f"check {m['id']}: 'Wrong answer:' goes after 'Correct answer:'"))
        return None
    if not question:
        problems.append(Problem(file, lineno, f"check {m['id']} has no question"))
        return None
    answer, *wrong = _WRONG_ANSWER.split(parts[1], maxsplit=1)
    if answers_required and not answer.strip():
        problems.append(Problem(file, lineno, f"check {m['id']} has no expected answer ('Correct answer: ...')"))
        return None
    if wrong and not wrong[0].strip():
        problems.append(Problem(file, lineno, f"check {m['id']}: 'Wrong answer:' with nothing after it"))
        return None
    return Check(id=m["id"], category=Category(category), question=question, answer=answer.strip(), line=lineno,
                 links=links, source_category=source_category, wrong_answer=wrong[0].strip() if wrong else None)


def _parse_links(text: str, lineno: int) -> list[FactMention]:
    """'family 1.2, 1.3; running 2.1' -> three facts; anything else in the text makes it invalid (empty)."""
    found, rest = [], text
    for m in _LINKED.finditer(text):
        found += [FactMention(file=m["file"], fact_id=i, line=lineno) for i in re.findall(r"\d+\.\d+", m["ids"])]
        rest = rest.replace(m.group(0), "", 1)
    return found if not rest.strip(" \t;,.") else []


def split_chapter(text: str, chapter: str, first_index: int) -> tuple[list[Phase], list[Problem]]:
    """Split a chapter into phases; text before the first '## ' is an author's note."""
    problems: list[Problem] = []
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("## ")]
    if not heads:
        return [], [Problem(chapter, 1, "no phases: a chapter needs at least one '## ' section")]
    problems += stray_directives("\n".join(lines[: heads[0]]), chapter, 1, "in the note before the first '## '")
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
    body_line = next((i + 1 for i in range(body_start, end) if lines[i].strip()), end)
    for i in range(body_start, end):
        if _FENCE_OPEN.match(lines[i].strip()):
            problems.append(Problem(chapter, i + 1, "a JS block must come first in its phase, right after the '## ' heading"))
    directives, directive_problems = parse_directives("\n".join(lines[body_start:end]), chapter, body_start + 1)
    phase = Phase(
        index=index, chapter=chapter, title=title, line=start + 1, body=body, body_line=body_line,
        script=script, script_line=script_line, **directives,
    )
    return phase, problems + directive_problems
