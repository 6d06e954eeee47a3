"""What the persona model did (and a judge model: the same counts), in words shared by report.md and
report.html: calls and their retries,
tokens and the cached share, each compaction of its context, and everything taken out of or repaired
in its turns (nothing the tool changes goes unsaid). Money is report/cost.py's."""

from __future__ import annotations

from persona.state import RunState, Usage


def _count(causes: dict[str, int]) -> str:
    return ", ".join(f"{cause} ×{n}" for cause, n in sorted(causes.items(), key=lambda kv: -kv[1]))


def usage_line(state: RunState) -> str:
    return usage_text(state.persona_model, state.usage)


def usage_text(model: str, u: Usage) -> str:
    """A model's calls (the persona's, or a judge's), as counted: retries and their causes, tokens,
    the cached share, responses without usage."""
    calls = calls_text(u)
    tokens = f"{u.prompt_tokens:,} tokens in"
    if u.calls and u.counted == u.calls:
        return f"{model}; {calls}, {tokens}, {u.completion_tokens:,} out (counted with tiktoken)"
    if u.cache_reported:
        share = u.cached_tokens / u.prompt_tokens if u.prompt_tokens else 0.0
        tokens += f" ({u.cached_tokens:,} from the provider's cache, {share:.0%})"
    elif u.calls:
        tokens += " (the endpoint reported no cached tokens)"
    tokens += f", {u.completion_tokens:,} out"
    if u.counted:
        tokens += f"; {u.counted} response(s) without usage, counted with tiktoken"
    return f"{model}; {calls}, {tokens}"


def calls_text(u: Usage) -> str:
    """A model's calls: how many, the client's retries and their causes (time-outs among them), and the
    requests it gave up on."""
    calls = f"{u.calls} calls"
    if u.retries:
        calls += f" ({u.retries} retried by the client: {_count(u.retry_causes)})"
    if u.failed:
        calls += f", {u.failed} without an answer after the client's retries"
    return calls


def compaction_lines(state: RunState) -> list[str]:
    """One line per compaction, with the request's tokens before and after it."""
    return [f"before call {c.at_message + 1}, phase {c.phase + 1}: {c.tokens_before:,} → {c.tokens_after:,} tokens, "
            f"{c.dropped_messages} messages dropped" + (", cut inside the phase (its brief kept)" if c.in_phase else "")
            for c in state.persona_compactions]


def quirks_line(state: RunState) -> str | None:
    return _count(state.quirks) if state.quirks else None


def end_summary(state: RunState) -> str:
    """The run's end in one line: its score over the checks it planned (none graded: no score), and the
    models' calls where the client had to retry or gave up (time-outs among the causes)."""
    graded, planned = len(state.evaluations), state.checks_planned
    of = f"{graded} of {planned} planned checks" if planned is not None else f"{graded} checks"
    if graded:
        line = f"mean {sum(e.score for e in state.evaluations) / graded:.2f}/10 over {of}"
    else:
        line = f"no score ({of} graded)"
    for who, u in (("persona", state.usage), ("judge", state.judge_usage)):
        if u.retries or u.failed:
            line += f"; {who} model {calls_text(u)}"
    return line
