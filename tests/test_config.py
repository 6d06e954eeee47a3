"""config.jsonc: comments allowed, and every mistake reported at its line before anything starts."""

from __future__ import annotations

import pytest

from persona.config import load_config
from persona.engine.runner import plan_runs
from persona.errors import InputError
from tests.conftest import DEMO_BENCH, REPO

GOOD = """// a comment
{
  "persona": {"kind": "scripted"},   // trailing comment
  "runs": [
    {"id": "a", "benchmark": "DEMO_BENCH", "agent": {"driver": "demo"}},
  ],
}
""".replace("DEMO_BENCH", str(DEMO_BENCH))


def config_errors(tmp_path, text: str) -> list[str]:
    path = tmp_path / "config.jsonc"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        plan_runs(load_config(path))
    return [f"{p.line}: {p.message}" for p in err.value.problems]


def test_the_shipped_config_is_valid():
    config = load_config(REPO / "config.jsonc")
    plans = plan_runs(config)
    assert [p.run.id for p in plans] == ["demo"] and plans[0].profile.name == "demo"


def test_jsonc_with_comments_and_trailing_commas(tmp_path):
    path = tmp_path / "c.jsonc"
    path.write_text(GOOD)
    assert load_config(path).runs[0].id == "a"


@pytest.mark.parametrize("old, new, expected", [
    ('"runs": [', '"runs": [[', "syntax error"),
    ('{"kind": "scripted"}', '{"kind": "robot"}', "3: persona.kind: Input should be 'scripted' or 'openai'"),
    ('"id": "a"', '"id": "a b"', "5: runs.0.id: String should match pattern"),
    ('"driver": "demo"', '"driver": "nosuch"', "5: run a: unknown driver 'nosuch'"),
    ('"persona": {"kind": "scripted"},', '"persona": {"kind": "scripted"}, "paralel": 3,', "3: paralel: unknown field"),
    (f'"benchmark": "{DEMO_BENCH}"', '"benchmark": "/nonexistent/bench"', "benchmark folder not found"),
    ('"driver": "demo"}', '"driver": "generic", "url": "http://127.0.0.1:1"}', "selectors.input: Field required"),
    ('"persona": {"kind": "scripted"}', '"persona": {"kind": "openai", "base_url": "https://api.example.com/v1", '
     '"api_key_env": "MMB_TEST_UNSET_KEY"}', "set the environment variable MMB_TEST_UNSET_KEY"),
])
def test_config_mistakes_name_their_line(tmp_path, old, new, expected):
    assert old in GOOD
    found = config_errors(tmp_path, GOOD.replace(old, new))
    assert any(expected in p for p in found), found


def test_duplicate_run_ids(tmp_path):
    text = GOOD.replace('"agent": {"driver": "demo"}},', '"agent": {"driver": "demo"}},\n    {"id": "a", "benchmark": "x"},')
    assert any("6: run id 'a' repeats run 0" in p for p in config_errors(tmp_path, text))


def test_unknown_run_selected(tmp_path):
    path = tmp_path / "c.jsonc"
    path.write_text(GOOD)
    with pytest.raises(InputError, match="no run with id 'zz'"):
        plan_runs(load_config(path), ["zz"])


def test_missing_config_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_config(tmp_path / "none.jsonc")
