"""`mmb export`: one row per graded check, as JSON, JSON Lines or CSV, for use elsewhere.

The row is `ExportRow` below; its JSON Schema is `mmb schema export` (schemas/export.schema.json).
Every row carries `schema_version`: a change that renames, removes or retypes a field raises it;
a new field does not. Rows come in run folder order, then grading order.

The agent's reply is its own text, as the chat showed it: every bubble from the turn that asked the
question to the turn that was graded (a memory-search retry included), never the persona's summary
of it, which is `persona_summary`, and never the work the chat showed beside it (tool cards,
thoughts, status lines), which is only counted (`tool_cards`, `thoughts`, `status_lines`).

CSV is for spreadsheets, which run a cell that starts with `=`, `+`, `-` or `@` as a formula. A text
cell that starts with one of those (or with `'`, tab or carriage return) is written with a `'` in
front, and `read_rows` takes it off again; the writer counts such cells so the command can say so.
JSON and JSON Lines are exact.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, Field, ValidationError

from persona.report.activity import ActivityCounts
from persona.report.catalog import run_folders
from persona.report.decay import CheckAge, check_ages
from persona.report.publish import read_run
from persona.state import Evaluation, Exchange, RunState
from persona.tokens import TokenCounter

EXPORT_SCHEMA_VERSION = 1
FORMATS = ("json", "jsonl", "csv")
Format = Literal["json", "jsonl", "csv"]
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")
log = logging.getLogger(__name__)


class ExportRow(BaseModel):
    """One graded check of one run."""

    schema_version: int = Field(EXPORT_SCHEMA_VERSION, description="Raised when a field is renamed, removed or retyped")
    run_id: str
    run_status: str = Field(description="new, running, finished, failed, interrupted")
    agent: str = Field(description="The driver profile the agent was reached through (oracle: a dry run)")
    persona: str = Field(description="The persona model that talked to the agent and graded it")
    benchmark: str = Field(description="The benchmark's folder name")
    benchmark_title: str
    check_id: str
    category: str
    source_category: str | None = Field(None, description="An imported dataset's own category of the check (LoCoMo's "
                                        "single-hop, multi-hop, ...); None for a benchmark of our own")
    phase: int = Field(description="The phase the check was asked in, from 1")
    question: str
    expected: str
    agent_reply: str = Field(description="The agent's own words: every bubble from the asking turn to the graded one")
    persona_summary: str = Field(description="The answer as the grader recorded it")
    score: float = Field(description="0-10, after the x0.5 rule for a right answer found only after a memory search")
    raw_score: float = Field(description="As the grader gave it")
    grader: str = Field(description="Who graded: the judge model, 'rules' (the offline judge) or the persona model")
    grader_comment: str
    retry: bool = Field(description="The answer came after the agent was asked to search its memory")
    session: int = Field(description="The chat session (0 = the first) the check was graded in")
    fact: str | None = Field(description="The fact the check asks about, `file id` (None: absent checks, or no link)")
    fact_turn: int | None = Field(description="The turn that fact was told, or last changed before the question")
    fact_basis: Literal["told", "changed"] | None = Field(description="Whether fact_turn is when it was told or changed")
    asked_turn: int = Field(description="The turn whose message asked the question")
    graded_turn: int = Field(description="The turn after whose reply the check was graded")
    tool_cards: int = Field(0, description="Tool cards (calls, results) the chat showed beside the agent's replies "
                            "from the asking turn to the graded one; never part of agent_reply (added in version 1)")
    thoughts: int = Field(0, description="Thoughts (reasoning) the chat showed in those turns (added in version 1)")
    status_lines: int = Field(0, description="Status lines the chat showed in those turns (added in version 1)")


def export_schema() -> dict:
    return ExportRow.model_json_schema()


def agent_reply(exchanges: list[Exchange], first: int, last: int) -> str:
    """The agent's bubbles of turns first..last, blank-line separated."""
    return "\n\n".join(b for ex in exchanges if first <= ex.turn <= last for b in ex.reply)


def rows_of_run(state: RunState, exchanges: list[Exchange], counter: TokenCounter) -> list[ExportRow]:
    ages = {a.check_id: a for a in check_ages(state, exchanges, counter)}
    return [_row(state, e, exchanges, ages.get(e.check_id)) for e in state.evaluations]


