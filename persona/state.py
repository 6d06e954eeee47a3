"""The run's whole live state, saved atomically to results/<id>/state.json on every change.

A restart loads it and goes on from the same place; deleting the folder starts over. What only
grows is kept beside it and appended to, so a save costs the same at turn 10 and turn 10,000: the
agent transcript in transcript.jsonl, and the evaluations, the run log, the agent's notices, the
judge's notes, the persona's compactions and each change of the live fact files in state.*.jsonl
files of their own (persona/state_parts.py). In state.json each of those fields holds where its
part is (a PartRef, not a list): a reader that expects the content fails loudly instead of finding
an empty list. `RunStore.load` and `read_state` put it all together: readers get the whole RunState
(`mmb state` prints it), and state.json files of older mmbs still read.

schema_version says the layout: 1, everything inline (or, briefly, the parts named in `parts`);
2, each part's reference in its field's place. A state newer than this mmb knows, or one that cannot
be read whole (a part not there, or shorter than state.json counts), is refused before anything is
changed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, TypeAdapter, ValidationError, field_serializer, field_validator

from drivers.files import atomic_write
from persona.benchmark.facts import FactChanges, FactFile
from persona.benchmark.phases import Category
from persona.crashpoints import crash_point
from persona.errors import RunError, StorageError, storage_error
from persona.jsonc import line_of, text_lines
from persona.state_parts import (
    FACTS,
    FactsPart,
    ListPart,
    PartRef,
    PartShort,
    append_lines,
    first_problem,
    is_part_file,
    is_ref,
    read_facts,
    read_list,
    trim_lines,
)

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
TRANSCRIPT_FILE = "transcript.jsonl"
LOCK_FILE = ".lock"
RESERVE_FILE = ".reserve"  # space set aside at the start, given back when the disk fills: the run can still record its end
RESERVE_BYTES = 2 * 1024 * 1024
SCHEMA_VERSION = 2  # 2: the parts saved apart, each named in its field's place in state.json (README, "What a run leaves on disk")

Status = Literal["new", "running", "finished", "failed", "interrupted", "stalled", "budget"]
ORACLE_DRIVER = "oracle"  # the dry run's agent that knows every answer: its runs measure the benchmark, not an agent


def now() -> datetime:
    return datetime.now(UTC)


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: str  # a JSON object, as sent back to the server; parsed when the tool runs
    extra: dict[str, Any] = {}  # provider fields replayed with the call (Gemini's thought signature)
    problem: str | None = None  # why the call cannot run as the model wrote it (the tool result says so)
    raw: str | None = None  # what the model wrote, kept aside when the history holds a repaired call


class PersonaMessage(BaseModel):
    """One message of the persona's own context (OpenAI chat format plus bookkeeping)."""

    role: Literal["user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = []
    tool_call_id: str | None = None
    phase: int = 0
    starts_phase: bool = False  # compaction cuts at a phase boundary right before such a message
    tokens: int = 0
    step: int | None = None  # an assistant turn: the persona call that wrote it
    raw_content: str | None = None  # an assistant turn: the model's text before reasoning was taken out (never sent)

    def to_api(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}, **c.extra}
                for c in self.tool_calls
            ]
        if self.tool_call_id:
            msg["tool_call_id"] = self.tool_call_id
        return msg


class PendingSend(BaseModel):
    """A message on its way to the agent; lets a restart tell 'sent' from 'never sent'."""

    text: str
    turn: int
    user_messages_before: int | None  # user bubbles in the chat before sending, when the UI shows them
    last_user_before: str | None = None  # the last of them, as shown: with the count, proof of a message that never arrived
    # typing: not sent yet (a restart types it); submitted: send pressed, the agent may have it; sent: the chat shows it
    status: Literal["typing", "submitted", "sent"] = "typing"
    typed: int = 0  # times typed and sent into the chat, resends included
    not_taken: int = 0  # of those, shown by the chat never to have arrived


class SendCount(BaseModel):
    """What was typed into the agent's chat, all told: the report's counts are what the chat was given."""

    typed: int = 0  # persona messages typed and sent, resends included
    not_taken: int = 0  # of those, shown by the chat never to have arrived
    resent: list[str] = []  # why a message was typed again, one line per time ("turn 5: ...")
    commands: int = 0  # commands typed for new sessions ('/new', a bot's START)

    @property
    def delivered(self) -> int:
        """Persona messages the chat took in."""
        return self.typed - self.not_taken


