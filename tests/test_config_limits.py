"""Configs a new user may well write, through the real CLI: values too long or too deep for the
machine, and values a lax reading would take (a `true` for a number, a zero step budget, a negative
size) all stop `mmb run` with `config.jsonc:LINE: ...`, exit 2, no traceback, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_faults_input import GOOD, cli, folder  # noqa: F401 - `folder` is a fixture

LONG_ID = "r" * 300


@pytest.mark.parametrize("old, new, expected", [
    ('"id": "a"', f'"id": "{LONG_ID}"', "config.jsonc:7: runs.0.id: String should have at most 64 characters"),
    ('"benchmark": "bench"', '"benchmark": "' + "b" * 5_000_000 + '"',
     "config.jsonc:7: runs.0.benchmark: Value error, path too long for the file system"),
    ('"benchmark": "bench"', '"benchmark": "be\\u0000nch"', "config.jsonc:7: runs.0.benchmark: Value error, a path cannot contain a NUL"),
    ('"parallel": 2,', '"parallel": 2, "deep": ' + "[" * 1000 + "]" * 1000 + ",",
     "config.jsonc:4: nested more than 20 levels deep"),
    ('"parallel": 2,', '"parallel": true,', "config.jsonc:4: parallel: Input should be a valid integer"),
    ('"results_dir": "results",', '"results_dir": "",', "config.jsonc:3: results_dir: String should have at least 1 character"),
    ('{"kind": "scripted"}', '{"kind": "scripted", "max_steps": 0}',
     "config.jsonc:5: persona.max_steps: Input should be greater than or equal to 1"),
    ('{"kind": "scripted"}', '{"kind": "scripted", "max_retries": -1}',
     "config.jsonc:5: persona.max_retries: Input should be greater than or equal to 0"),
    ('{"kind": "scripted"}', '{"kind": "scripted", "timeout_s": -5}', "config.jsonc:5: persona.timeout_s: Input should be greater than 0"),
    ('{"kind": "scripted"}', '{"kind": "scripted", "temperature": NaN}', "config.jsonc:5: persona.temperature: Input should be a finite number"),
    ('{"kind": "scripted"}', '{"kind": "scripted", "api_key_env": ""}', "config.jsonc:5: persona.api_key_env: String should match pattern"),
    ('"parallel": 2,', '"parallel": 2, "browser": {"viewport": [-1100, 800]},',
     "config.jsonc:4: browser.viewport.0: Input should be greater than 0"),
    ('"driver": "oracle"}', '"driver": "demo", "options": {"completion": {"timeout_s": -1}, "ready_timeout_s": true}}',
     "config.jsonc:7: run a: completion.timeout_s: Input should be greater than 0; ready_timeout_s: Input should be a valid number"),
    ('"parallel": 2,', '"parallel": 2, "compaction": {"encoding": "o300k_base"},',
     "config.jsonc:4: compaction.encoding: Value error, unknown tiktoken encoding 'o300k_base' (known: "),
])
def test_bad_values_stop_the_run_at_their_line(folder, old, new, expected):  # noqa: F811
    config = folder / "config.jsonc"
    assert old in GOOD
    config.write_text(GOOD.replace(old, new, 1))
    code, output = cli("run", "-c", str(config))
    assert code == 2 and expected in output, output[:2000]
    assert "Traceback" not in output and len(output) < 5000, output[:2000]
    assert not (folder / "results").exists()


@pytest.mark.parametrize("blocker", ["results", "results/deeper"])
def test_a_results_dir_that_is_a_file_is_named(folder, blocker):  # noqa: F811
    (folder / "results").write_text("not a folder")
    (folder / "config.jsonc").write_text(GOOD.replace('"results_dir": "results"', f'"results_dir": "{blocker}"'))
    code, output = cli("run", "-c", str(folder / "config.jsonc"))
    assert code == 2 and f"config.jsonc:3: results_dir: {folder / 'results'} is a file, not a folder" in output, output
    assert (folder / "results").read_text() == "not a folder"


def test_a_benchmark_json_nested_too_deep_names_its_line(folder: Path):  # noqa: F811
    manifest = folder / "bench" / "benchmark.json"
    manifest.write_text(manifest.read_text().replace('"language": "en",', '"language": "en", "x": ' + "{\"a\": " * 500 + "1" + "}" * 500 + ","))
    code, output = cli("run", "-c", str(folder / "config.jsonc"))
    assert code == 2 and "benchmark.json:4: nested more than 20 levels deep" in output, output
    assert "Traceback" not in output


def test_a_chat_url_needing_an_unset_variable_stops_before_anything_starts(folder, monkeypatch):  # noqa: F811
    monkeypatch.delenv("MMB_TEST_UNSET_TOKEN", raising=False)
    (folder / "config.jsonc").write_text(GOOD.replace(
        '"agent": {"driver": "oracle"}', '"agent": {"driver": "demo", "url": "http://127.0.0.1:9/#t=${MMB_TEST_UNSET_TOKEN}"}'))
    code, output = cli("run", "-c", str(folder / "config.jsonc"))
    assert code == 2 and "config.jsonc:7: run a: the chat URL needs the environment variable(s) MMB_TEST_UNSET_TOKEN" in output, output
    assert not (folder / "results").exists()
