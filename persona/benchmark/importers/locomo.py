"""LoCoMo (snap-research/locomo, ACL 2024) as benchmarks: the persona lives one speaker's life.

Two shapes of the same data are read: `locomo10.json` (a list of samples, each `{sample_id,
conversation: {speaker_a, speaker_b, session_N, session_N_date_time}, qa, observation, event_summary,
session_summary}`) and the per-conversation files `multimodal_dialog/locomo10_v2/NN.json` (the same
fields flattened at the top level: `session_N_observation`, `events_session_N`, `session_N_summary`).
Both give the same benchmark.

The mapping (SOURCE.md of each folder repeats it with the counts):

- each session is a phase on its date (a `📅` line, which the persona tells the agent as the day's
  chat starts, and again in the new chat of the questions) that tells that session's facts, from a fact file
  of its own (`sessionNN.md`): the observations of the played speaker, and those of the other as
  news about "my friend NAME"; each fact ends with its dialogue id and the words said then;
- a question's evidence turn that no observation covers becomes a fact of its own (the turn's words),
  so every check links (🔗) to facts the persona tells;
- the questions come after the last session (or after every N sessions), in the first person where
  they name the played speaker; categories: single-hop -> single, multi-hop -> aggregate (a list
  when the answer lists items, as LoCoMo's scorer splits it), temporal -> temporal, open-domain ->
  single (the answer before its ';', as LoCoMo's scorer takes it), adversarial -> absent with the
  trap answer as `Wrong answer:`.

Real quirks handled (and counted, never silently): dialogue ids written "D8:6; D9:17", "D:11:26",
"D30:05" or "D"; observation ids as lists or comma-separated strings; evidence that names no turn;
answers that are numbers; adversarial questions with an `answer` of their own; session dates
without a session; turns with a photo (told by its BLIP caption).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from persona.benchmark.importers.common import (
    ChapterOut,
    CheckOut,
    Fact,
    FactFileOut,
    Imported,
    Located,
    PhaseOut,
    Section,
    Tally,
    read_json,
    say_date,
)
from persona.benchmark.importers.first_person import first_person
from persona.benchmark.phases import Category
from persona.errors import InputError
from persona.jsonc import JsonPath

CATEGORIES: dict[int, tuple[Category, str]] = {
    1: (Category.aggregate, "multi-hop"),
    2: (Category.temporal, "temporal"),
    3: (Category.single, "open-domain"),
    4: (Category.single, "single-hop"),
    5: (Category.absent, "adversarial"),
}
NOT_MENTIONED = "Not mentioned in the conversation"  # what LoCoMo's own scorer accepts for an adversarial question
QUESTIONS_PER_PHASE = 10
LICENCE = "CC BY-NC 4.0"
NewChat = Literal["every", "never"] | int
_SESSION = re.compile(r"^session_(\d+)$")
_DATE = re.compile(r"^session_(\d+)_date_time$")
_OBS = re.compile(r"^session_(\d+)_observation$")
_EVENTS = re.compile(r"^events_session_(\d+)$")
_SUMMARY = re.compile(r"^session_(\d+)_summary$")
_DIA = re.compile(r"^D(\d+):(\d+)$")
_DIA_LOOSE = re.compile(r"^D\W*(\d+)\W+(\d+)$")  # "D:11:26", "D11-26"


class Turn(BaseModel):
    model_config = ConfigDict(extra="allow")
    speaker: str
    dia_id: str
    text: str = ""
    blip_caption: str | None = None


class QA(BaseModel):
    model_config = ConfigDict(extra="allow")
    question: str
    answer: str | int | float | None = None
    evidence: list[str] | str = []
    category: int
    adversarial_answer: str | int | float | None = None


class Speakers(BaseModel):
    model_config = ConfigDict(extra="allow")
    speaker_a: str
    speaker_b: str


@dataclass
class Sample:
    """One conversation, whichever shape it came in; `at` gives the JSON path of a field in its file."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: dict[int, list[Turn]]
    dates: dict[int, str]
    observations: dict[int, Any]
    qa: list[QA]
    shape: str
    unused: list[str] = field(default_factory=list)  # fields read but not used, for SOURCE.md