class ItemMark(BaseModel):
    """One expected item of a check, as a judge found it in the agent's answer."""

    item: str  # the expected item, as the benchmark writes it
    correct: bool
    evidence: str = ""  # the agent's words that decided it


class Grade(BaseModel):
    """One grader's verdict on one check: the persona's own, or a judge's (scored by code from its items)."""

    grader: str  # "persona", "rules" (the offline judge) or the judge model's name
    raw_score: float  # before the ×0.5 memory-search rule
    score: float
    second_attempt: bool = False
    comment: str = ""
    items: list[ItemMark] = []  # a judge's: each expected item, right or not


class QuotedTurn(BaseModel):
    """One exchange as the chat showed it, quoted on the evaluation that graded its reply."""

    turn: int
    sent: str
    reply: list[str]  # every bubble of the agent's reply


class Evaluation(BaseModel):
    check_id: str
    category: Category
    question: str
    expected: str
    wrong_answer: str | None = None  # a trap the judge must not accept (the check's `Wrong answer:`)
    source_category: str | None = None  # an imported dataset's own category (the check's `source:`)
    answer: str  # the persona's summary of the agent's answer
    # The grade of record: the judge's, or the persona's own when config `judge` is "persona".
    raw_score: float  # as the grader gave it
    score: float  # after the ×0.5 second-attempt rule
    second_attempt: bool = False
    comment: str = ""
    grader: str = "persona"
    items: list[ItemMark] = []
    persona_grade: Grade | None = None  # with a judge: the persona's own score and comment, kept beside
    agent_turns: list[QuotedTurn] = []  # the chat from the question to the grade: what the judge read
    phase: int
    turn: int
    session: int
    graded_at: datetime = Field(default_factory=now)

    @property
    def grade(self) -> Grade:
        return Grade(grader=self.grader, raw_score=self.raw_score, score=self.score,
                     second_attempt=self.second_attempt, comment=self.comment, items=self.items)

    def regraded(self, grade: Grade) -> Evaluation:
        """This evaluation as another grading set scores it (the persona's own grade stays beside)."""
        return self.model_copy(update={"raw_score": grade.raw_score, "score": grade.score, "grader": grade.grader,
                                       "second_attempt": grade.second_attempt, "comment": grade.comment,
                                       "items": grade.items})


class AgentSession(BaseModel):
    index: int
    url: str | None = None
    started_turn: int
    reason: Literal["start", "newSession"] = "start"
    reset_sign: str = ""  # what showed the chat really reset
    opened_in_phase: int | None = None  # the phase whose JS block asked for it


class AgentNotice(BaseModel):
    """Something the agent's UI said about itself, e.g. that it compacted its context."""

    turn: int
    session: int
    text: str


class PersonaCompaction(BaseModel):
    at_message: int  # the persona call it came before
    tokens_before: int  # the whole request: system prompt, tools and messages
    tokens_after: int
    dropped_messages: int
    phase: int
    in_phase: bool = False  # the current phase alone was over max_tokens: cut inside it, its brief kept


class Claim(BaseModel):
    """When the persona did something the chat must have moved on from: loaded a fact file, marked facts
    told, graded an answer."""

    turn: int  # messages the agent had answered then
    step: int  # the persona call it was part of: its other tool calls count as the same moment
    since: int | None = None  # a grade's: the turn its window of exchanges began after (shared by its call's grades)


