"""results/report.md: one entry appended at the end of every run, finished, failed or interrupted.

Text from the agent (its answers, notices, acknowledgements, errors quoting it) and from the grader is
hostile: in an entry it is inert in any Markdown viewer, HTML allowed or not, and cannot pass for the
report's own structure. A long text goes in a fenced code block inside a block quote (every raw line
starts with `>`, no fence inside can close it); a short one goes on one line in a code span.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Callable
from pathlib import Path

from persona.benchmark.loader import Benchmark
from persona.report.activity import ActivityCounts
from persona.report.agreement import persona_vs_judge
from persona.report.autopsy import CLASSES, Autopsy
from persona.report.cost import PriceTable
from persona.report.persona_lines import compaction_lines, quirks_line, usage_line, usage_text
from persona.report.scores import by_category, by_source_category, distribution, mean, phase_costs
from persona.report.snapshots import MemoryIndex
from persona.state import ASKED_AGAIN, QUIRK, TEXT_VERDICT, Evaluation, QuotedTurn, RunState

__all__ = ["REPORT_FILE", "REPORT_HEADER", "append_entry_once", "duration", "mean", "render_entry", "typed_into_chat"]

REPORT_FILE = "report.md"
REPORT_HEADER = "# MarathonMemBench report\n\nOne entry per run end, newest last.\n"


def duration(seconds: float) -> str:
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s" if m else f"{s} s"


def _fence_for(text: str, at_least: int) -> str:
    """Backticks one more than the longest run in `text`: nothing in it can close them."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(at_least, longest + 1)


def quote_block(text: str) -> str:
    """Untrusted text, shown verbatim: a fenced code block inside a block quote."""
    lines = text.strip().splitlines() or ["(empty)"]  # every line break Python knows, \r and U+2028 too
    fence = _fence_for(text, 3)
    return "\n".join([f"> {fence}text", *(f"> {line}" for line in lines), f"> {fence}"])


def quote_inline(text: str) -> str:
    """Untrusted text on one line, as a code span: whitespace (line breaks too) collapsed, shown verbatim."""
    flat = " ".join(text.split())
    if not flat:
        return "(empty)"
    fence = _fence_for(flat, 1)
    return f"{fence} {flat} {fence}"  # the spaces keep a leading or trailing backtick out of the fence


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
    """Who graded, what it cost (counted as the persona's calls are), what its answers needed, and how
    far the persona's own scores are from the judge's."""
    if state.judge == "persona":
        return "the persona, as it chatted (config judge: \"persona\")"
    line = "the offline rule judge" if state.judge == "rules" else f"judge model {usage_text(state.judge, state.judge_usage)}"
    if state.grading_set != "original":
        line = f"grading set {state.grading_set} (`mmb regrade`): {line}"
    if state.judge_usage.calls:
        line += f"; judge cost {(prices or PriceTable()).judge_cost(state).summary()}"
    if notes := judge_notes_line(state.judge_notes):
        line += f"; {notes}"
    if agreed := persona_vs_judge(state.evaluations):
        line += f"; the persona's own scores against it: {agreed.summary()}; furthest apart: {agreed.apart('persona', 'judge')}"
    return line


def judge_notes_line(notes: list[str]) -> str | None:
    """What the judge's answers needed, counted: answers asked again, verdicts read from text, what was
    cleaned out of responses (by kind)."""
    kinds = [n.partition(": ")[2] for n in notes]  # each note is "CHECK: what"
    again = sum(k.startswith(ASKED_AGAIN) for k in kinds)
    text = sum(k == TEXT_VERDICT for k in kinds)
    cleaned: dict[str, int] = {}
    for k in kinds:
        if k.startswith(QUIRK):
            cleaned[k.removeprefix(QUIRK)] = cleaned.get(k.removeprefix(QUIRK), 0) + 1
    parts = [f"{again} judge answer(s) without a valid verdict asked again"] if again else []
    parts += [f"{text} verdict(s) taken from text instead of a grade call"] if text else []
    parts += [f"judge responses cleaned: {k} ×{n}" for k, n in cleaned.items()]
    return "; ".join(parts) or None


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
    source = f"; source: {e.source_category}" if e.source_category else ""
    lines = ["", f"#### {e.check_id} [{e.category.value}{source}] — {e.score:g}/10{retry} (graded by {e.grader})",
             f"- **Question:** {e.question}", f"- **Expected:** {e.expected}"]
    if e.wrong_answer:
        lines.append(f"- **Must not accept:** {e.wrong_answer}")
    if e.agent_turns:
        lines += ["- **The chat from the question to the grade** (what the grader read):", "",
                  quote_block(chat_excerpt(e.agent_turns)), ""]
    lines += ["- **The persona's summary of the answer:**", "", quote_block(e.answer), "",
              f"- **Grader:** {quote_inline(e.comment)}" + (f" ({marks(e)})" if e.items else "")]
    if (own := e.persona_grade) is not None:
        lines.append(f"- **The persona's own grade:** {own.score:g}/10 — {quote_inline(own.comment)}")
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
    shown = [f"turn {n.turn} (session {n.session}): {quote_inline(n.text[:120])}" for n in state.agent_notices[:20]]
    return f"{len(state.agent_notices)} — " + "; ".join(shown)


