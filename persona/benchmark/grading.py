"""Scoring rules shared by every persona, and the rule grader used by the scripted persona.

The rules (spec): scores are 0-10; a single-value answer gets 0 or 10; a list gets its share of
right items; a right answer given only after "search your memory" counts half.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from persona.benchmark.phases import Category, Check

SECOND_ATTEMPT_FACTOR = 0.5
SHORT_ANSWER_WORDS = 3  # up to this many content words, the scripted grader wants them all

# "You never told me" in the languages we ship. Matched on lowercased text.
UNKNOWN_PATTERNS = [
    r"\bdon'?t know\b", r"\bdo not know\b", r"\b(didn'?t|did not|never|haven'?t|have not|don'?t think you|do not think you) (ever )?(tell|told|mention|say|said)",
    r"\bno (information|record|memory|idea)\b", r"\bdon'?t (remember|recall)\b", r"\bnot sure\b",
    r"\bi (don'?t|do not) have\b",  # "I don't have that", never "they don't have fur"
    r"\bcan'?t (find|recall|remember)\b", r"\bi'?m not aware\b", r"\bnot (mentioned|told)\b",
    r"не (говорил|говорила|рассказывал|рассказывала|упоминал|упоминала|знаю|помню)", r"нет (информации|данных)",
    r"не могу (найти|вспомнить)", r"не припоминаю",
]
_UNKNOWN = re.compile("|".join(UNKNOWN_PATTERNS), re.IGNORECASE)

STOPWORDS = set(
    "a an the and or of in on at to for with from by is are was were be been am i my me you your it its this that "
    "what which who when where how many much do does did have has had not no yes about as than then there their "
    "и в во на с со к ко по за из у о об от до для что как это мой моя моё мои ты твой я мне меня а но же ли".split()
)
_NUMBER = re.compile(r"\d+(?:[:.,]\d+)*")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def allowed_scores(check: Check) -> str:
    return "0 to 10 in proportion to the right items" if check.is_list else "0 or 10"


def validate_score(check: Check | None, score: float) -> str | None:
    """Why `score` breaks the rules for this check (None: for any check), or None if it is fine."""
    if not 0 <= score <= 10:
        return "score must be between 0 and 10"
    if check is not None and not check.is_list and score not in (0, 10):
        return f"check {check.id} has a single expected value: score it 0 or 10"
    return None


def final_score(raw: float, second_attempt: bool) -> float:
    return raw * SECOND_ATTEMPT_FACTOR if second_attempt else raw


# Typographic apostrophes (what markdown renderers and phone keyboards write: "don’t") read as plain ones.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})


def says_unknown(reply: str) -> bool:
    return bool(_UNKNOWN.search(reply.translate(_APOSTROPHES)))


def numbers(text: str) -> set[str]:
    """Numbers as written, normalised: '4 000' and '4,000' -> '4000'; '1,5' -> '1.5'; '52:30' stays."""
    text = re.sub(r"(?<=\d)[ \u00a0\u202f](?=\d{3}\b)", "", text)
    out = set()
    for n in _NUMBER.findall(text):
        if re.fullmatch(r"\d{1,3}(,\d{3})+", n):
            n = n.replace(",", "")
        out.add(n.replace(",", ".").rstrip("."))
    return out


def stems(text: str) -> set[str]:
    """Content-word stems: lowercase, stopwords out, first 5 letters (crude, but works for ru/en inflection)."""
    return {w[:5] for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS and len(w) > 1}


def matches(expected: str, reply: str) -> bool:
    """Every number of the expected value is in the reply; with no numbers, its words are.

    All words of a short value (up to three), two thirds of a longer one: "Senior Data Analyst"
    must not match the old "Data Analyst", while a long answer may be paraphrased.
    """
    want_numbers = numbers(expected)
    if want_numbers:
        return want_numbers <= numbers(reply)
    want = stems(expected)
    if not want:
        return expected.strip().lower() in reply.lower()
    needed = len(want) if len(want) <= SHORT_ANSWER_WORDS else math.ceil(len(want) * 2 / 3)
    return len(want & stems(reply)) >= needed


@dataclass
class Verdict:
    score: float  # raw, before the second-attempt factor
    unknown: bool  # the agent said it was never told
    comment: str


def items_found(check: Check, reply: str) -> list[bool]:
    """Which expected items the reply gives, by rule; for `absent`, whether it says it was never told."""
    if check.category is Category.absent:
        return [says_unknown(reply)] * len(check.items)
    return [matches(item, reply) for item in check.items]


def items_score(check: Check, found: list[bool]) -> float:
    """The rule, applied by code to a grader's item marks: a single value (and `absent`) 0 or 10, a list
    10 × right / expected."""
    if not found:
        return 0.0
    if check.category is Category.absent or not check.is_list:
        return 10.0 if all(found) else 0.0
    return round(10 * sum(found) / len(found), 1)


def counts_half(check: Check, after_memory_search: bool) -> bool:
    """The ×0.5 rule: a right answer given only after "search your memory"; never for `absent`, where
    saying "you never told me" is itself the right answer."""
    return after_memory_search and check.category is not Category.absent


def grade(check: Check, reply: str) -> Verdict:
    """Grade one reply by rule: numbers, list items, key words."""
    unknown = says_unknown(reply)
    found = items_found(check, reply)
    score = items_score(check, found)
    if check.category is Category.absent:
        return Verdict(score, unknown, "rightly says it was never told" if score else "claims to know something that was never said")
    if score == 10:
        return Verdict(10, unknown, "matches the expected answer")
    missing = [item for item, ok in zip(check.items, found, strict=True) if not ok]
    comment = ("says it was never told" if unknown and not any(found) else f"missing: {'; '.join(missing)}")
    return Verdict(score, unknown, comment)
