"""results/report.md: one entry appended at the end of every run, finished, failed or interrupted."""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

from persona.benchmark.loader import Benchmark
from persona.report.agreement import persona_vs_judge
from persona.report.cost import PriceTable
from persona.report.scores import by_category, distribution, mean, phase_costs
from persona.state import ASKED_AGAIN, Evaluation, QuotedTurn, RunState, now

__all__ = ["REPORT_FILE", "REPORT_HEADER", "append_entry", "duration", "mean", "render_entry"]

REPORT_FILE = "report.md"
REPORT_HEADER = "# MarathonMemBench report\n\nOne entry per run end, newest last.\n"


def duration(seconds: float) -> str:
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s" if m else f"{s} s"


def fenced(text: str) -> str:
    """Agent text made inert in Markdown: a code block, fenced longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.strip() or '(empty)'}\n{fence}"


def chat_excerpt(turns: list[QuotedTurn]) -> str:
    """Each exchange as sent and as the agent answered it, every bubble."""
    lines = []
    for t in turns:
        lines.append(f"[turn {t.turn}] persona: {t.sent}")
        lines += [f"[turn {t.turn}] agent: {bubble}" for bubble in t.reply] or [f"[turn {t.turn}] agent: (no reply)"]
    return "\n".join(lines)


def marks(e: Evaluation) -> str:
    return " · ".join(f"{'✓' if m.correct else '✗'} {m.item}" for m in e.items)


def grading_line(state: RunState, prices: PriceTable | None = None) -> str:
    """Who graded, what it cost, and how far the persona's own scores are from the judge's."""
    if state.judge == "persona":
        return "the persona, as it chatted (config judge: \"persona\")"
    usage = state.judge_usage
    line = "the offline rule judge" if state.judge == "rules" else f"judge model {state.judge}"
    if state.grading_set != "original":
        line = f"grading set {state.grading_set} (`mmb regrade`): {line}"
    if usage.calls:
        cost = (prices or PriceTable()).cost(state.judge, usage.prompt_tokens, usage.completion_tokens)
        line += f"; {usage.calls} calls, {usage.prompt_tokens:,} tokens in, {usage.completion_tokens:,} out, " \
                f"cost {cost.summary()}"
    if state.judge_notes:
        again = sum(ASKED_AGAIN in n for n in state.judge_notes)
        line += f"; {again} judge answer(s) without a valid verdict asked again, " \
                f"{len(state.judge_notes) - again} verdict(s) taken from text instead of a grade call"
    if agreed := persona_vs_judge(state.evaluations):
        line += f"; the persona's own scores against it: {agreed.summary()}; furthest apart: {agreed.apart('persona', 'judge')}"
    return line


def _short(digest: str | None) -> str:
    return digest[:12] if digest else "n/a"


def provenance_summary(state: RunState) -> str:
    """What produced the run, as last recorded: code, benchmark, models, prompts, driver, browser."""
    if not state.provenance:
        return "not recorded (a run of an older version)"
    p = state.provenance[-1]
    commit = p.git_commit or ""
    code = f"mmb {p.tool_version}" + (f", git {commit[:12]}{'+dirty' if commit.endswith('+dirty') else ''}" if commit else "")
    at = lambda host: f" @ {host}" if host else ""  # noqa: E731
    parts = [code, f"benchmark sha256 {_short(p.benchmark_sha256)} over {len(p.benchmark_files)} files",
             f"persona {p.persona_model}{at(p.persona_host)}", f"judge {p.judge}{at(p.judge_host)}",
             f"system prompt sha256 {_short(p.system_prompt_sha256)}"]
    if p.rubric_sha256:
        parts.append(f"rubric sha256 {_short(p.rubric_sha256)}")
    parts.append(f"driver {p.driver}" + (f", profile sha256 {_short(p.profile_sha256)}" if p.profile_sha256 else ""))
    parts.append(f"browser {p.browser or 'none'}")
    return " · ".join(parts)


def provenance_changes(state: RunState) -> list[str]:
    """Each resume that ran on something different from before, and in what."""
    out = []
    for before, after in zip(state.provenance, state.provenance[1:], strict=False):
        what = ", ".join(before.differences(after)) or "nothing"
        out.append(f"{after.at:%Y-%m-%d %H:%M} UTC: {what}" + (" (benchmark change accepted)" if after.accepted_change else ""))
    return out


def _imperfect(e: Evaluation) -> list[str]:
    retry = ", after a memory search" if e.second_attempt else ""
    lines = ["", f"#### {e.check_id} [{e.category.value}] — {e.score:g}/10{retry} (graded by {e.grader})",
             f"- **Question:** {e.question}", f"- **Expected:** {e.expected}"]
    if e.agent_turns:
        lines += ["- **The chat from the question to the grade** (what the grader read):", "",
                  fenced(chat_excerpt(e.agent_turns)), ""]
    lines += ["- **The persona's summary of the answer:**", "", fenced(e.answer), "",
              f"- **Grader:** {e.comment}" + (f" ({marks(e)})" if e.items else "")]
    if (own := e.persona_grade) is not None:
        lines.append(f"- **The persona's own grade:** {own.score:g}/10 — {own.comment}")
    return lines


def phase_title(bench: Benchmark, phase: int) -> str:
    return f"{phase + 1}. {bench.phases[phase].title}" if 0 <= phase < len(bench.phases) else str(phase + 1)


def _persona_cost(bench: Benchmark, state: RunState) -> list[str]:
    """Tokens in and out per phase: what each part of the scenario cost on the persona's side."""
    costs = phase_costs(state)
    if not costs:
        return []
    lines = ["", "### Persona tokens by phase", "", "| phase | tokens in | tokens out |", "|---|---:|---:|"]
    lines += [f"| {phase_title(bench, c.phase)} | {c.prompt_tokens:,} | {c.completion_tokens:,} |" for c in costs]
    u = state.usage
    lines.append(f"| **total** | **{u.prompt_tokens:,}** | **{u.completion_tokens:,}** |")
    return lines


