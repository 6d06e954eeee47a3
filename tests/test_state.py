"""State files: atomic saves, a transcript trimmed to what the state knows, one process per run."""

from __future__ import annotations

import os

import pytest

from persona.errors import RunError
from persona.state import Exchange, RunState, RunStore


def state() -> RunState:
    return RunState(run_id="r", benchmark="b", driver="d", persona_model="m")


def test_save_and_load_round_trip(tmp_path):
    store = RunStore(tmp_path / "r")
    s = state()
    s.turn, s.vars = 3, {"x": [1, 2]}
    store.save(s)
    assert store.load() == s.model_copy(update={"updated_at": store.load().updated_at})
    assert not [p for p in os.listdir(tmp_path / "r") if p.endswith(".tmp")]


def test_transcript_lines_after_the_last_save_are_dropped(tmp_path):
    store = RunStore(tmp_path / "r")
    s = state()
    store.append_exchange(s, Exchange(turn=1, session=0, phase=0, sent="a", reply=["b"]))
    store.save(s)
    store.append_exchange(s, Exchange(turn=2, session=0, phase=0, sent="c", reply=["d"]))  # crash before save
    with open(store.transcript_path, "a") as f:
        f.write('{"turn": 3, "sess')  # a torn line
    loaded = store.load()
    assert loaded.transcript_len == 1 and [e.sent for e in store.transcript()] == ["a"]


def test_a_corrupt_state_is_reported_not_overwritten(tmp_path):
    store = RunStore(tmp_path / "r")
    store.folder.mkdir(parents=True)
    store.path.write_text("{not json")
    with pytest.raises(RunError, match="unreadable"):
        store.load()
    assert store.path.read_text() == "{not json"


def test_two_processes_cannot_share_a_run(tmp_path):
    a, b = RunStore(tmp_path / "r"), RunStore(tmp_path / "r")
    a.lock()
    with pytest.raises(RunError, match="in use"):
        b.lock()
    a.unlock()
    b.lock()
    b.unlock()
