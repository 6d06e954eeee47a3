"""`mmb view` without a browser: following files as a live run writes them (a half-written line
never shown, a rewritten transcript read again, a state parsed only when it changed), the lock read
without being taken, nothing written, files served only from inside a run folder, the pages and
their events escaped, a bounded number of streams, the port and the host said clearly, Ctrl-C and
SIGTERM. tests/test_view_browser.py watches the pages in Chromium."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket

import pytest

from persona.report.live.locks import parse_locks
from persona.report.live.server import PortTaken, bind
from persona.report.live.watch import TranscriptTail, Watcher
from persona.state import AgentActivity, Exchange, RunStore
from tests.support.runs import EVIL, demo_run, write_run
from tests.support.viewer import Events, get, live_events_url, served_at, serving, spawn_view

SECRET_NAME = "MMB_T_VIEW_TOKEN"


def exchange_line(turn: int, text: str = "hi") -> bytes:
    return (Exchange(turn=turn, session=0, phase=0, sent=text, reply=["ok"]).model_dump_json() + "\n").encode()


def test_the_transcript_is_read_on_from_its_offset_and_never_half_a_line(tmp_path):
    path = tmp_path / "transcript.jsonl"
    tail = TranscriptTail(path)
    assert not tail.poll() and tail.exchanges == []
    whole, second = exchange_line(1), exchange_line(2)
    path.write_bytes(whole + second[:20])  # the writer is in the middle of line 2
    assert tail.poll() and [e.turn for e in tail.exchanges] == [1]
    assert not tail.poll(), "nothing new: nothing read"
    with open(path, "ab") as f:
        f.write(second[20:])
    assert tail.poll() and [e.turn for e in tail.exchanges] == [1, 2] and tail.offset == len(whole + second)
    tmp = tmp_path / "t.tmp"
    tmp.write_bytes(exchange_line(1) + b"{not an exchange\n" + exchange_line(2, "hi again"))
    os.replace(tmp, path)  # a restart trims a transcript that ran ahead by rename; a bad line too
    assert tail.poll() and [e.sent for e in tail.exchanges] == ["hi", "hi again"] and tail.unreadable == 1
    path.write_bytes(exchange_line(5, "rewritten in place, a little longer than before"))
    assert tail.poll() and [e.turn for e in tail.exchanges] == [5], "a file rewritten in place is read from its start"


def test_a_state_is_parsed_again_only_when_its_folder_changed_and_only_what_it_counts_is_shown(tmp_path):
    state, exchanges, _ = demo_run("r1")
    folder = write_run(tmp_path, state, exchanges)
    with open(folder / "transcript.jsonl", "ab") as f:
        f.write(exchange_line(11))  # appended before the state that counts it is saved
    watcher = Watcher(tmp_path)
    assert watcher.poll()
    view = watcher.views()["r1"]
    assert len(view.exchanges) == 10 and view.state.turn == 10
    assert not watcher.poll() and watcher.views()["r1"] is view, "nothing changed: nothing parsed, the same view"
    state.transcript_len, state.turn = 11, 11
    RunStore(folder).save(state)
    assert watcher.poll() and len(watcher.views()["r1"].exchanges) == 11


def test_whether_a_process_plays_a_run_is_read_without_taking_its_lock(tmp_path):
    assert parse_locks("1: FLOCK  ADVISORY  WRITE 4242 fe:00:2252998 0 EOF\n2: POSIX  ADVISORY  WRITE 7 fe:00:11 0 EOF\n"
                       "3: -> FLOCK  ADVISORY  WRITE 99 fe:00:12 0 EOF\n") == {2252998}
    state, exchanges, _ = demo_run("r1")
    state.status = "running"
    folder = write_run(tmp_path, state, exchanges)
    store = RunStore(folder)
    store.lock()
    try:
        watcher = Watcher(tmp_path)
        watcher.poll()
        assert watcher.views()["r1"].held is True
        with open(folder / ".lock") as f:  # the viewer left it free for the run: it can still be had
            with pytest.raises(BlockingIOError):
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        store.unlock()
    assert watcher.poll() and watcher.views()["r1"].held is False


def files_of(folder):
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A finished run with a trace and a screenshot, a failed one whose error and replies are hostile, and a
    secret beside the folder that no address may reach."""
    tmp_path = tmp_path_factory.mktemp("view")
    state, exchanges, _ = demo_run("r1")
    folder = write_run(tmp_path / "results", state, exchanges)
    (folder / "traces").mkdir()
    (folder / "traces" / "session-0.trace.zip").write_bytes(b"zip")
    (folder / "failure-1.png").write_bytes(b"png")
    (tmp_path / "secret.txt").write_text("the key")
    (folder / "out").symlink_to(tmp_path)
    state, exchanges, _ = demo_run("r2")
    state.status, state.benchmark_title = "failed", f"Bench {EVIL}"
    state.error = f"the chat at http://chat.example/?k=${{{SECRET_NAME}}} said {EVIL}"  # as a run saves an address
    write_run(tmp_path / "results", state, exchanges)
    return tmp_path / "results"


