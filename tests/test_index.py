"""results/index.html: every run listed with filters, linked to its page, which links back."""

from __future__ import annotations

from datetime import timedelta

from persona.report.html import write_run_report
from persona.report.publish import write_overview
from tests.support.runs import EVIL, demo_run, write_run


def three_runs(results):
    """An agent's run with a page, a newer failed one of another benchmark without, a dry run; hostile titles."""
    folders = {}
    for i, (run_id, driver, status) in enumerate([("old", "demo", "finished"), ("new", "generic", "failed"),
                                                  ("dry-demo", "oracle", "finished")]):
        state, exchanges, bench = demo_run(run_id)
        state.driver, state.status, state.benchmark_title = driver, status, f"Demo {EVIL}"
        state.created_at += timedelta(hours=i)
        state.phase_count, state.checks_planned = len(bench.phases), len(bench.checks)
        if run_id == "new":
            state.benchmark = "/elsewhere/other-bench"
        folders[run_id] = write_run(results, state, exchanges)
        if run_id == "old":
            write_run_report(folders[run_id], state, exchanges, bench)
    return folders


def test_the_index_lists_every_run_newest_first_and_links_both_ways(tmp_path):
    folders = three_runs(tmp_path)
    written = write_overview(tmp_path)
    assert [p.name for p in written] == ["leaderboard.md", "leaderboard.html", "index.html"]
    index = (tmp_path / "index.html").read_text()
    rows = [line for line in index.splitlines() if line.startswith("<tr data-")]
    assert [r.split('data-status="')[1].split('"')[0] for r in rows] == ["finished", "failed", "finished"]
    assert 'data-oracle="yes"' in rows[0] and ">dry-demo</td>" not in rows[0] and "dry-demo <span class=muted>oracle" in rows[0]
    assert '<a href="old/report.html">old</a>' in rows[2] and "<a href" not in rows[1], "a link only to a page that exists"
    assert "phase 5/5" in rows[2] and "3/10" in rows[2] and "1 min 15 s" in rows[2]
    assert EVIL not in index and "&lt;script&gt;" in index
    assert '<a href="leaderboard.html">leaderboard</a>' in index
    page = (folders["old"] / "report.html").read_text()
    assert '<a href="../index.html">all runs</a>' in page and '<a href="../leaderboard.html">leaderboard</a>' in page
    assert '<a href="index.html">all runs</a>' in (tmp_path / "leaderboard.html").read_text()


FILTER = """([q, benchmark, status, oracle]) => {
    for (const [id, value] of Object.entries({q, benchmark, status})) document.getElementById(id).value = value;
    document.getElementById("oracle").checked = oracle;
    document.getElementById("q").dispatchEvent(new Event("input"));
    return [...document.querySelectorAll("#runs tbody tr:not([hidden])")].map(r => r.dataset.status + ":" + r.cells[0].innerText.split(" ")[0]);
}"""


def test_the_filters_work_in_a_browser(tmp_path, harness):
    three_runs(tmp_path)
    write_overview(tmp_path)

    async def shown(cases: list[tuple]) -> list[list[str]]:
        page = await harness.browser.new_page()
        try:
            await page.goto((tmp_path / "index.html").as_uri())
            counts = await page.inner_text("#shown")
            return [counts] + [await page.evaluate(FILTER, list(case)) for case in cases]
        finally:
            await page.close()

    counts, every, failed, no_dry, text, bench = harness.run(shown([
        ("", "", "", True), ("", "", "failed", True), ("", "", "", False), ("GENERIC", "", "", True), ("", "other-bench", "", True)]))
    assert counts == "3 of 3 shown"
    assert every == ["finished:dry-demo", "failed:new", "finished:old"]
    assert failed == ["failed:new"] and no_dry == ["failed:new", "finished:old"] and text == ["failed:new"] and bench == ["failed:new"]