class Usage(BaseModel):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's prefix cache (where it says)
    cache_reported: int = 0  # calls whose response said how many tokens were cached
    counted: int = 0  # calls whose response had no usage: their tokens are our own tiktoken count
    retries: int = 0  # requests the openai client sent again (429, 5xx, timeouts, junk bodies)
    retry_causes: dict[str, int] = {}
    failed: int = 0  # requests that got no answer even after the client's retries (not in `calls`)
    by_phase: dict[int, list[int]] = {}  # phase -> [prompt, completion]

    def add(self, phase: int, prompt: int, completion: int, calls: int = 1) -> None:
        self.calls += calls
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        p, c = self.by_phase.get(phase, [0, 0])
        self.by_phase[phase] = [p + prompt, c + completion]

    def record(self, phase: int, prompt: int, completion: int, *, cached: int | None = None, counted: bool = False,
               retries: list[str] | None = None) -> None:
        """One model call: its tokens (`counted`: ours, the response reported none), the part of the prompt
        the provider's cache served (None: it did not say), and why the client sent it again, if it did."""
        self.add(phase, prompt, completion)
        self.counted += counted
        if cached is not None:
            self.cached_tokens += cached
            self.cache_reported += 1
        self._retried(retries or [])

    def record_failed(self, retries: list[str]) -> None:
        """A request the client gave up on: no tokens known, its retries counted."""
        self.failed += 1
        self._retried(retries)

    def _retried(self, causes: list[str]) -> None:
        for cause in causes:
            self.retries += 1
            self.retry_causes[cause] = self.retry_causes.get(cause, 0) + 1

    def merge(self, other: Usage, phase: int) -> None:
        """Another account's calls (a judge's, for one check) added to this one, all in `phase`."""
        self.add(phase, other.prompt_tokens, other.completion_tokens, other.calls)
        self.cached_tokens += other.cached_tokens
        self.cache_reported += other.cache_reported
        self.counted += other.counted
        self.failed += other.failed
        self.retries += other.retries
        for cause, n in other.retry_causes.items():
            self.retry_causes[cause] = self.retry_causes.get(cause, 0) + n

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Provenance(BaseModel):
    """What produced a run and its grades, recorded at its start and again whenever a resume differs."""

    at: datetime = Field(default_factory=now)
    tool_version: str
    git_commit: str | None = None  # when run from a checkout; "+dirty" when it had uncommitted changes
    benchmark_files: dict[str, str]  # every file the benchmark reads -> its sha256
    benchmark_sha256: str  # of all of them together
    persona_model: str
    persona_host: str | None = None  # the endpoint's host, never a key
    judge: str  # "persona", "rules" or the judge model
    judge_host: str | None = None
    system_prompt_sha256: str
    rubric_sha256: str | None = None  # with a judge model
    driver: str
    profile_sha256: str | None = None  # the driver profile's selectors and settings, as the run used them
    browser: str | None = None  # e.g. "chromium 140.0.7339.185"
    accepted_change: bool = False  # resumed over a changed benchmark, by `mmb run --accept-benchmark-change`

    def differences(self, other: Provenance) -> list[str]:
        """The fields in which `other` differs from this record (its time aside)."""
        mine, theirs = self.model_dump(exclude={"at", "accepted_change"}), other.model_dump(exclude={"at", "accepted_change"})
        return [k for k in mine if mine[k] != theirs[k]]


# How state.judge_notes (and a grading set's notes) start: what a judge's answers needed.
ASKED_AGAIN = "asked again: "  # no valid verdict: the judge was asked again, and why
TEXT_VERDICT = "verdict taken from the text, not a grade call"
QUIRK = "response cleaned: "  # something a response had that is never sent back (reasoning fields, ...)


# The lists of RunState that only grow, each appended to a state.<name>.jsonl of its own; the live fact
# files are a part of their own (state.facts.json and the changes after it, state.facts.jsonl).
APPENDED: dict[str, type] = {"evaluations": Evaluation, "log": str, "agent_notices": AgentNotice,
                             "judge_notes": str, "persona_compactions": PersonaCompaction}
SAVED_APART = {*APPENDED, FACTS}
APART = "apart"  # the context key of a save: its parts' references, written in their fields' place


class StateUnreadable(ValueError):
    """A state.json this mmb cannot read whole: not a run's state, or naming a part that is not there, holds
    fewer lines than it counts or does not parse. One line, naming the file (and line) and why."""


class StateTooNew(StateUnreadable):
    """A state.json of a newer mmb (its schema_version is above SCHEMA_VERSION): read with this one, it would
    be half a state, or wrong."""