def typed_into_chat(state: RunState, quote: Callable[[str], str] = str) -> str:
    """What the agent's chat was given, all told: every typing counted, resends with their reason
    (which may quote the chat: `quote` makes it inert where the format needs it)."""
    s, pending = state.sends, state.pending
    line = f"{s.typed} persona message(s) typed"
    if s.typed < state.turn:  # a run begun by a version of mmb that did not count them
        line += " since mmb began counting them"
    if s.not_taken:
        line += f", {s.not_taken} of them shown by the chat never to have arrived, so {s.delivered} reached it"
    line += f"; {state.turn} answered"
    if pending is not None and pending.typed > pending.not_taken:
        line += f", turn {pending.turn} awaiting its reply"
    if s.resent:
        shown = s.resent[:10]
        line += f"; typed again {len(s.resent)} time(s): " + "; ".join(map(quote, shown)) \
            + (" …" if len(s.resent) > len(shown) else "")
    if s.commands:
        line += f"; {s.commands} command(s) typed for new sessions"
    return line


LOG_SHOWN = 12  # the run log's last lines in a report entry; the state keeps them all


def run_log(state: RunState) -> tuple[int, list[str]]:
    """The state's log for a report: how many lines, and the last ones (how the driver got past a sick
    chat, resumes, the preflight, the benchmark's bench.log lines)."""
    return len(state.log), state.log[-LOG_SHOWN:]


def _run_log(state: RunState) -> list[str]:
    count, shown = run_log(state)
    if not count:
        return []
    which = f", the last {len(shown)}" if count > len(shown) else ""
    return [f"- **Run log:** {count} line(s) in the run's state{which}" + "".join(f"\n  - {quote_inline(line)}" for line in shown)]


def _sessions(state: RunState) -> str:
    parts = []
    for s in state.sessions:
        how = f" ({quote_inline(s.reset_sign)})" if s.reset_sign else ""
        parts.append(f"{s.index}: {s.reason} at turn {s.started_turn}{how}")
    return "; ".join(parts) or "none"


def end_marker(state: RunState) -> str:
    """The entry's invisible mark (a link reference definition: no viewer shows it), naming the run's end it
    reports (and the grading set it shows, when not the original), so an entry is appended once however
    often a kill interrupts the writing of the outputs."""
    grading = f" grading {state.grading_set}" if state.grading_set != "original" else ""
    return f'[mmb-end]: # "{state.run_id} {state.ends}{grading}"'


def inert(text: str, limit: int = 200) -> str:
    """Agent text on one line of Markdown, shown as text: no HTML, link, emphasis or table cell breaks out."""
    text = " ".join(text.split())
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|#!])", r"\\\1", text)


TOOLS_SHOWN = 20  # tools named in an entry's activity line, most used first; the rest counted


def activity_line(counts: ActivityCounts, quote: Callable[[str], str] = str) -> str:
    """The agent's work beside its answers, counted: turns with work, tools by name, thoughts, status lines
    (tool names come from the chat's titles: `quote` makes them inert where the format needs it)."""
    if not counts.any:
        return f"none shown in {counts.turns} turn(s) (no tool card, thought or status line recorded)"
    line = f"{counts.turns_with_work} of {counts.turns} turn(s) showed work"
    if counts.tools:
        shown = counts.by_tool()[:TOOLS_SHOWN]
        line += f"; tool use in {counts.turns_with_tools} turn(s), {counts.tool_cards} tool card(s): " \
            + ", ".join(f"{quote(name)} ×{n}" for name, n in shown)
        if len(counts.tools) > len(shown):
            line += f" and {len(counts.tools) - len(shown)} more tool(s)"
    return line + f"; {counts.thoughts} thought(s); {counts.status} status line(s)"


def _memory_read(index: MemoryIndex | None) -> list[str]:
    if index is None:
        return ["- **Memory read:** none (no `agent.memory`): classified from the tool cards the chat showed alone"]
    last = index.snapshots[-1] if index.snapshots else None
    size = f"last {last.label}: {last.lines} lines in {len(last.files)} file(s)" if last else "none taken"
    return [f"- **Memory read:** {inert(index.source)} (every {index.every}); {len(index.snapshots)} snapshot(s) in "
            f"memory/, {size}",
            f"- **Problems reading it:** {index.problem_count}" + "".join(
                f"; {inert(p.message)} (×{p.count}, turns {p.first_turn}–{p.last_turn})" for p in index.problems[:10])]