def _coverage(bench: Benchmark, state: RunState) -> str:
    planned = bench.checks
    graded = {e.check_id for e in state.evaluations}
    missing = [c for c in planned if c.id not in graded]
    line = f"{len(planned) - len(missing)} of {len(planned)} planned checks graded"
    if missing:
        line += "; not graded: " + ", ".join(f"{c.id} ({c.question[:40]})" for c in missing[:30])
        line += " …" if len(missing) > 30 else ""
    return line


def _agent_compactions(state: RunState) -> str:
    if not state.agent_notices:
        return "none seen in the chat UI"
    shown = [f"turn {n.turn} (session {n.session}): {n.text[:120]!r}" for n in state.agent_notices[:20]]
    return f"{len(state.agent_notices)} — " + "; ".join(shown)


def _sessions(state: RunState) -> str:
    parts = []
    for s in state.sessions:
        how = f" ({s.reset_sign})" if s.reset_sign else ""
        parts.append(f"{s.index}: {s.reason} at turn {s.started_turn}{how}")
    return "; ".join(parts) or "none"


def render_entry(bench: Benchmark, state: RunState, prices: PriceTable | None = None) -> str:
    evs = state.evaluations
    avg = mean(evs)
    status = state.status + (f": {state.error}" if state.error else "")
    usage = state.usage
    lines = [
        f"## {now().strftime('%Y-%m-%d %H:%M')} UTC — {state.run_id}: {bench.title} @ {state.driver}"
        + (f" — grading set {state.grading_set}" if state.grading_set != "original" else ""),
        "",
        f"- **Status:** {status}",
        f"- **Mean score:** {f'{avg:.2f} / 10' if avg is not None else 'n/a'} over {len(evs)} graded checks",
        f"- **Score distribution:** {' · '.join(f'{k}: {n}' for k, n in distribution(evs).items()) or 'n/a'}",
        f"- **By category:** {' · '.join(f'{g.key} {g.mean:.1f} ({g.count})' for g in by_category(evs).values()) or 'n/a'}",
        f"- **Coverage audit:** {_coverage(bench, state)}",
        f"- **Run time:** {duration(state.active_seconds)} active; started {state.created_at:%Y-%m-%d %H:%M} UTC",
        f"- **Progress:** phase {min(state.phase + 1, len(bench.phases))} of {len(bench.phases)}, "
        f"{state.turn} messages to the agent",
        f"- **Agent sessions:** {_sessions(state)}",
        f"- **Agent compactions observed:** {_agent_compactions(state)}",
        f"- **Persona:** {state.persona_model}; {usage.calls} calls, {usage.prompt_tokens:,} tokens in, "
        f"{usage.completion_tokens:,} out; {len(state.persona_compactions)} context compactions",
        f"- **Cost:** {(prices or PriceTable()).run_cost(state).summary()}",
        f"- **Graded by:** {grading_line(state, prices)}",
        f"- **Provenance:** {provenance_summary(state)}",
    ]
    if changes := provenance_changes(state):
        lines.append(f"- **Resumed on something different:** {'; '.join(changes)}")
    lines += _persona_cost(bench, state)
    imperfect = [e for e in evs if e.score < 10]
    if imperfect:
        lines += ["", f"### Answers below 10 ({len(imperfect)})"]
        for e in imperfect:
            lines += _imperfect(e)
    return "\n".join(lines) + "\n"


def append_entry(results_dir: Path, entry: str) -> Path:
    """Append under an exclusive lock: parallel runs finishing together don't interleave."""
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / REPORT_FILE
    with open(path, "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        if f.tell() == 0:
            f.write(REPORT_HEADER)
        f.write("\n" + entry)
        f.flush()
        os.fsync(f.fileno())
    return path
