"""LongMemEval (xiaowu0162/LongMemEval, ICLR 2025) as benchmarks: bundles of its questions, each
asked on its own date after its evidence sessions were retold.

A LongMemEval instance is one question with the chat sessions that hold its answer (the `oracle`
variant has only those; `s` and `m` add distractor sessions, which are left out here, counted:
the persona retells what matters, and a haystack of ShareGPT chats retold by a persona would cost
hours). A benchmark takes a bundle of instances (`--bundle N`) and lays them on one time line:
every evidence session is a phase on its own date that tells what the user said in it (the turns
marked `has_answer`, or the whole session when none is), and every question is asked on its
`question_date`, after its sessions. One persona lives all the bundle's sessions, so a bundle is
one person whose life is the union of the instances' users (LongMemEval gives each question its own
user; two instances that say different things about the same topic make their questions ambiguous:
a limit of bundling, stated in SOURCE.md).

Not possible on-policy, left out and counted: `single-session-assistant` questions (they ask what
the assistant said in an earlier chat; the agent under test said its own words, not the dataset's).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from persona.benchmark.importers.common import (
    ChapterOut,
    CheckOut,
    Fact,
    FactFileOut,
    Imported,
    PhaseOut,
    Section,
    Tally,
    parse_when,
    read_json,
    say_date,
)
from persona.benchmark.phases import Category
from persona.errors import InputError

CATEGORIES = {
    "single-session-user": Category.single,
    "single-session-preference": Category.preference,
    "multi-session": Category.aggregate,
    "knowledge-update": Category.updated,
    "temporal-reasoning": Category.temporal,
}
NOT_ON_POLICY = {"single-session-assistant": "it asks what the assistant said in an earlier chat; the agent under test "
                 "said its own words there, not the dataset's"}
MAX_FACT_CHARS = 2000
LICENCE = "MIT (code and data, as the LongMemEval repository states; check the dataset card of the copy you downloaded)"


class Turn(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str = ""
    has_answer: bool | None = None


class Instance(BaseModel):
    model_config = ConfigDict(extra="allow")
    question_id: str
    question_type: str
    question: str
    answer: str | int | float
    question_date: str = ""
    haystack_session_ids: list[str] = []
    haystack_dates: list[str] = []
    haystack_sessions: list[list[Turn]]
    answer_session_ids: list[str] = []


@dataclass
class Options:
    bundle: int = 10
    questions: list[str] = field(default_factory=list)  # only these question ids; empty: all
    new_chat: Literal["every", "never"] = "every"


@dataclass
class _Session:
    sid: str
    raw_date: str
    when: datetime | None
    turns: list[Turn]
    order: int


@dataclass
class _Question:
    inst: Instance
    when: datetime | None
    order: int
    sessions: list[str]


def read_instances(path: Path, tally: Tally) -> list[Instance]:
    src = read_json(path)
    if not isinstance(src.data, list):
        raise InputError.single(path, 1, "not a LongMemEval file: expected a list of question instances "
                                "(longmemeval_oracle.json, longmemeval_s.json ...)")
    out = [src.validate(Instance, item, (i,)) for i, item in enumerate(src.data)]
    problems = []
    for i, inst in enumerate(out):
        if inst.haystack_session_ids and len(inst.haystack_session_ids) != len(inst.haystack_sessions):
            problems.append(src.problem((i, "haystack_session_ids"), "needs one id per haystack session"))
        if inst.haystack_dates and len(inst.haystack_dates) != len(inst.haystack_sessions):
            problems.append(src.problem((i, "haystack_dates"), "needs one date per haystack session"))
    if problems:
        raise InputError(problems)
    return out


def _number(value: str | int | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _id(raw: str, tally: Tally) -> str:
    clean = re.sub(r"[^\w.-]+", "-", raw).strip("-") or "q"
    if clean != raw:
        tally.add("question ids with spaces or marks (written with '-')", raw)
    return clean


def _facts(session: _Session, tally: Tally) -> list[Fact]:
    marked = [(i, t) for i, t in enumerate(session.turns) if t.role == "user" and t.has_answer and t.content.strip()]
    if not marked:
        marked = [(i, t) for i, t in enumerate(session.turns) if t.role == "user" and t.content.strip()]
        if marked:
            tally.add("evidence sessions with no user turn marked has_answer (all their user turns told)", session.sid)
    facts = []
    for i, turn in marked:
        text = turn.content.strip()  # line breaks stay: the writer joins them, counted
        if len(text) > MAX_FACT_CHARS:
            tally.add(f"user turns longer than {MAX_FACT_CHARS} characters (cut)", f"{session.sid}#{i}")
            text = text[:MAX_FACT_CHARS].rstrip() + " …"
        facts.append(Fact(f"{text} [{session.sid}#{i}]", [session.sid]))
    return facts


def build_bundle(instances: list[Instance], number: int, source_file: Path, opts: Options, tally: Tally) -> Imported:
    sessions: dict[str, _Session] = {}
    questions = []
    order = 0
    for inst in instances:
        ids = inst.haystack_session_ids or [f"{inst.question_id}-s{i + 1}" for i in range(len(inst.haystack_sessions))]
        keep = set(inst.answer_session_ids) if inst.answer_session_ids else set(ids)
        if not inst.answer_session_ids:
            tally.add("instances without answer_session_ids (every haystack session taken as evidence)", inst.question_id)
        dropped = [sid for sid in ids if sid not in keep]
        if dropped:
            tally.add("distractor sessions left out (not evidence)", n=len(dropped))
        mine = []
        for i, (sid, turns) in enumerate(zip(ids, inst.haystack_sessions, strict=True)):
            if sid not in keep:
                continue
            mine.append(sid)
            if sid in sessions:
                tally.add("evidence sessions shared by two questions of a bundle (told once)", sid)
                continue
            raw = inst.haystack_dates[i] if i < len(inst.haystack_dates) else ""
            sessions[sid] = _Session(sid, raw, parse_when(raw), turns, order)
            order += 1
        questions.append(_Question(inst, parse_when(inst.question_date), order, mine))
        order += 1
    undated = sum(1 for s in sessions.values() if s.when is None) + sum(1 for q in questions if q.when is None)
    if undated:
        tally.add("sessions or questions with no readable date (kept in the file's order)", n=undated)
    # One time line: each event at its date; an undated one right after what came before it in the file.
    events: list[tuple[datetime, int, _Session | _Question]] = []
    last = datetime.min
    for item in sorted([*sessions.values(), *questions], key=lambda x: x.order):
        when = item.when or last
        last = max(last, when)
        events.append((when, item.order, item))
    events.sort(key=lambda e: (e[0], e[1]))
    files: list[FactFileOut] = []
    phases: list[PhaseOut] = []
    links: dict[str, list[tuple[str, str]]] = {}
    width = max(2, len(str(len(sessions))))
    pending: list[CheckOut] = []
    pending_date, pending_day, pending_story = "", None, None
    n_sessions = 0

    def flush() -> None:
        nonlocal pending
        if pending:
            new = opts.new_chat != "never"
            opening = "You open a new chat with the assistant. " if new else ""
            undated = "" if pending_story else f"It is {pending_date}. "
            phases.append(PhaseOut(
                f"Questions on {pending_date}", f"{undated}{opening}Ask the assistant these questions about what you "
                "have told it, one at a time, in your own words; give no hints, and never tell it the answer.",
                [], new, pending, date=pending_story))
            pending = []

    for _when, _, item in events:
        if isinstance(item, _Session):
            flush()
            n_sessions += 1
            facts = _facts(item, tally)
            said, story = say_date(item.raw_date, tally, "sessions")
            name = f"s{n_sessions:0{width}d}"
            new = opts.new_chat != "never" and bool(phases)
            opening = ("" if story else f"It is {said}. ") + ("You open a new chat with the assistant. " if new else "")
            if facts:
                ff = FactFileOut(name, f"Session {item.sid}", [Section("What I said", facts)])
                files.append(ff)
                links[item.sid] = [(name, fid) for fid, _ in ff.numbered()]
                body = (f"{opening}Tell the facts from {name}: what you said in a chat on this day, in your own words, "
                        "as things of your life, a few at a time.")
                phases.append(PhaseOut(f"Session {n_sessions}: {said}", body, [name], new, date=story))
            else:
                tally.add("evidence sessions with nothing the user said (no phase)", item.sid)
            continue
        inst = item.inst
        said, day = say_date(inst.question_date, tally, "questions")
        if pending and (day.day if day else said) != pending_day:
            flush()
        if not pending:  # the day's questions are asked at the time of its first
            pending_date, pending_day, pending_story = said, (day.day if day else said), day
        answer = _number(inst.answer).strip()
        if not isinstance(inst.answer, str):
            tally.add("answers given as numbers (written as text)", answer)
        if ";" in answer:
            tally.add("answers with ';' written with ',' (';' separates list items here)", answer[:60])
            answer = answer.replace(";", ",")
        absent = inst.question_id.endswith("_abs")
        category = Category.absent if absent else CATEGORIES.get(inst.question_type, Category.single)
        if not absent and inst.question_type not in CATEGORIES:
            tally.add("questions of an unknown type (graded as single)", inst.question_type)
        pending.append(CheckOut(_id(inst.question_id, tally), category,
                                "abstention" if absent else inst.question_type, inst.question.strip(),
                                [answer], None, sorted(link for sid in item.sessions for link in links.get(sid, []))))
    flush()
    qids = [q.inst.question_id for q in questions]
    title = f"LongMemEval bundle {number}: {len(questions)} questions ({qids[0]} … {qids[-1]})"
    bench = Imported(
        folder=f"bundle-{number:02d}", title=title,
        description="LongMemEval questions retold on-policy: the persona tells, on their dates, what the user said in "
                    "the evidence sessions, then asks each question on its question date.",
        instructions=INSTRUCTIONS,
        profile=FactFileOut("profile", "Me", [Section("Me", [Fact("I chat with an AI assistant about my plans, "
                                                                   "purchases, hobbies and work")])]),
        fact_files=files, chapters=[ChapterOut("conversation.md", title, "Imported by `mmb import longmemeval` (see "
                                               "SOURCE.md): the bundle's sessions and questions on one time line.",
                                               phases)],
        source=[], tally=tally)
    bench.source = _source(source_file, bench, qids, len(sessions))
    return bench


INSTRUCTIONS = """You are an ordinary person who uses an AI assistant now and then for help with life: plans,
purchases, hobbies, work, health. Over the weeks of this scenario you open a chat every so often.

