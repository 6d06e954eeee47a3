"""Bad input through the real CLI: a clear file:line, a non-zero exit, nothing started, nothing
recorded lost. Static problems, JS blocks that throw, loop or grow when played among them, stop
`mmb run` before it starts (JS failing only against the real agent: test_faults_kill.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from persona.cli.app import app
from persona.crashpoints import ENV as CRASH_ENV
from tests.conftest import DEMO_BENCH, mmb
from tests.support.play import play, scores
from tests.support.run_process import saved_state

ANCHOR = 'bench.log("running facts start");'
GOOD = """// a config
{
  "results_dir": "results",
  "parallel": 2,
  "persona": {"kind": "scripted"},
  "runs": [
    {"id": "a", "benchmark": "bench", "agent": {"driver": "oracle"}},
  ],
}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(DEMO_BENCH, tmp_path / "bench")
    (tmp_path / "config.jsonc").write_text(GOOD)
    return tmp_path


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (old, path)
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("file, old, new, expected", [
    ("config.jsonc", '"parallel": 2,', '"parallel": 2', "config.jsonc:5: syntax error"),
    ("config.jsonc", '"parallel": 2,', '"parallel": "two",', "config.jsonc:4: parallel: Input should be a valid integer"),
    ("config.jsonc", '"driver": "oracle"', '"driver": "telepathy"', "config.jsonc:7: run a: unknown driver 'telepathy'"),
    ("config.jsonc", '"benchmark": "bench"', '"benchmark": "nowhere"', "nowhere: benchmark folder not found"),
    ("config.jsonc", '"driver": "oracle"}', '"driver": "oracle", "recovery": {"attempts": 0}}',
     "config.jsonc:7: runs.0.agent.recovery.attempts: Input should be greater than or equal to 1"),
    ("config.jsonc", '{"kind": "scripted"}', '{"kind": "scripted", "max_failed_turns": "many"}',
     "config.jsonc:5: persona.max_failed_turns: Input should be a valid integer"),
    ("config.jsonc", '"runs": [', '"runs": [], "old_runs": [', "config.jsonc:6: runs: List should have at least 1 item"),
    ("config.jsonc", "// a config", "// a config \udcff", "config.jsonc:1: not UTF-8 text (byte 0xff)"),
    ("bench/benchmark.json", '"language": "en",', '"language": "en"', "benchmark.json:5: syntax error"),
    ("bench/benchmark.json", '"language": "en",', '"language": ["en"],', "benchmark.json:4: language: Input should be a valid string"),
    ("bench/chapter2.md", "## Before lunch", "## Before lunch \udcff", "chapter2.md:17: not UTF-8 text (byte 0xff)"),
    ("bench/chapter1.md", 'bench.log("running facts start");', 'bench.log("running facts start"', "chapter1.md:16: JS block does not compile"),
    *[("bench/chapter1.md", ANCHOR, ANCHOR + "\n" + code, f"chapter1.md:16: JS block of phase 'Running' fails when played: {why}")
      for code, why in [('if (!vars.fixed) throw new Error("boom");', "Error: boom"),
                        ("vars.list.push(1);", "TypeError: cannot read property 'push' of undefined"),
                        ("let n = 0; while (true) { n++; }", "time limit exceeded"),
                        ('const a = []; while (true) a.push("grow " + a.length);', "memory limit exceeded")]],
    ("bench/benchmark.json", '"running.md"', '"runing.md"', "runing.md: file not found"),
    ("bench/chapter2.md", "❓ d9 [absent]", "❓ d1 [absent]", "chapter2.md:22: check id d1 repeats"),
])
def test_static_mistakes_stop_the_run_before_it_starts(folder, file, old, new, expected):
    path = folder / file
    text = path.read_text().replace(old, new, 1)
    assert text != path.read_text()
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    code, output = cli("run", "-c", str(folder / "config.jsonc"))
    assert code == 2 and expected in output, output
    assert "Traceback" not in output
    assert not (folder / "results").exists(), "nothing may be started or written"


def test_a_missing_config_and_a_fact_file_that_is_a_folder(folder):
    code, output = cli("run", "-c", str(folder / "nope.jsonc"))
    assert code == 2 and "nope.jsonc: file not found" in output
    (folder / "bench" / "family.md").unlink()
    (folder / "bench" / "family.md").mkdir()
    code, output = cli("run", "-c", str(folder / "config.jsonc"))
    assert code == 2 and "family.md: cannot read" in output, output


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list:
    _, state = play(tmp_path_factory.mktemp("ref"), benchmark=DEMO_BENCH)
    return scores(state)


