"""`mmb view` in real Chromium: a slow demo run in a process of its own, followed by the index and
the run's page as its turns arrive, without a reload (a marker the test leaves on each window
survives); a failed run with its screenshot; hostile text, served and pushed live, never run."""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from demo_agent.faults import ENV as DEMO_FAULTS_ENV
from persona.state import Exchange, RunStore
from tests.support.run_process import finish, start
from tests.support.runs import MICRO, demo_run, write_run
from tests.support.viewer import serving

pytestmark = pytest.mark.usefixtures("chromium")

WAIT_MS = 60_000  # every wait is for a condition; this only bounds it
SLOW_AGENT = {DEMO_FAULTS_ENV: json.dumps({"slow_s": 0.6, "token_delay_s": 0.02})}  # each turn takes a second or more
HOSTILE = '<img src=x onerror="window.pwned=1">'


def rows(page) -> str:
    return "document.querySelectorAll('#transcript .row').length"


def cell(run_id: str, column: int) -> str:
    return f"(document.querySelector('#run-{run_id} td:nth-child({column})') || {{}}).textContent || ''"


def test_the_index_and_the_run_page_follow_a_slow_run_without_reloading(write_bench, write_config, tmp_path, harness):
    config = write_config([{"id": "t", "benchmark": str(write_bench(MICRO)), "agent": {"driver": "demo"}}])
    results = tmp_path / "results"

    async def watch(url: str, run) -> dict:
        index = await harness.browser.new_page()
        await index.goto(url)
        await index.evaluate("window.marker = 'index'")
        seen = {"index before": await index.inner_text("#runs-body")}
        run.append(start(config, SLOW_AGENT))
        await index.wait_for_function(f"{cell('t', 5)}.startsWith('running')", timeout=WAIT_MS)  # the run appears
        page = await harness.browser.new_page()
        await page.goto(url + "t/report.html")
        await page.evaluate("window.marker = 'run'")
        seen["rows at first"] = await page.evaluate(rows(page))
        await page.wait_for_function(f"{rows(page)} > {seen['rows at first']}", timeout=WAIT_MS)  # a turn arrived
        seen["messages while running"] = await index.evaluate(cell("t", 7))
        await page.wait_for_selector("#transcript .card[id^=check-]", timeout=WAIT_MS)  # a check graded, with its card
        await page.wait_for_function("document.querySelector('#run-header td.s10') && "
                                     "document.querySelector('#run-header td.s10').textContent === 'finished'", timeout=WAIT_MS)
        await index.wait_for_function(f"{cell('t', 5)} === 'finished'", timeout=WAIT_MS)
        seen["rows at the end"] = await page.evaluate(rows(page))
        seen["markers"] = [await index.evaluate("window.marker"), await page.evaluate("window.marker")]
        seen["updates"] = [int(await p.evaluate("document.body.dataset.liveUpdates || 0")) for p in (index, page)]
        seen["index at the end"] = await index.inner_text("#runs-body")
        seen["graded"] = await page.inner_text("#run-failures")
        for p in (index, page):
            await p.close()
        return seen

    run: list = []
    results.mkdir()
    try:
        with serving(results) as url:
            seen = harness.run(watch(url, run))
    finally:
        if run:
            code, err = finish(run[0])
    assert code == 0, err[-3000:]
    assert seen["index before"].strip() == ""
    assert seen["rows at first"] < seen["rows at the end"] == 3
    assert seen["markers"] == ["index", "run"], "neither page was reloaded"
    assert min(seen["updates"]) >= 2
    assert "phase 2/2" in seen["index at the end"] and "2/2" in seen["index at the end"]  # progress and checks graded
    assert "Every graded answer scored 10" in seen["graded"] or "Imperfect answers" in seen["graded"]


def png(width: int = 4, height: int = 3) -> bytes:
    """A real PNG image (grey), so the page's <img> loads it."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_a_failed_run_with_its_screenshot_and_hostile_text_served_and_pushed_live(tmp_path, harness):
    state, exchanges, _ = demo_run("broken")
    state.status, state.error = "failed", f"no reply from the chat {HOSTILE}"
    state.benchmark_title = f"Bench {HOSTILE}"
    exchanges[0].reply = [HOSTILE]
    folder = write_run(tmp_path, state, exchanges)
    (folder / "failure-1.png").write_bytes(png())

    async def look(url: str) -> dict:
        page = await harness.browser.new_page()
        await page.goto(url + "broken/report.html")
        await page.evaluate("window.marker = 'kept'")
        seen = {"status": await page.inner_text("#run-header td.s0"),
                "shot": await page.evaluate("document.querySelector('img[src=\"failure-1.png\"]').naturalWidth"),
                "reply": await page.inner_text("#turn-1 .reply")}
        with open(folder / "transcript.jsonl", "a") as f:  # the run goes on: a hostile turn arrives
            f.write(Exchange(turn=11, session=1, phase=4, sent="and now?", reply=[f"live {HOSTILE}"]).model_dump_json() + "\n")
        state.turn = state.transcript_len = 11
        RunStore(folder).save(state)
        await page.wait_for_selector("#turn-11", timeout=WAIT_MS)
        seen["live reply"] = await page.inner_text("#turn-11 .reply")
        index = await harness.browser.new_page()
        await index.goto(url)
        seen["index status"] = await index.inner_text("#run-broken td.s0")
        seen["title"] = await index.inner_text("#run-broken td:nth-child(2)")
        seen["pwned"] = [await p.evaluate("window.pwned === undefined") for p in (page, index)]
        seen["marker"] = await page.evaluate("window.marker")
        for p in (page, index):
            await p.close()
        return seen

    with serving(tmp_path) as url:
        seen = harness.run(look(url))
    assert seen["status"] == f"failed: no reply from the chat {HOSTILE}"
    assert seen["shot"] == 4, "the failure screenshot is served beside the page"
    assert seen["reply"] == HOSTILE and seen["live reply"] == f"live {HOSTILE}", "shown as text"
    assert seen["index status"] == "failed" and seen["title"] == f"Bench {HOSTILE} (demo)"
    assert seen["pwned"] == [True, True] and seen["marker"] == "kept"
