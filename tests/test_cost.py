"""Money: the shipped price table, config overrides, model-name matching, cost in report.md and the run page."""

from __future__ import annotations

import json

import pytest

from persona.config import ModelPrice, load_config
from persona.errors import InputError
from persona.report.cost import PriceTable, money, shipped_prices
from persona.report.html import RunReport
from persona.report.markdown import render_entry
from tests.support.play import play
from tests.support.runs import MICRO, demo_run


def test_the_shipped_table_prices_common_models_and_the_scripted_persona_is_free():
    table = PriceTable()
    assert {"gpt-4o", "gpt-4o-mini", "claude-sonnet-4-5", "gemini-2.5-flash"} <= set(shipped_prices())
    assert table.cost("scripted", 10**6, 10**6).usd == 0
    assert table.cost("gpt-4o", 10**6, 10**6).usd == pytest.approx(12.5)  # $2.50 in + $10 out


@pytest.mark.parametrize("name", ["gpt-4o-mini", "GPT-4o-Mini", "openai/gpt-4o-mini", "gpt-4o-mini-2024-07-18"])
def test_a_model_is_found_by_name_provider_prefix_or_snapshot(name):
    assert PriceTable().price(name) == shipped_prices()["gpt-4o-mini"]


def test_an_unknown_model_has_no_price_and_says_how_to_give_it_one():
    cost = PriceTable().cost("my-local-llama", 1000, 1000)
    assert cost.usd is None and money(cost.usd) == "—"
    assert cost.summary() == "unknown: no price for model 'my-local-llama' (add it under `prices` in config.jsonc)"


def test_config_prices_override_and_extend_the_table():
    table = PriceTable({"my-local-llama": ModelPrice(input=0, output=0),
                        "gpt-4o": ModelPrice(input=1, cached_input=0.5, output=2)})
    assert table.cost("my-local-llama", 10**6, 10**6).usd == 0
    assert table.cost("gpt-4o", 2 * 10**6, 10**6, cached_tokens=10**6).usd == pytest.approx(1 + 0.5 + 2)
    assert table.cost("gpt-4o-mini", 10**6, 0).usd == pytest.approx(0.15), "the rest of the table stays"


def test_cached_tokens_without_a_cached_price_cost_the_input_price():
    table = PriceTable({"m": ModelPrice(input=4, output=8)})
    assert table.cost("m", 10**6, 0, cached_tokens=5 * 10**5).usd == pytest.approx(4)


def test_money_keeps_small_amounts_readable():
    assert [money(x) for x in (0, 0.00001, 0.0123, 0.5, 12.345, 1234.5)] == \
        ["$0", "<$0.0001", "$0.0123", "$0.50", "$12.35", "$1,234.50"]


def test_a_bad_price_in_config_is_an_error_at_its_line(tmp_path):
    path = tmp_path / "config.jsonc"
    path.write_text('{\n "prices": {\n  "m": {"input": -1, "output": 2}\n },\n "runs": [{"id": "a", "benchmark": "b"}]\n}')
    with pytest.raises(InputError) as err:
        load_config(path)
    assert [p.line for p in err.value.problems] == [3]


def test_report_md_and_the_run_page_show_cost_per_run_and_per_check(tmp_path):
    state, exchanges, bench = demo_run()
    state.persona_model = "gpt-4o-mini"  # 4,000 tokens in, 300 out, 3 checks graded
    line = next(x for x in render_entry(bench, state).splitlines() if x.startswith("- **Cost:**"))
    assert line == "- **Cost:** $0.0008 (gpt-4o-mini at $0.15 in / $0.075 cached / $0.6 out per 1 M tokens); " \
                   "$0.0003 per graded check"
    html = RunReport(state, exchanges, tmp_path, bench).render()
    assert "<td>Cost</td><td>$0.0008 (gpt-4o-mini at" in html
    state.persona_model = "unpriced-model"
    assert "unknown: no price for model &#39;unpriced-model&#39;" in RunReport(state, exchanges, tmp_path, bench).render()


def test_config_prices_reach_the_runs_report(tmp_path, write_bench):
    config = {"prices": {"scripted": {"input": 1000, "output": 1000}}}  # make the free persona cost something
    outcome, state = play(tmp_path, benchmark=write_bench(MICRO), **config)
    assert outcome.status == "finished"
    usd = (state.usage.prompt_tokens + state.usage.completion_tokens) * 1000 / 1e6
    report = (tmp_path / "results" / "report.md").read_text()
    assert f"- **Cost:** {money(usd)} (scripted at $1000 in / $1000 out per 1 M tokens)" in report
    assert json.loads((tmp_path / "results" / "r" / "state.json").read_text())["checks_planned"] == 2