@dataclass
class Options:
    play: Literal["A", "B"] = "A"
    new_chat: NewChat = "every"
    ask_after_each: int | None = None  # sessions between question phases; None: all after the last


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def dia_ids(raw: Any, tally: Tally, what: str) -> list[str]:
    """Dialogue ids as LoCoMo writes them, normalised ("D30:05" -> "D30:5"); unreadable ones counted."""
    if isinstance(raw, list):
        return [i for part in raw for i in dia_ids(part, tally, what)]
    out = []
    for piece in (p for p in re.split(r"[,;\s]+", str(raw)) if p):
        m = _DIA.match(piece) or _DIA_LOOSE.match(piece)
        if m is None:
            tally.add(f"{what} ids that are no dialogue id (left out)", repr(piece))
            continue
        norm = f"D{int(m[1])}:{int(m[2])}"
        if norm != piece:
            tally.add(f"{what} ids repaired", f"{piece} -> {norm}")
        out.append(norm)
    if not isinstance(raw, list) and len(out) > 1:
        tally.add(f"{what} entries holding several ids in one string (split)", str(raw))
    return out


# -- reading both shapes ----------------------------------------------------------------------------


def read_samples(path: Path, wanted: list[str] | None) -> list[Sample]:
    src = read_json(path)
    data = src.data
    if isinstance(data, list):
        samples = [_sample(src, item, (i,), "locomo10") for i, item in enumerate(data)]
    elif isinstance(data, dict) and "conversation" in data:
        samples = [_sample(src, data, (), "locomo10")]
    elif isinstance(data, dict) and "speaker_a" in data:
        samples = [_sample(src, data, (), "per-conversation")]
    else:
        raise InputError.single(path, 1, "not a LoCoMo file: expected a list of samples (locomo10.json) or one "
                                "conversation with speaker_a, speaker_b and session_N fields "
                                "(multimodal_dialog/locomo10_v2/NN.json)")
    seen: dict[str, int] = {}
    for s in samples:
        seen[s.sample_id] = seen.get(s.sample_id, 0) + 1
    if repeated := [sid for sid, n in seen.items() if n > 1]:
        raise InputError.single(path, None, f"sample id(s) used more than once: {', '.join(repeated)}")
    if wanted:
        unknown = [w for w in wanted if w not in seen]
        if unknown:
            raise InputError.single(path, None, f"no sample {', '.join(unknown)} (samples: {', '.join(seen)})")
        samples = [s for s in samples if s.sample_id in wanted]
    return samples


def _sample(src: Located, item: Any, base: JsonPath, shape: str) -> Sample:
    if not isinstance(item, dict):
        raise InputError([src.problem(base, "a sample must be a JSON object")])
    flat = shape == "per-conversation"
    conv = item if flat else item.get("conversation")
    conv_path = base if flat else base + ("conversation",)
    if not isinstance(conv, dict):
        raise InputError([src.problem(conv_path, "`conversation` must be an object with speaker_a, speaker_b, session_N")])
    speakers = src.validate(Speakers, conv, conv_path)
    if speakers.speaker_a.strip() == speakers.speaker_b.strip() or not speakers.speaker_a.strip():
        raise InputError([src.problem(conv_path, "speaker_a and speaker_b must be two different names")])
    sample_id = str(item.get("sample_id") or (f"conv-{src.path.stem}" if src.path.stem.isdigit() else src.path.stem))

    def where(name: str) -> tuple[dict[str, Any], JsonPath]:
        """The object holding a flattened field (observations, summaries) and its path, in either shape."""
        if flat:
            return item, base
        holder = {"observation": "observation", "events": "event_summary", "summary": "session_summary"}[name]
        value = item.get(holder)
        return (value if isinstance(value, dict) else {}), base + (holder,)

    sessions: dict[int, list[Turn]] = {}
    dates: dict[int, str] = {}
    for key, value in conv.items():
        if m := _SESSION.match(key):
            if not isinstance(value, list):
                raise InputError([src.problem(conv_path + (key,), "a session must be a list of turns")])
            sessions[int(m[1])] = [src.validate(Turn, t, conv_path + (key, i)) for i, t in enumerate(value)]
        elif m := _DATE.match(key):
            dates[int(m[1])] = str(value) if value is not None else ""
    if not sessions:
        raise InputError([src.problem(conv_path, "no sessions (session_1, session_2, ...)")])
    obs_holder, obs_path = where("observation")
    observations = {int(m[1]): (v, obs_path + (k,)) for k, v in obs_holder.items() if (m := _OBS.match(k))}
    qa_raw = item.get("qa", [])
    if not isinstance(qa_raw, list):
        raise InputError([src.problem(base + ("qa",), "qa must be a list of questions")])
    qa = [src.validate(QA, q, base + ("qa", i)) for i, q in enumerate(qa_raw)]
    unused = []
    for name, pattern in (("events", _EVENTS), ("summary", _SUMMARY)):
        holder, _ = where(name)
        n = sum(1 for k in holder if pattern.match(k))
        if n:
            unused.append(f"{n} {'event summaries' if name == 'events' else 'session summaries'}")
    return Sample(sample_id, speakers.speaker_a.strip(), speakers.speaker_b.strip(), dict(sorted(sessions.items())),
                  dates, observations, qa, shape, unused)


