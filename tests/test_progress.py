"""Live progress: redrawn lines on a terminal, nothing extra elsewhere; fed by the runner as the state changes."""

from __future__ import annotations

import asyncio
import io
import re

from rich.console import Console

from persona.config import load_config
from persona.engine.runner import Runner, plan_runs
from persona.report.progress import LiveProgress, QuietProgress, make_progress
from tests.conftest import demo_run as demo_run_config
from tests.support.runs import demo_bench, demo_run

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def shown(progress: LiveProgress) -> str:
    console = Console(file=io.StringIO(), width=160)
    console.print(progress.render())
    return console.file.getvalue()


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_live_lines_and_a_pipe_gets_none():
    assert isinstance(make_progress(FakeTTY()), LiveProgress)
    assert isinstance(make_progress(io.StringIO()), QuietProgress)


def test_the_live_line_shows_phase_facts_checks_tokens_and_time():
    out = FakeTTY()
    state, _, bench = demo_run("r1")
    fresh = state.model_copy(deep=True, update={"phase": 0, "evaluations": [], "status": "running"})
    fresh.usage.prompt_tokens, fresh.usage.completion_tokens = 0, 0
    with LiveProgress(Console(file=out, force_terminal=True, width=160), refresh_per_second=50) as progress:
        progress.begin(bench, fresh)
        first = shown(progress)
        progress.update(state.model_copy(update={"status": "running"}))
        progress.end(state)
    text = ANSI.sub("", out.getvalue())
    last = [line for line in text.splitlines() if line.startswith("r1")][-1]
    # family 1.1 and running 1.2 told, of 6 + 6 live facts: the deleted 3.2 and the untold profile do not count.
    assert re.search(r"r1\s+finished\s+phase 5/5\s+facts 2/12\s+checks 3/10\s+4.3k tokens\s+0:01:15", last), last
    assert re.search(r"r1\s+running\s+phase 1/5\s+facts 2/12\s+checks 0/10\s+0 tokens", first), first
    assert "\r" in text or "\x1b[1A" in out.getvalue()  # redrawn in place, not appended


def test_quiet_progress_prints_nothing(capsys):
    state, _, bench = demo_run()
    progress = QuietProgress()
    with progress:
        progress.begin(bench, state)
        progress.update(state)
        progress.end(state)
    assert capsys.readouterr().out == ""


class Recorder(QuietProgress):
    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []

    def begin(self, bench, state):
        self.events.append(("begin", state.status, len(state.evaluations)))

    def update(self, state):
        self.events.append(("update", state.status, len(state.evaluations)))

    def end(self, state):
        self.events.append(("end", state.status, len(state.evaluations)))


def test_the_runner_feeds_progress_and_publishes_the_reports(write_config, tmp_path):
    config = load_config(write_config([demo_run_config("o", driver="oracle")]))
    lines: list[str] = []
    progress = Recorder()
    outcomes = asyncio.run(Runner(config, print_line=lines.append, progress=progress).run_all(plan_runs(config)))
    assert outcomes[0].status == "finished"
    kinds = [e[0] for e in progress.events]
    assert kinds[0] == "begin" and kinds[-1] == "end" and kinds.count("update") > 20
    graded = [n for kind, _, n in progress.events if kind == "update"]
    assert graded == sorted(graded) and graded[-1] == len(demo_bench().checks)
    results = tmp_path / "results"
    page = (results / "o" / "report.html").read_text()
    assert "Memory decay" in page and "<circle" in page
    assert "| [o](o/report.html) | Demo: a week in Maya's life (`demo`) | finished | 10.00 | 10/10 |" in \
        (results / "leaderboard.md").read_text(), "an oracle run, in the table of its own"
    assert str(results / "o" / "report.html") in lines[-1]