@pytest.fixture(scope="module")
def url(results):
    """One viewer for the module's tests (each starts in a second or two on a busy machine)."""
    with serving(results) as url:
        yield url


def test_files_are_served_from_inside_a_run_folder_only(results, url):
    before = files_of(results)
    assert get(url, "/r1/traces/session-0.trace.zip") == (200, "zip")
    assert get(url, "/r1/failure-1.png") == (200, "png")
    for path in ["/r1/../../secret.txt", "/r1/%2e%2e/%2e%2e/secret.txt", "/r1/..%2F..%2Fsecret.txt", "/r1/out/secret.txt",
                 "/r1//etc/passwd", "/r1/.lock", "/../secret.txt", "/..%2Fsecret.txt/x", "/r9/state.json",
                 "/r1/traces", "/r1/%00"]:
        status, body = get(url, path)
        assert status in (400, 404) and "the key" not in body, path
    assert get(url, "/nope/report.html")[0] == 404
    assert files_of(results) == before, "the viewer wrote nothing and took no lock (no .lock made)"


def test_live_pages_and_their_updates_keep_agent_text_inert_and_secrets_as_placeholders(url, monkeypatch):
    monkeypatch.setenv(SECRET_NAME, "tok-do-not-show-9d1e")
    pages = {path: get(url, path) for path in ["/", "/index.html", "/leaderboard.html", "/r2/report.html",
                                               "/compare.html?a=r1&b=r2"]}
    for path, (status, html) in pages.items():
        assert status == 200, path
        assert EVIL not in html, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html or path.startswith("/compare"), path  # titles, error, replies
    assert "failed" in pages["/r2/report.html"][1] and "<script>" in pages["/"][1], "the page's own script is there"
    assert f"k=${{{SECRET_NAME}}}" in pages["/r2/report.html"][1] and "tok-do-not-show" not in "".join(h for _, h in pages.values())
    events = Events(url, live_events_url(pages["/r2/report.html"][1]).replace("token=", "token=unknown"))
    try:  # a page the server does not know gets every fragment: escaped too
        name, data = events.until(lambda n, d: n == "update")
    finally:
        events.close()
    sent = json.dumps(data)
    assert {f["id"] for f in data["fragments"]} >= {"run-header", "row-1", "row-10"}
    assert EVIL not in "".join(f["html"] for f in data["fragments"]) and "&lt;script&gt;" in sent


def test_a_page_gets_only_what_changed_since_it_was_served(results, url):
    state, exchanges, _ = demo_run("r3")
    folder = write_run(results, state, exchanges)
    status, html = get(url, "/r3/report.html")
    events = Events(url, live_events_url(html))
    try:
        with open(folder / "transcript.jsonl", "a") as f:
            f.write(Exchange(turn=11, session=1, phase=4, sent=f"one more {EVIL}", reply=["sure"], activity=[
                AgentActivity(kind="tool", title=f"Using memory_search {EVIL}", text=f"found {EVIL}")]).model_dump_json() + "\n")
        state.turn = state.transcript_len = 11
        state.status = "running"
        RunStore(folder).save(state)
        name, data = events.until(lambda n, d: n == "update")
    finally:
        events.close()
    ids = [f["id"] for f in data["fragments"]]
    assert "row-11" in ids and "row-1" not in ids and "run-header" in ids, ids
    row = next(f for f in data["fragments"] if f["id"] == "row-11")
    assert row["parent"] == "transcript" and "one more &lt;script&gt;" in row["html"]
    assert "<details class=work><summary>the agent's work, not its answer: memory_search</summary>" in row["html"]
    assert "<pre>found &lt;script&gt;" in row["html"] and EVIL not in json.dumps(data)


