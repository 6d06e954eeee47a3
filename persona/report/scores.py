"""Score and cost aggregates shared by report.md, report.html and the leaderboard.

One place computes them, so the three views of a run never disagree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from persona.benchmark.phases import Category
from persona.state import Evaluation, RunState

CATEGORIES = [c.value for c in Category]


@dataclass(frozen=True)
class Group:
    """The graded checks of one category or one phase."""

    key: str
    mean: float
    count: int


@dataclass(frozen=True)
class PhaseCost:
    phase: int  # 0-based, as in the state
    prompt_tokens: int
    completion_tokens: int

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def mean(evaluations: list[Evaluation]) -> float | None:
    return sum(e.score for e in evaluations) / len(evaluations) if evaluations else None


def distribution(evaluations: list[Evaluation]) -> dict[int, int]:
    """Rounded score -> how many checks got it, 10 first, only scores that occur."""
    counts = Counter(int(round(e.score)) for e in evaluations)
    return {score: counts[score] for score in range(10, -1, -1) if counts[score]}


def by_category(evaluations: list[Evaluation]) -> dict[str, Group]:
    """In the order of the Category enum, only categories with a graded check."""
    groups: dict[str, list[Evaluation]] = {}
    for e in evaluations:
        groups.setdefault(e.category.value, []).append(e)
    return {c: Group(c, mean(groups[c]) or 0.0, len(groups[c])) for c in CATEGORIES if c in groups}


@dataclass(frozen=True)
class SourceGroup:
    """The graded checks of one category of the dataset a benchmark was imported from (LoCoMo's
    `single-hop`...), with the categories of ours they were mapped to."""

    key: str
    mean: float
    count: int
    ours: str  # "single", or "absent 444 + single 2" when one source category maps to several

    @property
    def label(self) -> str:
        return f"{self.key} (→ {self.ours})"


def by_source_category(evaluations: list[Evaluation]) -> list[SourceGroup]:
    """Per source category, in order of first appearance; empty for a benchmark of our own."""
    groups: dict[str, list[Evaluation]] = {}
    for e in evaluations:
        if e.source_category:
            groups.setdefault(e.source_category, []).append(e)
    out = []
    for key, evs in groups.items():
        ours = Counter(e.category.value for e in evs)
        mapped = next(iter(ours)) if len(ours) == 1 else " + ".join(f"{c} {n}" for c, n in ours.most_common())
        out.append(SourceGroup(key, mean(evs) or 0.0, len(evs), mapped))
    return out


def by_phase(evaluations: list[Evaluation]) -> dict[int, Group]:
    groups: dict[int, list[Evaluation]] = {}
    for e in evaluations:
        groups.setdefault(e.phase, []).append(e)
    return {p: Group(str(p), mean(evs) or 0.0, len(evs)) for p, evs in sorted(groups.items())}


def phase_costs(state: RunState) -> list[PhaseCost]:
    """Persona tokens per phase, from state.usage.by_phase, in phase order."""
    return [PhaseCost(int(p), pc[0], pc[1]) for p, pc in sorted(state.usage.by_phase.items(), key=lambda kv: int(kv[0]))]


def facts_told(state: RunState, profile: str | None = None) -> tuple[int, int]:
    """(told, total) over the live facts of every fact file; deleted facts don't count.

    The profile is always in the persona's context and need not be told: its facts count only
    once told, so a finished run reads "13/13", not "13/18".
    """
    live = [f for name, ff in state.facts.items() for f in ff.live_facts()
            if name != profile or f.told_turn is not None]
    return sum(f.told_turn is not None for f in live), len(live)