# -- the benchmark --------------------------------------------------------------------------------


@dataclass
class _Turns:
    by_id: dict[str, tuple[int, Turn]]  # dialogue id -> (session number, turn)


def _words(turn: Turn) -> str:
    """A turn as a fact quotes it: its words in quotes, and a shared photo by its caption."""
    text = turn.text.strip()  # line breaks stay: the writer joins them, counted
    quoted = f'"{text}"' if text else ""
    if turn.blip_caption:
        quoted = (quoted + " " if quoted else "") + f"(shares a photo: {turn.blip_caption.strip()})"
    return quoted


def _pronoun(sample: Sample, name: str) -> str | None:
    """The played speaker's pronoun, from how the observations about them speak of them."""
    text = " ".join(str(e[0]) for obs, _ in sample.observations.values() if isinstance(obs, dict)
                    for e in obs.get(name, []) if isinstance(e, list) and e)
    she = len(re.findall(r"\b(?:she|her|hers|herself)\b", text, re.IGNORECASE))
    he = len(re.findall(r"\b(?:he|him|his|himself)\b", text, re.IGNORECASE))
    return "she" if she > he else "he" if he > she else None


def build(sample: Sample, source_file: Path, opts: Options, tally: Tally) -> Imported:
    own, friend = (sample.speaker_a, sample.speaker_b) if opts.play == "A" else (sample.speaker_b, sample.speaker_a)
    turns = _Turns({})
    for number, session in sample.sessions.items():
        for turn in session:
            ids = dia_ids(turn.dia_id, tally, "turn")
            if len(ids) != 1:
                tally.add("turns without one readable dialogue id (left out)", turn.dia_id)
                continue
            if ids[0] in turns.by_id:
                tally.add("turns whose dialogue id repeats an earlier one (the first kept)", ids[0])
                continue
            turns.by_id[ids[0]] = (number, turn)
            if not turn.text.strip() and not turn.blip_caption:
                tally.add("turns with no text and no photo")
    width = max(2, len(str(max(sample.sessions))))
    files: dict[int, FactFileOut] = {}
    covered: set[str] = set()
    own_n = friend_n = 0
    for number in sample.sessions:
        ff = FactFileOut(f"session{number:0{width}d}", f"Session {number}",
                         [Section(f"{own} (me)"), Section(f"My friend {friend}")])
        obs, path = sample.observations.get(number, (None, ()))
        if obs is None:
            tally.add("sessions without observations")
        elif not isinstance(obs, dict):
            tally.add("observation blocks that are not an object of speakers (left out)", f"session {number}")
        else:
            for speaker, entries in obs.items():
                if speaker not in (own, friend):
                    tally.add("observations of a speaker not in the conversation (left out)", speaker)
                    continue
                for entry in entries if isinstance(entries, list) else []:
                    if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and entry[0].strip()):
                        tally.add("observations not written [text, dialogue id] (left out)", repr(entry)[:80])
                        continue
                    ids = dia_ids(entry[1], tally, "observation")
                    missing = [i for i in ids if i not in turns.by_id]
                    if missing:
                        tally.add("observation ids that name no turn of the conversation", ", ".join(missing))
                    fact = Fact(_fact_text(entry[0], speaker == friend, friend, ids, turns), ids)
                    ff.sections[0 if speaker == own else 1].facts.append(fact)
                    covered.update(ids)
                    own_n += speaker == own
                    friend_n += speaker == friend
        files[number] = ff
    # Evidence no observation covers: the turn itself becomes a fact, so every check has facts to link to.
    evidence_ids = {i for q in sample.qa for i in dia_ids(q.evidence, Tally(), "evidence")}
    from_turns = 0
    for dia in sorted(evidence_ids - covered, key=_dia_order):
        if dia not in turns.by_id:
            continue
        number, turn = turns.by_id[dia]
        if turn.speaker not in (own, friend):
            tally.add("evidence turns by a speaker not in the conversation (no fact made)", dia)
            continue
        said = _words(turn)
        if not said:
            continue
        who = f"My friend {friend}" if turn.speaker == friend else own
        files[number].sections[0 if turn.speaker == own else 1].facts.append(Fact(f"{who} said: {said} [{dia}]", [dia]))
        from_turns += 1
    by_source: dict[str, list[tuple[str, str]]] = {}
    for ff in files.values():
        for fact_id, fact in ff.numbered():
            for dia in fact.sources:
                by_source.setdefault(dia, []).append((ff.name, fact_id))
    checks, check_session = _checks(sample, own, friend, by_source, turns, tally)
    phases = _phases(sample, own, friend, files, checks, check_session, opts, tally)
    fact_files = [ff for ff in files.values() if ff.fact_count()]
    profile = FactFileOut("profile", own, [Section("Me", [Fact(f"My name is {own}")]),
                                           Section("My friend", [Fact(f"{friend} is a friend of mine")])])
    title = f"LoCoMo {sample.sample_id}: {own} and {friend} (played as {own})"
    imported = Imported(
        folder=sample.sample_id, title=title,
        description=(f"LoCoMo conversation {sample.sample_id} retold on-policy: {own} tells an AI assistant, session "
                     f"by session, what happened to them and to their friend {friend}, then asks LoCoMo's questions."),
        instructions=_instructions(own, friend),
        profile=profile, fact_files=fact_files, chapters=[ChapterOut("conversation.md", title, _note(sample), phases)],
        source=[], tally=tally)
    imported.source = _source(sample, source_file, opts, own, friend, imported, own_n, friend_n, from_turns)
    return imported


