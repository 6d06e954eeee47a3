"""Pure text helpers for DemoMind's memory: tokenising, stemming, classifying messages.

Kept free of state so the memory rules can be unit-tested on their own.
"""

from __future__ import annotations

import re

_WORD_RE = re.compile(r"\w+")
# Letter-only words, apostrophes kept inside ("I'm", "O'Neil"), for the name rule.
_LETTER_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?…])\s+|\n+")
_CYRILLIC_RE = re.compile(r"[\u0400-\u04FF]")
# Closing quotes/brackets that may follow the question mark: `He asked "why?"`.
_TRAILING = " \t\r\n\"'»“”’)]」"

STEM_LENGTH = 5

STOPWORDS_EN = frozenset(
    """
    a an the and or but if of to in on at for with from by about as into is are was were be been
    am do does did have has had i me my mine myself you your yours we our us it its this that these
    those what which who whom whose when where why how much many there here not no yes so can could
    will would should tell told say said know remember please now then just also very any some all
    again still ever think than too name called mention mentioned
    """.split()
)

STOPWORDS_RU = frozenset(
    """
    и в во не что как а то все всё но да ты к у же вы за бы по только мне меня тебе тебя от о об из
    ли если уже или ни был была были быть есть для мы их чем сам без кто этот эта это эти того этого
    этой какой какая какое какие какую каком каких сколько где когда куда зачем почему мой моя мое моё
    мои моего моей мою моих моим твой твоя твое твоё твои скажи напомни помнишь знаешь ну вот теперь
    сейчас там тут здесь так тоже еще ещё я он она оно они
    """.split()
)

STOPWORDS = STOPWORDS_EN | STOPWORDS_RU

SEARCH_PHRASES = (
    "search your memory",
    "check your memory",
    "look again",
    "поищи в памяти",
    "проверь память",
)


def normalise(text: str) -> str:
    """Lowercase and fold ё→е so Russian spellings with and without it match."""
    return text.lower().replace("ё", "е")


def tokens(text: str) -> list[str]:
    """Lowercased unicode words; single letters are dropped (they are noise), digits kept."""
    return [w for w in _WORD_RE.findall(normalise(text)) if len(w) > 1 or w.isdigit()]


def stem(word: str) -> str:
    """A crude language-agnostic stem: the first few characters."""
    return word[:STEM_LENGTH]


def content_stems(text: str) -> set[str]:
    """Stems of the words that carry meaning (stopwords of English and Russian removed)."""
    return {stem(w) for w in tokens(text) if w not in STOPWORDS}


def overlap(question: str, statement: str) -> int:
    return len(content_stems(question) & content_stems(statement))


def is_question(text: str) -> bool:
    return text.rstrip(_TRAILING).endswith("?")


def is_search_request(text: str) -> bool:
    low = normalise(text)
    return any(normalise(p) in low for p in SEARCH_PHRASES)


def is_cyrillic(text: str) -> bool:
    return _CYRILLIC_RE.search(text) is not None


def _is_pronoun_i(word: str) -> bool:
    # "I", "I'm", "I've": capitalised in English but not a name.
    return re.split(r"['’]", word, maxsplit=1)[0] == "I"


def looks_important(text: str) -> bool:
    """True if a statement should become a long-term note.

    The rule: it contains a digit, or a capitalised word that is not the first word of its
    sentence (most likely a name or a place).
    """
    if any(ch.isdigit() for ch in text):
        return True
    for sentence in _SENTENCE_SPLIT_RE.split(text):
        words = _LETTER_WORD_RE.findall(sentence)
        for word in words[1:]:
            if word[0].isupper() and not _is_pronoun_i(word):
                return True
    return False
