"""Money: what a run's persona tokens cost, from a price table per model.

The table ships with the tool (prices.json beside this module: list prices per 1 M tokens, dated);
config.jsonc's `prices` overrides and extends it. A model is found by its exact name (any case),
else without a provider prefix (`openai/gpt-4o` on OpenRouter) or a dated snapshot suffix
(`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`). A model with no price is shown as unknown,
with how to give it one, never as free.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from persona.config import ModelPrice
from persona.state import RunState

_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest)$")


@cache
def shipped_prices() -> dict[str, ModelPrice]:
    data = json.loads(files("persona.report").joinpath("prices.json").read_text(encoding="utf-8"))
    return {name.lower(): ModelPrice.model_validate(p) for name, p in data["models"].items()}


def _candidates(model: str) -> list[str]:
    """The names a model may be listed under, most specific first."""
    name = model.strip().lower()
    out = [name]
    if "/" in name:
        out.append(name.rsplit("/", 1)[1])
    out += [_SNAPSHOT.sub("", n) for n in out if _SNAPSHOT.search(n)]
    return out


class PriceTable:
    """The shipped prices under the config's own."""

    def __init__(self, overrides: dict[str, ModelPrice] | None = None):
        self.prices = {**shipped_prices(), **{k.lower(): v for k, v in (overrides or {}).items()}}

    def price(self, model: str) -> ModelPrice | None:
        return next((self.prices[n] for n in _candidates(model) if n in self.prices), None)

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0,
             checks: int = 0) -> Cost:
        """`cached_tokens`: the part of the prompt tokens the provider served from its cache."""
        price = self.price(model)
        if price is None:
            return Cost(model, None, checks=checks)
        cached_rate = price.input if price.cached_input is None else price.cached_input
        usd = ((prompt_tokens - cached_tokens) * price.input + cached_tokens * cached_rate
               + completion_tokens * price.output) / 1e6
        return Cost(model, usd, price, checks)

    def run_cost(self, state: RunState) -> Cost:
        """The persona's tokens of the run at its model's price, prompt-cache hits at the cached rate."""
        usage = state.usage
        return self.cost(state.persona_model, usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens,
                         checks=len(state.evaluations))

    def judge_cost(self, state: RunState) -> Cost:
        """The judge model's tokens of the run (or of the grading set shown) at its price, counted apart
        from the persona's: `run_cost` and the persona's budget are the persona's alone."""
        usage = state.judge_usage
        return self.cost(state.judge, usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens,
                         checks=len(state.evaluations))


@dataclass(frozen=True)
class Cost:
    model: str
    usd: float | None  # None: the model has no price
    price: ModelPrice | None = None
    checks: int = 0  # graded checks the money bought

    @property
    def per_check(self) -> float | None:
        return self.usd / self.checks if self.usd is not None and self.checks else None

    def summary(self) -> str:
        """One line for report.md and the terminal."""
        if self.usd is None:
            return f"unknown: no price for model {self.model!r} (add it under `prices` in config.jsonc)"
        line = money(self.usd) + (f" ({self.model} at {self.rates()})" if self.usd else "")
        if self.per_check is not None:
            line += f"; {money(self.per_check)} per graded check"
        return line


    def rates(self) -> str:
        """`$2.5 in / $1.25 cached / $10 out per 1 M tokens`."""
        p = self.price
        if p is None:
            return "no price"
        cached = f" / ${p.cached_input:g} cached" if p.cached_input is not None else ""
        return f"${p.input:g} in{cached} / ${p.output:g} out per 1 M tokens"


def money(usd: float | None) -> str:
    """$12.34, $0.0123 (a cheap run needs more digits than cents), $0, or — when unknown."""
    if usd is None:
        return "—"
    if usd == 0:
        return "$0"
    if usd < 0.0001:
        return "<$0.0001"
    return f"${usd:,.2f}" if usd >= 0.1 else f"${usd:.4f}"
