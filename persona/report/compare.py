"""`mmb compare A B`: two runs of one benchmark, check by check, regressions first.

Each side is a run (its id in the results folder) or an export file of one run (`mmb export`).
Checks pair by id. A regression is a check that scores lower in B, or that A graded and B did not;
an improvement is the reverse. The mean difference (B − A) over the paired checks comes with a
paired Student-t confidence interval: if it spans 0, the two runs may well be equally good.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from persona.report.export import ExportRow
from persona.report.stats import MeanCI, mean_ci


@dataclass(frozen=True)
class Side:
    label: str  # the run id or the file, as the user named it
    rows: list[ExportRow]

    @property
    def run_id(self) -> str:
        return self.rows[0].run_id if self.rows else self.label

    @property
    def mean(self) -> float | None:
        return sum(r.score for r in self.rows) / len(self.rows) if self.rows else None


@dataclass(frozen=True)
class Change:
    check_id: str
    a: ExportRow | None
    b: ExportRow | None

    @property
    def row(self) -> ExportRow:
        row = self.b or self.a
        assert row is not None, "a change has at least one side"
        return row

    @property
    def delta(self) -> float | None:
        return self.b.score - self.a.score if self.a and self.b else None


@dataclass
class Comparison:
    a: Side
    b: Side
    regressions: list[Change] = field(default_factory=list)  # lower in B, worst first; then not graded in B
    improvements: list[Change] = field(default_factory=list)  # higher in B, best first; then graded only in B
    unchanged: list[Change] = field(default_factory=list)
    difference: MeanCI | None = None  # B − A over the paired checks

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)


def compare(a: Side, b: Side) -> Comparison:
    """Raises ValueError when the two sides play different benchmarks."""
    benches = {r.benchmark for r in a.rows} | {r.benchmark for r in b.rows}
    if len(benches) > 1:
        raise ValueError(f"{a.label} and {b.label} play different benchmarks ({', '.join(sorted(benches))}): "
                         "only runs of one benchmark compare check by check")
    rows_a, rows_b = {r.check_id: r for r in a.rows}, {r.check_id: r for r in b.rows}
    changes = [Change(cid, rows_a.get(cid), rows_b.get(cid)) for cid in dict.fromkeys([*rows_a, *rows_b])]
    deltas = {c.check_id: c.delta for c in changes if c.delta is not None}
    paired = [c for c in changes if c.check_id in deltas]
    return Comparison(
        a, b,
        regressions=sorted((c for c in paired if deltas[c.check_id] < 0), key=lambda c: deltas[c.check_id])
        + [c for c in changes if c.b is None],
        improvements=sorted((c for c in paired if deltas[c.check_id] > 0), key=lambda c: -deltas[c.check_id])
        + [c for c in changes if c.a is None],
        unchanged=[c for c in paired if deltas[c.check_id] == 0],
        difference=mean_ci(list(deltas.values())) if deltas else None)


def _score(row: ExportRow | None) -> str:
    return "—" if row is None else f"{row.score:g}"


def _line(c: Change) -> str:
    delta = f"{c.delta:+g}" if c.delta is not None else ("not graded in B" if c.b is None else "not graded in A")
    question = " ".join(c.row.question.split())
    return f"  {c.check_id} [{c.row.category}] {_score(c.a)} -> {_score(c.b)} ({delta}): {question[:100]}"


def render(cmp: Comparison) -> str:
    a, b = cmp.a, cmp.b

    def side(s: Side) -> str:
        mean = f"mean {s.mean:.2f}" if s.mean is not None else "no checks"
        return f"{s.run_id} ({len(s.rows)} checks, {mean})"

    lines = [f"A: {side(a)}", f"B: {side(b)}", ""]
    lines.append(f"regressions ({len(cmp.regressions)})" + (":" if cmp.regressions else ""))
    lines += [_line(c) for c in cmp.regressions]
    lines.append(f"improvements ({len(cmp.improvements)})" + (":" if cmp.improvements else ""))
    lines += [_line(c) for c in cmp.improvements]
    lines.append(f"unchanged ({len(cmp.unchanged)})")
    lines.append(difference_line(cmp.difference))
    return "\n".join(lines) + "\n"


def difference_line(d: MeanCI | None) -> str:
    """The mean difference B − A with its interval and what it says, as the terminal and `mmb view` show it."""
    if d is None:
        return "mean difference: no check graded in both"
    if d.low is None:
        return f"mean difference (B - A): {d.mean:+.2f} over 1 paired check (no interval from one)"
    verdict = "B is better" if d.low > 0 else "B is worse" if d.high is not None and d.high < 0 else "no clear difference"
    return (f"mean difference (B - A): {d.mean:+.2f} over {d.n} paired checks, {d.level:.0%} CI "
            f"[{d.low:+.2f}, {d.high:+.2f}] (paired t): {verdict}")
