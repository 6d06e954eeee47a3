"""`mmb run --dry`: play a benchmark with the scripted persona against the oracle agent, in process.

Before paying for an LLM persona, an author sees that every check is reachable and gradable
(coverage 100 %, every score 10) and how long the scenario is: phases, facts, turns, persona
tokens with the config's compaction settings. Nothing is typed into a browser.

Each dry run starts over in its own folder, results/dry-<benchmark>/ (state.json, transcript,
run.log and its own report.md), so it never mixes with real runs or their report; the folder's
leaderboard shows it apart, as an oracle run. Its persona tokens at the price of the config's
persona model are the estimated cost of the real run, printed before anyone pays for it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from persona.benchmark.loader import Benchmark, load_benchmark
from persona.benchmark.phases import Category
from persona.config import AgentConfig, CompactionConfig, Config, JudgeConfig, PersonaConfig, RunConfig, load_config
from persona.engine.answerable import Answerability, answerability
from persona.engine.fit import fit_problems
from persona.errors import InputError, Problem
from persona.report.cost import Cost, PriceTable, money
from persona.report.progress import Progress
from persona.report.scores import by_source_category
from persona.state import ORACLE_DRIVER, RunState, RunStore

DRY_PREFIX = "dry-"
ORACLE = ORACLE_DRIVER


@dataclass
class DryTarget:
    bench: Benchmark
    source: str  # the benchmark as the user named it


@dataclass
class DryResult:
    target: DryTarget
    state: RunState
    folder: Path
    answerable: Answerability | None = None  # which checks the typed messages could answer
    failures: list[str] = field(default_factory=list)  # why it is not ready for a real run; empty = ready

    @property
    def ok(self) -> bool:
        return not self.failures


def play_dry(config: Path | None, run_ids: list[str] | None, benchmarks: list[Path],
             echo: Callable[[str], None] = print, run: Callable[[Coroutine[Any, Any, DryResult]], DryResult] = asyncio.run) -> bool:
    """The `run --dry` command: True when every benchmark is ready. Bad input raises InputError.

    With benchmark folders, no config is needed (default compaction, results/ here) unless one is
    given; without, the benchmarks of the config's runs (or of `run_ids`) with its compaction. `run` runs
    each (the CLI's stops on SIGTERM too).
    """
    cfg = load_config(config or Path("config.jsonc")) if config or not benchmarks else None
    targets = targets_from_paths(benchmarks) if benchmarks else targets_from_config(cfg, run_ids)
    compaction = cfg.compaction if cfg else CompactionConfig()
    results = cfg.results_path() if cfg else Path("results").resolve()
    prices = PriceTable(cfg.prices if cfg else None)
    if problems := [p for t in targets for p in fit_problems(t.bench, compaction)]:
        raise InputError(problems)  # it would stop there, after playing everything before: said at once
    ready = True
    for target in targets:
        result = run(dry_run(target, results, compaction))
        costs = [prices.cost(model, result.state.usage.prompt_tokens, result.state.usage.completion_tokens)
                 for model in persona_models(cfg, target)]
        echo(summary(result, compaction, costs))
        ready = ready and result.ok
    return ready


def persona_models(cfg: Config | None, target: DryTarget) -> list[str]:
    """The persona models the real runs of this benchmark would pay for: the config's runs that play it,
    else the config's persona; none without a config."""
    if cfg is None:
        return []
    root = target.bench.root.resolve()
    models = [cfg.persona_for(r).label for r in cfg.runs if cfg.benchmark_path(r) == root]
    return list(dict.fromkeys(models)) or [cfg.persona.label]


def targets_from_paths(paths: list[Path]) -> list[DryTarget]:
    return _load([(p, str(p), Problem(str(p), None, "benchmark:")) for p in paths])


def targets_from_config(config: Config, only: list[str] | None = None) -> list[DryTarget]:
    """The benchmarks of the selected runs, each once: a dry run does not depend on the agent."""
    known = {r.id for r in config.runs}
    missing = [Problem(str(config.source), None, f"no run with id {w!r} (runs: {', '.join(sorted(known))})")
               for w in only or [] if w not in known]
    if missing:
        raise InputError(missing)
    items: dict[Path, tuple[Path, str, Problem]] = {}
    for i, run in enumerate(config.runs):
        path = config.benchmark_path(run)
        if (not only or run.id in only) and path not in items:
            items[path] = (path, run.benchmark, config.problem(("runs", i, "benchmark"), f"benchmark {run.benchmark}:"))
    return _load(list(items.values()))


def _load(items: list[tuple[Path, str, Problem]]) -> list[DryTarget]:
    """Load every benchmark; one InputError lists the problems of all of them, each under its header."""
    targets, problems = [], []
    for path, source, header in items:
        try:
            targets.append(DryTarget(load_benchmark(path), source))
        except InputError as e:
            problems += [header, *e.problems]
    if problems:
        raise InputError(problems)
    return targets


class ScratchStore(RunStore):
    """A dry run is thrown away, never resumed: write the state at most once a second, without fsync.

    The loop saves after every step, which is what makes a real run resumable; for a dry run of a
    marathon that is thousands of fsynced rewrites, most of its time. The last save (the run's end,
    finished or failed) is always written.
    """

    durable = False
    resumable = False
    interval_s = 1.0
    _last = 0.0

    def save(self, state: RunState) -> None:
        if state.status == "running" and time.monotonic() - self._last < self.interval_s:
            return
        self._last = time.monotonic()
        super().save(state)


def dry_folder(results_dir: Path, bench: Benchmark) -> Path:
    return results_dir / (DRY_PREFIX + re.sub(r"[^A-Za-z0-9._-]+", "-", bench.name).strip("-."))


def step_budget(bench: Benchmark) -> int:
    """Generous for the scripted persona (about 3 steps per fact or check); a stuck scenario stops soon."""
    facts = sum(len(ff.all_facts()) for ff in bench.fact_files.values())
    edits = sum(len(p.edits) + len(p.additions) + len(p.mentions) for p in bench.phases)
    return 10 * (facts + len(bench.checks) + edits + len(bench.phases)) + 200


async def dry_run(target: DryTarget, results_dir: Path, compaction: CompactionConfig,
                  persona: PersonaConfig | None = None, progress: Progress | None = None) -> DryResult:
    """Play one benchmark from scratch; the previous dry run of it is deleted first. `persona` puts
    another persona against the oracle agent (the bench: the scripted one behind an HTTP endpoint)."""
    from persona.engine.runner import Runner, RunPlan  # the runner imports Playwright: only when a run is due

    bench = target.bench
    folder = dry_folder(results_dir, bench)
    if folder.exists():
        shutil.rmtree(folder)
    run = RunConfig(id=folder.name, benchmark=str(bench.root), agent=AgentConfig(driver=ORACLE))
    config = Config(runs=[run], compaction=compaction, results_dir=str(results_dir.resolve()))
    persona = persona or PersonaConfig(kind="scripted", max_steps=step_budget(bench), budget_tokens=None)
    plan = RunPlan(run=run, bench=bench, profile=None, persona=persona, folder=folder,
                   judge=JudgeConfig(kind="rules"))  # as a real run is graded: the persona sees no answers
    # Its report.md entry goes to the dry folder, never to the real report.md; its pages join the folder's.
    await Runner(config, print_line=lambda _line: None, store_factory=ScratchStore, progress=progress,
                 entries_dir=folder).run_one(plan, None)
    store = RunStore(folder)
    state = store.load()
    assert state is not None
    said = answerability(bench, state, store.transcript()[: state.transcript_len])
    return DryResult(target, state, folder, said, _failures(bench, state, said))


def _failures(bench: Benchmark, state: RunState, said: Answerability) -> list[str]:
    out = []
    if state.status != "finished":
        out.append(f"the run did not finish ({state.status}: {state.error or 'no error recorded'})")
    graded = {e.check_id for e in state.evaluations}
    missing = [c.id for c in bench.checks if c.id not in graded]
    if missing:
        out.append(f"coverage {_percent(len(graded), len(bench.checks))}: not graded {', '.join(missing[:20])}"
                   + (" …" if len(missing) > 20 else ""))
    low = [e for e in state.evaluations if e.score < 10]
    if low:
        out.append(f"{len(low)} check(s) scored below 10 against an agent that knows every answer")
    if untold := [v.check_id for v in said.unanswerable]:
        out.append(f"{len(untold)} check(s) cannot be answered from what was typed before them: {', '.join(untold[:20])}"
                   + (" …" if len(untold) > 20 else "") + " (the oracle knows every answer; a real agent only what it "
                   "was told; each is listed above with why)")
    return out


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "n/a"


def _by_category(bench: Benchmark, state: RunState) -> str:
    parts = []
    for cat in Category:
        planned = sum(c.category is cat for c in bench.checks)
        scores = [e.score for e in state.evaluations if e.category is cat]
        if planned:
            mean = f"{sum(scores) / len(scores):.1f}" if scores else "–"
            parts.append(f"{cat.value} {mean} ({len(scores)}/{planned})")
    return " · ".join(parts) or "no checks"


def _facts_line(bench: Benchmark, state: RunState) -> str:
    live = {n: ff.live_facts() for n, ff in state.facts.items()}
    total = sum(len(v) for v in live.values())
    told = sum(1 for v in live.values() for f in v if f.told_turn is not None)
    untold = [f"{n} {sum(f.told_turn is None for f in v)}" for n, v in live.items()
              if any(f.told_turn is None for f in v)]
    line = f"{told} of {total} told"
    if untold:
        note = f" ({bench.profile.name} is in the persona's context; the scripted persona tells it only when asked)" \
            if any(u.startswith(bench.profile.name + " ") for u in untold) else ""
        line += f"; untold: {', '.join(untold)}{note}"
    return line


def _cost_line(cost: Cost) -> str:
    """The estimated persona cost of a real run: the dry run's tokens at the real model's price."""
    if cost.usd is None:
        return f"  cost       {cost.summary()}"
    if not cost.usd:
        return f"  cost       $0 with persona {cost.model!r} (free); an LLM persona's cost shows once config.jsonc names its model"
    return (f"  cost       ≈ {money(cost.usd)} or more for a real run with {cost.model}: the tokens above at {cost.rates()} "
            "(an LLM persona writes more)")


def summary(result: DryResult, compaction: CompactionConfig, costs: list[Cost] | None = None) -> str:
    bench, state = result.target.bench, result.state
    evs = state.evaluations
    mean = f"{sum(e.score for e in evs) / len(evs):.2f}" if evs else "n/a"
    usage = state.usage
    new_sessions = sum(1 for s in state.sessions if s.reason == "newSession")
    lines = [
        f"dry run: {result.target.source} — {bench.title} (scripted persona, oracle agent)",
        f"  phases     {min(state.phase + 1, len(bench.phases))} of {len(bench.phases)} reached; "
        f"{len(state.sessions)} chat session(s), {new_sessions} new",
        f"  facts      {_facts_line(bench, state)}",
        f"  checks     {len(evs)} of {len(bench.checks)} graded (coverage {_percent(len(evs), len(bench.checks))}), "
        f"mean {mean} / 10",
        f"  categories {_by_category(bench, state)}",
        *([f"  sources    {' · '.join(f'{g.label} {g.mean:.1f} ({g.count})' for g in sources)}"]
          if (sources := by_source_category(evs)) else []),
        f"  turns      {state.turn} messages to the agent, {state.steps} persona steps",
        f"  tokens     {usage.prompt_tokens:,} in, {usage.completion_tokens:,} out; "
        f"{len(state.persona_compactions)} persona compaction(s) at max_tokens {compaction.max_tokens:,} "
        f"-> {compaction.trim_to_tokens:,} (an LLM persona writes more: a floor)",
        *([_cost_line(c) for c in costs] if costs else
          ["  cost       give the config (-c config.jsonc) to price a real run with its persona model"]),
        f"  time       {state.active_seconds:.1f} s",
        f"  results    {result.folder}/ (state.json, transcript.jsonl, report.md, report.html)",
    ]
    if result.answerable is not None:
        lines.append(f"  told       {result.answerable.summary()}")
        lines += [f"  untold     {v.check_id} [{v.category.value}]: {'; '.join(v.reasons)}"
                  for v in result.answerable.unanswerable]
    for e in (e for e in evs if e.score < 10):
        lines.append(f"  below 10   {e.check_id} [{e.category.value}] {e.score:g}/10: {e.comment}; "
                     f"expected {e.expected!r}, agent said {e.answer[:120]!r}")
    lines.append("  READY: every check reachable and gradable" if result.ok
                 else "  NOT READY: " + "; ".join(result.failures))
    return "\n".join(lines)
