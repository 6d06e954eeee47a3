"""Memory decay: how long ago (turns, tokens) the fact a check asks about was told or last changed.

Which facts a check asks about is persona/benchmark/links.py's job (stated on the check line,
named by its id, or inferred from shared words); without the benchmark, the run's live fact files
are searched the same way. `absent` checks have no fact.

A check's age is measured from the best fact's last change (`changed_turn`) if it happened
before the question, else from when it was told (`told_turn`), to the turn the question was
asked: in turns, and in tokens of everything the chat showed in between (our messages and the
agent's replies, counted with tiktoken).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from persona.benchmark.links import CheckLinks, FactIndex, FactLink, link_checks
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Check
from persona.state import Evaluation, Exchange, RunState
from persona.tokens import TokenCounter


@dataclass
class CheckAge:
    check_id: str
    links: list[FactLink]
    asked_turn: int
    basis: Literal["told", "changed", "unknown"] = "unknown"
    turns: int | None = None
    tokens: int | None = None
    new_session_between: bool = False

    @property
    def fact(self) -> FactLink | None:
        return self.links[0] if self.links else None


def evaluated_check(e: Evaluation) -> Check:
    """A graded check as the state recorded it (no stated links: those are in the benchmark)."""
    return Check(id=e.check_id, category=e.category, question=e.question, answer=e.expected)


def run_links(state: RunState, bench: Benchmark | None) -> dict[str, CheckLinks]:
    """Each graded check's links: the benchmark's (as `mmb validate --links` shows them), else inferred
    from the run's live fact files."""
    known = link_checks(bench) if bench else {}
    index = FactIndex.of_files(state.facts)
    return {e.check_id: known.get(e.check_id) or index.link(evaluated_check(e)) for e in state.evaluations}


def asked_turn(evaluation: Evaluation, exchanges: list[Exchange]) -> int:
    """The turn whose message asked the question (the graded turn may be a later memory-search retry):
    where the chat the grader read begins, else (older runs) the last message with the question's words."""
    if evaluation.agent_turns:
        return evaluation.agent_turns[0].turn
    q = " ".join(evaluation.question.split()).lower()
    for ex in reversed(exchanges):
        if ex.turn <= evaluation.turn and q and q in " ".join(ex.sent.split()).lower():
            return ex.turn
    return evaluation.turn


def check_ages(state: RunState, exchanges: list[Exchange], counter: TokenCounter,
               bench: Benchmark | None = None) -> list[CheckAge]:
    """One CheckAge per graded check, in grading order."""
    links = run_links(state, bench)
    by_turn = {ex.turn: ex for ex in exchanges}
    cumulative = [0]  # tokens shown in the chat up to and including turn t (t = position)
    for t in range(1, max(by_turn, default=0) + 1):
        ex = by_turn.get(t)
        cumulative.append(cumulative[-1] + (counter.count(ex.sent) + sum(counter.count(b) for b in ex.reply) if ex else 0))
    ages = []
    for e in state.evaluations:
        turn = asked_turn(e, exchanges)
        age = CheckAge(e.check_id, list(links[e.check_id].facts), turn)
        ages.append(age)
        if not age.links:
            continue
        dated = [(link, since) for link in age.links if (since := _since(state, link, turn)) is not None]
        if not dated:
            continue
        (link, (age.basis, since)) = dated[0]  # the best-matching fact that was told before the question
        age.links.remove(link)
        age.links.insert(0, link)
        age.turns = turn - since
        age.tokens = cumulative[min(turn - 1, len(cumulative) - 1)] - cumulative[min(since, len(cumulative) - 1)] if turn > since else 0
        told_session = by_turn[since].session if since in by_turn else 0
        age.new_session_between = by_turn[turn].session != told_session if turn in by_turn else e.session != told_session
    return ages


def _since(state: RunState, link: FactLink, turn: int) -> tuple[Literal["told", "changed"], int] | None:
    ff = state.facts.get(link.file)
    fact = ff.get(link.fact_id) if ff else None
    if fact is None:
        return None
    if fact.changed_turn is not None and fact.changed_turn <= turn:
        return "changed", fact.changed_turn
    if fact.told_turn is not None and fact.told_turn <= turn:
        return "told", fact.told_turn
    return None