def test_streams_are_bounded_and_a_page_beyond_is_told(results):
    with serving(results, max_clients=1) as url:
        html = get(url, "/")[1]
        first = Events(url, live_events_url(html).replace("token=", "token=unknown"))
        try:
            first.until(lambda n, d: n == "update")  # it is counted by now
            second = Events(url, live_events_url(html))
            try:
                assert second.until(lambda n, d: True) == ("refused", {"reason": "1 pages are being followed already (the most)"})
            finally:
                second.close()
        finally:
            first.close()


def test_beyond_loopback_is_said_a_taken_port_too_and_ctrl_c_or_sigterm_stop_it_with_a_stream_open(results):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortTaken, match=f"port {port} on 127.0.0.1 is in use by another program: choose another with --port"):
            bind("127.0.0.1", port)
        procs = [spawn_view("--results", str(results), *more) for more in (["--host", "0.0.0.0"], [], ["--port", str(port)])]
        try:
            views = [(proc, served_at(proc)) for proc in procs[:2]]
            assert procs[2].wait(60) == 1 and procs[2].stderr.read().strip().splitlines() == [
                f"mmb view: port {port} on 127.0.0.1 is in use by another program: choose another with --port (--port 0 takes any free one)"]
            warning = procs[0].stderr.readline()
            assert warning.startswith("mmb view: WARNING: listening on 0.0.0.0, beyond this machine: anyone who can reach"), warning
            for (proc, url), sig, code in zip(views, (signal.SIGINT, signal.SIGTERM), (130, 143), strict=True):
                events = Events(url, live_events_url(get(url, "/")[1]).replace("token=", "token=unknown"))
                events.until(lambda n, d: n == "update")  # a page the server does not know of gets everything
                proc.send_signal(sig)
                assert events.until(lambda n, d: True, timeout=10)[0] == "bye", "the open stream is ended, not cut"
                assert proc.wait(10) == code
            assert procs[0].stderr.read().strip() == "mmb view: stopped" and procs[1].stderr.read().strip() == ""
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()


def test_a_view_started_ignoring_ctrl_c_still_says_the_signal_that_stopped_it(results):
    """uvicorn stops on SIGINT even where the process was started ignoring it (a script's `mmb view &`):
    the exit says so (130), never 0 as if it had ended by itself."""
    proc = spawn_view("--results", str(results), ctrl_c=False)
    try:
        served_at(proc)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 130
        assert proc.stderr.read().strip() == "mmb view: stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_runs_from_elsewhere_and_long_ago_show_with_what_their_state_has(results, url):
    """A merged shard's run whose benchmark is not on this machine, and a state written before most fields existed."""
    state, exchanges, _ = demo_run("shard")
    state.benchmark = "/another/machine/benchmarks/demo"
    write_run(results, state, exchanges)
    old = results / "old"
    old.mkdir()
    (old / "state.json").write_text(json.dumps({"run_id": "old", "benchmark": "benchmarks/gone", "driver": "generic",
                                                "persona_model": "gpt-4o", "status": "finished", "turn": 3}))
    status, index = get(url, "/")
    assert status == 200 and 'id="run-shard"' in index and 'id="run-old"' in index
    status, shard = get(url, "/shard/report.html")
    assert status == 200 and "<h3>phase 4</h3>" in shard, "phase numbers where the benchmark's titles are not known"
    status, page = get(url, "/old/report.html")
    assert status == 200 and "No check graded yet" in page and "(0 turns)" in page
