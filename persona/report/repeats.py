"""Repeats of a run pooled per agent: the mean over them with its 95 % confidence interval (Student's t,
stats.mean_ci), overall and per category, and whose intervals overlap.

One finished repeat has no interval. When two agents' intervals overlap, their repeats do not tell
them apart. Only finished repeats are pooled; the others are named as left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from persona.report.catalog import Entry
from persona.report.scores import CATEGORIES
from persona.report.stats import MeanCI, mean_ci


def interval(values: list[float]) -> MeanCI | None:
    return mean_ci(values) if values else None


def overlaps(a: MeanCI, b: MeanCI) -> bool | None:
    """None when either has no interval (one run)."""
    if a.low is None or a.high is None or b.low is None or b.high is None:
        return None
    return a.low <= b.high and b.low <= a.high


def ci_text(ci: MeanCI | None) -> str:
    """"7.50 ± 1.24", or the mean alone for one run; "—" for none."""
    if ci is None:
        return "—"
    return f"{ci.mean:.2f} ± {(ci.high - ci.mean):.2f}" if ci.high is not None else f"{ci.mean:.2f}"


@dataclass
class Pooled:
    """An agent over its finished repeats: mean ± 95 % CI, overall and per category."""

    agent: str
    graded_by: str
    overall: MeanCI
    categories: dict[str, MeanCI]
    left_out: list[str]  # repeats not finished, not pooled
    overlaps: list[str] = field(default_factory=list)  # agents whose interval overlaps this one's

    @property
    def overlap_text(self) -> str:
        if self.overall.low is None:
            return "— (one finished run: no interval)"
        return ", ".join(self.overlaps) or "none"


def pooled(runs: list[Entry]) -> list[Pooled]:
    """The agents of one benchmark's runs, best first; empty when no run was repeated."""
    by_agent: dict[str, list[Entry]] = {}
    for e in runs:
        by_agent.setdefault(e.agent, []).append(e)
    if all(len(v) == 1 for v in by_agent.values()):
        return []
    out = []
    for agent, entries in by_agent.items():
        done = [e for e in entries if e.status == "finished" and e.mean is not None]
        overall = interval([e.mean for e in done if e.mean is not None])
        if overall is None:
            continue
        cats = {c: ci for c in CATEGORIES if (ci := interval([e.categories[c].mean for e in done if c in e.categories]))}
        out.append(Pooled(agent, done[0].graded_by, overall, cats, sorted(e.run_id for e in entries if e not in done)))
    for a in out:
        a.overlaps = [b.agent for b in out if b is not a and overlaps(a.overall, b.overall)]
    return sorted(out, key=lambda a: (-a.overall.mean, a.agent))


def pooled_markdown(agents: list[Pooled], cats: list[str]) -> list[str]:
    lines = ["### Over repeats: mean ± 95 % confidence interval", "",
             "Finished repeats only. Overlapping intervals: these repeats do not tell the agents apart.", "",
             "| agent | graded by | repeats | mean | " + "".join(f"{c} | " for c in cats) + "overlaps with |",
             "|---|---|---:|---:|" + "---:|" * len(cats) + "---|"]
    for a in agents:
        left = f" ({len(a.left_out)} unfinished left out)" if a.left_out else ""
        lines.append(f"| {a.agent} | {a.graded_by} | {a.overall.n}{left} | **{ci_text(a.overall)}** | "
                     + "".join(f"{ci_text(a.categories.get(c))} | " for c in cats) + f"{a.overlap_text} |")
    return lines + [""]