def _dia_order(dia: str) -> tuple[int, int]:
    m = _DIA.match(dia)
    return (int(m[1]), int(m[2])) if m else (0, 0)


def _fact_text(text: str, about_friend: bool, friend: str, ids: list[str], turns: _Turns) -> str:
    """An observation as a fact: the other speaker's as news about "my friend NAME"; then its dialogue
    ids with the words said, which keep the details (dates, names) the observation may have lost."""
    text = text.strip()
    if about_friend and re.match(rf"{re.escape(friend)}\b", text):
        text = f"My friend {text}"
    quotes = []
    for dia in ids:
        if dia in turns.by_id:
            turn = turns.by_id[dia][1]
            quotes.append(f"{dia}, {turn.speaker}: {_words(turn)}")
        else:
            quotes.append(dia)
    return f"{text} [{'; '.join(quotes)}]" if quotes else text


def _answer(qa: QA, category: Category, source: str, tally: Tally) -> tuple[list[str], str | None] | None:
    """The expected items and the trap, as LoCoMo's own scorer reads the answer; None: no answer."""
    if source == "adversarial":
        trap = None if qa.adversarial_answer in (None, "") else _number(qa.adversarial_answer).strip()
        if trap is None:
            tally.add("adversarial questions without an adversarial_answer (no trap given to the judge)")
        if category is Category.absent:
            return [NOT_MENTIONED], trap
    if qa.answer is None or not str(qa.answer).strip():
        return None
    answer = _number(qa.answer).strip()
    if not isinstance(qa.answer, str):
        tally.add("answers given as numbers (written as text)", answer)
    if ";" in answer:
        if source == "open-domain":  # LoCoMo's scorer grades the part before ';': the rest is the reason
            tally.add("open-domain answers cut at ';' as LoCoMo's scorer does (the reason after it left out)", answer)
            answer = answer.split(";")[0].strip()
        else:
            tally.add("answers with ';' written with ',' (';' separates list items here)", answer)
            answer = answer.replace(";", ",")
    items = [answer]
    if category is Category.aggregate and "," in answer:
        pieces = [re.sub(r"^(?:and|or)\s+", "", p.strip()) for p in answer.split(",")]
        if len(pieces) > 1 and all(p and not p.isdigit() for p in pieces):
            tally.add("multi-hop answers split into list items at ',' as LoCoMo's scorer does", answer)
            items = pieces
    return items, (_number(qa.adversarial_answer).strip() if qa.adversarial_answer not in (None, "") else None)


