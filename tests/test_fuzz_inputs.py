"""Fuzzing the files a user writes: config.jsonc and a benchmark folder, mutated by Hypothesis from
valid ones (any value anywhere replaced by any JSON value, keys dropped or added, lone surrogates,
NUL, NaN, huge numbers, deep nesting, broken Markdown lines). Loading and planning either work or
raise InputError, whose problems name a file; never any other exception.

The default profile is deterministic and small (it runs in the normal suite); for a longer hunt:
HYPOTHESIS_PROFILE=hunt python -m pytest tests/test_fuzz_inputs.py
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from persona.benchmark.lint import lint
from persona.benchmark.loader import load_benchmark
from persona.config import load_config
from persona.engine.runner import plan_runs
from persona.errors import InputError

settings.register_profile("default", max_examples=150, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("hunt", max_examples=5000, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Every character, lone surrogates and NUL included (json.dumps writes them as \u escapes).
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
NASTY_TEXT = st.one_of(st.sampled_from(["a" * 300, "\x00", "\ud83d", "", "..", "/", "../x", "pets.md"]), ANY_TEXT)
JSON_VALUES = st.recursive(
    st.one_of(NASTY_TEXT, st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
              st.floats(allow_nan=True, allow_infinity=True)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(NASTY_TEXT, inner, max_size=4)),
    max_leaves=12)

TINY_BENCH = {
    "benchmark.json": {"title": "Tiny", "chapters": ["chapter1.md"], "fact_files": ["pets.md"]},
    "instructions.md": "You are Tom.",
    "profile.md": "# Me\n\n## 1. About\n1.1 I am Tom, 40\n",
    "pets.md": "# Pets\n\n## 1. Cats\n1.1 My cat Pixel is 3 years old\n",
    "chapter1.md": "## Start\nTell the facts from pets.\n\n## Exam\n❓ q1 How old is my cat Pixel? Correct answer: 3\n",
}


def good_config(bench: Path) -> dict[str, Any]:
    return {
        "results_dir": "results",
        "parallel": 2,
        "persona": {"kind": "scripted", "model": "m", "temperature": 0.5, "max_steps": 100},
        "compaction": {"max_tokens": 3000, "trim_to_tokens": 1500, "encoding": "cl100k_base"},
        "browser": {"headless": True, "viewport": [800, 600], "trace": "off"},
        "runs": [{"id": "a", "benchmark": str(bench), "agent": {"driver": "oracle", "recovery": {"attempts": 2}}},
                 {"id": "b", "benchmark": str(bench), "agent": {"driver": "demo", "options": {"completion": {"quiet_ms": 50}}}}],
    }


def paths_in(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside nested dicts and lists (not the root itself)."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        found += [(*prefix, k), *paths_in(v, (*prefix, k))]
    return found


@st.composite
def mutated(draw: st.DrawFn, original: Any) -> Any:
    """`original` with each value, at random, replaced (a string by a nasty one, more often than
    not), removed, or joined by an unknown key; rarely something else altogether."""
    if draw(st.integers(0, 19)) == 0:
        return draw(JSON_VALUES)
    data = json.loads(json.dumps(original))
    for *parents, last in paths_in(data):
        parent = data
        try:
            for key in parents:
                parent = parent[key]
            action = draw(st.sampled_from(["keep"] * 6 + ["nasty", "value", "drop", "add"]))
            if action == "nasty":
                parent[last] = draw(NASTY_TEXT if isinstance(parent[last], str) else JSON_VALUES)
            elif action == "value":
                parent[last] = draw(JSON_VALUES)
            elif action == "drop" and isinstance(parent, dict):
                del parent[last]
            elif action == "add" and isinstance(parent, dict):
                parent[draw(NASTY_TEXT)] = draw(JSON_VALUES)
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation changed the shape under this path
    return data


def as_jsonc(draw: st.DrawFn, data: Any) -> str:
    """JSON text, sometimes with comments and a trailing comma, sometimes cut short or nested deep."""
    text = json.dumps(data, indent=1)
    style = draw(st.sampled_from(["plain", "plain", "comments", "cut", "deep"]))
    if style == "comments":
        text = "// a comment\n" + text.replace("\n", " /* c */\n", 2)
        text = text[: text.rfind("}")] + ",}" if text.rstrip().endswith("}") and text.count("{") > 1 else text
    elif style == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif style == "deep":
        depth = draw(st.integers(15, 400))
        text = text.replace("{", '{"deep": ' + "[" * depth + "]" * depth + ", ", 1) if text.startswith("{") else text
    return text


def write_files(folder: Path, files: dict[str, str | dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content) if isinstance(content, dict) else content, encoding="utf-8")


def only_input_errors(action) -> None:
    try:
        action()
    except InputError as e:
        assert e.problems and all(p.file and p.message for p in e.problems), e.problems
        assert len(str(e)) < 20_000, "an error message must stay readable"


@FUZZ
@given(st.data())
def test_any_config_loads_or_names_its_problem(data):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_files(root / "bench", TINY_BENCH)
        config = data.draw(mutated(good_config(root / "bench")))
        path = root / "config.jsonc"
        path.write_text(as_jsonc(data.draw, config), encoding="utf-8")
        only_input_errors(lambda: plan_runs(load_config(path)))


MARKDOWN_LINES = st.one_of(
    ANY_TEXT,
    st.sampled_from(["## ", "## Exam", "# Title", "## 1. Cats", "## x. y", "1.1 a fact", "9999999999999999999.1 big",
                     "❓ q1 How old? Correct answer: 3", "❓ q1 [absent] Asked? Correct answer: you didn't tell me",
                     "❓ q2 [nonsense] Q? Correct answer:", "❓", "✏️ pets 1.1: now 4 years old", "✏️ pets 9.9: x",
                     "➕ pets 1: a new fact", "➕ pets 0: zero", "fact pets 1.1", "```js", "```", "vars.x = 1;",
                     "await bench.newSession();", "Tell the facts from pets.", "Правильный ответ: 3", "\x00", "\ud83d"]),
)


@st.composite
def markdown(draw: st.DrawFn, original: str) -> str:
    lines = original.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines)))
        if draw(st.booleans()) and lines and at < len(lines):
            lines[at] = draw(MARKDOWN_LINES)
        else:
            lines.insert(at, draw(MARKDOWN_LINES))
    return "\n".join(lines)


@FUZZ
@given(st.data())
def test_any_benchmark_loads_or_names_its_problem(data):
    files: dict[str, str | dict] = dict(TINY_BENCH)
    target = data.draw(st.sampled_from(sorted(files)))
    if target == "benchmark.json":
        manifest = data.draw(mutated(TINY_BENCH["benchmark.json"]))
        files[target] = as_jsonc(data.draw, manifest)
    else:
        files[target] = data.draw(markdown(str(files[target])))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bench"
        folder.mkdir()
        for name, content in files.items():
            text = content if isinstance(content, str) else json.dumps(content)
            (folder / name).write_bytes(text.encode("utf-8", "surrogatepass"))  # bytes that are not UTF-8, too
        only_input_errors(lambda: lint(load_benchmark(folder)))


# What longer hunts found, kept as fixed cases.
@pytest.mark.parametrize("file, old, new, expected", [
    ("chapter1.md", "## Exam\n", "## Exam\n```js\nvars.a = 1;\n\x00\n```\n", "chapter1.md:7: JS block does not compile: a NUL character"),
    ("benchmark.json", '"pets.md"', '"' + "p" * 300 + '.md"', "benchmark.json:1: fact_files.0: Value error, path too long"),
])
def test_inputs_the_hunt_found(tmp_path, file, old, new, expected):
    files = {name: json.dumps(c) if isinstance(c, dict) else c for name, c in TINY_BENCH.items()}
    assert old in files[file]
    files[file] = files[file].replace(old, new)
    write_files(tmp_path / "bench", files)
    with pytest.raises(InputError) as err:
        load_benchmark(tmp_path / "bench")
    assert any(expected in str(p) for p in err.value.problems), err.value.problems
