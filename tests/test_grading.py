"""Scoring rules: 0/10 for one value, proportional for lists, half after a memory search."""

from __future__ import annotations

import pytest

from persona.benchmark.grading import final_score, grade, matches, numbers, says_unknown, validate_score
from persona.benchmark.phases import Category, Check


def check(answer: str, category: Category = Category.single) -> Check:
    return Check(id="c", category=category, question="q?", answer=answer)


@pytest.mark.parametrize("text, expected", [
    ("I earn 4 000 EUR", {"4000"}), ("4,000 km", {"4000"}), ("1,5 km", {"1.5"}), ("a 52:30 run", {"52:30"}),
    ("on 9 April 2026.", {"9", "2026"}),
])
def test_numbers_are_normalised(text, expected):
    assert numbers(text) == expected


@pytest.mark.parametrize("expected, reply, ok", [
    ("279 km", "You have run 279 kilometres since June.", True),
    ("279 km", "About 270 km.", False),
    ("52:30", "Your best is 52:30 now (it was 54:10).", True),
    ("carpenter", "Jonas works as a carpenter.", True),
    ("watercolour painting", "He took up pottery.", False),
    ("watercolour painting", "He paints watercolours.", True),  # stems, not exact words
    ("watercolour painting", "He took up watercolour painting.", True),
    ("14 марта", "День рождения у Лены 14 марта.", True),
    # A short value needs all its words: a changed title must not match the old one.
    ("Senior Data Analyst", "You're a Data Analyst at Harbourline.", False),
    ("Senior Data Analyst", "You were promoted to senior data analyst.", True),
    ("primary school teacher", "Sam teaches at a primary school.", True),
    # A longer one may be paraphrased: two thirds of its words.
    ("hill repeats on Vale Street", "You do hill repeats on Vale now.", True),
    ("hill repeats on Vale Street", "You do a Zwift session on Vale Street.", False),
])
def test_matching(expected, reply, ok):
    assert matches(expected, reply) is ok


def test_single_value_is_all_or_nothing():
    assert grade(check("4000 EUR"), "It's 4000 EUR a month.").score == 10
    assert grade(check("4000 EUR"), "It's 3500 EUR a month.").score == 0


def test_list_scores_in_proportion():
    c = check("Ebba; Noah; Lars")
    assert grade(c, "Ebba and Noah.").score == pytest.approx(6.7)
    assert grade(c, "Ebba, Noah and Lars").score == 10


def test_absent_wants_an_admission():
    c = check("you didn't tell me", Category.absent)
    assert grade(c, "I don't think you told me that.").score == 10
    assert grade(c, "Your blood type is A+.").score == 0


@pytest.mark.parametrize("reply", ["I don't know.", "You never told me that.", "I don't think you told me that.",
                                   "Ты мне этого не говорил.", "Не помню такого.", "I have no information about it.",
                                   "I don’t think you told me that.", "You didn’t mention it."])  # typographic apostrophes
def test_unknown_phrases(reply):
    assert says_unknown(reply)


def test_score_rules():
    assert validate_score(check("4000"), 5) is not None
    assert validate_score(check("4000"), 10) is None
    assert validate_score(check("a; b"), 5) is None
    assert validate_score(check("a; b"), 11) is not None
    assert final_score(10, second_attempt=True) == 5 and final_score(10, second_attempt=False) == 10
