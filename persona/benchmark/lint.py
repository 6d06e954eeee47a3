"""Warnings for benchmarks that load fine but probably do not test what their author meant.

Errors (benchmark.py) make a benchmark unplayable; these are likely mistakes a person should look
at: a check asked before the change it tests, an answer the question gives away, an answer no fact
contains, a file never told, no new session at all. Each names the file and line, like an error.
The heuristics reuse the scripted grader's matching (grading.matches), so "found" means what the
offline grader would accept.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from persona.benchmark.dates import asks_for_time
from persona.benchmark.facts import DELETED
from persona.benchmark.grading import SHORT_ANSWER_WORDS, matches, numbers, says_unknown, stems
from persona.benchmark.links import first_told, scenario_facts, scenario_index
from persona.benchmark.loader import MANIFEST, Benchmark
from persona.benchmark.phases import DIRECTIVE_MARKS, Category, Check, Phase
from persona.errors import Problem

# Categories whose answer should be written in some fact or phase text (the others are computed or absent).
GROUNDED = {Category.single, Category.updated, Category.preference}


@dataclass(frozen=True)
class Said:
    """A text the persona says, or may say, at a point of the scenario."""

    at: tuple[int, int]  # (phase index, line): its place in play order
    text: str
    source: str  # "file:line" or "fact family 1.2", for messages
    change: bool  # a ✏️/➕ line or phase prose: new information, not an original fact
    told: bool = True  # False: a fact of a file no phase tells
    old: str | None = None  # for a ✏️ line: the fact's text before it


class SaidIndex:
    """The texts said, in play order, found by the numbers and word stems an expected answer needs: which
    of them `grading.matches` accepts is asked of the few that share a number or word with it, never of
    every fact of a big benchmark for every check."""

    def __init__(self, said: list[Said]):
        self.said = said
        self.at = [s.at for s in said]
        self._numbers = [numbers(s.text) for s in said]
        self._stems = [stems(s.text) for s in said]
        self._by_key: dict[str, list[int]] = {}
        for i, (ns, ws) in enumerate(zip(self._numbers, self._stems, strict=True)):
            for key in (*(f"#{n}" for n in ns), *ws):
                self._by_key.setdefault(key, []).append(i)
        self._cache: dict[str, list[int]] = {}

    def matching(self, item: str) -> list[int]:
        """The places in play order of the texts that `matches(item, text)` accepts."""
        if item not in self._cache:
            self._cache[item] = self._find(item)
        return self._cache[item]

    def _find(self, item: str) -> list[int]:
        want_numbers = numbers(item)
        if want_numbers:  # every number must be there: the rarest one's texts are the only candidates
            rarest = min(want_numbers, key=lambda n: len(self._by_key.get(f"#{n}", ())))
            return [i for i in self._by_key.get(f"#{rarest}", ()) if want_numbers <= self._numbers[i]]
        want = stems(item)
        if not want:
            return [i for i, s in enumerate(self.said) if matches(item, s.text)]
        needed = len(want) if len(want) <= SHORT_ANSWER_WORDS else math.ceil(len(want) * 2 / 3)
        candidates = sorted({i for w in want for i in self._by_key.get(w, ())})
        return [i for i in candidates if len(want & self._stems[i]) >= needed]

    def before(self, at: tuple[int, int]) -> int:
        """How many texts are said before `at`."""
        return bisect.bisect_left(self.at, at)

    def after(self, at: tuple[int, int]) -> int:
        """The place of the first text said after `at`."""
        return bisect.bisect_right(self.at, at)


def lint(bench: Benchmark) -> list[Problem]:
    told_at = first_told(bench)
    said = SaidIndex(_said(bench, told_at))
    problems = [*_unused_files(bench, told_at), *_empty_phases(bench), *_no_new_session(bench), *_dates_back(bench),
                *_undated_time_checks(bench)]
    questions: dict[str, Check] = {}
    for phase in bench.phases:
        for check in phase.checks:
            problems += _check_warnings(phase, check, said)
            key = " ".join(check.question.lower().split())
            if key in questions:
                problems.append(Problem(phase.chapter, check.line, f"check {check.id} asks the same question as "
                                        f"{questions[key].id}: the agent cannot tell which answer is meant"))
            questions.setdefault(key, check)
    m = bench.manifest
    order = {bench.display(n): i for i, n in enumerate([MANIFEST, m.instructions, m.profile, *m.fact_files, *m.chapters])}
    return sorted(problems, key=lambda p: (order.get(p.file, len(order)), p.line or 0))


def _manifest(bench: Benchmark) -> str:
    return bench.display(MANIFEST)


def _said(bench: Benchmark, told_at: dict[str, int]) -> list[Said]:
    out: list[Said] = []
    texts: dict[tuple[str | None, str], str | None] = {}  # (file, fact id) -> its text so far, for edits
    for name, ff in bench.fact_files.items():
        first = told_at.get(name)
        at = (first if first is not None else len(bench.phases), 0)
        out += [Said(at, f.text, f"fact {name} {f.id}", False, first is not None) for f in ff.live_facts()]
    for phase in bench.phases:
        for m in phase.mentions:
            name = bench.resolve_fact_file(m.file)
            fact = bench.fact_files[name].get(m.fact_id) if name else None
            if fact is not None:
                out.append(Said((phase.index, m.line), fact.text, f"fact {name} {fact.id}", False))
        for e in phase.edits:
            name = bench.resolve_fact_file(e.file)
            key = (name, e.fact_id)
            if key not in texts:
                fact = bench.fact_files[name].get(e.fact_id) if name else None
                texts[key] = fact.text if fact else None
            out.append(Said((phase.index, e.line), e.text, f"{phase.chapter}:{e.line}", True, old=texts[key]))
            texts[key] = e.text
        out += [Said((phase.index, a.line), a.text, f"{phase.chapter}:{a.line}", True) for a in phase.additions]
        for i, line in enumerate(phase.body.splitlines()):
            if line.strip() and not any(mark in line for mark in DIRECTIVE_MARKS):
                out.append(Said((phase.index, phase.body_line + i), line, f"{phase.chapter}:{phase.body_line + i}", True))
    return sorted(out, key=lambda s: s.at)  # play order


def _unused_files(bench: Benchmark, told_at: dict[str, int]) -> list[Problem]:
    mentioned = {bench.resolve_fact_file(m.file) for p in bench.phases for m in p.mentions}
    return [Problem(_manifest(bench), None, f"fact file {name}.md is never told: no phase says 'tell the facts "
                    f"from {name}' or requires it, so no check can rely on it")
            for name in bench.fact_files
            if name not in told_at and name not in mentioned and name != bench.profile.name]


def _empty_phases(bench: Benchmark) -> list[Problem]:
    return [Problem(p.chapter, p.line, f"phase '{p.title}' is empty: the persona gets nothing to do")
            for p in bench.phases if not p.body.strip() and p.script is None]


def _no_new_session(bench: Benchmark) -> list[Problem]:
    checks = bench.checks
    starts = [p.index for p in bench.plays if p.new_sessions]
    if not checks:
        return []
    if not starts:
        recall = sum(c.category in (Category.single, Category.updated) for c in checks)
        if recall * 2 >= len(checks):
            return [Problem(_manifest(bench), None, "no phase calls `await bench.newSession()`: every check is "
                            "asked in the chat where its fact was told, so it tests the context window, not memory")]
        return []
    after = [c for p in bench.phases if p.index >= starts[0] for c in p.checks]
    if not after:
        first = bench.phases[starts[0]]
        return [Problem(first.chapter, first.line, "no check comes after the first new session: "
                        "nothing tests what survives it")]
    return []


def _dates_back(bench: Benchmark) -> list[Problem]:
    """A story's date goes forward: a `📅` line before the one in effect is most likely a typo."""
    problems, current = [], None
    for phase in bench.phases:
        if phase.date is None:
            continue
        if current is not None and phase.date.when < current.when:
            problems.append(Problem(phase.chapter, phase.date.line, f"the story's date goes back, from {current.iso()} "
                                    f"to {phase.date.iso()}: the agent hears the days in this order"))
        current = phase.date
    return problems


