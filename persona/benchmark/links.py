"""Which facts each check tests, and each fact's life in the scenario: told, edited, deleted, added.

A check is linked to facts in one of three ways, first match wins:

1. Stated on its line after 🔗: `❓ d2 [updated] ... Correct answer: 52:30 🔗 running 1.2`
   (several: `🔗 family 3.1, 3.2; running 1.2`; `🔗 none` when it tests no single fact).
2. By its id, when the id names a fact: `family.1.2` or `family:1.2`.
3. Inferred from the words they share. Question and expected answer are cut into words and
   numbers (lower case, stop words dropped, words cut to their first 5 letters so "Sundays" meets
   "Sunday", number words "two" read as 2) and every fact is scored by the words it shares with
   the check, each word weighted by its rarity among all facts (idf: a word in one fact weighs
   more than one in ten), a word of the expected answer twice; the numbers of [aggregate] and
   [temporal] checks do not count (worked out from facts, or counting them, they are in none). The best fact wins if it reaches MIN_SCORE; facts scoring within
   CLOSE_SHARE of it are kept as secondary links. A fact is matched on every text it has in the
   scenario (as written, after each ✏️ edit, a ➕ addition), so a deleted or rewritten fact can
   still be found. An [updated] check tests a fact that changes: when one of those scores, the
   facts that never change are left out.

`absent` checks ask about facts that were never told and are not linked. `mmb validate --links`
prints every link, so an author can see a wrong inference and state the link on the line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal

from persona.benchmark.facts import DELETED, FactFile
from persona.benchmark.grading import STOPWORDS
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Category, Check

MIN_SCORE = 1.5
CLOSE_SHARE = 0.75
ANSWER_WEIGHT = 2.0  # a word of the expected answer says more about the fact than one of the question
COMPUTED = {Category.aggregate, Category.temporal}  # answers worked out from facts: their numbers are in none
STEM = 5
COMMON_AT_LEAST, COMMON_SHARE = 50, 50  # a word in more than max(50, 1/50 of the facts) is looked up last
_EXPLICIT = re.compile(r"^(?P<file>[\w-]+)[.:](?P<id>\d+\.\d+)$")
_TOKEN = re.compile(r"\d+(?:[:.,]\d+)*|[^\W\d_]+", re.UNICODE)
NUMBER_WORDS = {
    w: str(i) for i, ws in enumerate([
        "zero ноль", "one один одна", "two два две", "three три", "four четыре", "five пять",
        "six шесть", "seven семь", "eight восемь", "nine девять", "ten десять"]) for w in ws.split()
}
FactKey = tuple[str, str]  # (fact file name, fact id)
# stated: after 🔗; id: the check id names it; inferred: by shared words; unlinked: nothing shares enough;
# none: `🔗 none`; absent: an [absent] check, about something never told
How = Literal["stated", "id", "inferred", "unlinked", "none", "absent"]


def words(text: str) -> set[str]:
    out = set()
    for raw in _TOKEN.findall(text.lower().replace("’", "'")):
        if raw[0].isdigit():
            out.add(raw)
        elif raw in NUMBER_WORDS:
            out.add(NUMBER_WORDS[raw])
        elif len(raw) >= 3 and raw not in STOPWORDS:
            out.add(raw[:STEM])
    return out


@dataclass(frozen=True)
class FactLink:
    file: str
    fact_id: str
    text: str
    score: float  # summed idf of shared words; inf for a stated link
    shared: tuple[str, ...] = ()  # the word stems that linked them

    @property
    def key(self) -> FactKey:
        return (self.file, self.fact_id)


@dataclass
class CheckLinks:
    check_id: str
    how: How
    facts: list[FactLink] = field(default_factory=list)

    @property
    def primary(self) -> list[FactLink]:
        """The facts the check surely relies on: every stated one, or the best inferred one."""
        return self.facts if self.how in ("stated", "id") else self.facts[:1]


class FactIndex:
    """Facts searchable by shared words; each fact may have several texts (its versions)."""

    def __init__(self, texts: dict[FactKey, list[str]], changing: set[FactKey] | None = None):
        self.shown = {key: _shown(versions) for key, versions in texts.items()}
        self.words = {key: set().union(*(words(t) for t in versions if t != DELETED)) for key, versions in texts.items()}
        self.changing = changing or set()
        self._place = {key: i for i, key in enumerate(self.words)}  # ties rank in this order
        self._facts_with: dict[str, list[FactKey]] = {}  # word -> the facts that have it
        for key, ws in self.words.items():
            for w in ws:
                self._facts_with.setdefault(w, []).append(key)
        n = max(len(self.words), 1)
        self.idf = {w: math.log(1 + n / len(keys)) for w, keys in self._facts_with.items()}
        self._common = max(COMMON_AT_LEAST, n // COMMON_SHARE)  # a word in more facts than this is common

    @classmethod
    def of_files(cls, live: dict[str, FactFile], original: dict[str, FactFile] | None = None) -> FactIndex:
        """A run's live fact files, each fact also found by its text in the benchmark."""
        texts: dict[FactKey, list[str]] = {}
        for name, ff in live.items():
            for fact in ff.all_facts():
                first = original[name].get(fact.id) if original and name in original else None
                texts[(name, fact.id)] = ([first.text] if first and first.text != fact.text else []) + [fact.text]
        return cls(texts)

    def link(self, check: Check) -> CheckLinks:
        if check.category is Category.absent:
            return CheckLinks(check.id, "absent")
        if check.links is not None:
            return CheckLinks(check.id, "stated" if check.links else "none", [
                FactLink(m.file, m.fact_id, self.shown.get((m.file, m.fact_id), "?"), math.inf) for m in check.links])
        if (m := _EXPLICIT.match(check.id)) and (m["file"], m["id"]) in self.shown:
            key = (m["file"], m["id"])
            return CheckLinks(check.id, "id", [FactLink(key[0], key[1], self.shown[key], math.inf)])
        facts = self.infer(check.question, check.answer, check.category)
        return CheckLinks(check.id, "inferred" if facts else "unlinked", facts)

    def infer(self, question: str, expected: str, category: Category = Category.single) -> list[FactLink]:
        computed = category in COMPUTED
        weights = {w: 1.0 for w in words(question) if not (computed and w[0].isdigit())}
        for w in words(expected):
            if not computed:
                weights[w] = ANSWER_WEIGHT
            elif not w[0].isdigit():  # a computed number (a sum, an age) is in no fact
                weights[w] = 1.0
        # Only the facts sharing a word that few facts have are scored. A fact sharing nothing but common
        # words scores at most `bound`: when that cannot reach the result, it is exact; else all are scored.
        # Only the facts sharing a word that few facts have are scored (and, for an [updated] check, the facts
        # that change). Any other fact shares nothing but common words, so it scores at most `bound`: when that
        # cannot reach the result, the result is the one scoring every fact would give; else every fact is scored.
        rare = [w for w in weights if 0 < len(self._facts_with.get(w, ())) <= self._common]
        bound = sum(self.idf[w] * weights[w] for w in weights if len(self._facts_with.get(w, ())) > self._common)
        keys = {key for w in rare for key in self._facts_with[w]}
        if category is Category.updated:
            keys |= self.changing & self.words.keys()
        found, only_changing = self._ranked(sorted(keys, key=self._place.__getitem__), weights, category)
        if bound and not only_changing and bound >= (CLOSE_SHARE * found[0][0] if found else MIN_SCORE):
            found, _ = self._ranked(list(self.words), weights, category)
        return [FactLink(key[0], key[1], self.shown[key], round(score, 2), tuple(sorted(shared)))
                for score, key, shared in found]

    def _ranked(self, keys: list[FactKey], weights: dict[str, float], category: Category) -> tuple[list[tuple], bool]:
        """(score, fact, shared words) of the facts that link, best first: from MIN_SCORE, within CLOSE_SHARE
        of the best; an [updated] check keeps to the facts that change when one of them scores (True then)."""
        scored = []
        for key in keys:
            shared = self.words[key] & weights.keys()
            score = sum(self.idf[w] * weights[w] for w in shared)
            if score > 0:
                scored.append((score, key, shared))
        only_changing = category is Category.updated and any(key in self.changing and score >= MIN_SCORE
                                                             for score, key, _ in scored)
        if only_changing:
            scored = [s for s in scored if s[1] in self.changing]
        scored.sort(key=lambda s: -s[0])
        if not scored or scored[0][0] < MIN_SCORE:
            return [], only_changing
        return [s for s in scored if s[0] >= CLOSE_SHARE * scored[0][0]], only_changing


