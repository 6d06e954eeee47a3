"""`mmb regrade`: re-score a finished run's saved answers with another judge, into a new grading set.

The judge reads exactly what the run's own grader read (each evaluation's question, expected answer
and the agent's words from the question to the grade, as saved in state.json), so two judges are
compared on the same texts. Nothing of the run is changed: the set is a new file, and the
agreement with the original grades is printed and recorded in it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from persona.benchmark.phases import Check
from persona.config import Config, JudgeConfig, PersonaConfig
from persona.engine.judge import make_judge, rubric, sha256_text
from persona.engine.llm import api_key
from persona.engine.provenance import endpoint_host
from persona.errors import RunError
from persona.report.agreement import Agreement, Pair, agreement
from persona.report.gradings import GradingSet, check_name, load_set, save_new, shown_with
from persona.report.markdown import append_entry_once
from persona.report.publish import benchmark_at, entry_parts, read_run
from persona.state import Evaluation, RunState, StateUnreadable

Echo = Callable[[str], None]


def regradable(state: RunState) -> list[Evaluation]:
    """The run's evaluations, if every one has the agent's words saved with it."""
    if state.status != "finished":
        raise RunError(f"run {state.run_id} is {state.status}, not finished: regrade it once it has finished")
    if not state.evaluations:
        raise RunError(f"run {state.run_id} has no graded check")
    if bare := [e.check_id for e in state.evaluations if not e.agent_turns]:
        raise RunError(f"run {state.run_id}: checks {', '.join(bare)} were graded before the agent's words were saved "
                       "with each grade (an older version); they cannot be regraded")
    return state.evaluations


def check_of(e: Evaluation) -> Check:
    return Check(id=e.check_id, category=e.category, question=e.question, answer=e.expected,
                 wrong_answer=e.wrong_answer, source_category=e.source_category)


def regrade_judge(config: Config | None, run_id: str, model: str, base_url: str | None,
                  api_key_env: str | None) -> JudgeConfig:
    """The judge of `mmb regrade`: the model named, on the endpoint given or else the config's judge's
    (that run's, or the engine's), else its persona's; "rules" is the offline rule judge."""
    if model == "rules":
        return JudgeConfig(kind="rules")
    run = next((r for r in config.runs if r.id == run_id), None) if config else None
    persona = (config.persona_for(run) if run else config.persona) if config else PersonaConfig()
    setting = (run.judge if run and run.judge is not None else config.judge) if config else JudgeConfig()
    base = (setting if isinstance(setting, JudgeConfig) else JudgeConfig()).resolved(persona)
    judge = base.model_copy(update={"kind": "openai", "model": model, "base_url": base_url or base.base_url,
                                    "api_key_env": api_key_env or base.api_key_env})
    api_key(judge, "judge")  # no key: say so before anything starts
    return judge


async def regrade_run(folder: Path, judge_cfg: JudgeConfig, name: str, echo: Echo = print) -> tuple[GradingSet, str, Path | None]:
    """Regrade, then append the run as the new set scores it to the results' report.md (when its benchmark
    still loads); returns the set, who graded the original, and report.md."""
    gset = await regrade(folder, judge_cfg, name, endpoint_host(judge_cfg.base_url) if judge_cfg.kind == "openai" else None,
                         echo)
    state, _ = read_run(folder)
    bench = benchmark_at(state.benchmark)
    if bench is None:
        echo(f"the benchmark {state.benchmark} does not load here: no report.md entry for the new set")
        return gset, state.judge, None
    path, _ = append_entry_once(folder.parent, bench, shown_with(state, gset), None, *entry_parts(folder, state, bench))
    return gset, state.judge, path


async def regrade(folder: Path, judge_cfg: JudgeConfig, name: str, host: str | None, echo: Echo = print) -> GradingSet:
    try:
        state, _ = read_run(folder)
    except StateUnreadable as e:  # a newer mmb's, or not whole: one line, nothing written
        raise RunError(str(e)) from None
    evaluations = regradable(state)
    if load_set(folder, check_name(name)) is not None:
        raise RunError(f"grading set {name!r} of run {state.run_id} exists; sets are never overwritten: choose another --name")
    judge = make_judge(judge_cfg)
    assert judge is not None
    gset = GradingSet(name=name, run_id=state.run_id, judge=judge.label, judge_host=host,
                      rubric_sha256=sha256_text(rubric()) if judge_cfg.kind == "openai" else None, grades={})
    try:
        for i, e in enumerate(evaluations, 1):
            judged = await judge.grade(check_of(e), e.agent_turns)
            gset.grades[e.check_id] = judged.grade
            gset.usage.merge(judged.usage, e.phase)
            gset.notes += [f"{e.check_id}: {note}"[:300] for note in judged.notes]
            echo(f"  {i}/{len(evaluations)} {e.check_id}: {e.score:g} -> {judged.grade.score:g}")
    finally:
        await judge.aclose()
    gset.agreement = agreement([Pair(check_id=e.check_id, a=e.score, b=gset.grades[e.check_id].score)
                                for e in evaluations])
    save_new(folder, gset)
    return gset


def agreement_lines(gset: GradingSet, original: str) -> list[str]:
    a: Agreement | None = gset.agreement
    if a is None:
        return []
    return [f"agreement with the original grades ({original}): {a.summary()}",
            f"furthest apart: {a.apart('original', gset.judge)}"]
