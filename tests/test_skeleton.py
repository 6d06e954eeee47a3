"""`mmb new`: a skeleton that validates, uses every feature, and never overwrites anything."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from persona.benchmark.loader import load_benchmark, manifest_schema
from persona.benchmark.phases import Category
from persona.benchmark.skeleton import create_skeleton
from persona.cli.app import app
from persona.errors import InputError


@pytest.mark.parametrize("language", ["en", "ru"])
def test_the_skeleton_validates_and_uses_every_feature(tmp_path, language):
    create_skeleton("mine", tmp_path, language)
    bench = load_benchmark(tmp_path / "mine")
    assert bench.manifest.language == language and bench.manifest.chapters == ["chapter1.md", "chapter2.md"]
    assert {c.category for c in bench.checks} == set(Category)
    assert any(c.is_list for c in bench.checks)
    assert bench.plays[0].required == ["profile", "family"]
    assert sum(p.new_sessions for p in bench.plays) == 1
    assert any(p.edits for p in bench.phases) and any(p.additions for p in bench.phases)


def test_it_refers_to_the_schema_and_writes_one_where_there_is_none(tmp_path):
    files = create_skeleton("a", tmp_path)
    manifest = json.loads((tmp_path / "a" / "benchmark.json").read_text())
    assert manifest["$schema"] == "../benchmark.schema.json"
    assert tmp_path / "benchmark.schema.json" in files
    assert json.loads((tmp_path / "benchmark.schema.json").read_text()) == manifest_schema()
    (tmp_path / "benchmark.schema.json").write_text("{}")
    assert tmp_path / "benchmark.schema.json" not in create_skeleton("b", tmp_path)
    assert (tmp_path / "benchmark.schema.json").read_text() == "{}", "an existing schema is left alone"


def test_it_never_overwrites(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "chapter1.md").write_text("mine")
    with pytest.raises(InputError, match="already exists"):
        create_skeleton("taken", tmp_path)
    assert (tmp_path / "taken" / "chapter1.md").read_text() == "mine"
    assert not (tmp_path / "taken" / "benchmark.json").exists()


@pytest.mark.parametrize("name, language, message", [
    ("../up", "en", "a benchmark name is a folder name"), ("with space", "en", "a benchmark name is a folder name"),
    ("ok", "fr", "no skeleton for language 'fr'"),
])
def test_bad_names_and_languages(tmp_path, name, language, message):
    with pytest.raises(InputError, match=message):
        create_skeleton(name, tmp_path, language)
    assert list(tmp_path.iterdir()) == []


def test_the_command(tmp_path):
    runner = CliRunner()
    done = runner.invoke(app, ["new", "cli-bench", "--dir", str(tmp_path), "--language", "ru"])
    assert done.exit_code == 0, done.output
    assert "mmb run --dry --benchmark" in done.output
    assert load_benchmark(tmp_path / "cli-bench").manifest.language == "ru"
    again = runner.invoke(app, ["new", "cli-bench", "--dir", str(tmp_path)])
    assert again.exit_code == 2 and "already exists" in again.output
