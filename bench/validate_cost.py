"""How `mmb validate` grows with a benchmark: 1,250 to 20,000 facts with a check per 10, its checks linked
by 🔗 or left to inference, as a user runs it (a process of its own, links listed). Near-linear is the
target: 16x the facts in at most ~25x the time.

    python -m bench.validate_cost [--sizes 1250 2500 5000 10000 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.big_benchmark import write_benchmark
from bench.stats import median, ratio, table

TARGET = 25.0


def seconds(folder: Path, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "persona", "validate", str(folder)], capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        assert done.returncode == 0, done.stderr[-2000:]
    return median(times)


def measure(sizes: list[int], repeats: int, folder: Path) -> dict[bool, list[tuple[int, float]]]:
    """{linked: [(facts, seconds)]}; the sizes of both kinds take turns, so the machine's load hurts all alike."""
    benches = {(linked, n): write_benchmark(folder / f"{'linked' if linked else 'inferred'}-{n}", n, linked=linked)
               for linked in (True, False) for n in sizes}
    out: dict[bool, list[tuple[int, float]]] = {True: [], False: []}
    for n in sizes:
        for linked in (True, False):
            out[linked].append((n, seconds(benches[(linked, n)], repeats)))
    return out


def section(results: dict[bool, list[tuple[int, float]]], summary: list[str]) -> list[str]:
    sizes = [n for n, _ in results[True]]
    rows = [[f"{n:,}", f"{n // 10:,}", f"{s_linked:.2f}", f"{s_inferred:.2f}"]
            for (n, s_linked), (_, s_inferred) in zip(results[True], results[False], strict=True)]
    growth = {linked: ratio(results[linked][-1][1], results[linked][0][1]) for linked in (True, False)}
    rows.append([f"**{sizes[-1]:,} / {sizes[0]:,}**", f"{ratio(sizes[-1], sizes[0]):.0f}x",
                 f"**{growth[True]:.1f}x**", f"**{growth[False]:.1f}x**"])
    for linked in (True, False):
        summary.append(f"- `mmb validate`, {sizes[-1]:,} / {sizes[0]:,} facts, checks {'linked by 🔗' if linked else 'inferred'}: "
                       f"**{growth[linked]:.1f}x** the time (target ≤ ~{TARGET:.0f}x; linear would be "
                       f"{ratio(sizes[-1], sizes[0]):.0f}x): {'met' if growth[linked] <= TARGET else 'NOT met'}")
    return ["## 6. Validating big benchmarks", "",
            "`python -m bench.validate_cost`: benchmarks written by `bench/big_benchmark.py` (fact files of 250 facts, a "
            "check per 10 facts asked a phase after its fact was told, an edit and an addition every 4th phase, a new "
            "chat every 3rd), validated by `mmb validate` in a process of its own with its links listed, as a user "
            "runs it: its start-up included. Seconds, medians of the repeats.", "",
            table(["facts", "checks", "linked by 🔗 s", "inferred s"], rows), ""]


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.validate_cost", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1250, 2500, 5000, 10000, 20000])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mmb-bench-validate-") as tmp:
        results = measure(args.sizes, args.repeats, Path(tmp))
    summary: list[str] = []
    print("\n".join([*section(results, summary), *summary]))


if __name__ == "__main__":
    main()