class RunState(BaseModel):
    """The whole state of a run, its parts put back (what `mmb state` prints). On disk: results/<id>/state.json,
    in which each part saved apart (evaluations, log, agent_notices, judge_notes, persona_compactions, facts) is
    its reference, {"file", "lines", "generation"[, "base"]}, and the state.*.jsonl files it names."""

    schema_version: int = SCHEMA_VERSION  # of the layout and the fields: a newer one is refused
    run_id: str
    benchmark: str
    benchmark_title: str = ""
    driver: str
    persona_model: str
    repeat_of: str | None = None  # the configured run's id, when this run is one of its repeats
    repeat: int | None = None  # which repeat, from 1
    status: Status = "new"
    error: str | None = None
    ends: int = 0  # times this run ended (finished, failed, interrupted), each with a report.md entry
    reported_ends: int = 0  # ends whose outputs (report.md entry, report.html, leaderboard) are all written
    created_at: datetime = Field(default_factory=now)
    updated_at: datetime = Field(default_factory=now)
    active_seconds: float = 0.0  # summed over restarts
    phase_count: int | None = None  # the benchmark's phases and checks when the run last started (None: an older state)
    checks_planned: int | None = None

    phase: int = 0
    finished: bool = False
    vars: dict[str, Any] = {}
    facts: dict[str, FactFile] = {}  # live copies, the profile included
    loaded_files: dict[str, Claim] = {}  # fact file -> when a tool last showed it (the compaction note lists them)
    messages: list[PersonaMessage] = []
    steps: int = 0  # persona model calls
    turn: int = 0  # messages the agent has answered
    transcript_len: int = 0  # lines of transcript.jsonl that this state knows of
    pending: PendingSend | None = None
    sends: SendCount = SendCount()
    failed_turns: int = 0  # persona turns in a row that did nothing (empty, or every tool call an error)
    calls_since_progress: int = 0  # persona calls since a fact was told, a check graded or a phase entered
    held_reply: str | None = None  # the agent's reply to text sent beside tool calls, shown after their results
    phase_started_turn: int = 0  # agent turn when the current phase began
    last_fact_claim: Claim | None = None
    last_grade: Claim | None = None
    quirks: dict[str, int] = {}  # what was repaired or taken out of the model's turns, counted for the report
    sessions: list[AgentSession] = []
    evaluations: list[Evaluation] = []
    agent_notices: list[AgentNotice] = []
    repaired_chars: int = 0  # characters of the agent's replies that could not be stored, as U+FFFD (drivers.base.storable)
    browser_relaunches: int = 0  # times the browser died under the run and was started again (the chat reopened)
    # What the run saw of the chat page that a profile can only claim (drivers/observed.py): whether it keeps its
    # messages when reopened, a busy marker that never showed. Each said once.
    page_findings: list[str] = []
    persona_compactions: list[PersonaCompaction] = []
    usage: Usage = Usage()
    log: list[str] = []  # bench.log lines and notable events, short
    judge: str = "persona"  # who grades: "persona" (config judge: "persona"), "rules", or the judge model
    judge_usage: Usage = Usage()
    judge_notes: list[str] = []  # judge answers asked again (and why), verdicts taken from text: by check
    provenance: list[Provenance] = []  # the start's record, then one per resume that differed
    grading_set: str = Field("original", exclude=True)  # which grades a report shows (report/gradings.py); never saved
    # Where the parts saved apart are (state.*.jsonl beside state.json) and how much of each this state knows:
    # saved in their fields' place (_saved_apart), never as a field of its own.
    parts: dict[str, PartRef] = Field(default_factory=dict, exclude=True)
    _fact_changes: FactChanges | None = PrivateAttr(None)  # while a store saves the live facts by their changes

    @field_validator("loaded_files", mode="before")
    @classmethod
    def _names_to_claims(cls, value: Any) -> Any:
        if isinstance(value, list):  # a state saved before loads were timed: loaded before anything was said
            return {name: {"turn": 0, "step": -1} for name in value}
        return value

    @field_serializer(*sorted(SAVED_APART), mode="wrap")
    def _saved_apart(self, value: Any, handler: Any, info: Any):  # no return type: the schema keeps the field's own
        """In state.json (a store's save passes its parts' references) a part saved apart is its reference."""
        ref = (info.context or {}).get(APART, {}).get(info.field_name)
        return ref.model_dump(exclude_none=True) if ref is not None else handler(value)

    @property
    def oracle(self) -> bool:
        return self.driver == ORACLE_DRIVER

    @property
    def session(self) -> int:
        return len(self.sessions) - 1

    def note_quirk(self, what: str, n: int = 1) -> None:
        self.quirks[what] = self.quirks.get(what, 0) + n

    def __eq__(self, other: object) -> bool:  # the fields alone: whether a store tracks its facts is no part of it
        return type(other) is type(self) and self.__dict__ == other.__dict__

    def track_facts(self) -> FactChanges:
        """From now on each change of a live fact is noted (a store saves just those)."""
        changes = FactChanges()
        for ff in self.facts.values():
            ff.track(changes)
        self._fact_changes = changes
        return changes

    def progress_mark(self) -> tuple[int, int, int, int, bool]:
        """Changes when the run moves on: a fact told or changed, a check graded, a phase entered."""
        if self._fact_changes is not None:  # the live facts say when they change: no need to look at each
            return (self._fact_changes.count, 0, len(self.evaluations), self.phase, self.finished)
        facts = [f for ff in self.facts.values() for f in ff.all_facts()]
        return (sum(f.told_turn is not None for f in facts), sum(f.changed_turn or 0 for f in facts) + len(facts),
                len(self.evaluations), self.phase, self.finished)

    def evaluation(self, check_id: str) -> Evaluation | None:
        return next((e for e in self.evaluations if e.check_id == check_id), None)