def _undated_time_checks(bench: Benchmark) -> list[Problem]:
    """What the dry run finds from the transcript, seen from the files: a check whose answer is a date, a
    span or "how long ago", not written in its facts, whose facts are told in a phase with no date."""
    asked = [(phase, c) for phase in bench.phases for c in phase.checks
             if c.category is not Category.absent and asks_for_time(c.category, c.answer)]
    if not asked:
        return []
    dates = bench.phase_dates()
    facts = scenario_facts(bench)
    index = scenario_index(bench, facts)
    problems = []
    for phase, check in asked:
        told = []  # (fact, the text it has at the check, the phase that told that text)
        for link in index.link(check).primary:
            fact = facts.get(link.key)
            if fact is None:
                continue
            versions = [v for v in fact.versions if v.phase is None or v.phase <= phase.index]
            if versions:
                told.append((link.key, versions[-1].text, fact.told_phase if versions[-1].phase is None else versions[-1].phase))
        if not told or all(matches(item, " ".join(text for _, text, _ in told)) for item in check.items):
            continue  # nothing to look at, or the facts' own words give the date or span
        undated = [f"{file} {fact_id} (phase {at + 1})" for (file, fact_id), _, at in told
                   if at is not None and dates[at].date is None]
        if undated:
            problems.append(Problem(phase.chapter, check.line, f"check {check.id}: its answer is a date or a time "
                                    f"span, but {', '.join(undated)} {'is' if len(undated) == 1 else 'are'} told in a "
                                    "phase with no date, so the agent cannot tell when it happened: give the phase a "
                                    "'📅 YYYY-MM-DD' line (the persona tells the agent the date), or write the date "
                                    "in the fact"))
    return problems