def _checks(sample: Sample, own: str, friend: str, by_source: dict[str, list[tuple[str, str]]], turns: _Turns,
            tally: Tally) -> tuple[list[CheckOut], dict[str, int]]:
    """The questions as checks, and the session after which each can be asked (its last evidence)."""
    checks, session_of = [], {}
    asked_before: dict[str, tuple[str, Any]] = {}
    pronoun = _pronoun(sample, own)
    width = max(3, len(str(len(sample.qa))))
    last = max(sample.sessions)
    for i, qa in enumerate(sample.qa, 1):
        cid = f"q{i:0{width}d}"
        if qa.category not in CATEGORIES:
            tally.add("questions of an unknown category (left out)", f"{cid}: category {qa.category}")
            continue
        category, source = CATEGORIES[qa.category]
        if source == "adversarial" and qa.answer not in (None, ""):
            category = Category.single
            tally.add("adversarial questions with an answer of their own (graded as single, the trap as Wrong answer)",
                      f"{cid}: {qa.question[:50]}")
        question = qa.question.strip()  # line breaks stay: the writer joins them, counted
        if not question:
            tally.add("questions with no text (left out)", cid)
            continue
        answer = _answer(qa, category, source, tally)
        if answer is None:
            tally.add("questions without an answer (left out)", f"{cid}: {question[:60]}")
            continue
        items, trap = answer
        key = " ".join(question.lower().split())
        if key in asked_before:
            first, first_items = asked_before[key]
            same = first_items == (items, trap)
            tally.add("questions repeating an earlier one word for word" + (" with the same answer" if same else
                      " with another answer (the agent could not tell which is meant)") + " (left out)",
                      f"{cid} = {first}: {question[:50]}")
            continue
        asked_before[key] = (cid, (items, trap))
        asked = first_person(question, own, [friend], pronoun)
        if asked != question:
            tally.add(f"questions about {own} asked in the first person")
        evidence = dia_ids(qa.evidence, tally, "evidence")
        if not evidence:
            tally.add("questions with no evidence (🔗 none; asked after the last session)", cid)
        absent_ids = [e for e in evidence if e not in turns.by_id]
        if absent_ids:
            tally.add("evidence ids that name no turn of the conversation (not linked)", f"{cid}: {', '.join(absent_ids)}")
        links = list(dict.fromkeys(link for e in evidence for link in by_source.get(e, [])))
        found = [turns.by_id[e][0] for e in evidence if e in turns.by_id]
        session_of[cid] = max(found) if found else last
        checks.append(CheckOut(cid, category, source, asked, items, trap, links))
    return checks, session_of


def _new_chat(opts: Options, index: int) -> bool:
    """Whether the session at `index` (0-based) opens a new chat."""
    if index == 0 or opts.new_chat == "never":
        return False
    return opts.new_chat == "every" or index % int(opts.new_chat) == 0