def _memory_autopsy(autopsy: Autopsy) -> list[str]:
    lines = ["", "### Memory autopsy", "", *_memory_read(autopsy.index)]
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
                 autopsy: Autopsy | None = None, activity: ActivityCounts | None = None) -> str:
    evs = state.evaluations
    avg = mean(evs)
    status = state.status + (f": {quote_inline(state.error)}" if state.error else "")
    lines = [  # the time of the run's end, saved with it: an entry written after a restart keeps it
        f"## {state.updated_at:%Y-%m-%d %H:%M} UTC — {state.run_id}: {bench.title} @ {state.driver}"
        + (f" — grading set {state.grading_set}" if state.grading_set != "original" else ""),
        end_marker(state),
        "",
        f"- **Status:** {status}",
        f"- **Mean score:** {f'{avg:.2f} / 10' if avg is not None else 'n/a'} over {len(evs)} graded checks",
        f"- **Score distribution:** {' · '.join(f'{k}: {n}' for k, n in distribution(evs).items()) or 'n/a'}",
        f"- **By category:** {' · '.join(f'{g.key} {g.mean:.1f} ({g.count})' for g in by_category(evs).values()) or 'n/a'}",
        *([f"- **By source category** (the imported dataset's own, → ours): "
           f"{' · '.join(f'{g.label} {g.mean:.1f} ({g.count})' for g in sources)}"] if (sources := by_source_category(evs)) else []),
        f"- **Coverage audit:** {_coverage(bench, state)}",
        f"- **Run time:** {duration(state.active_seconds)} active; started {state.created_at:%Y-%m-%d %H:%M} UTC",
        f"- **Progress:** phase {min(state.phase + 1, len(bench.phases))} of {len(bench.phases)}, "
        f"{state.turn} messages to the agent",
        f"- **Typed into the chat:** {typed_into_chat(state, quote_inline)}",
        f"- **Agent sessions:** {_sessions(state)}",
        f"- **Agent compactions observed:** {_agent_compactions(state)}",
        *([f"- **Agent activity** (shown beside its answers, never graded): {activity_line(activity, quote_inline)}"]
          if activity is not None else []),
        *([f"- **Agent text repaired:** {state.repaired_chars} character(s) of its replies replaced by U+FFFD "
            "(lone UTF-16 surrogates, NUL and other control characters cannot be stored)"] if state.repaired_chars else []),
        *(["- **The chat page, as the run saw it:**" + "".join(f"\n  - {quote_inline(f)}" for f in state.page_findings)]
          if state.page_findings else []),
        *([f"- **Browser relaunched:** {state.browser_relaunches} time(s): it died under the run, which started it "
           "again, reopened its chat and went on (the run log says when)"] if state.browser_relaunches else []),
        f"- **Persona:** {usage_line(state)}",
        f"- **Persona compactions:** {len(state.persona_compactions)}"
        + "".join(f"\n  - {line}" for line in compaction_lines(state)),
        f"- **Cost:** {(prices or PriceTable()).run_cost(state).summary()}",
        f"- **Graded by:** {grading_line(state, prices)}",
        f"- **Provenance:** {provenance_summary(state)}",
    ]
    if changes := provenance_changes(state):
        lines.append(f"- **Resumed on something different:** {'; '.join(changes)}")
    if quirks := quirks_line(state):
        lines.append(f"- **Persona turns repaired or cleaned (counted):** {quirks}")
    if state.status in ("stalled", "budget"):
        lines.append(f"- **Stopped as `{state.status}`:** the state is kept; raise the limit named above and run the "
                     f"same command again to go on from here")
    lines += _run_log(state)
    lines += _persona_cost(bench, state)
    if autopsy is not None:
        lines += _memory_autopsy(autopsy)
    imperfect = [e for e in evs if e.score < 10]
    if imperfect:
        lines += ["", f"### Answers below 10 ({len(imperfect)})"]
        for e in imperfect:
            lines += _imperfect(e)
    return "\n".join(lines) + "\n"


def append_entry_once(results_dir: Path, bench: Benchmark, state: RunState, prices: PriceTable | None = None,
                      autopsy: Autopsy | None = None, activity: ActivityCounts | None = None) -> tuple[Path, bool]:
    """The entry of the run's last end, appended unless report.md has it already; True when appended.
    Under an exclusive lock: parallel runs finishing together don't interleave."""
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / REPORT_FILE
    with open(path, "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        if end_marker(state) in f.read().split("\n"):  # a whole line: agent text never starts one
            return path, False
        if f.tell() == 0:
            f.write(REPORT_HEADER)
        f.write("\n" + render_entry(bench, state, prices, autopsy, activity))
        f.flush()
        os.fsync(f.fileno())
    return path, True