def _row(state: RunState, e: Evaluation, exchanges: list[Exchange], age: CheckAge | None) -> ExportRow:
    asked = age.asked_turn if age else e.turn
    dated = age is not None and age.turns is not None
    fact = age.fact if age else None
    work = ActivityCounts.of(exchanges, asked, e.turn)
    return ExportRow(
        run_id=state.run_id, run_status=state.status, agent=state.driver, persona=state.persona_model,
        benchmark=Path(state.benchmark).name, benchmark_title=state.benchmark_title, check_id=e.check_id,
        category=e.category.value, source_category=e.source_category, phase=e.phase + 1, question=e.question, expected=e.expected,
        agent_reply=agent_reply(exchanges, asked, e.turn), persona_summary=e.answer, score=e.score,
        raw_score=e.raw_score, grader=state.persona_model if e.grader == "persona" else e.grader,
        grader_comment=e.comment, retry=e.second_attempt,
        session=e.session, fact=f"{fact.file} {fact.fact_id}" if fact else None,
        fact_turn=asked - age.turns if dated else None, fact_basis=age.basis if dated else None,
        asked_turn=asked, graded_turn=e.turn, tool_cards=work.tool_cards, thoughts=work.thoughts,
        status_lines=work.status)


def _csv_cell(value: object) -> tuple[str, bool]:
    """The cell's text and whether it was guarded against a spreadsheet formula."""
    if value is None:
        return "", False
    if isinstance(value, bool):
        return ("true" if value else "false"), False
    if isinstance(value, str):
        return ("'" + value, True) if value.startswith(_FORMULA_START) else (value, False)
    return str(value), False


def render(rows: list[ExportRow], fmt: Format) -> tuple[str, int]:
    """The export's text and how many CSV cells got a `'` in front."""
    if fmt == "json":
        return json.dumps([r.model_dump(mode="json") for r in rows], ensure_ascii=False, indent=1) + "\n", 0
    if fmt == "jsonl":
        return "".join(r.model_dump_json() + "\n" for r in rows), 0
    out, guarded = io.StringIO(), 0
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(ExportRow.model_fields))
    for r in rows:
        cells = [_csv_cell(v) for v in r.model_dump().values()]
        guarded += sum(g for _, g in cells)
        writer.writerow([c for c, _ in cells])
    return out.getvalue(), guarded


class ExportFileError(ValueError):
    """An export file that cannot be read back; the message names the file (and row)."""


def format_of(path: Path) -> Format | None:
    suffix = path.suffix.lower().lstrip(".")
    return suffix if suffix in FORMATS else None  # type: ignore[return-value]


def read_rows(path: Path) -> list[ExportRow]:
    """Rows of an export file of any of the three formats, by its suffix."""
    fmt = format_of(path)
    if fmt is None:
        raise ExportFileError(f"{path}: not an export file (.json, .jsonl or .csv)")
    text = path.read_text(encoding="utf-8")
    try:
        if fmt == "json":
            raw: Iterable[tuple[int, object]] = enumerate(json.loads(text), 1)
        elif fmt == "jsonl":
            raw = ((i, json.loads(line)) for i, line in enumerate(text.splitlines(), 1) if line.strip())
        else:
            raw = ((i, _from_csv(r)) for i, r in enumerate(csv.DictReader(io.StringIO(text)), 2))
        rows = []
        for where, data in raw:
            try:
                rows.append(ExportRow.model_validate(data))
            except ValidationError as e:
                raise ExportFileError(f"{path}:{where}: not an export row ({str(e).splitlines()[-1].strip()})") from None
        return rows
    except json.JSONDecodeError as e:
        raise ExportFileError(f"{path}: not valid JSON ({e})") from None


def _from_csv(record: dict[str, str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, cell in record.items():
        if cell == "" and key in _OPTIONAL:
            out[key] = None
        elif cell.startswith("'") and cell[1:].startswith(_FORMULA_START):
            out[key] = cell[1:]
        else:
            out[key] = cell
    return out


_OPTIONAL = {name for name, f in ExportRow.model_fields.items() if type(None) in get_args(f.annotation)}  # "" reads as None


def rows_of_results(results_dir: Path, run_ids: list[str] | None, counter: TokenCounter) -> list[ExportRow]:
    """The rows of every run of results_dir (or of `run_ids`), by run folder name; unreadable runs are logged."""
    rows = []
    for run_id, folder in run_folders(results_dir).items():
        if run_ids and run_id not in run_ids:
            continue
        try:
            state, exchanges = read_run(folder)
        except ValueError as e:
            log.warning("skipping run %s: %s", run_id, str(e).splitlines()[0])
            continue
        rows += rows_of_run(state, exchanges, counter)
    return rows
