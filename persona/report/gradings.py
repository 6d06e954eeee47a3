"""Grading sets: a finished run re-scored by another judge (`mmb regrade`), kept beside the original.

The grades a run made as it played stay in its state.json: that is the grading set "original".
Each regrade is a new file, results/<id>/gradings/<name>.json, written once and never replaced;
`mmb report --grading NAME` shows a set in report.html and the leaderboard, which say so.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from persona.errors import RunError
from persona.report.agreement import Agreement
from persona.state import Grade, RunState, Usage, now

ORIGINAL = "original"
GRADINGS_DIR = "gradings"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class GradingSet(BaseModel):
    name: str
    run_id: str
    judge: str  # the judge model's name, or "rules"
    judge_host: str | None = None  # the endpoint's host, never its key or path
    rubric_sha256: str | None = None
    created_at: datetime = Field(default_factory=now)
    grades: dict[str, Grade]  # by check id
    usage: Usage = Usage()
    notes: list[str] = []  # judge answers asked again (and why), verdicts taken from text
    agreement: Agreement | None = None  # with the original grades


def set_name(judge: str) -> str:
    """A default name from the judge's: "gpt-4o-mini" -> "judge-gpt-4o-mini"."""
    return "judge-" + (re.sub(r"[^A-Za-z0-9._-]+", "-", judge).strip("-.") or "model")[:50]


def check_name(name: str) -> str:
    if name == ORIGINAL or not NAME_PATTERN.match(name):
        raise RunError(f"grading set name {name!r}: use letters, digits, '.', '_' or '-' (and not {ORIGINAL!r})")
    return name


def set_path(folder: Path, name: str) -> Path:
    return folder / GRADINGS_DIR / f"{name}.json"


def names(folder: Path) -> list[str]:
    return sorted(p.stem for p in (folder / GRADINGS_DIR).glob("*.json"))


def load_set(folder: Path, name: str) -> GradingSet | None:
    path = set_path(folder, name)
    return GradingSet.model_validate_json(path.read_bytes()) if path.exists() else None


def save_new(folder: Path, gset: GradingSet) -> Path:
    """Write the set under its name, once: a set of that name already there is never replaced."""
    path = set_path(folder, check_name(gset.name))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(gset.model_dump_json(indent=1), encoding="utf-8")
    try:
        os.link(tmp, path)  # fails if the name is taken, even by a regrade finishing at the same moment
    except FileExistsError:
        raise RunError(f"grading set {gset.name!r} of run {gset.run_id} exists ({path}); sets are never "
                       "overwritten: choose another --name") from None
    finally:
        tmp.unlink(missing_ok=True)
    return path


def shown_with(state: RunState, gset: GradingSet | None) -> RunState:
    """The run as the grading set scores it, for the reports; None: the original, as saved."""
    if gset is None:
        return state
    evaluations = [e.regraded(gset.grades[e.check_id]) if e.check_id in gset.grades else e for e in state.evaluations]
    return state.model_copy(update={"evaluations": evaluations, "judge": gset.judge, "judge_usage": gset.usage,
                                    "judge_notes": gset.notes, "grading_set": gset.name})
