"""What a run of openclaw_bench leaves when OpenClaw's model is OpenClawMemoryModel, whichever channel
played it: the web chat (tests/frontends/test_openclaw.py) or a Matrix DM (tests/frontends/test_matrix.py).

The model writes every fact to OpenClaw's memory note but the cello and the correction, so after the new
session the dog is found by memory_search (n1), the cello was never stored (n2), the bike's price is the
old one (s1, stale) and the blood type was never told (n3): see openclaw_bench/chapter2.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.openclaw_memory import OpenClawMemoryModel

BENCH = Path(__file__).resolve().parent / "openclaw_bench"
UNWRITTEN = (r"\bcello\b", r"^Correction\b")  # OpenClawMemoryModel(unwritten=...)
SCORES = {"s1": 0, "n1": 10, "n2": 0, "n3": 10}


def memory_snapshots(workspace: Path) -> dict[str, Any]:
    """A run's `agent.memory`: OpenClaw's memory files in its workspace, snapshotted at every turn."""
    return {"folder": str(workspace), "glob": ["MEMORY.md", "memory/*.md"], "every": "turn"}


def assert_kept_in_memory_files(folder: Path, workspace: Path, model: OpenClawMemoryModel, state: dict[str, Any],
                                report: str) -> None:
    """The facts went to OpenClaw's own memory note with its read and write tools, and the checks were
    answered from its memory_search; the run's scores are what the note holds; its last snapshot is the
    note, and report.md's autopsy classifies each miss from it."""
    assert model.tool_uses[0].name == "read" and {"read", "write", "tool_call"} == {u.name for u in model.tool_uses}
    notes = list((workspace / "memory").glob("*.md"))
    assert len(notes) == 1, notes
    note = notes[0].read_text()
    assert "- Our dog is called Biscuit." in note and "- My new bike cost 640 EUR." in note
    assert "cello" not in note and "720" not in note
    assert {e["check_id"]: e["score"] for e in state["evaluations"]} == SCORES

    index = json.loads((folder / "memory" / "index.json").read_text())
    assert index["snapshots"][-1]["reason"] == "end"
    last = folder / "memory" / index["snapshots"][-1]["folder"] / "memory" / notes[0].name
    assert last.read_text() == note
    assert "**s1** [updated] 0/10 — **stale**" in report
    assert "**n2** [single] 0/10 — **never stored**" in report
    assert "**n1**" not in report.split("### Memory autopsy", 1)[1].split("#### ", 1)[0]  # retrieved: not a miss
