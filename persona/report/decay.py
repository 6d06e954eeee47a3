"""Memory decay: which facts a check asks about, and how long ago (turns, tokens) they were told.

Checks don't name their facts, so a check is linked to facts in two ways:

1. Explicitly, when its id names one: `family.1.2` or `family:1.2` (fact 1.2 of family.md).
2. Otherwise by the words they share. Question and expected answer are cut into words and numbers
   (lower case, stop words dropped, words cut to their first 5 letters so "Sundays" meets
   "Sunday", number words "two" read as 2) and every fact is scored by the words it shares with
   the check, each word weighted by its rarity among all facts (idf: a word in one fact weighs more
   than one in ten). The best fact wins if it reaches MIN_SCORE; facts scoring within
   CLOSE_SHARE of it are kept as secondary links. A fact is matched on its current text and on
   its text in the benchmark, so a deleted or rewritten fact can still be found.

`absent` checks ask about facts that were never told and are not linked.

A check's age is measured from the best fact's last change (`changed_turn`) if it happened
before the question, else from when it was told (`told_turn`), to the turn the question was
asked: in turns, and in tokens of everything the chat showed in between (our messages and the
agent's replies, counted with tiktoken).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from persona.benchmark.facts import FactFile
from persona.benchmark.grading import STOPWORDS
from persona.benchmark.phases import Category
from persona.state import Evaluation, Exchange, RunState
from persona.tokens import TokenCounter

MIN_SCORE = 1.5
CLOSE_SHARE = 0.75
STEM = 5
_EXPLICIT = re.compile(r"^(?P<file>[\w-]+)[.:](?P<id>\d+\.\d+)$")
_TOKEN = re.compile(r"\d+(?:[:.,]\d+)*|[^\W\d_]+", re.UNICODE)
_NUMBER_WORDS = {
    w: str(i) for i, ws in enumerate([
        "zero ноль", "one один одна", "two два две", "three три", "four четыре", "five пять",
        "six шесть", "seven семь", "eight восемь", "nine девять", "ten десять"]) for w in ws.split()
}


def words(text: str) -> set[str]:
    out = set()
    for raw in _TOKEN.findall(text.lower().replace("’", "'")):
        if raw[0].isdigit():
            out.add(raw)
        elif raw in _NUMBER_WORDS:
            out.add(_NUMBER_WORDS[raw])
        elif len(raw) >= 3 and raw not in STOPWORDS:
            out.add(raw[:STEM])
    return out


@dataclass(frozen=True)
class FactLink:
    file: str
    fact_id: str
    text: str
    score: float  # summed idf of shared words; inf for an explicit link
    shared: tuple[str, ...] = ()  # the word stems that linked them


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


class FactIndex:
    """Every fact of a run's live fact files, searchable by shared words."""

    def __init__(self, live: dict[str, FactFile], original: dict[str, FactFile] | None = None):
        self.facts: dict[tuple[str, str], tuple[str, set[str]]] = {}
        for name, ff in live.items():
            for fact in ff.all_facts():
                first = original.get(name).get(fact.id) if original and name in original else None
                text = fact.text if not fact.deleted or first is None else f"{fact.text} (was: {first.text})"
                self.facts[(name, fact.id)] = (text, words(fact.text) | (words(first.text) if first else set()))
        df: dict[str, int] = {}
        for _, ws in self.facts.values():
            for w in ws:
                df[w] = df.get(w, 0) + 1
        n = max(len(self.facts), 1)
        self.idf = {w: math.log(1 + n / c) for w, c in df.items()}

    def link(self, check_id: str, question: str, expected: str) -> list[FactLink]:
        if m := _EXPLICIT.match(check_id):
            key = (m["file"], m["id"])
            if key in self.facts:
                return [FactLink(key[0], key[1], self.facts[key][0], math.inf)]
        wanted = words(question) | words(expected)
        scored = []
        for (name, fid), (text, ws) in self.facts.items():
            shared = wanted & ws
            score = sum(self.idf[w] for w in shared)
            if score > 0:
                scored.append((score, name, fid, text, shared))
        scored.sort(key=lambda s: -s[0])
        if not scored or scored[0][0] < MIN_SCORE:
            return []
        best = scored[0][0]
        return [FactLink(name, fid, text, round(score, 2), tuple(sorted(shared)))
                for score, name, fid, text, shared in scored if score >= CLOSE_SHARE * best]


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
               original: dict[str, FactFile] | None = None) -> list[CheckAge]:
    """One CheckAge per graded check, in grading order."""
    index = FactIndex(state.facts, original)
    by_turn = {ex.turn: ex for ex in exchanges}
    cumulative = [0]  # tokens shown in the chat up to and including turn t (t = position)
    for t in range(1, max(by_turn, default=0) + 1):
        ex = by_turn.get(t)
        cumulative.append(cumulative[-1] + (counter.count(ex.sent) + sum(counter.count(b) for b in ex.reply) if ex else 0))
    ages = []
    for e in state.evaluations:
        turn = asked_turn(e, exchanges)
        age = CheckAge(e.check_id, [], turn)
        ages.append(age)
        if e.category is Category.absent:
            continue
        age.links = index.link(e.check_id, e.question, e.expected)
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
