"""results/<id>/report.html: one run, readable offline, built from state.json and transcript.jsonl alone.

Scores by category and phase, memory decay (score against the age of the fact a check asks about,
see decay.py), the persona's token cost, every imperfect answer with links to the chat session's
trace and the failure screenshots, and the whole transcript with each check marked where it was
asked and where it was graded. It can be rebuilt at any time (`mmb report`).
"""

from __future__ import annotations

from pathlib import Path

from drivers.files import atomic_write
from persona.benchmark.loader import Benchmark
from persona.report.decay import check_ages
from persona.report.html_kit import Point, bar, esc, page, scatter, score_class, table
from persona.report.markdown import duration, phase_title
from persona.report.scores import by_category, by_phase, distribution, facts_told, mean, phase_costs
from persona.state import Evaluation, Exchange, RunState
from persona.tokens import TokenCounter

HTML_FILE = "report.html"


class RunReport:
    """Everything the page shows, gathered once; `render` lays it out."""

    def __init__(self, state: RunState, exchanges: list[Exchange], folder: Path, bench: Benchmark | None = None,
                 counter: TokenCounter | None = None):
        self.state, self.exchanges, self.folder, self.bench = state, exchanges, folder, bench
        self.ages = {a.check_id: a for a in check_ages(state, exchanges, counter or TokenCounter(),
                                                       bench.fact_files if bench else None)}
        self.traces = sorted((folder / "traces").glob("*.trace.zip")) if (folder / "traces").is_dir() else []
        self.shots = sorted(folder.glob("failure-*.png"))
        self.videos = sorted((folder / "videos").glob("*.webm")) if (folder / "videos").is_dir() else []

    def phase_name(self, phase: int) -> str:
        return phase_title(self.bench, phase) if self.bench else f"phase {phase + 1}"

    def rel(self, path: Path) -> str:
        return esc(path.relative_to(self.folder).as_posix())

    def session_traces(self, session: int) -> list[Path]:
        return [t for t in self.traces if t.name.startswith(f"session-{session}.")]

    # -- sections ---------------------------------------------------------------------------------

    def header(self) -> str:
        s, evs = self.state, self.state.evaluations
        avg = mean(evs)
        planned = f" of {len(self.bench.checks)} planned" if self.bench else ""
        told, facts = facts_told(s, self.bench.profile.name if self.bench else None)
        status = esc(s.status) + (f": {esc(s.error)}" if s.error else "")
        rows = [
            ("Status", status),
            ("Mean score", f"<b>{avg:.2f} / 10</b>" if avg is not None else "n/a"),
            ("Checks graded", f"{len(evs)}{planned}"),
            ("Score distribution", " · ".join(f"{k}: {n}" for k, n in distribution(evs).items()) or "n/a"),
            ("Agent", f"{esc(s.driver)}; {s.turn} messages in {len(s.sessions)} chat session(s); "
                      f"{len(s.agent_notices)} compaction notice(s) seen in its UI"),
            ("Persona", f"{esc(s.persona_model)}; {s.usage.calls} calls; {len(s.persona_compactions)} context compaction(s)"),
            ("Facts told", f"{told} of {facts}"),
            ("Run time", f"{duration(s.active_seconds)} active; started {s.created_at:%Y-%m-%d %H:%M} UTC, "
                         f"last saved {s.updated_at:%Y-%m-%d %H:%M} UTC"),
        ]
        title = self.bench.title if self.bench else s.benchmark_title or s.benchmark
        return (f"<h1>{esc(s.run_id)} — {esc(title)}</h1><p class=muted>MarathonMemBench run report · "
                f"benchmark <code>{esc(s.benchmark)}</code></p>"
                + table(["", ""], [(k, v) for k, v in rows], cls="meta"))

    def scores(self) -> str:
        evs = self.state.evaluations
        if not evs:
            return "<h2>Scores</h2><p>No check graded yet.</p>"
        cats = [(esc(g.key), str(g.count), f"{g.mean:.1f}", bar(g.mean, 10)) for g in by_category(evs).values()]
        phases = [(esc(self.phase_name(p)), str(g.count), f"{g.mean:.1f}", bar(g.mean, 10)) for p, g in by_phase(evs).items()]
        return ("<h2>Scores</h2><div class=plots><div><h3>By category</h3>"
                + table(["category", "checks", "mean", ""], cats, numeric=(1, 2))
                + "</div><div><h3>By phase (where the check was asked)</h3>"
                + table(["phase", "checks", "mean", ""], phases, numeric=(1, 2)) + "</div></div>")

    def decay(self) -> str:
        evs = {e.check_id: e for e in self.state.evaluations}
        dated = [(evs[a.check_id], a) for a in self.ages.values() if a.turns is not None]

        def points(attr: str) -> list[Point]:
            return [Point(getattr(a, attr), e.score, "b" if a.new_session_between else "a",
                          f"{e.check_id} [{e.category.value}] {e.score:g}/10 — {e.question}") for e, a in dated]

        rows = []
        for e in self.state.evaluations:
            a = self.ages.get(e.check_id)
            links = "<br>".join(f"{esc(link.file)} {esc(link.fact_id)}: {esc(link.text)}" for link in (a.links[:3] if a else []))
            rows.append((f'<a href="#check-{esc(e.check_id)}">{esc(e.check_id)}</a>', esc(e.category.value),
                         f'<span class="{score_class(e.score)}">{e.score:g}</span>', links or '<span class=muted>none</span>',
                         esc(a.basis) if a and a.turns is not None else "—",
                         str(a.turns) if a and a.turns is not None else "—",
                         f"{a.tokens:,}" if a and a.tokens is not None else "—",
                         ("yes" if a.new_session_between else "no") if a and a.turns is not None else "—"))
        plots = ""
        if dated:
            plots = ('<div class=legend><span style="background:var(--a)"></span>same chat session'
                     '<span style="background:var(--b)"></span>a new chat in between</div><div class=plots>'
                     + scatter(points("turns"), "turns since the fact was told or last changed")
                     + scatter(points("tokens"), "tokens in the chat since then") + "</div>")
        return ("<h2>Memory decay</h2><p class=muted>Each graded check against the age of the fact it asks about. "
                "A check is linked to a fact by an explicit id (<code>family.1.2</code>) or else by the words they share, "
                "rare words weighing more; the age runs from the fact's last change (or when it was told) to the turn the "
                "question was asked, in turns and in tokens of everything the chat showed in between. "
                "<code>absent</code> checks have no fact.</p>" + plots
                + table(["check", "category", "score", "linked fact(s)", "from", "turns", "tokens", "new chat"], rows,
                        numeric=(5, 6)))

    def cost(self) -> str:
        u = self.state.usage
        costs = phase_costs(self.state)
        top = max((c.total for c in costs), default=0)
        rows = [(esc(self.phase_name(c.phase)), f"{c.prompt_tokens:,}", f"{c.completion_tokens:,}", bar(c.total, top))
                for c in costs]
        rows.append(("<b>total</b>", f"<b>{u.prompt_tokens:,}</b>", f"<b>{u.completion_tokens:,}</b>", ""))
        return (f"<h2>Persona cost</h2><p>{u.calls} model calls; {u.prompt_tokens:,} tokens in, "
                f"{u.completion_tokens:,} out (as the endpoint reported them, else counted with tiktoken).</p>"
                + table(["phase", "tokens in", "tokens out", ""], rows, numeric=(1, 2)))

    def failures(self) -> str:
        bad = [e for e in self.state.evaluations if e.score < 10]
        parts = [f"<h2>Imperfect answers ({len(bad)})</h2>"]
        if not bad:
            parts.append("<p>Every graded answer scored 10.</p>")
        for e in bad:
            traces = self.session_traces(e.session)
            links = [f'<a href="#turn-{self.ages[e.check_id].asked_turn if e.check_id in self.ages else e.turn}">in the transcript</a>']
            links += [f'<a href="{self.rel(t)}">trace {esc(t.name)}</a>' for t in traces]
            parts.append(self._card(e, "failed", " · ".join(links)))
        if self.state.error or self.shots:
            parts.append("<h3>Run failure</h3>")
            if self.state.error:
                parts.append(f"<p class=s0>{esc(self.state.error)}</p>")
            for shot in self.shots:
                parts.append(f'<p><a href="{self.rel(shot)}"><img src="{self.rel(shot)}" alt="{esc(shot.name)}" '
                             f'style="max-width:100%;border:1px solid var(--line)"></a><br><span class=muted>{esc(shot.name)}</span></p>')
        if self.traces or self.videos:
            items = "".join(f'<li><a href="{self.rel(t)}">{esc(t.name)}</a> — <code>playwright show-trace {self.rel(t)}</code></li>'
                            for t in self.traces)
            items += "".join(f'<li><a href="{self.rel(v)}">{esc(v.name)}</a></li>' for v in self.videos)
            parts.append(f"<h3>Traces and videos</h3><ul>{items}</ul>")
        return "".join(parts)

    def _card(self, e: Evaluation, anchor: str, links: str = "") -> str:
        retry = ", after a memory search" if e.second_attempt else ""
        return (f'<div class="card {score_class(e.score)}" id="{anchor}-{esc(e.check_id)}">'
                f'<div><b>{esc(e.check_id)}</b> [{esc(e.category.value)}] — <b class="{score_class(e.score)}">{e.score:g}/10</b>'
                f"{retry}</div><div class=q>{esc(e.question)}</div><div>Expected: {esc(e.expected)}</div>"
                f"<div class=answer>Agent: {esc(e.answer)}</div><div class=muted>Grader: {esc(e.comment)}</div>"
                + (f"<div>{links}</div>" if links else "") + "</div>")

    def transcript(self) -> str:
        asked: dict[int, list[Evaluation]] = {}
        graded: dict[int, list[Evaluation]] = {}
        for e in self.state.evaluations:
            turn = self.ages[e.check_id].asked_turn if e.check_id in self.ages else e.turn
            asked.setdefault(turn, []).append(e)
            graded.setdefault(e.turn, []).append(e)
        starts = {s.started_turn: s for s in self.state.sessions}
        notices: dict[int, list[str]] = {}
        for n in self.state.agent_notices:
            notices.setdefault(n.turn, []).append(n.text)
        out = ['<h2>Transcript</h2><input type="checkbox" id="only-checks"> <label for="only-checks">only the turns with '
               f"a check</label> <span class=muted>({len(self.exchanges)} turns)</span><div class=transcript>"]
        phase = None
        for ex in self.exchanges:
            if ex.turn - 1 in starts:
                s = starts[ex.turn - 1]
                sign = f" — {esc(s.reset_sign)}" if s.reset_sign else ""
                out.append(f'<div class="divider">Chat session {s.index} ({esc(s.reason)}){sign}</div>')
            if ex.phase != phase:
                phase = ex.phase
                out.append(f'<h3>{esc(self.phase_name(phase))}</h3>')
            checks = asked.get(ex.turn, []) + [e for e in graded.get(ex.turn, []) if e not in asked.get(ex.turn, [])]
            cards = "".join(f'<div class="card"><b>check {esc(e.check_id)}</b> asked: {esc(e.question)}</div>'
                            for e in asked.get(ex.turn, []) if e.turn != ex.turn)
            cards += "".join(self._card(e, "check") for e in graded.get(ex.turn, []))
            reply = "".join(f'<div class="reply">{esc(b)}</div>' for b in ex.reply) or '<div class="reply muted">(no reply)</div>'
            note = "".join(f'<div class="notice">agent notice: {esc(t)}</div>' for t in notices.get(ex.turn, []))
            out.append(f'<div class="ex{" check" if checks else ""}" id="turn-{ex.turn}"><div class=n>turn {ex.turn}<br>'
                       f'{ex.reply_seconds:.1f} s</div><div><div class=sent>{esc(ex.sent)}</div>{reply}{note}'
                       f'<div class=sig>{esc(ex.signal)}</div>{cards}</div></div>')
        out.append("</div>")
        return "".join(out)

    def render(self) -> str:
        body = "".join([self.header(), self.scores(), self.decay(), self.cost(), self.failures(), self.transcript()])
        return page(f"{self.state.run_id} — MarathonMemBench", body)


def write_run_report(folder: Path, state: RunState, exchanges: list[Exchange], bench: Benchmark | None = None,
                     counter: TokenCounter | None = None) -> Path:
    path = folder / HTML_FILE
    atomic_write(path, RunReport(state, exchanges, folder, bench, counter).render())
    return path