def _phases(sample: Sample, own: str, friend: str, files: dict[int, FactFileOut], checks: list[CheckOut],
            session_of: dict[str, int], opts: Options, tally: Tally) -> list[PhaseOut]:
    numbers = list(sample.sessions)
    extra_dates = sorted(set(sample.dates) - set(numbers))
    if extra_dates:
        tally.add("session dates without a session (no phase)", ", ".join(f"session_{n}" for n in extra_dates[:5])
                  + (" …" if len(extra_dates) > 5 else ""))
    phases: list[PhaseOut] = []
    pending = list(checks)
    for index, number in enumerate(numbers):
        said, story = say_date(sample.dates.get(number), tally, "sessions")
        ff = files[number]
        new = _new_chat(opts, index)
        # A dated session's date is its 📅 line, which the persona tells; an undated one only its brief says.
        opening = ("" if story else f"It is {said}. ") + ("You open a new chat with the assistant. " if new else "")
        if ff.fact_count():
            body = (f"{opening}Tell the facts from {ff.name}: what happened to you and to your friend {friend} "
                    "lately, as news of this day, in your own words and a few at a time.")
            require = [ff.name]
        else:
            body = f"{opening}Nothing from this day needs telling: say hello, chat a little about your day, then go on."
            require = []
        phases.append(PhaseOut(f"Session {number}: {said}", body, require, new, date=story))
        is_last = index == len(numbers) - 1
        if is_last or (opts.ask_after_each and (index + 1) % opts.ask_after_each == 0):
            due = [c for c in pending if is_last or session_of[c.id] <= number]
            pending = [c for c in pending if c not in due]
            phases += _question_phases(due, opts, number)
    return phases


def _question_phases(due: list[CheckOut], opts: Options, after: int) -> list[PhaseOut]:
    """Ten questions a phase, on the day of the session before them (its date holds: no date line)."""
    out = []
    for start in range(0, len(due), QUESTIONS_PER_PHASE):
        batch = due[start:start + QUESTIONS_PER_PHASE]
        new = start == 0 and opts.new_chat != "never"
        opening = "You open a new chat with the assistant. " if new else ""
        body = (f"{opening}Ask the assistant these questions about what you have told it, one at a time, in your "
                "own words; give no hints, and never tell it the answer.")
        out.append(PhaseOut(f"Questions {batch[0].id}–{batch[-1].id} (after session {after})", body, [], new, batch))
    return out


def _note(sample: Sample) -> str:
    return (f"Imported from LoCoMo sample {sample.sample_id} by `mmb import locomo` (see SOURCE.md). Each "
            "session is a phase; the questions come after the sessions they are about.")


def _instructions(own: str, friend: str) -> str:
    return f"""You are {own}. Over many months you chat now and then with an AI assistant, and each time you tell it
what has happened in your life, and in the life of your friend {friend}, since you last talked.

- Each phase is one day of that life, on the date its brief gives. The assistant cannot know that
  date unless you say it: tell it as you start the day's chat, as the brief asks ("Hi! Monday, 8 May
  2023 here ..."). Then live on that day: say when things happened as that day sees it ("yesterday",
  "last week", "last year") or by their dates, and never speak of anything a later phase brings:
  you don't know it yet.
- The facts of the day are in the day's fact file. They are notes of what was said, written about
  you ({own}) and about {friend} in the third person. Tell them in the first person, in your own
  words, a few per message, the way you would catch someone up: "I went to a support group
  yesterday, it was so powerful."
- Each fact ends, in square brackets, with where it comes from: a dialogue id ("D1:3"), who spoke and
  the words said then. Use those words for the details (when, where, names, numbers) and say them as
  you would; never say the ids or that you are quoting anything.
- What {friend} did or said, tell as news about your friend: "{friend} told me she painted a lake
  sunrise last year." A shared photo (given by a short description) is something you saw or showed:
  describe it in a few words.
- Write short, casual messages, no lists and no headings. Answer the assistant's questions from
  your facts; do not invent events.
- When a phase gives you questions, ask them plainly, one at a time, as yourself, without hints."""


