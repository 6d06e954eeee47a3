"""results/report.md: one entry appended at the end of every run, finished, failed or interrupted."""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

from persona.benchmark.loader import Benchmark
from persona.report.autopsy import CLASSES, Autopsy
from persona.report.cost import PriceTable
from persona.report.scores import by_category, distribution, mean, phase_costs
from persona.state import RunState, now

__all__ = ["REPORT_FILE", "REPORT_HEADER", "append_entry", "duration", "mean", "render_entry"]

REPORT_FILE = "report.md"
REPORT_HEADER = "# MarathonMemBench report\n\nOne entry per run end, newest last.\n"


def duration(seconds: float) -> str:
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s" if m else f"{s} s"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line.strip() else ">" for line in (text.strip() or "(empty)").splitlines())


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


def inert(text: str, limit: int = 200) -> str:
    """Agent text on one line of Markdown, shown as text: no HTML, link, emphasis or table cell breaks out."""
    text = " ".join(text.split())
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|#!])", r"\\\1", text)


def _memory_autopsy(autopsy: Autopsy) -> list[str]:
    index = autopsy.index
    last = index.snapshots[-1] if index.snapshots else None
    size = f"last {last.label}: {last.lines} lines in {len(last.files)} file(s)" if last else "none taken"
    lines = ["", "### Memory autopsy", "",
             f"- **Memory read:** {inert(index.source)} (every {index.every}); {len(index.snapshots)} snapshot(s) in "
             f"memory/, {size}",
             f"- **Problems reading it:** {index.problem_count}" + "".join(
                 f"; {inert(p.message)} (×{p.count}, turns {p.first_turn}–{p.last_turn})" for p in index.problems[:10])]
    if autopsy.unclassified:
        lines.append("- **Not classified:** " + "; ".join(f"{e.check_id} ({why})" for e, why in autopsy.unclassified))
    if autopsy.checks:
        lines += ["", "| category | " + " | ".join(CLASSES) + " |", "|---|" + "---:|" * len(CLASSES)]
        lines += [f"| {cat} | " + " | ".join(str(n) for n in counts.values()) + " |" for cat, counts in autopsy.by_category()]
        lines.append("| **all** | " + " | ".join(f"**{n}**" for n in autopsy.counts().values()) + " |")
    if autopsy.misses:
        lines += ["", f"Each check not retrieved ({len(autopsy.misses)}):", ""]
        for c in autopsy.misses:
            e = c.evaluation
            judge = f" (a paraphrase, found by the judge {inert(c.by_judge)})" if c.by_judge else ""
            lines.append(f"- **{e.check_id}** [{e.category.value}] {e.score:g}/10 — **{c.klass}**: {inert(c.why, 400)}{judge}")
            lines += [f"  - {inert(h, 300)}" for h in c.history]
    return lines


def render_entry(bench: Benchmark, state: RunState, prices: PriceTable | None = None,
                 autopsy: Autopsy | None = None) -> str:
    evs = state.evaluations
    avg = mean(evs)
    status = state.status + (f": {state.error}" if state.error else "")
    usage = state.usage
    lines = [
        f"## {now().strftime('%Y-%m-%d %H:%M')} UTC — {state.run_id}: {bench.title} @ {state.driver}",
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
    ]
    lines += _persona_cost(bench, state)
    if autopsy is not None:
        lines += _memory_autopsy(autopsy)
    imperfect = [e for e in evs if e.score < 10]
    if imperfect:
        lines += ["", f"### Answers below 10 ({len(imperfect)})"]
        for e in imperfect:
            retry = ", after a memory search" if e.second_attempt else ""
            lines += [
                "", f"#### {e.check_id} [{e.category.value}] — {e.score:g}/10{retry}",
                f"- **Question:** {e.question}", f"- **Expected:** {e.expected}", "- **Agent:**", "",
                _quote(e.answer), "", f"- **Grader:** {e.comment}",
            ]
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
