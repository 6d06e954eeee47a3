"""The bench's own parts: process-tree PSS, the instrumented page, the bookkeeping probe. No timing asserted."""

from __future__ import annotations

import asyncio
import os

import pytest
from playwright.async_api import async_playwright

from bench.chat_page import ChatPage
from bench.overhead import Floor, OurDriver, message
from bench.pss import tree, tree_pss_mb
from bench.state_cost import measure
from bench.stats import p90, table
from drivers.browser import launch_chromium
from drivers.demo import PROFILE


def fake_proc(root, procs: dict[int, tuple[int, str, int]]):
    """procs: pid -> (ppid, command name, PSS kB)."""
    for pid, (ppid, name, pss) in procs.items():
        d = root / str(pid)
        d.mkdir()
        (d / "stat").write_text(f"{pid} ({name}) S {ppid} 1 1 0 -1\n")
        (d / "smaps_rollup").write_text(f"Rss: {pss * 2} kB\nPss:   {pss} kB\n")
    (root / "self").mkdir()
    return root


def test_pss_sums_a_process_and_all_its_descendants_only(tmp_path):
    proc = fake_proc(tmp_path, {10: (1, "python", 1024), 11: (10, "node", 2048), 12: (11, "chrome (gpu)", 512),
                                13: (11, "renderer", 512), 20: (1, "other", 9999)})
    assert sorted(tree(10, proc)) == [10, 11, 12, 13]
    assert tree_pss_mb(10, proc) == (4.0, 4)


def test_pss_of_this_process_is_real():
    mb, n = tree_pss_mb(os.getpid())
    assert mb > 5 and n >= 1


