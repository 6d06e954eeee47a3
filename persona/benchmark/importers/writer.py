"""An imported benchmark written as a folder: benchmark.json, instructions, profile, fact files,
chapters, and SOURCE.md with the dataset, the licence, the mapping and every count.

Text from a dataset is data: it goes only into fact lines and check lines, made single lines, with
the marks the engine reads on a line (❓ ✏️ ➕ 🔗, `Correct answer:`, `Wrong answer:`) taken out and
counted, so no dataset text can become an instruction. Phase prose is the importer's own words.
The folder is written beside its target and renamed into place: a failed import leaves nothing half
written.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

from persona.benchmark.importers.common import ChapterOut, CheckOut, FactFileOut, Imported, Tally, one_line
from persona.benchmark.loader import MANIFEST
from persona.benchmark.phases import ANSWER_MARKERS, DIRECTIVE_MARKS, LINK_MARK, WRONG_ANSWER_MARKERS
from persona.errors import InputError

SOURCE_FILE = "SOURCE.md"
_MARKERS = re.compile(r"(" + "|".join(ANSWER_MARKERS + WRONG_ANSWER_MARKERS) + r")\s*:", re.IGNORECASE)
_MARK_CHARS = re.compile("[" + "".join(DIRECTIVE_MARKS) + LINK_MARK + "\ufe0f]")


def inert(text: str, tally: Tally, what: str) -> str:
    """Dataset text for a fact or check line: one line, no marks the engine would read (counted)."""
    flat = one_line(text, tally, what)
    clean = _MARK_CHARS.sub("", flat)
    clean = _MARKERS.sub(lambda m: m[1] + " -", clean)
    if clean != flat:
        tally.add(f"{what} with a mark the engine reads (❓ ✏️ ➕ 🔗, 'Correct answer:') taken out", flat[:60])
    return clean


def render_fact_file(ff: FactFileOut, tally: Tally) -> str:
    lines = [f"# {inert(ff.title, tally, 'fact file title')}"]
    for number, section in enumerate(ff.live_sections(), 1):
        lines += ["", f"## {number}. {inert(section.title, tally, 'section title')}"]
        lines += [f"{number}.{i} {inert(fact.text, tally, 'fact')}" for i, fact in enumerate(section.facts, 1)]
    return "\n".join(lines) + "\n"


def check_line(check: CheckOut, tally: Tally) -> str:
    source = re.sub(r"[\[\];]", " ", check.source_category).strip()
    answer = "; ".join(inert(item, tally, "expected answer") for item in check.items)
    line = (f"❓ {check.id} [{check.category.value}; source: {source}] {inert(check.question, tally, 'question')} "
            f"Correct answer: {answer}")
    if check.wrong_answer:
        line += f" Wrong answer: {inert(check.wrong_answer, tally, 'wrong answer')}"
    by_file: dict[str, list[str]] = {}
    for file, fact_id in check.links:
        by_file.setdefault(file, []).append(fact_id)
    links = "; ".join(f"{file} {', '.join(ids)}" for file, ids in by_file.items())
    return f"{line} {LINK_MARK} {links or 'none'}"


def render_chapter(chapter: ChapterOut, tally: Tally) -> str:
    lines = [f"# {chapter.title}", "", chapter.note]
    for phase in chapter.phases:
        lines += ["", f"## {phase.title}"]
        script = []
        if phase.require:
            script.append(f"vars.require_all_facts = {json.dumps(phase.require)};")
        if phase.new_session:
            script.append("await bench.newSession();")
        if script:
            lines += ["```js", *script, "```"]
        if phase.date is not None:
            lines.append(phase.date.line_text())
        lines.append(phase.body)
        if phase.checks:
            lines.append("")
            lines += [check_line(c, tally) for c in phase.checks]
    return "\n".join(lines) + "\n"


def render(bench: Imported) -> dict[str, str]:
    """Every file of the folder by name; SOURCE.md last, with the counts the others added."""
    files = {
        MANIFEST: json.dumps({
            "title": bench.title, "language": bench.language, "description": bench.description,
            "chapters": [c.name for c in bench.chapters], "fact_files": [f"{ff.name}.md" for ff in bench.fact_files],
            "docs": [SOURCE_FILE],
        }, ensure_ascii=False, indent=2) + "\n",
        "instructions.md": bench.instructions.rstrip() + "\n",
        "profile.md": render_fact_file(bench.profile, bench.tally),
    }
    for ff in bench.fact_files:
        files[f"{ff.name}.md"] = render_fact_file(ff, bench.tally)
    for chapter in bench.chapters:
        files[chapter.name] = render_chapter(chapter, bench.tally)
    files[SOURCE_FILE] = source_md(bench)
    return files


def source_md(bench: Imported) -> str:
    counts = bench.tally.lines()
    lines = [*bench.source, "", "## What was repaired or left out", ""]
    lines += [f"- {line}" for line in counts] or ["- nothing: every record was used as it is"]
    return "\n".join(lines) + "\n"


def write_benchmark(bench: Imported, folder: Path, force: bool = False) -> list[Path]:
    """Write the folder (built beside it, then renamed into place); an existing one only with `force`."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())) and not force:
        raise InputError.single(folder, None, "exists and is not empty: choose another folder, or --force to replace it")
    files = render(bench)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        staging.chmod(0o755)  # mkdtemp's 0700 would make the benchmark private
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder) if folder.is_dir() else folder.unlink()
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [folder / name for name in files]
