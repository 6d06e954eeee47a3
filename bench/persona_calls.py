"""What the persona costs on the model's side, from real requests: calls per agent message, input
tokens per benchmark, and the share of them a provider's prefix cache can serve.

The scripted persona answers behind the quirk server (tests/support/quirk_server.py, OpenAI's
profile: strict validation, usage with cached tokens by OpenAI's rule), and the real runner plays
the benchmark through the `openai` client against the oracle agent, at the given compaction
settings. Every number is read from what the server received and billed; the longest stretch
without progress (a fact told, a check graded, a phase entered) is read from the run, to show the
margin `persona.stall_calls` leaves. `python -m bench.persona_calls [FOLDER...]` prints it alone.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from persona.benchmark.loader import load_benchmark
from persona.config import CompactionConfig, PersonaConfig
from persona.engine.dry import DryTarget, dry_run
from persona.report.cost import PriceTable
from persona.report.progress import QuietProgress
from persona.state import RunState
from persona.tokens import MESSAGE_OVERHEAD, TokenCounter
from tests.support.quirk_server import QuirkServer, Responder, scripted_responder

REPO = Path(__file__).resolve().parent.parent
MARATHON = REPO / "benchmarks" / "marathon-en"
BEFORE_REAL = 16_701_646  # marathon-en input tokens from real requests before issue 12 (this bench on commit 7128c7e)


@dataclass
class PersonaCost:
    benchmark: str
    status: str
    messages: int  # to the agent
    calls: int  # persona model requests the server answered
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    legacy_tokens: int  # input tokens counted as the dry run counted them before: no tools, no ids, no roles
    compactions: int
    in_phase_cuts: int
    longest_stall: int  # persona calls in a row without progress, at most
    rejections: int  # requests the server refused (a strict server would have)

    @property
    def calls_per_message(self) -> float:
        return self.calls / self.messages if self.messages else float("inf")

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def measure(folder: Path = MARATHON, compaction: CompactionConfig | None = None) -> PersonaCost:
    bench = load_benchmark(folder)
    compaction = compaction or CompactionConfig()
    watch = StallWatch()
    legacy = LegacyCount()
    with tempfile.TemporaryDirectory(prefix="mmb-bench-persona-") as tmp, \
            QuirkServer(legacy.watching(scripted_responder(bench.manifest.language)), keep_requests=False) as server:
        persona = PersonaConfig(kind="openai", base_url=server.base_url, model="bench", api_key_env="MMB_BENCH_NO_KEY",
                                budget_tokens=None, preflight=False)
        result = asyncio.run(dry_run(DryTarget(bench, str(folder)), Path(tmp), compaction, persona, watch))
    state = result.state
    served = server.served
    return PersonaCost(
        benchmark=folder.name, status=state.status, messages=state.turn, calls=len(served),
        prompt_tokens=sum(s.prompt_tokens for s in served), cached_tokens=sum(s.cached_tokens or 0 for s in served),
        completion_tokens=sum(s.completion_tokens for s in served), legacy_tokens=legacy.total, compactions=len(state.persona_compactions),
        in_phase_cuts=sum(c.in_phase for c in state.persona_compactions), longest_stall=watch.longest,
        rejections=len(server.rejections))


class LegacyCount:
    """Input tokens counted as the dry run counted them when the 12.1 M was measured (system prompt and
    message texts, 4 tokens a message; no tools, ids or roles), so the two can be compared."""

    def __init__(self) -> None:
        self.total = 0
        self._counter = TokenCounter()
        self._seen: dict[str, int] = {}

    def _count(self, text: str | None) -> int:
        if text and text not in self._seen:
            self._seen[text] = self._counter.count(text)
        return self._seen.get(text or "", 0)

    def watching(self, respond: Responder) -> Responder:
        def counted(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
            for m in messages:
                calls = m.get("tool_calls") or []
                self.total += MESSAGE_OVERHEAD + self._count(m.get("content")) + sum(
                    self._count(c["function"]["name"]) + self._count(c["function"]["arguments"]) for c in calls)
            return respond(messages, tools)

        return counted


class StallWatch(QuietProgress):
    """The most persona calls in a row without progress, seen at every save of the state."""

    longest = 0

    def update(self, state: RunState) -> None:
        self.longest = max(self.longest, state.calls_since_progress)


def _margins(c: PersonaCost) -> str:
    """How far the default bounds are from stopping this benchmark (target: 3x)."""
    d = PersonaConfig()
    prices = PriceTable()
    usd = {m: prices.cost(m, c.prompt_tokens, c.completion_tokens, c.cached_tokens).usd for m in (d.model, "gpt-4o")}
    parts = [f"budget_tokens {d.budget_tokens / 1e6:.0f} M: {d.budget_tokens / (c.prompt_tokens + c.completion_tokens):.1f}x",
             "budget_usd $" + f"{d.budget_usd:g}: " + ", ".join(f"{d.budget_usd / v:.1f}x at {m} (${v:.2f})"
                                                                for m, v in usd.items() if v),
             f"stall_calls {d.stall_calls}: {d.stall_calls / max(c.longest_stall, 1):.0f}x the longest stall"]
    return f"- default bounds against {c.benchmark} (target ≥ 3x): " + "; ".join(parts)


def section(costs: list[PersonaCost], summary: list[str]) -> list[str]:
    """The bench report's section, with its targets added to `summary`."""
    from bench.stats import table

    rows = [[c.benchmark, c.status, c.messages, c.calls, f"{c.calls_per_message:.2f}", f"{c.prompt_tokens:,}",
             f"{c.cached_share:.0%}", f"{c.completion_tokens:,}", f"{c.compactions} ({c.in_phase_cuts} in-phase)",
             c.longest_stall, c.rejections] for c in costs]
    for c in costs:
        if c.benchmark == MARATHON.name:
            summary += [
                f"- persona calls per agent message, {c.benchmark}: **{c.calls_per_message:.2f}** (target ≤ 1.2; "
                f"2.12 before: 754 calls for 355 messages): " + ("met" if c.calls_per_message <= 1.2 else "**not met**"),
                f"- persona input tokens, {c.benchmark}: **{c.prompt_tokens / 1e6:.2f} M** from real requests, "
                f"{c.prompt_tokens / BEFORE_REAL:.2f}x of the {BEFORE_REAL / 1e6:.2f} M the same requests counted before; "
                f"counted as the dry run counted the 12.1 M before (no tools, ids or roles): **{c.legacy_tokens / 1e6:.2f} M**"
                f" (target ≤ 6.05 M, half): " + ("met" if c.legacy_tokens <= 6.05e6 else "**not met**"),
                f"- share of them in the cacheable prefix: **{c.cached_share:.0%}** (target ≥ 80 %): "
                + ("met" if c.cached_share >= 0.8 else "**not met**"),
                _margins(c),
            ]
    return ["## 5. Persona model cost", "",
            "The scripted persona behind the quirk server (OpenAI's profile: strict validation, usage counted with "
            "tiktoken, cached tokens by OpenAI's rule: the prefix shared with an earlier request, from 1024 tokens, "
            "in steps of 128), played by the real runner through the `openai` client against the oracle agent, "
            "compaction max_tokens 30000 / trim_to_tokens 10000 (the defaults). Input tokens count the system "
            "prompt, the tools and the messages of every request. 'longest stall' is the most persona calls in a "
            "row without progress (persona.stall_calls stops a run at 40).", "",
            table(["benchmark", "status", "messages", "calls", "calls/message", "input tokens", "cached",
                   "output tokens", "compactions", "longest stall", "refused"], rows), ""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.persona_calls", description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path, default=[MARATHON])
    args = ap.parse_args(argv)
    summary: list[str] = []
    lines = section([measure(f) for f in args.folders], summary)
    print("\n".join([*summary, "", *lines]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