def state_of(folder: Path, run_id: str = "a") -> dict:
    return saved_state(folder / "results" / run_id)


def test_a_benchmark_broken_between_two_runs_leaves_the_saved_run_alone(folder, reference):
    config = str(folder / "config.jsonc")
    stopped = mmb("run", "-c", config, env={CRASH_ENV: "tool.ran#27"})  # killed in chapter 2
    assert stopped.returncode == -9, stopped.stderr
    saved = (folder / "results" / "a" / "state.json").read_bytes()
    assert 3 <= json.loads(saved)["phase"] < 5
    report = folder / "results" / "report.md"
    report_before = report.read_bytes() if report.exists() else b""

    manifest = folder / "bench" / "benchmark.json"
    good_manifest = manifest.read_text()
    edit(manifest, '"language": "en",', '"language": "en"')  # a syntax error
    broken = mmb("run", "-c", config)
    assert broken.returncode == 2 and "benchmark.json:5: syntax error" in broken.stderr, broken.stderr
    manifest.write_text(good_manifest.replace('"chapter1.md", "chapter2.md"', '"chapter1.md"'))  # valid, but shorter
    (folder / "bench" / "chapter2.md").rename(folder / "chapter2.md.aside")
    shorter = mmb("run", "-c", config)
    assert shorter.returncode == 1 and "has 3 phases now, but this run is in phase" in shorter.stdout, shorter.stdout
    assert (folder / "results" / "a" / "state.json").read_bytes() == saved
    assert (report.read_bytes() if report.exists() else b"") == report_before

    manifest.write_text(good_manifest)
    (folder / "chapter2.md.aside").rename(folder / "bench" / "chapter2.md")
    fixed = mmb("run", "-c", config)
    assert fixed.returncode == 0, fixed.stderr + fixed.stdout
    assert "resuming" in fixed.stdout and [tuple(x) for x in scores_of(state_of(folder))] == reference


def scores_of(state: dict) -> list:
    return [(e["check_id"], e["score"], e["second_attempt"]) for e in state["evaluations"]]


def test_an_unreadable_state_stops_only_its_own_run_and_is_left_as_it_was(folder):
    (folder / "config.jsonc").write_text(GOOD.replace(
        '{"id": "a", "benchmark": "bench", "agent": {"driver": "oracle"}},',
        '{"id": "a", "benchmark": "bench", "agent": {"driver": "oracle"}},\n'
        '    {"id": "b", "benchmark": "bench", "agent": {"driver": "oracle"}},'))
    torn = folder / "results" / "a" / "state.json"
    torn.parent.mkdir(parents=True)
    torn.write_bytes(b'{"schema_version": 1, "run_id": "a", "mess')
    code, output = cli("run", "-c", str(folder / "config.jsonc"))
    assert code == 1 and "[a] not started:" in output and "state.json is unreadable" in output, output
    assert "[b] finished" in output and state_of(folder, "b")["status"] == "finished"
    assert torn.read_bytes() == b'{"schema_version": 1, "run_id": "a", "mess'


def test_a_failed_bench_call_is_reported_at_the_blocks_line():
    """The rejection is made where the block called bench.*, not in the bridge's own code."""
    import asyncio

    from persona.benchmark.js_sandbox import ScriptError, run_block

    async def no_new_chat() -> None:
        raise RuntimeError("no New-chat button")

    with pytest.raises(ScriptError) as err:
        asyncio.run(run_block('vars.a = 1;\nbench.log("x");\n\nawait bench.newSession();', {}, {"newSession": no_new_chat}))
    assert err.value.line == 4 and "no New-chat button" in err.value.message


@pytest.mark.usefixtures("chromium")
def test_a_selector_that_is_not_css_stops_the_run_at_once_naming_it(write_config, tmp_path):
    config = write_config([{"id": "bad", "benchmark": str(DEMO_BENCH),
                            "agent": {"driver": "demo", "selectors": {"done": "[data-done="}}}])
    done = mmb("run", "-c", str(config))
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "selectors.done '[data-done=' is not a valid CSS selector" in out, out
    assert "attempt 2" not in out  # a wrong profile is not retried like a sick chat
    state = json.loads((tmp_path / "results" / "bad" / "state.json").read_text())
    assert state["turn"] == 0 and state["status"] != "finished"