class AgentActivity(BaseModel):
    """Work the agent showed while answering (drivers.base.Activity): a tool call or result, a thought, a
    status line; `title` and `text` as the page had them. Kept beside the reply, never part of it."""

    kind: Literal["tool", "thought", "status"]
    title: str = ""
    text: str = ""


class Exchange(BaseModel):
    """One message to the agent and its reply, as the UI showed them. `reply` is the answer alone (what
    the persona reads and the judge grades); `activity` the turn's work in the order shown."""

    turn: int
    session: int
    phase: int
    sent: str
    reply: list[str]
    signal: str = ""
    reply_seconds: float = 0.0
    typed: int = 1  # times the message was typed into the chat (more: resent, see RunState.sends.resent)
    at: datetime = Field(default_factory=now)
    activity: list[AgentActivity] = []  # a transcript line of an older mmb has none


def _dump(kind: type) -> Any:
    if kind is str:
        return lambda text: json.dumps(text, ensure_ascii=False)
    return lambda model: model.model_dump_json()


def _parse(kind: type) -> Any:
    return json.loads if kind is str else kind.model_validate_json


_REFS = TypeAdapter(dict[str, PartRef])


def saved_version(data: Any, path: Path) -> int:
    """The schema_version of a state.json's content (1 when it has none: the first states had none); StateTooNew
    when it is newer than this mmb knows."""
    version = data.get("schema_version", 1) if isinstance(data, dict) else 1
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StateUnreadable(f"{path}: its schema_version {version!r} is not a version")
    if version > SCHEMA_VERSION:
        raise StateTooNew(f"{path} is schema_version {version}, newer than this mmb knows ({SCHEMA_VERSION}): "
                          "read it with a newer mmb")
    return version


def parse_saved(raw: bytes, path: Path) -> RunState:
    """A state.json as the RunState it begins, its parts named but not read: everything inline (version 1,
    and the document `mmb state` prints), the parts named in `parts` (version 1 for a while), or each part's
    reference in its field's place (version 2). StateUnreadable when it is none of them."""
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise StateUnreadable(f"{path} is unreadable: not JSON ({e})") from None
    saved_version(data, path)
    if not isinstance(data, dict):
        raise StateUnreadable(f"{path}: not a run's state (not a JSON object)")
    in_place = {name: data.pop(name) for name in SAVED_APART if is_ref(data.get(name))}
    try:  # the references in their fields' place are validated as they stand, so an error's place is in state.json
        parts = _REFS.validate_python(data.pop("parts", None) or {}) | _REFS.validate_python(in_place)
        state = RunState.model_validate(data)
    except ValidationError as e:
        line = line_of(text_lines(raw.decode("utf-8", "replace")), tuple(e.errors()[0]["loc"]))
        raise StateUnreadable(f"{path}{f':{line}' if line else ''}: not a run's state ({first_problem(e)})") from None
    state.parts = parts
    state.schema_version = SCHEMA_VERSION  # read into this mmb's model, and saved in its layout
    return state


def _assemble(folder: Path, state: RunState) -> RunState:
    """The parts a state.json names, read into it (a state.json of an older mmb may hold them itself).
    FileNotFoundError when one is not there; StateUnreadable when one is shorter than counted, or unreadable."""
    for name, ref in state.parts.items():
        try:
            if name == FACTS:
                state.facts = read_facts(folder, ref)
            elif name in APPENDED:
                setattr(state, name, read_list(folder, ref, _parse(APPENDED[name])))
            else:
                raise StateUnreadable(f"{folder / STATE_FILE} names a part this mmb does not know: {name}")
        except PartShort as e:
            raise StateUnreadable(f"{e}: the state cannot be read whole") from None
        except StateUnreadable:
            raise
        except ValueError as e:
            raise StateUnreadable(str(e)) from None
    return state