def _shown(versions: list[str]) -> str:
    """How a linked fact is shown: its last text, and the first one if it was deleted since."""
    last, first = versions[-1], versions[0]
    return f"{last} (was: {first})" if last == DELETED and first != DELETED else last


# -- the scenario's facts -------------------------------------------------------------------------


@dataclass(frozen=True)
class FactVersion:
    text: str
    kind: Literal["original", "edited", "deleted", "added"]
    phase: int | None  # the phase whose ✏️/➕ line gives it; None: in the fact file from the start
    where: str  # file:line


@dataclass
class ScenarioFact:
    file: str
    fact_id: str
    versions: list[FactVersion]
    told_phase: int | None  # the first phase that tells it; None: no phase does

    @property
    def changes(self) -> bool:
        return len(self.versions) > 1 or self.versions[0].kind == "added"


def first_told(bench: Benchmark) -> dict[str, int]:
    """Phase index at which each fact file is first told (asked for in prose, or required).

    The profile too: it is in the persona's context, but nothing makes the persona tell all of it.
    """
    told: dict[str, int] = {}
    for phase in bench.phases:
        refs = [bench.resolve_fact_file(r) for r in phase.fact_refs]
        refs += bench.plays[phase.index].required if phase.index < len(bench.plays) else []
        for name in refs:
            if name is not None:
                told.setdefault(name, phase.index)
    return told