def test_stats_and_tables():
    assert p90([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) == pytest.approx(9.1)
    assert table(["a", "b"], [[1, 2.5]]) == "| a | b |\n|---|---|\n| 1 | 2.50 |"


def test_the_bookkeeping_probe_runs_the_real_loop_and_compaction_bounds_the_state():
    with_c, without = measure([40, 400], True, window=2), measure([40, 400], False, window=2)
    assert [c.history for c in with_c] == [40, 400] and without[-1].kept == 401
    assert with_c[-1].kept == without[-1].kept  # 400 messages still fit in 30000 tokens
    assert without[-1].state_kb > 5 * without[0].state_kb


def test_the_instrumented_page_times_each_reply_for_our_driver_and_the_floor(chromium):
    async def play():
        with ChatPage(reply_s=0.2, chunks=4) as page:
            async with async_playwright() as pw:
                browser = await launch_chromium(pw)
                try:
                    ours = await OurDriver("ours", PROFILE).start(browser, page.url)
                    floor = await Floor(tight=True).start(browser, page.url)
                    samples = [await ours.turn(message(1)), await floor.turn(message(2)), await ours.turn(message(3))]
                    await ours.close()
                    await floor.close()
                finally:
                    await browser.close()
        return samples

    samples = asyncio.run(play())
    assert all(s.complete for s in samples)
    assert all(150 <= s.agent_ms < s.wall_ms for s in samples)  # the page streamed over ~200 ms, inside the turn
    assert all(s.delay_ms is not None and -50 < s.delay_ms < s.wall_ms for s in samples)


def test_the_persona_cost_bench_reads_real_requests():
    from bench.persona_calls import measure as persona_cost
    from bench.persona_calls import section
    from tests.conftest import DEMO_BENCH

    cost = persona_cost(DEMO_BENCH)
    assert cost.status == "finished" and cost.rejections == 0 and cost.messages > 20
    assert cost.messages <= cost.calls <= 1.2 * cost.messages, "a message and its calls in one turn"
    assert 0 < cost.legacy_tokens < cost.prompt_tokens and 0.5 < cost.cached_share < 1
    assert cost.longest_stall < 10
    lines = section([cost], summary := [])
    assert "| demo | finished |" in "\n".join(lines) and summary == [], "targets are stated for marathon-en only"


@pytest.mark.parametrize("contained", [False, True])
def test_the_long_chat_page_opens_with_its_history_and_both_contenders_read_the_new_reply(chromium, contained):
    async def play():
        with ChatPage(reply_s=0.1, chunks=2) as page:
            url = page.url + "?history=300" + ("&contained=1" if contained else "")
            async with async_playwright() as pw:
                browser = await launch_chromium(pw)
                try:
                    ours = await OurDriver("ours", PROFILE).start(browser, url)
                    floor = await Floor(tight=True).start(browser, url)
                    shown = await floor.page.locator(".msg").count()
                    samples = [await ours.turn(message(1)), await floor.turn(message(2))]
                    await ours.close()
                    await floor.close()
                finally:
                    await browser.close()
        return shown, samples

    shown, samples = asyncio.run(play())
    assert shown == 300 and all(s.complete for s in samples)
    assert samples[0].watch_ms is not None and samples[0].watch_ms > 0


def test_a_big_benchmark_is_written_valid_with_its_checks_asked_after_their_facts(tmp_path):
    from bench.big_benchmark import write_benchmark
    from persona.benchmark.links import link_checks
    from persona.benchmark.lint import lint
    from persona.benchmark.loader import load_benchmark

    for linked in (True, False):
        bench = load_benchmark(write_benchmark(tmp_path / str(linked), 1000, linked=linked))
        assert sum(len(ff.all_facts()) for ff in bench.fact_files.values()) == 1001  # the profile's one, too
        assert 50 <= len(bench.checks) <= 100 and lint(bench) == []
        links = link_checks(bench)
        assert all(links[c.id].how == ("stated" if linked else "inferred") for c in bench.checks)


def test_the_save_cost_probe_saves_through_the_real_store(tmp_path):
    from bench import save_cost
    from persona.state import read_state

    costs = save_cost.measure([(3, 20), (30, 40)], 2, tmp_path)
    assert [(c.checks, c.facts) for c in costs] == [(3, 20), (30, 40)]
    assert all(c.turn_ms > 0 and c.whole_ms > 0 and c.state_kb < c.total_kb for c in costs)
    state = read_state(tmp_path / "run-1")
    assert len(state.evaluations) == 30 + 2 + 5 and state.turn == 2 + 5, "each turn graded a check, warm-up included"


def test_the_watch_bench_opens_the_lab_with_the_history_each_feature_shows(chromium):
    from bench.watch_cost import FEATURES, TIMING, history
    from tests.support.chat_lab import ChatLab, LabScenario

    shows = {"work in the bubble": ".bubble.bot .work", "work beside": "#log > .work", "authors: name once per group": ".name"}
    counts = {}

    async def play():
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            try:
                page = await browser.new_page()
                for f in (f for f in FEATURES if f.name in shows):
                    with ChatLab(LabScenario(**TIMING, **f.scenario)) as lab:
                        conv = lab.new_conversation()
                        lab.conversations[conv] = history(f, 9)
                        await page.goto(f"{lab.url}/c/{conv}")
                        await page.wait_for_selector("#log[data-ready='1']", state="attached")
                        counts[f.name] = (await page.locator("#log .bubble").count(), await page.locator(shows[f.name]).count())
            finally:
                await browser.close()

    asyncio.run(play())
    # 9 bubbles: ours and the agent's by turns, each earlier reply with its thought and tool card; where names
    # are shown once per group, the agent answers in two bubbles and only the first shows a name
    assert counts == {"work in the bubble": (9, 8), "work beside": (9, 8), "authors: name once per group": (9, 6)}


def test_the_watch_bench_reads_every_reply_whole_and_reports_the_watch_per_feature(chromium):
    from bench.watch_cost import FEATURES, measure, section

    picked = [f for f in FEATURES if f.name in ("plain", "work in the bubble", "newest first, authors: name once per group",
                                                  "parts in shadow roots, authors: name")]

    async def play():
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            try:
                return await measure(browser, rounds=1, turns=1, features=picked, sizes=(4, 9))
            finally:
                await browser.close()

    found = asyncio.run(play())
    names = [r.name for r in found.results]
    assert "floor, work in the bubble, 9 bubbles" in names and len(names) == 2 * len(picked) + 2
    samples = [s for r in found.results for s in r.samples]
    assert samples and all(s.complete for s in samples), "the reply read whole: no work, name or time in it"
    ours = [s for r in found.results if r.name.startswith("ours") for s in r.samples]
    assert all(s.watch_checks and s.watch_ms and s.watch_ms > 0 for s in ours)
    lines = "\n".join(section(found, 1, 1, summary := []))
    assert "| parts in shadow roots, authors: name | **" in lines and summary[0].startswith("- reply watch")
