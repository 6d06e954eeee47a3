"""A dataset's question about the persona's own speaker, asked in the first person.

LoCoMo asks "When did Caroline go to the support group?"; the persona playing Caroline asks "When did
I go to the support group?". Rules, not a model: the speaker's name (and, in a question that names
no one else of the conversation, the speaker's own pronouns) become I / me / my, and the verb after a
new "I" agrees. An LLM persona words the question its own way anyway; this form is what the judge
and the scripted persona see. A question that names both speakers keeps the other's pronouns.
"""

from __future__ import annotations

import re

AUX = {"did": "did", "does": "do", "do": "do", "is": "am", "are": "am", "was": "was", "were": "was", "has": "have",
       "have": "have", "had": "had", "would": "would", "will": "will", "can": "can", "could": "could",
       "should": "should", "might": "might", "may": "may", "must": "must"}
# After a new subject "I": the verb that follows agrees ("Caroline is" -> "I am", "she has" -> "I have").
AGREE = {"is": "am", "are": "am", "has": "have", "does": "do", "was": "was", "were": "was"}
PREPOSITIONS = {"to", "for", "with", "from", "about", "of", "by", "at", "on", "in", "between", "among", "than",
                "toward", "towards", "like", "after", "before", "without", "behind", "around", "near", "into"}
# Words after "her" that show it is the object ("give her a book", "told her"), not a possessive ("her dog").
_OBJECT_FOLLOWERS = PREPOSITIONS | {"a", "an", "the", "and", "or", "when", "that", "if", "so", "as", "while",
                                    "because", "this", "some", "any", "up", "out", "back", "off", "feel",
                                    "to", "most", "more", "over", "through"}
# After these a name starts a clause: "the tournament that Joanna won", "When Evan got back".
CLAUSE_START = {"that", "when", "where", "why", "how", "which", "who", "what", "while", "since", "if", "as",
                "whom", "whether", "until", "once", "because"}
_NOT_VERBS = PREPOSITIONS | {"and", "or", "when", "that", "if", "so", "as", "while", "because", "this", "his", "her",
                             "their", "its", "s", "plus", "yes", "news"}
PRONOUNS = {"she": ("she", "her", "hers", "herself"), "he": ("he", "him", "his", "himself")}
_WORD = re.compile(r"[A-Za-z]+")


def _subject_verb(word: str) -> bool:
    """Whether the word after a name reads as its verb ("Caroline went", "Tim likes")."""
    w = word.lower()
    if w in AUX or w in AGREE:
        return True
    if not word.islower() or w in _NOT_VERBS or len(w) < 3:
        return False
    return w.endswith(("ed", "s")) and not w.endswith(("ss", "us", "is"))


def _agree(verb: str) -> str:
    """The verb of "I": 'is' -> 'am', 'likes' -> 'like', 'goes' -> 'go', 'tries' -> 'try'; past tense unchanged."""
    w = verb.lower()
    if w in AGREE:
        return AGREE[w]
    if w.endswith("ed") or w in AUX:
        return verb
    if w.endswith("ies") and len(w) > 4:
        return verb[:-3] + "y"
    if w.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        return verb[:-2]
    if w.endswith("s") and not w.endswith("ss"):
        return verb[:-1]
    return verb


def _cap(text: str, like: str) -> str:
    return text[:1].upper() + text[1:] if like[:1].isupper() else text


PLURAL = {"does": "do", "is": "are", "was": "were", "has": "have"}


def _pairs(question: str, name: str) -> str:
    """"Tim and John" as a pair: "John and I" as a subject, "John and me" after a preposition, "John's
    and my" for "Tim and John's"."""
    n, cap = re.escape(name), r"(?P<o>[A-Z][a-z]+)"
    aux = "|".join(AUX)
    prep = "|".join(PREPOSITIONS)

    def plural(m: re.Match[str]) -> str:
        verb = m["aux"]
        return _cap(PLURAL.get(verb.lower(), AUX[verb.lower()] if verb.lower() in ("did", "do") else verb.lower()), verb)

    question = re.sub(rf"\b{n} and {cap}(?P<s>'s|’s)", lambda m: f"{m['o']}{m['s']} and my", question)
    question = re.sub(rf"\b(?P<aux>(?i:{aux})) (?:{n} and {cap}|{cap.replace('o>', 'p>')} and {n})\b",
                      lambda m: f"{plural(m)} {m['o'] or m['p']} and I", question)
    question = re.sub(rf"\b(?P<prep>{prep}) (?:{n} and {cap}|{cap.replace('o>', 'p>')} and {n})\b",
                      lambda m: f"{m['prep']} {m['o'] or m['p']} and me", question)
    return re.sub(rf"^(?:{n} and {cap}|{cap.replace('o>', 'p>')} and {n})\b",
                  lambda m: f"{m['o'] or m['p']} and I", question)


def first_person(question: str, name: str, others: list[str], pronoun: str | None) -> str:
    """The question as the speaker `name` asks it; `others` are the conversation's other names (their
    pronouns stay); `pronoun` is the speaker's own ('she' or 'he'), or None when unknown."""
    if not re.search(rf"\b{re.escape(name)}\b", question):
        return question
    question = _pairs(question, name)
    question = re.sub(rf"(^|\W){re.escape(name)}(?:'s|’s|'|’)(?=\W)",
                      lambda m: m[1] + ("My" if not m[1].strip() and m.start() == 0 else "my"), question)
    tokens = re.split(r"(\W+)", question)  # words and the separators between them, alternating
    words = [i for i, t in enumerate(tokens) if _WORD.fullmatch(t)]
    names_other = any(re.search(rf"\b{re.escape(o)}\b", question) for o in others)
    own = set(PRONOUNS.get(pronoun or "", ())) if not names_other else set()
    out = list(tokens)

    def nxt(pos: int) -> int | None:
        later = [i for i in words if i > pos]
        return later[0] if later else None

    def prev(pos: int) -> int | None:
        earlier = [i for i in words if i < pos]
        return earlier[-1] if earlier else None

    for i in words:
        word, low = tokens[i], tokens[i].lower()
        after = nxt(i)
        before = prev(i)
        sep = tokens[i + 1] if i + 1 < len(tokens) else ""
        if word != name and low not in own:
            continue
        if low in ("his", "hers") or (low == "her" and after is not None and sep.strip() == ""
                                      and tokens[after].lower() not in _OBJECT_FOLLOWERS):
            out[i] = _cap("mine" if low == "hers" else "my", word)
            continue
        if low in ("himself", "herself"):
            out[i] = _cap("myself", word)
            continue
        aux_before = before is not None and tokens[before].lower() in AUX and tokens[before + 1].strip() == ""
        clause = before is None or tokens[before].lower() in CLAUSE_START
        subject = low in ("he", "she") or aux_before or (clause and after is not None) or (
            after is not None and sep.strip() == "" and _subject_verb(tokens[after])
            and (before is None or tokens[before].lower() not in PREPOSITIONS))
        if not subject:
            out[i] = "me"
            continue
        out[i] = "I"
        if aux_before:
            out[before] = _cap(AUX[tokens[before].lower()], tokens[before])
        elif after is not None and sep.strip() == "" and _subject_verb(tokens[after]):
            out[after] = _agree(tokens[after])
    return "".join(out)