def scenario_facts(bench: Benchmark) -> dict[FactKey, ScenarioFact]:
    """Every fact with its versions in play order; a ➕ addition gets the id the run will give it."""
    told_file = first_told(bench)
    where = {name: bench.display(f"{name}.md") for name in bench.fact_files}
    facts = {(name, f.id): ScenarioFact(name, f.id, [FactVersion(f.text, "original", None, where[name])], told_file.get(name))
             for name, ff in bench.fact_files.items() for f in ff.all_facts()}
    added = {(phase.index, add.line): (name, fact_id) for phase, add, name, fact_id in bench.additions_in_play()}
    for phase in bench.phases:
        for m in phase.mentions:
            if (fact := facts.get((bench.resolve_fact_file(m.file) or "", m.fact_id))) is not None:
                fact.told_phase = _earliest(fact.told_phase, phase.index)
        for edit in phase.edits:
            if (fact := facts.get((bench.resolve_fact_file(edit.file) or "", edit.fact_id))) is not None:
                kind = "deleted" if edit.text == DELETED else "edited"
                fact.versions.append(FactVersion(edit.text, kind, phase.index, f"{phase.chapter}:{edit.line}"))
                fact.told_phase = _earliest(fact.told_phase, phase.index)
        for add in phase.additions:
            if (key := added.get((phase.index, add.line))) is not None:
                facts[key] = ScenarioFact(*key, [FactVersion(add.text, "added", phase.index, f"{phase.chapter}:{add.line}")],
                                          phase.index)
    return facts


def _earliest(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


def scenario_index(bench: Benchmark, facts: dict[FactKey, ScenarioFact] | None = None) -> FactIndex:
    """The scenario's facts searchable by their words (`facts`: scenario_facts(bench), when already at hand)."""
    facts = scenario_facts(bench) if facts is None else facts
    return FactIndex({key: [v.text for v in f.versions] for key, f in facts.items()},
                     changing={key for key, f in facts.items() if f.changes})


def link_checks(bench: Benchmark) -> dict[str, CheckLinks]:
    """Every check's links, by check id, in scenario order."""
    index = scenario_index(bench)
    return {c.id: index.link(c) for c in bench.checks}


def describe(links: CheckLinks, facts: dict[FactKey, ScenarioFact] | None = None) -> str:
    """One line for `mmb validate --links`; with the scenario's facts, each linked fact's life in it."""
    if links.how == "absent":
        return f"{links.check_id}: no fact (absent: it asks about something never told)"
    if links.how == "none":
        return f"{links.check_id}: no fact (stated: 🔗 none)"
    if links.how == "unlinked":
        return f"{links.check_id}: no fact shares enough words with it; state its facts with 🔗 FILE ID"
    parts = []
    for link in links.facts:
        why = [f"shares: {', '.join(link.shared)}"] if link.shared else []
        life = [life_of(facts[link.key])] if facts and link.key in facts else []
        notes = f" ({'; '.join(why + life)})" if why or life else ""
        parts.append(f"{link.file} {link.fact_id} '{shortened(link.text)}'{notes}")
    return f"{links.check_id} [{links.how}]: " + "; ".join(parts)


def life_of(fact: ScenarioFact) -> str:
    """'told in phase 2, edited in phase 3 (chapter1.md:21)': phases counted from 1, as reports show them."""
    told = f"told in phase {fact.told_phase + 1}" if fact.told_phase is not None else "never told"
    if fact.versions[0].kind == "added":
        told = f"added in phase {fact.versions[0].phase + 1} ({fact.versions[0].where})"
    changes = [f"{v.kind} in phase {v.phase + 1} ({v.where})" for v in fact.versions[1:] if v.phase is not None]
    return ", ".join([told, *changes])


def shortened(text: str, limit: int = 60) -> str:
    """A fact's text cut for a one-line message."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
