"""config.jsonc: the engine (persona model, compaction, browser) and the list of runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema

from drivers.recovery import Recovery
from drivers.settings import BrowserConfig
from persona.errors import InputError, Problem
from persona.jsonc import line_of, load_jsonc, pydantic_problems

RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PersonaConfig(Strict):
    """Who plays the persona: the offline scripted persona, or an LLM behind chat completions."""

    kind: Literal["scripted", "openai"] = "scripted"
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1")
    model: str = "gpt-4o-mini"
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the key (never the key)")
    temperature: float = 0.7
    timeout_s: float = 120.0
    max_retries: int = 6
    max_steps: int = Field(20000, description="Persona model calls per run before it is stopped as runaway")
    max_failed_turns: int = Field(8, ge=1, description="Turns in a row that do nothing (empty, or only failing "
                                  "tool calls) before the run stops")

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
    api_key_env: str | None = Field(None, description="Environment variable holding the key (default: the persona's)")
    temperature: float = Field(0.0, ge=0, description="Sampling temperature of the judge's calls")
    timeout_s: float = Field(120.0, gt=0, description="Seconds one judge request may take")
    max_retries: int = Field(6, ge=0, description="Retries of a judge request on 408/409/429/5xx and timeouts")
    max_attempts: int = Field(3, ge=1, description="Answers that are not a valid verdict before the run stops")

    def resolved(self, persona: PersonaConfig) -> JudgeConfig:
        """Every default filled in from the persona this judge goes with."""
        kind = self.kind if self.kind != "auto" else "rules" if persona.kind == "scripted" else "openai"
        return self.model_copy(update={
            "kind": kind, "base_url": self.base_url if self.base_url is not None else persona.base_url,
            "model": self.model or persona.model, "api_key_env": self.api_key_env or persona.api_key_env})

    @property
    def label(self) -> str:
        return "rules" if self.kind == "rules" else self.model or "?"


# "persona": the seed's behaviour, the persona grades as it goes and sees the expected answers.
JudgeSetting = JudgeConfig | Literal["persona"]


class CompactionConfig(Strict):
    max_tokens: int = Field(30000, gt=0)
    trim_to_tokens: int = Field(10000, gt=0)
    encoding: str = "o200k_base"

    @model_validator(mode="after")
    def _trim_below_max(self) -> CompactionConfig:
        if self.trim_to_tokens >= self.max_tokens:
            raise ValueError("trim_to_tokens must be smaller than max_tokens")
        return self


class AgentConfig(Strict):
    """The agent under test and how to reach it."""

    driver: str = Field("demo", description="A driver profile: demo, generic, ... (see drivers/)")
    url: str | None = Field(None, description="Chat page; for 'demo' leave it out to start the bundled chat")
    selectors: dict[str, str | None] = Field({}, description="Override the profile's selectors")
    options: dict[str, Any] = Field({}, description="Override other profile settings (timeouts, new-session mode)")
    recovery: Recovery = Field(Recovery(), description="Retries when the chat fails: reload, reopen, resend")
    auth: str | None = Field(None, description="A login saved by `mmb login` (its --name), kept in browser.auth_dir")


class ModelPrice(Strict):
    """What a model costs, in US dollars per 1 M tokens (the providers' list prices)."""

    input: float = Field(..., ge=0, description="USD per 1 M prompt tokens")
    cached_input: float | None = Field(None, ge=0, description="USD per 1 M prompt tokens served from the provider's "
                                       "prompt cache (default: the input price)")
    output: float = Field(..., ge=0, description="USD per 1 M completion tokens")
    source: str | None = Field(None, description="Where the price comes from, and when")


class RunConfig(Strict):
    id: str = Field(..., pattern=RUN_ID_PATTERN)
    benchmark: str
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
    results_dir: str = "results"
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
    if problems := config.id_clashes():
        raise InputError(problems)
    return config