def _source(sample: Sample, source_file: Path, opts: Options, own: str, friend: str, bench: Imported,
            own_n: int, friend_n: int, from_turns: int) -> list[str]:
    checks = bench.checks
    by_source: dict[str, dict[str, int]] = {}
    for c in checks:
        by_source.setdefault(c.source_category, {}).setdefault(c.category.value, 0)
        by_source[c.source_category][c.category.value] += 1
    raw_counts: dict[str, int] = {}
    for q in sample.qa:
        name = CATEGORIES.get(q.category, (None, f"category {q.category}"))[1]
        raw_counts[name] = raw_counts.get(name, 0) + 1
    dates = [d for n in sample.sessions if (d := sample.dates.get(n))]
    span = f", {say_date(dates[0], Tally(), '')[0]} to {say_date(dates[-1], Tally(), '')[0]}" if dates else ""
    ask = (f"after every {opts.ask_after_each} session(s) (each question once its evidence has been told; the rest "
           "after the last session)" if opts.ask_after_each else "after the last session")
    chat = {"every": "before every session after the first", "never": "never (one chat throughout)"}.get(
        str(opts.new_chat), f"every {opts.new_chat} sessions")
    lines = [
        f"# Source: LoCoMo {sample.sample_id}",
        "",
        "- **Dataset:** LoCoMo, from \"Evaluating Very Long-Term Conversational Memory of LLM Agents\" (Maharana "
        "et al., ACL 2024), https://github.com/snap-research/locomo",
        f"- **File:** `{source_file.name}` ({'a list of samples, locomo10.json' if sample.shape == 'locomo10' else 'one conversation, fields flattened (multimodal_dialog/locomo10_v2)'})",
        f"- **Sample:** `{sample.sample_id}`: {sample.speaker_a} (speaker A) and {sample.speaker_b} (speaker B), "
        f"{len(sample.sessions)} sessions{span}, {sum(len(s) for s in sample.sessions.values())} turns, "
        f"{len(sample.qa)} questions",
        f"- **Licence:** {LICENCE} (Creative Commons Attribution-NonCommercial): non-commercial use only, credit the "
        "authors. This folder is derived from the data: it carries the same licence. Do not commit it to a "
        "repository that is not under it.",
        f"- **Played by the persona:** {own} (speaker {opts.play}); {friend} is \"my friend\".",
        f"- **Imported:** {time.strftime('%Y-%m-%d')} by `mmb import locomo`",
        "",
        "## Mapping",
        "",
        f"- **Phases:** each of the {len(sample.sessions)} sessions is a phase on its date (`📅`, told to the agent "
        "as the day's chat starts: its own clock is not the story's) that tells that "
        f"session's facts (`require_all_facts`); {len(bench.phases) - len(sample.sessions)} question phase(s) of up to "
        f"{QUESTIONS_PER_PHASE} questions, asked {ask}. A new chat (`bench.newSession()`) {chat}, and before the "
        "questions" + (" (never with --new-chat never)." if opts.new_chat != "never" else " never."),
        f"- **Facts:** {bench.fact_count()} in {len(bench.fact_files)} fact files, one per session: {own_n} "
        f"observations of {own} (written about {own} in the third person; the persona tells them in the first), "
        f"{friend_n} of {friend} (as \"My friend {friend} ...\"), and {from_turns} dialogue turns that a question's "
        "evidence names but no observation covers (\"... said: ...\"). Every fact ends with its dialogue id(s) and "
        "the words said then.",
        f"- **Checks:** {len(checks)} of {len(sample.qa)} questions, ids `q001`... in the dataset's order. Each "
        "links (🔗) to the facts of its evidence ids; the expected answer is LoCoMo's, verbatim (exceptions counted "
        "below). Questions that name "
        f"{own} are asked in the first person.",
        "",
        "| LoCoMo category | questions | checks, by our category |",
        "|---|---:|---|",
        *[f"| {name} | {raw_counts.get(name, 0)} | "
          f"{', '.join(f'{cat} {n}' for cat, n in by_source.get(name, {}).items()) or '—'} |"
          for name in [*(c[1] for c in CATEGORIES.values()), *(k for k in raw_counts if k not in
                                                                   {c[1] for c in CATEGORIES.values()})]],
        "",
        f"- **Adversarial** questions ask about something the conversation never says (often what the other "
        f"speaker did); the expected answer is \"{NOT_MENTIONED}\" (LoCoMo's own), and the dataset's "
        "`adversarial_answer` is given to the judge as the `Wrong answer:` it must not accept.",
        "- **Not used:** " + ", ".join([*sample.unused, "image URLs and search queries (a photo is told by its BLIP "
                                        "caption)"]) + ": the observations carry the same facts, with dialogue ids.",
    ]
    return lines


def import_locomo(path: Path, samples: list[str] | None, opts: Options) -> list[Imported]:
    """Every selected sample of the file, built; bad input raises InputError naming file:line."""
    return [build(sample, path, opts, Tally()) for sample in read_samples(path, samples)]
