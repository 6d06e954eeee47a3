"""config.jsonc: the engine (persona model, compaction, browser) and the list of runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import tiktoken
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from drivers.files import PathText
from drivers.recovery import Recovery
from drivers.settings import BrowserConfig, Strict
from persona.errors import InputError, Problem
from persona.jsonc import line_of, load_jsonc, pydantic_problems

RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
RUN_ID_MAX = 64  # results/<id>/ must be a folder name any file system takes
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


class PersonaConfig(Strict):
    """Who plays the persona: the offline scripted persona, or an LLM behind chat completions."""

    kind: Literal["scripted", "openai"] = "scripted"
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1")
    model: str = "gpt-4o-mini"
    api_key_env: str = Field("OPENAI_API_KEY", pattern=ENV_NAME_PATTERN,
                             description="Environment variable holding the key (never the key)")
    temperature: float = Field(0.7, ge=0, le=2)
    timeout_s: float = Field(120.0, gt=0, description="Seconds one request may take (the openai client's timeout)")
    max_retries: int = Field(6, ge=0, description="Retries of a request on 408/409/429/5xx, timeouts and junk bodies, "
                             "by the openai client with its own backoff (Retry-After honoured up to 120 s)")
    max_tokens: int = Field(4096, ge=16, description="Tokens one answer may take, sent with every request (reasoning "
                            "included); an answer cut off there (`finish_reason: length`) is counted, and a tool "
                            "call cut off is not run")
    max_steps: int = Field(20000, ge=1, description="Persona model calls per run before it is stopped as runaway")
    max_failed_turns: int = Field(8, ge=1, description="Turns in a row that do nothing (empty, or only failing "
                                  "tool calls) before the run stops")
    stall_calls: int = Field(40, ge=1, description="Persona calls without progress (a fact told or changed, a check "
                             "graded, a phase entered) before the run stops as `stalled`; raise it and rerun to go on")
    budget_tokens: int | None = Field(25_000_000, ge=1, description="Persona tokens (in + out) per run before it "
                                      "stops as `budget`; raise it and rerun to go on; null: no limit")
    budget_usd: float | None = Field(30.0, gt=0, description="Persona cost per run, at the model's price (the "
                                     "shipped table or `prices`), before it stops as `budget`; null: no limit")
    tool_schema: Literal["auto", "strict", "plain"] = Field(
        "auto", description="strict: OpenAI strict function schemas; plain: no `strict` and no "
        "`additionalProperties` (Gemini's endpoint); auto: plain for Google's endpoint, strict elsewhere")
    preflight: bool = Field(True, description="Before a run, check in a few cheap calls that the model answers, "
                            "calls tools and reports usage (`mmb check` runs the same checks)")

    @property
    def label(self) -> str:
        return "scripted" if self.kind == "scripted" else self.model


class JudgeConfig(Strict):
    """Who grades the agent's answers, apart from the persona, which then never sees the expected answers.

    Left out, every field follows the persona: its endpoint, key and model, at temperature 0; a
    scripted persona gets the deterministic offline judge ("rules").
    """

    kind: Literal["auto", "openai", "rules"] = Field(
        "auto", description="openai: a model behind chat completions; rules: the offline rule grader; "
        "auto: rules for the scripted persona, else openai")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint (default: the persona's)")
    model: str | None = Field(None, description="Model name (default: the persona's)")
    api_key_env: str | None = Field(None, pattern=ENV_NAME_PATTERN,
                                    description="Environment variable holding the key (default: the persona's)")
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature of the judge's calls")
    timeout_s: float = Field(120.0, gt=0, description="Seconds one judge request may take")
    max_retries: int = Field(6, ge=0, description="Retries of a judge request on 408/409/429/5xx and timeouts")
    max_tokens: int | None = Field(None, ge=16, description="Tokens one judge answer may take, sent with every "
                                   "request (default: the persona's max_tokens)")
    max_attempts: int = Field(3, ge=1, description="Answers that are not a valid verdict before the run stops")
    tool_schema: Literal["auto", "strict", "plain"] | None = Field(
        None, description="As persona.tool_schema, for the `grade` tool (default: the persona's)")

    def resolved(self, persona: PersonaConfig) -> JudgeConfig:
        """Every default filled in from the persona this judge goes with."""
        kind = self.kind if self.kind != "auto" else "rules" if persona.kind == "scripted" else "openai"
        return self.model_copy(update={
            "kind": kind, "base_url": self.base_url if self.base_url is not None else persona.base_url,
            "model": self.model or persona.model, "api_key_env": self.api_key_env or persona.api_key_env,
            "tool_schema": self.tool_schema or persona.tool_schema, "max_tokens": self.max_tokens or persona.max_tokens})

    @property
    def label(self) -> str:
        return "rules" if self.kind == "rules" else self.model or "?"


# "persona": the seed's behaviour, the persona grades as it goes and sees the expected answers.
JudgeSetting = JudgeConfig | Literal["persona"]


class CompactionConfig(Strict):
    max_tokens: int = Field(30000, gt=0)
    trim_to_tokens: int = Field(10000, gt=0)
    encoding: str = Field("o200k_base", description="The tiktoken encoding that counts the persona's tokens")

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, name: str) -> str:
        if name not in tiktoken.list_encoding_names():
            raise ValueError(f"unknown tiktoken encoding {name[:80]!r} (known: {', '.join(tiktoken.list_encoding_names())})")
        return name

    @model_validator(mode="after")
    def _trim_below_max(self) -> CompactionConfig:
        if self.trim_to_tokens >= self.max_tokens:
            raise ValueError("trim_to_tokens must be smaller than max_tokens")
        return self


RUN_DIR = "{run_dir}"  # in agent.memory paths and commands: this run's results/<id>/


class MemoryConfig(Strict):
    """Where the agent keeps its long-term memory, for the memory autopsy. Read only, never written:
    a folder of files, a command that prints the memory, or an SQLite file and a query."""

    folder: str | None = Field(None, description="A folder of memory files (relative to this config file; "
                               "'~' and '{run_dir}', this run's results folder, are expanded)")
    glob: list[str] = Field(["**/*.md"], min_length=1, description="Files of `folder` to read, as glob patterns")
    command: list[str] | str | None = Field(None, description="A command whose output is the memory as text: an "
                                            "argument list, or one line split like a shell would (no shell runs it)")
    sqlite: str | None = Field(None, description="An SQLite file (copied, then queried: the agent's file is never opened for writing)")
    query: str | None = Field(None, description="The SELECT for `sqlite`; each row becomes a line of the memory")
    every: Literal["session", "turn"] = Field("session", description="session: a snapshot when the chat opens, at "
                                              "each new session and at the end; turn: also before every message "
                                              "(kept when the memory changed), for checks asked mid-session")
    timeout_s: float = Field(30.0, gt=0, description="Seconds a command or query may take")
    max_bytes: int = Field(5_000_000, gt=0, description="Memory read per snapshot; files past it are skipped, and counted")

    @model_validator(mode="after")
    def _one_source(self) -> MemoryConfig:
        given = [k for k in ("folder", "command", "sqlite") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError("give exactly one of folder, command or sqlite" + (f" (got {', '.join(given)})" if given else ""))
        if (self.query is None) != (self.sqlite is None):
            raise ValueError("sqlite and query go together")
        return self


class AgentConfig(Strict):
    """The agent under test and how to reach it."""

    driver: str = Field("demo", description="A driver profile: demo, generic, ... (see drivers/)")
    url: str | None = Field(None, description="Chat page; for 'demo' leave it out to start the bundled chat")
    selectors: dict[str, str | None] = Field({}, description="Override the profile's selectors")
    options: dict[str, Any] = Field({}, description="Override other profile settings (timeouts, new-session mode)")
    frame: str | list[str] | None = Field(
        None, description="The iframe holding the chat, outermost first: a selector of each iframe element, or "
                          "'url=<glob>' of its address (a widget embedded in a host page)")
    recovery: Recovery = Field(Recovery(), description="Retries when the chat fails: reload, reopen, resend")
    auth: str | None = Field(None, description="A login saved by `mmb login` (its --name), kept in browser.auth_dir")
    memory: MemoryConfig | None = Field(None, description="Where the agent keeps its memory, read for the memory "
                                        "autopsy; left out, the run stays black-box")

    def profile_options(self) -> dict[str, Any]:
        """`options`, with `frame` (a key of its own, as users write it) folded in."""
        return self.options if self.frame is None else {**self.options, "frame": self.frame}


class ModelPrice(Strict):
    """What a model costs, in US dollars per 1 M tokens (the providers' list prices)."""

    input: float = Field(..., ge=0, description="USD per 1 M prompt tokens")
    cached_input: float | None = Field(None, ge=0, description="USD per 1 M prompt tokens served from the provider's "
                                       "prompt cache (default: the input price)")
    output: float = Field(..., ge=0, description="USD per 1 M completion tokens")
    source: str | None = Field(None, description="Where the price comes from, and when")


class RunConfig(Strict):
    id: str = Field(..., pattern=RUN_ID_PATTERN, max_length=RUN_ID_MAX, description="Names the folder results/<id>/")
    benchmark: PathText = Field(..., min_length=1, description="The benchmark folder, relative to this file")
    agent: AgentConfig = AgentConfig()
    persona: PersonaConfig | None = Field(None, description="Overrides the engine's persona for this run")
    judge: JudgeSetting | None = Field(None, description="Overrides the engine's judge for this run")
    repeat: int = Field(1, ge=1, description="Play the run this many times, independently: results/<id>.r1/, ...; "
                        "the leaderboard shows the mean and its 95 % confidence interval over them")

    def repeat_ids(self, repeat: int | None = None) -> list[str]:
        """The id of each repeat, stable: the run's own id when played once, else <id>.r1, <id>.r2, ..."""
        n = repeat or self.repeat
        return [self.id] if n == 1 else [f"{self.id}.r{k}" for k in range(1, n + 1)]


class Config(Strict):
    """config.jsonc: the engine (persona model, compaction, browser) and the runs. Relative paths in it
    (benchmark, results_dir, browser.auth_dir) start at the folder of the config file."""

    schema_ref: str | None = Field(None, alias="$schema", description="Path or URL of this file's JSON Schema, "
                                   "for editors (config.schema.json)")
    persona: PersonaConfig = PersonaConfig()
    judge: JudgeSetting = Field(JudgeConfig(), description='Who grades: a judge model (default: the persona\'s, '
                                '"rules" for the scripted one) or "persona", the persona itself as it chats')
    compaction: CompactionConfig = CompactionConfig()
    browser: BrowserConfig = BrowserConfig()
    results_dir: PathText = Field("results", min_length=1, description="Where each run's folder and report.md go")
    parallel: int = Field(2, ge=1, description="Runs played at the same time, one browser context each")
    prices: dict[str, ModelPrice] = Field({}, description="Model name -> price; overrides and extends the table "
                                          "shipped with the tool (persona/report/prices.json)")
    fail_under: float | None = Field(None, ge=0, le=10, description="`mmb run` exits 3 when a run's mean score is "
                                     "below this (the --fail-under flag wins)")
    runs: list[RunConfig] = Field(..., min_length=1)

    # Set by load_config: where relative paths start (the config file's folder); not part of the file.
    base_dir: SkipJsonSchema[Path] = Field(Path("."), exclude=True)
    source: SkipJsonSchema[Path] = Field(Path("config.jsonc"), exclude=True)
    locations: SkipJsonSchema[dict[tuple, int]] = Field({}, exclude=True)

    def problem(self, json_path: tuple, message: str) -> Problem:
        """A problem located at a value of this config file, e.g. ("runs", 0, "agent", "driver")."""
        return Problem(str(self.source), line_of(self.locations, json_path), message)

    def persona_for(self, run: RunConfig) -> PersonaConfig:
        return run.persona or self.persona

    def id_clashes(self, repeat: int | None = None) -> list[Problem]:
        """Runs (or their repeats, each played `repeat` times if given) that would share a results folder."""
        problems = []
        seen: dict[str, int] = {}
        for i, run in enumerate(self.runs):
            for run_id in run.repeat_ids(repeat):
                if run_id in seen:
                    what = f"run id {run_id!r}" + (f" (a repeat of {run.id!r})" if run_id != run.id else "")
                    problems.append(self.problem(("runs", i, "id"), f"{what} repeats run {seen[run_id]}"))
                seen.setdefault(run_id, i)
        return problems

    def judge_for(self, run: RunConfig) -> JudgeConfig | None:
        """The run's judge with every default filled in; None when the persona grades ("persona")."""
        judge = run.judge if run.judge is not None else self.judge
        return None if judge == "persona" else judge.resolved(self.persona_for(run))

    def benchmark_path(self, run: RunConfig) -> Path:
        return (self.base_dir / run.benchmark).resolve()

    def results_path(self) -> Path:
        return (self.base_dir / self.results_dir).resolve()

    def auth_path(self) -> Path:
        return (self.base_dir / self.browser.auth_dir).resolve()


def config_schema() -> dict:
    """The JSON Schema of config.jsonc (`mmb schema config`, published as schemas/config.schema.json)."""
    return Config.model_json_schema(by_alias=True)


def load_config(path: Path) -> Config:
    data, lines = load_jsonc(path)
    if not isinstance(data, dict):
        raise InputError.single(path, 1, "the config must be an object")
    try:
        config = Config.model_validate({**data, "base_dir": path.resolve().parent, "source": path, "locations": lines})
    except ValidationError as e:
        raise InputError(pydantic_problems(e, path, lines)) from None
    problems = config.id_clashes()
    if trouble := _unwritable(config.results_path()):
        problems.append(config.problem(("results_dir",), f"results_dir: {trouble}"))
    if problems:
        raise InputError(problems)
    return config


def _unwritable(path: Path) -> str | None:
    """Why results_dir cannot be (made) a folder we write in: the nearest existing path decides."""
    existing = next(p for p in (path, *path.parents) if os.path.lexists(p))
    if not os.path.isdir(existing):
        return f"{existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None