def _not_there(folder: Path, error: FileNotFoundError) -> StateUnreadable:
    return StateUnreadable(f"{folder / STATE_FILE} names {Path(error.filename or '?').name}, which is not there: "
                           "the state cannot be read whole")


def transcript_shortfall(path: Path, counted: int) -> str | None:
    """Why transcript.jsonl holds fewer complete lines than its state counts (`transcript_len`), or None. Each
    line is appended before the state that counts it is saved: fewer is a transcript cut or lost, never a kill."""
    if counted == 0:
        return None
    have = path.read_bytes().count(b"\n") if path.exists() else 0
    return f"{path}: {have} complete line(s), state.json counts {counted}" if have < counted else None


def written_by_newer(folder: Path) -> str | None:
    """Why this mmb must not read the run in `folder` (a newer mmb wrote its state.json), or None. Only the
    version is looked at: a state that is broken otherwise is for its reader to name."""
    try:
        saved_version(json.loads((folder / STATE_FILE).read_bytes()), folder / STATE_FILE)
    except StateTooNew as e:
        return str(e)
    except (OSError, ValueError):
        return None
    return None


def state_schema() -> dict:
    """The JSON Schema of the whole state of a run as one document, its parts put back: what `mmb state`
    prints (`mmb schema state`, published as schemas/state.schema.json)."""
    return RunState.model_json_schema(mode="serialization")


def read_state(folder: Path) -> RunState:
    """The whole state of the run in `folder`, read only (reports, `mmb list`, `mmb state`, a live viewer),
    beside a running run or not. StateUnreadable (StateTooNew) when it cannot be read whole; FileNotFoundError
    without a state.json."""
    for attempt in range(3):
        state = parse_saved((folder / STATE_FILE).read_bytes(), folder / STATE_FILE)
        try:
            return _assemble(folder, state)
        except FileNotFoundError as e:  # a save began a new generation of a part between the two reads: read again
            if attempt == 2:
                raise _not_there(folder, e) from None
    raise AssertionError("unreachable")