def _check_warnings(phase: Phase, check: Check, index: SaidIndex) -> list[Problem]:
    here = (phase.index, check.line)
    warn = lambda message: Problem(phase.chapter, check.line, f"check {check.id}: {message}")  # noqa: E731
    problems = []
    if check.category is not Category.absent and says_unknown(check.answer):
        problems.append(warn("its answer says it was never told: mark it [absent]"))
        return problems
    given = [item for item in check.items if _gives_away(item, check.question)]
    if given and check.category is not Category.absent:
        problems.append(warn(f"the question gives its answer away ({'; '.join(given)})"))
    if check.category not in GROUNDED:
        return problems
    said, cut, next_cut = index.said, index.before(here), index.after(here)
    for item in check.items:
        found = index.matching(item)
        before = [said[i] for i in found if i < cut]
        if check.category is Category.updated:
            changes = [s for s in before if s.change]
            edit = next((s for s in reversed(changes) if s.old is not None), None)  # the latest ✏️ giving it
            if edit is not None and edit.old != DELETED and numbers(item) and numbers(item) <= numbers(edit.old):
                # With numbers the scripted grader reads only them: the old value would pass too.
                problems.append(warn(f"every number of '{item}' is in the old value too ({edit.old!r}): the "
                                     "scripted grader would accept an agent that missed the change"))
            if changes:
                continue
            later = next((said[i] for i in found if i >= next_cut and said[i].change), None)
            if later:
                problems.append(warn(f"asked before the change that gives '{item}' ({later.source})"))
            else:
                problems.append(warn(f"no change before it (✏️/➕ line or phase text) gives '{item}': "
                                     "an [updated] check tests a fact that changed"))
        elif not before:
            later = next((said[i] for i in found if i >= next_cut), None)
            where = ("a typo, or a fact missing from the files?" if later is None
                     else f"it is told only later ({later.source})" if later.told
                     else f"it is only in {later.source}, which no phase tells")
            problems.append(warn(f"its answer '{item}' is in no fact or phase text before it: {where}"))
    return problems


def _gives_away(item: str, question: str) -> bool:
    """Numbers only when written the same way (a date in the question is no hint); words by the grader's rule."""
    if numbers(item):
        return " ".join(item.lower().split()) in " ".join(question.lower().split())
    return matches(item, question)
