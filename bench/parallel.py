"""N demo runs at once through the real Runner (one Chromium, one context per run), in a child process.

The parent samples the PSS of the child's whole tree (python, Playwright's node driver, Chromium
and its renderers) while the child plays N copies of the demo benchmark with the scripted persona
against the bundled demo chat, one DemoChatServer per run. Throughput is the agent turns of all
runs over the wall time of Runner.run_all (browser start included).

Child: python -m bench.parallel N RESULTS_DIR  -> prints one JSON line {"turns", "seconds", "statuses"}.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.pss import PssSampler

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Parallel:
    runs: int
    turns: int
    seconds: float
    peak_pss_mb: float
    mean_pss_mb: float
    processes: int
    statuses: list[str]

    @property
    def turns_per_s(self) -> float:
        return self.turns / self.seconds if self.seconds else 0.0


def measure(n: int, timeout_s: float = 1800) -> Parallel:
    with tempfile.TemporaryDirectory(prefix="mmb-bench-par-") as tmp:
        child = subprocess.Popen([sys.executable, "-m", "bench.parallel", str(n), tmp], cwd=REPO,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        with PssSampler(child.pid, every_s=0.5) as sampler:
            out, _ = child.communicate(timeout=timeout_s)
        data = json.loads(out.strip().splitlines()[-1])
    return Parallel(runs=n, turns=data["turns"], seconds=data["seconds"], peak_pss_mb=sampler.peak_mb,
                    mean_pss_mb=sampler.mean_mb, processes=sampler.peak_processes, statuses=data["statuses"])


async def _child(n: int, results: Path) -> dict:
    from persona.config import Config
    from persona.engine.runner import Runner, plan_runs
    from persona.state import RunStore

    runs = [{"id": f"par{i}", "benchmark": str(REPO / "benchmarks" / "demo"), "agent": {"driver": "demo"}}
            for i in range(n)]
    config = Config.model_validate({"runs": runs, "parallel": n, "results_dir": str(results),
                                    "compaction": {"max_tokens": 4000, "trim_to_tokens": 1500}})
    started = time.monotonic()
    await Runner(config, print_line=lambda _: None).run_all(plan_runs(config))
    seconds = time.monotonic() - started
    states = [RunStore(results / r["id"]).load() for r in runs]
    return {"turns": sum(s.turn for s in states if s), "seconds": seconds,
            "statuses": [s.status if s else "missing" for s in states]}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_child(int(sys.argv[1]), Path(sys.argv[2])))))