- Each phase is one day, on the date its brief gives. The assistant cannot know that date unless
  you say it: tell it as you start the day's chat, as the brief asks ("Hi! Saturday, 20 May 2023
  here ..."). Then live on that day: speak of "yesterday" or "last month" as that day sees it, or of
  the dates themselves, and never of anything a later phase brings.
- The facts of the day are things you said in a chat on that day, in your own words then (the part in
  square brackets at the end is only where it comes from: never say it). Say them again in your own
  words, as a person chatting: mention the details (names, numbers, dates, places) naturally, a few per
  message, and feel free to ask for a little help as you did then.
- Write short, casual messages, no lists. Answer the assistant's questions from your facts; do not
  invent events.
- When a phase gives you questions, ask them plainly, one at a time, without hints."""


def _source(source_file: Path, bench: Imported, qids: list[str], n_sessions: int) -> list[str]:
    by_type: dict[str, int] = {}
    for c in bench.checks:
        by_type[f"{c.source_category} → {c.category.value}"] = by_type.get(f"{c.source_category} → {c.category.value}", 0) + 1
    return [
        f"# Source: LongMemEval, {bench.folder}",
        "",
        "- **Dataset:** LongMemEval, from \"LongMemEval: Benchmarking Chat Assistants on Long-Term Interactive Memory\" "
        "(Wu et al., ICLR 2025), https://github.com/xiaowu0162/LongMemEval",
        f"- **File:** `{source_file.name}`; questions {', '.join(qids)}",
        f"- **Licence:** {LICENCE}.",
        f"- **Imported:** {time.strftime('%Y-%m-%d')} by `mmb import longmemeval`",
        "",
        "## Mapping",
        "",
        f"- **One time line:** {n_sessions} evidence sessions, each a phase on its own date telling what the user said "
        "in it (the turns marked `has_answer`); each question asked on its `question_date`, after its sessions. "
        "Every date is a phase's `📅` line, which the persona tells the agent as that day's chat starts: the agent's "
        "own clock is not the story's, and \"how many days ago\" needs the day it is asked.",
        f"- **Facts:** {bench.fact_count()} (the user's words, verbatim, with `[session id#turn]`).",
        f"- **Checks:** {len(bench.checks)}: " + ", ".join(f"{k} {n}" for k, n in by_type.items()) + ". Answers "
        "verbatim. `_abs` questions are `absent` (source category `abstention`). Preference answers describe what "
        "a good answer takes into account: only a model judge can grade them.",
        "- **A bundle is one person:** LongMemEval gives each question its own user; here one persona lives all of "
        "the bundle's sessions. Two instances that say different things about the same topic make their questions "
        "ambiguous.",
        "- **Not possible on-policy:** " + "; ".join(f"`{k}` questions ({v})" for k, v in NOT_ON_POLICY.items()) +
        "; the distractor sessions of the `s` and `m` variants (the retold haystack would cost hours per question).",
    ]


def import_longmemeval(path: Path, opts: Options) -> list[Imported]:
    tally = Tally()
    instances = read_instances(path, tally)
    if opts.questions:
        known = {i.question_id for i in instances}
        if unknown := [q for q in opts.questions if q not in known]:
            raise InputError.single(path, None, f"no question {', '.join(unknown[:10])} in the file")
        instances = [i for i in instances if i.question_id in opts.questions]
    kept = []
    for inst in instances:
        if inst.question_type in NOT_ON_POLICY:
            tally.add(f"{inst.question_type} questions left out ({NOT_ON_POLICY[inst.question_type]})", inst.question_id)
        else:
            kept.append(inst)
    out = []
    for number, start in enumerate(range(0, len(kept), opts.bundle), 1):
        bundle_tally = Tally()
        if number == 1:
            bundle_tally.merge(tally)  # what was left out of the whole file is told once, in the first bundle
        out.append(build_bundle(kept[start:start + opts.bundle], number, path, opts, bundle_tally))
    return out
