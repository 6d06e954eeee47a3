"""What was said is what can be asked: which checks an agent could answer from the messages typed to it.

The oracle agent of a dry run knows every answer, so a check whose facts never reached the chat (or
whose date never did) still scores 10 there; a real agent with a perfect memory could not answer it.
This reads the run's transcript (the persona's messages as typed) and decides, for every graded check,
from what was typed before its question:

- each fact it tests (its 🔗 facts, or the best inferred one), as it stood when the check was asked,
  was typed in words an agent can use: one message holding all of the fact's numbers and most of
  its words (all of them for a short fact), and, for a fact that changed, every word and number
  the change brought (a deleted fact: its old words, said at or after the deletion);
- a check whose answer is a date, a time span or "how long ago" (`dates.asks_for_time`) and is not
  written in those facts needs the dates: each fact's message falls in a phase with a date (`📅`),
  typed in that chat at or before it, and the date of the phase asking it was typed in the chat
  of the question.

`absent` checks need nothing; a check that links no fact (`🔗 none`) cannot be judged this way and is
counted apart. The rules read text only, so they hold for any persona; the scripted one of a dry run
types facts word for word, which the word shares are set for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date

from persona.benchmark.dates import asks_for_time, dates_in, day_text
from persona.benchmark.facts import DELETED
from persona.benchmark.grading import SHORT_ANSWER_WORDS, matches, numbers, stems
from persona.benchmark.links import CheckLinks, FactLink, link_checks, shortened
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Category, Check
from persona.state import Evaluation, Exchange, RunState


@dataclass
class Verdict:
    check_id: str
    category: Category
    reasons: list[str] = field(default_factory=list)  # why it cannot be answered; empty: it can
    judged: bool = True  # False: it links no fact, so what it needs is not known

    @property
    def answerable(self) -> bool:
        return not self.reasons


@dataclass
class Answerability:
    verdicts: list[Verdict]

    @property
    def unanswerable(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.answerable]

    @property
    def unjudged(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.judged]

    def summary(self) -> str:
        judged = [v for v in self.verdicts if v.judged]
        ok = sum(v.answerable for v in judged)
        line = f"{ok} of {len(judged)} answerable from what was typed"
        if unjudged := self.unjudged:
            line += f"; {len(unjudged)} link no fact (🔗 none): not judged"
        return line


@dataclass
class _Typed:
    """One message as typed, with what the rules look for in it, worked out once."""

    ex: Exchange
    numbers: set[str]
    stems: set[str]
    _dates: set[date] | None = None

    @property
    def dates(self) -> set[date]:
        if self._dates is None:
            self._dates = dates_in(self.ex.sent)
        return self._dates


@dataclass(frozen=True)
class _Version:
    """A fact as it stood when a check was asked: its words, the words its last change brought, and
    the earliest turn a message telling it may have (a deletion is told at or after it)."""

    text: str
    new: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())  # (numbers, stems) the change brought
    since: int = 0
    exists: bool = True

    @property
    def words(self) -> tuple[set[str], set[str]]:
        return numbers(self.text), stems(self.text)


def _needed(want: set[str]) -> int:
    return len(want) if len(want) <= SHORT_ANSWER_WORDS else math.ceil(len(want) * 2 / 3)


def _carries(msg: _Typed, version: _Version, want_numbers: set[str], want_stems: set[str]) -> bool:
    if msg.ex.turn < version.since:
        return False
    if not want_numbers <= msg.numbers or len(want_stems & msg.stems) < _needed(want_stems):
        return False
    new_numbers, new_stems = version.new
    return new_numbers <= msg.numbers and new_stems <= msg.stems


def _version(bench: Benchmark, state: RunState, link: FactLink, asked: int) -> _Version:
    name = bench.resolve_fact_file(link.file) or link.file
    live = state.facts.get(name)
    fact = live.get(link.fact_id) if live is not None else None
    original = bench.fact_files[name].get(link.fact_id) if name in bench.fact_files else None
    if fact is None:
        return _Version(link.text, exists=False)
    changes = [ev for ev in fact.history if ev.kind != "told" and ev.turn < asked]
    if not changes:
        if original is None:  # a fact a ➕ line adds: not yet there when the check was asked
            return _Version(fact.text, exists=False)
        return _Version(original.text)
    before = changes[-2].text if len(changes) > 1 else (original.text if original else "")
    last = changes[-1]
    if last.text == DELETED:  # told by saying the old words are no longer true
        return _Version(before, since=last.turn)
    brought = (frozenset(numbers(last.text) - numbers(before)), frozenset(stems(last.text) - stems(before)))
    return _Version(last.text, new=brought)


def _asked_turn(evaluation: Evaluation) -> int:
    """The turn of the message that asked the check: the first one the grade quotes."""
    return evaluation.agent_turns[0].turn if evaluation.agent_turns else evaluation.turn


class _Reader:
    """The typed messages, found by the numbers and word stems a fact needs (a marathon's 2,000 checks are
    never each matched against every message), and by the chat they were typed in."""

    def __init__(self, bench: Benchmark, state: RunState, exchanges: list[Exchange]):
        self.bench = bench
        self.state = state
        self.dates = bench.phase_dates()
        self.typed = [_Typed(ex, numbers(ex.sent), stems(ex.sent)) for ex in sorted(exchanges, key=lambda e: e.turn)]
        self._with: dict[str, list[int]] = {}  # "#number" or stem -> the messages holding it, in turn order
        self._chats: dict[int, list[_Typed]] = {}
        for i, t in enumerate(self.typed):
            for key in (*(f"#{n}" for n in t.numbers), *t.stems):
                self._with.setdefault(key, []).append(i)
            self._chats.setdefault(t.ex.session, []).append(t)

    def carriers(self, version: _Version, asked: int) -> list[_Typed]:
        """The messages typed before turn `asked` that tell the fact as `version` has it. A message that
        does holds every number of it and all but `len - needed` of its stems, so one of any
        `len - needed + 1` of them: only the messages with the rarest such are looked at."""
        want_numbers, want_stems = version.words
        if want_numbers:
            pool: list[int] | range = min((self._with.get(f"#{n}", []) for n in want_numbers), key=len)
        elif want_stems:
            rare = sorted(want_stems, key=lambda w: len(self._with.get(w, ())))[:len(want_stems) - _needed(want_stems) + 1]
            pool = sorted({i for w in rare for i in self._with.get(w, ())})
        else:
            pool = range(len(self.typed))
        return [t for t in (self.typed[i] for i in pool)
                if t.ex.turn < asked and _carries(t, version, want_numbers, want_stems)]

    def date_typed(self, day: date, session: int, upto: int) -> bool:
        return any(t.ex.turn <= upto and day in t.dates for t in self._chats.get(session, []))

    def verdict(self, check: Check, links: CheckLinks, evaluation: Evaluation) -> Verdict:
        verdict = Verdict(check.id, check.category)
        if check.category is Category.absent:
            return verdict
        facts = links.primary
        if not facts:
            verdict.judged = False
            return verdict
        asked = _asked_turn(evaluation)
        carriers: list[tuple[FactLink, list[_Typed]]] = []
        for link in facts:
            version = _version(self.bench, self.state, link, asked)
            name = f"{link.file} {link.fact_id}"
            if not version.exists:
                verdict.reasons.append(f"{name} did not exist yet when it was asked")
                continue
            found = self.carriers(version, asked)
            if not found:
                verdict.reasons.append(f"{name} ({shortened(version.text)!r}) was never typed before the question")
            else:
                carriers.append((link, found))
        if verdict.reasons or not asks_for_time(check.category, check.answer):
            return verdict
        told = " ".join(t.ex.sent for _, found in carriers for t in found)
        if all(matches(item, told) for item in check.items):
            return verdict  # the facts' own words give the date or span
        undated: dict[str, list[str]] = {}  # why, for the facts it holds for: "s03 1.1, 1.2 were told in ..."
        for link, found in carriers:
            if (why := self._undated(found)) is not None:
                undated.setdefault(why, []).append(f"{link.file} {link.fact_id}")
        verdict.reasons += [f"{_names(names)} {'was' if len(names) == 1 else 'were'} told {why}"
                            for why, names in undated.items()]
        asked_on = self.dates[evaluation.phase].date if evaluation.phase < len(self.dates) else None
        if asked_on is not None and not self.date_typed(asked_on.day, evaluation.session, asked):
            verdict.reasons.append(f"the day it was asked ({day_text(asked_on.day)}) was never typed in its chat")
        return verdict

    def _undated(self, found: list[_Typed]) -> str | None:
        """Why no message telling a fact is dated for the agent (the first one's), or None: one is."""
        why = []
        for t in found:
            day = self.dates[t.ex.phase].date if t.ex.phase < len(self.dates) else None
            if day is None:
                why.append(f"in phase {t.ex.phase + 1}, which has no date (📅): the answer is a date or a span, and "
                           "the agent cannot tell when it happened")
            elif not self.date_typed(day.day, t.ex.session, t.ex.turn):
                why.append(f"on {day_text(day.day)}, a date never typed in that chat before it")
            else:
                return None
        return why[0]


def _names(names: list[str]) -> str:
    """'session03 1.1, 1.2; session04 2.1': facts named as 🔗 names them."""
    by_file: dict[str, list[str]] = {}
    for name in names:
        file, _, fact_id = name.rpartition(" ")
        by_file.setdefault(file, []).append(fact_id)
    return "; ".join(f"{file} {', '.join(ids)}" for file, ids in by_file.items())


def answerability(bench: Benchmark, state: RunState, exchanges: list[Exchange]) -> Answerability:
    """A verdict for every graded check, in the order they were graded."""
    links = link_checks(bench)
    checks = {c.id: c for c in bench.checks}
    reader = _Reader(bench, state, exchanges)
    return Answerability([reader.verdict(checks[e.check_id], links[e.check_id], e)
                          for e in state.evaluations if e.check_id in checks])
