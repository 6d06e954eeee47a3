"""Playing a run in-process through the real runner (config, plan, loop, state, report), for tests
where neither the browser nor the CLI is the point."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from persona.config import load_config
from persona.engine.runner import Runner, RunOutcome, plan_runs
from persona.state import RunState, RunStore


def play(tmp_path: Path, run_id: str = "r", *, benchmark: Path, agent: dict[str, Any] | None = None,
         printed: list[str] | None = None, **engine: Any) -> tuple[RunOutcome, RunState]:
    """Write a config with one run, play it, return its outcome and saved state; the runner's lines go
    to `printed` when given."""
    config = tmp_path / "config.jsonc"
    run = {"id": run_id, "benchmark": str(benchmark), "agent": agent or {"driver": "oracle"}}
    config.write_text(json.dumps({"results_dir": str(tmp_path / "results"), "runs": [run], **engine}))
    cfg = load_config(config)
    say = printed.append if printed is not None else lambda _: None
    outcome, = asyncio.run(Runner(cfg, print_line=say).run_all(plan_runs(cfg)))
    state = RunStore(tmp_path / "results" / run_id).load()
    assert state is not None
    return outcome, state


def scores(state: RunState) -> list[tuple[str, float, bool]]:
    return [(e.check_id, e.score, e.second_attempt) for e in state.evaluations]