class RunStore:
    """results/<id>/: state.json and its parts, transcript.jsonl, and a lock so two processes never share a run."""

    durable = True  # fsync each write; a dry run's scratch store skips it
    resumable = True  # a rerun goes on from what it saved (a dry run's starts over)

    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / STATE_FILE
        self.transcript_path = folder / TRANSCRIPT_FILE
        self._lock_file: Any = None
        self._lists = {name: ListPart(name, _dump(kind)) for name, kind in APPENDED.items()}
        self._facts = FactsPart()

    # -- the lock, and the space set aside ---------------------------------------------------------

    def lock(self) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock_file = open(self.folder / LOCK_FILE, "w")
        except OSError as e:
            raise storage_error(e, "open the run's folder", self.folder) from None
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunError(f"{self.folder} is in use by another mmb process") from None
        self._remove_stale_temps()

    def _remove_stale_temps(self) -> None:
        """Temp files of saves a crash interrupted: the rename never happened, so they hold nothing needed."""
        for tmp in self.folder.glob(".state.*.tmp"):
            tmp.unlink(missing_ok=True)
        for tmp in self.folder.glob(f".{TRANSCRIPT_FILE}.*.tmp"):
            tmp.unlink(missing_ok=True)

    def set_aside(self) -> None:
        """Hold RESERVE_BYTES of the disk (with the lock, while a run plays), which `give_back_reserve` frees
        when the disk fills: enough for the run to record its end (state.json saying `failed`, why, and its
        report.md entry). Removed when the lock is let go."""
        path = self.folder / RESERVE_FILE
        try:
            if path.exists() and path.stat().st_size >= RESERVE_BYTES:
                return
            with open(path, "wb") as f:
                os.posix_fallocate(f.fileno(), 0, RESERVE_BYTES)
        except OSError as e:  # a disk already too full: the run will say so at its first save
            log.debug("no space set aside in %s: %s", self.folder, e)
            with contextlib.suppress(OSError):
                path.unlink()

    def give_back_reserve(self) -> bool:
        try:
            (self.folder / RESERVE_FILE).unlink()
            return True
        except OSError:
            return False

    def unlock(self) -> None:
        if self._lock_file:
            with contextlib.suppress(OSError):
                (self.folder / RESERVE_FILE).unlink()
            self._lock_file.close()
            self._lock_file = None

    # -- state.json and its parts ----------------------------------------------------------------

    def load(self) -> RunState | None:
        """The saved state (with the lock held), read whole before anything is changed; then lines written
        after it, by a save a kill interrupted, are dropped from its parts and the transcript, and part files
        it no longer names removed. RunError, with nothing changed, for a state newer than this mmb or one
        that cannot be read whole."""
        if not self.path.exists():
            return None
        try:
            state = _assemble(self.folder, parse_saved(self.path.read_bytes(), self.path))
            if (missing := transcript_shortfall(self.transcript_path, state.transcript_len)) is not None:
                raise StateUnreadable(f"{missing}: the state cannot be read whole")
        except StateTooNew as e:
            raise RunError(str(e)) from None
        except (StateUnreadable, FileNotFoundError) as e:
            why = _not_there(self.folder, e) if isinstance(e, FileNotFoundError) else e
            raise RunError(f"{why}; the run's files are left as they are (move its folder away to start over)") from None
        except OSError as e:
            raise StorageError("read the run's state in", self.folder, e) from None
        try:
            for ref in state.parts.values():
                trim_lines(self.folder / ref.file, ref.lines)
            named = {f for ref in state.parts.values() for f in (ref.file, ref.base) if f}
            for path in self.folder.iterdir():
                if is_part_file(path.name) and path.name not in named:
                    path.unlink(missing_ok=True)  # a generation replaced, or a first save a kill interrupted
            self._trim_transcript(state.transcript_len)
        except OSError as e:
            raise StorageError("tidy the run's folder", self.folder, e) from None
        for part in self._lists.values():
            part.seen(state)
        if FACTS in state.parts:
            self._facts.seen(state.facts, state.track_facts())
        return state

    def save(self, state: RunState) -> None:
        """What is new of the parts appended, then state.json written whole (small: what only grows is
        apart, named in its place) and renamed over the old one. StorageError when the disk will not take it."""
        state.schema_version = SCHEMA_VERSION
        state.updated_at = now()
        stale: list[str] = []
        writing = self.folder
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for name, part in self._lists.items():
                writing = self.folder / part_name(state, name)
                state.parts[name], old = part.save(self.folder, state, state.parts.get(name), self.durable)
                stale += [old] if old else []
            writing = self.folder / part_name(state, FACTS)
            state.parts[FACTS], state._fact_changes, old_facts = self._facts.save(
                self.folder, state.facts, state._fact_changes, state.parts.get(FACTS), self.durable)
            stale += old_facts
            writing = self.path
            atomic_write(self.path, state.model_dump_json(indent=1, context={APART: state.parts}),
                         before_rename=lambda: crash_point("save.written"), durable=self.durable)
        except OSError as e:
            raise StorageError("save the run's state to", writing, e) from e
        crash_point("save.renamed")
        for name in stale:
            with contextlib.suppress(OSError):
                (self.folder / name).unlink()

    # -- the transcript ---------------------------------------------------------------------------

    def append_exchange(self, state: RunState, exchange: Exchange) -> None:
        """Append to the transcript before the state that counts it is saved; load() drops extras."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            append_lines(self.transcript_path, [exchange.model_dump_json()], durable=True)
        except OSError as e:
            raise StorageError("append to the transcript", self.transcript_path, e) from e
        crash_point("transcript.appended")
        state.transcript_len += 1

    def transcript(self) -> list[Exchange]:
        if not self.transcript_path.exists():
            return []
        with open(self.transcript_path, encoding="utf-8") as f:
            return [Exchange.model_validate_json(line) for line in f if line.strip()]

    def _trim_transcript(self, keep: int) -> None:
        """Lines written after the last saved state belong to a step that will be redone."""
        trim_lines(self.transcript_path, keep)


def part_name(state: RunState, name: str) -> str:
    ref = state.parts.get(name)
    return ref.file if ref is not None else f"state.{name}.jsonl"


def run_is_live(folder: Path) -> bool:
    """Whether an mmb process holds the run in `folder` now (its lock), without taking or changing anything:
    a state saying `running` whose lock nobody holds is a run that died (killed, or its disk filled)."""
    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)  # closing lets go of a lock taken here
    return False
