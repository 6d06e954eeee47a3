"""State files: atomic saves, a transcript trimmed to what the state knows, one process per run, the layout's
version, and states that cannot be read whole refused with nothing changed."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from persona.benchmark.facts import Fact, FactFile, FactSection
from persona.benchmark.phases import Category
from persona.errors import RunError, StorageError
from persona.report.publish import read_run
from persona.state import (
    SAVED_APART,
    SCHEMA_VERSION,
    AgentNotice,
    Evaluation,
    Exchange,
    PersonaCompaction,
    RunState,
    RunStore,
    StateTooNew,
    StateUnreadable,
    read_state,
    run_is_live,
)
from tests.conftest import REPO


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
    with pytest.raises(RunError, match=f"^{store.path} is unreadable: not JSON .*; the run's files are left as they are"):
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


# -- what only grows, appended beside state.json ---------------------------------------------------------


def rich_state() -> RunState:
    """A state with every part: evaluations, log, notices, judge notes, compactions, live facts."""
    s = state()
    s.facts = {"pets": FactFile(name="pets", title="Pets", sections=[
        FactSection(number=1, title="Cats", facts=[Fact(id="1.1", text="Pixel is 3"), Fact(id="1.2", text="Pixel sleeps")])])}
    return s


def evaluation(n: int) -> Evaluation:
    return Evaluation(check_id=f"c{n}", category=Category.single, question=f"q{n}?", expected="3", answer="3",
                      raw_score=10, score=10, phase=0, turn=n, session=0)


def grow(store: RunStore, s: RunState, n: int) -> None:
    """One step of a run: a fact told, a check graded, a log line, a notice; saved."""
    s.turn += 1
    s.evaluations.append(evaluation(n))
    s.log.append(f"turn {s.turn}: line {n}")
    s.agent_notices.append(AgentNotice(turn=s.turn, session=0, text="compacted"))
    s.judge_notes.append(f"c{n}: asked again")
    s.persona_compactions.append(PersonaCompaction(at_message=n, tokens_before=9, tokens_after=3, dropped_messages=1, phase=0))
    if n == 1:
        s.facts["pets"].get("1.1").mark_told(s.turn)
    if n == 2:
        s.facts["pets"].add(1, "Pixel likes tuna", turn=s.turn)
    store.save(s)


def test_what_only_grows_is_appended_and_state_json_stays_small(tmp_path):
    store = RunStore(tmp_path / "r")
    s = rich_state()
    store.save(s)
    sizes = []
    for n in range(1, 30):
        grow(store, s, n)
        sizes.append(store.path.stat().st_size)
    assert max(sizes) - min(sizes) < 200, "state.json does not grow with the evaluations, log and facts"
    assert len((store.folder / "state.evaluations.jsonl").read_text().splitlines()) == 29
    assert len((store.folder / "state.facts.jsonl").read_text().splitlines()) == 2, "one line per fact that changed"
    loaded = RunStore(tmp_path / "r").load()
    assert loaded == s.model_copy(update={"updated_at": loaded.updated_at})
    assert loaded.facts["pets"].get("1.3").text == "Pixel likes tuna" and loaded.facts["pets"].get("1.1").told_turn == 1
    assert read_state(store.folder) == loaded, "readers see the whole state too"


def test_lines_a_kill_left_past_the_saved_state_are_dropped(tmp_path):
    store = RunStore(tmp_path / "r")
    s = rich_state()
    store.save(s)
    grow(store, s, 1)
    saved = read_state(store.folder)
    with open(store.folder / "state.evaluations.jsonl", "a") as f:  # appended by a save that never renamed state.json
        f.write(evaluation(2).model_dump_json() + "\n" + '{"check_id": "c3", "cat')
    with open(store.folder / "state.facts.jsonl", "a") as f:
        f.write('{"file": "pets", "fact": {"id": "1.2", "text": "Pixel sle')
    loaded = RunStore(tmp_path / "r").load()
    assert loaded == saved.model_copy(update={"updated_at": loaded.updated_at})
    assert len((store.folder / "state.evaluations.jsonl").read_text().splitlines()) == 1


def test_a_state_json_of_an_older_mmb_reads_and_its_first_save_moves_the_parts_out(tmp_path):
    store = RunStore(tmp_path / "r")
    s = rich_state()
    for n in (1, 2):
        s.evaluations.append(evaluation(n))
        s.log.append(f"line {n}")
    s.facts["pets"].get("1.1").mark_told(1)
    store.folder.mkdir(parents=True)
    store.path.write_text(s.model_dump_json(exclude={"parts"}))  # everything inline, as before
    assert read_state(store.folder) == s
    loaded = store.load()
    assert loaded == s
    grow(store, loaded, 3)
    saved = json.loads(store.path.read_text())
    assert saved["evaluations"] == {"file": "state.evaluations.jsonl", "lines": 3, "generation": 0}
    assert saved["schema_version"] == SCHEMA_VERSION and "base" in saved["facts"]
    again = RunStore(tmp_path / "r").load()
    assert [e.check_id for e in again.evaluations] == ["c1", "c2", "c3"] and again.log[:2] == ["line 1", "line 2"]


def test_a_list_changed_otherwise_than_by_growing_is_written_whole_anew(tmp_path):
    store = RunStore(tmp_path / "r")
    s = rich_state()
    store.save(s)
    for n in range(1, 4):
        grow(store, s, n)
    s.log = s.log[1:]  # shortened
    s.evaluations[0] = evaluation(99)  # replaced in place
    s.facts = {"pets": s.facts["pets"].model_copy(deep=True)}  # replaced whole
    s.facts["pets"].get("1.2").mark_told(9)
    store.save(s)
    assert json.loads(store.path.read_text())["log"]["file"] == "state.log.1.jsonl"
    assert not (store.folder / "state.log.jsonl").exists(), "the old generation is removed"
    loaded = RunStore(tmp_path / "r").load()
    assert loaded == s.model_copy(update={"updated_at": loaded.updated_at})
    assert loaded.facts["pets"].get("1.2").told_turn == 9


def test_progress_is_seen_from_the_facts_changes_alone(tmp_path):
    store = RunStore(tmp_path / "r")
    s = rich_state()
    store.save(s)
    before = s.progress_mark()
    s.facts["pets"].get("1.2").change("Pixel sleeps on the piano", 3)
    assert s.progress_mark() != before


def test_a_run_is_live_while_a_process_holds_its_lock(tmp_path):
    store = RunStore(tmp_path / "r")
    assert not run_is_live(store.folder)
    store.lock()
    assert run_is_live(store.folder)
    store.unlock()
    assert not run_is_live(store.folder)


def test_a_save_the_disk_refuses_names_the_file_and_the_space_left(tmp_path):
    store = RunStore(tmp_path / "r")
    s = rich_state()
    store.save(s)
    (store.folder / "state.evaluations.jsonl").unlink()
    (store.folder / "state.evaluations.jsonl").mkdir()  # no file can be written there
    s.evaluations.append(evaluation(1))
    before = store.path.read_bytes()
    with pytest.raises(StorageError) as err:
        store.save(s)
    message = str(err.value)
    assert message.startswith(f"cannot save the run's state to {store.folder / 'state.evaluations.jsonl'}: ")
    assert " free on " in message and message.endswith("free space and run the same command again")
    assert store.path.read_bytes() == before, "state.json is left as it was"


def test_an_append_cut_short_by_the_disk_leaves_no_torn_line(tmp_path):
    """A file size limit (RLIMIT_FSIZE) stands in for a disk that takes part of a write: the file is left as
    it was before the append, so the next one does not follow half a line."""
    path = tmp_path / "part.jsonl"
    path.write_text('"first"\n')
    child = (f"import resource, sys; from pathlib import Path; from persona.state_parts import append_lines\n"
             f"resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))\n"
             f"try:\n    append_lines(Path({str(path)!r}), ['x' * 300], durable=True)\nexcept OSError as e:\n"
             f"    print(e.errno)")
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, cwd=REPO)
    assert done.stdout.strip() == str(errno.EFBIG), done.stderr
    assert path.read_text() == '"first"\n'


def test_each_turn_s_activity_is_recorded_beside_the_reply_and_old_lines_still_load(tmp_path):
    """What the chat showed beside the answer (tool cards, thoughts, status lines) goes into the transcript
    line as data, in the order shown, repaired like the reply; a line of an older mmb, without it, loads."""
    from drivers.base import Activity, Reply
    from persona.engine.channel import AgentChannel
    from persona.state import AgentActivity

    class Chat:
        session_url = "/c/1"

    hostile = '"},"reply":["forged"],"x":{"<script>alert(1)</script>\n\x00'
    store, s = RunStore(tmp_path / "r"), state()
    channel = AgentChannel(Chat(), s, store, save=lambda: None)
    channel.record("Where do I work?", Reply(bubbles=["At Acme."], activity=[
        Activity("status", "Searching memory…", ""),
        Activity("tool", "🔧 Used tool memory_search", f"- works at Acme {hostile}"),
        Activity("thought", "Thought for 2 seconds", "The notes say Acme.")]))
    store.save(s)
    line = json.loads(store.transcript_path.read_text())
    assert line["reply"] == ["At Acme."]
    assert [(a["kind"], a["title"]) for a in line["activity"]] == [
        ("status", "Searching memory…"), ("tool", "🔧 Used tool memory_search"), ("thought", "Thought for 2 seconds")]
    assert line["activity"][1]["text"] == f"- works at Acme {hostile}".replace("\x00", "\ufffd")
    assert s.repaired_chars == 1  # the NUL, counted as a reply's are
    old = {k: v for k, v in line.items() if k != "activity"}
    with open(store.transcript_path, "a") as f:
        f.write(json.dumps({**old, "turn": 2}) + "\n")
    s.transcript_len = 2
    store.save(s)
    first, second = store.transcript()
    assert first.activity[1] == AgentActivity(kind="tool", title="🔧 Used tool memory_search", text=line["activity"][1]["text"])
    assert second.activity == [] and second.reply == ["At Acme."]


# -- the layout's version, and states that cannot be read whole ---------------------------------------------------


def folder_bytes(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def saved_run(tmp_path, steps: int = 2) -> RunStore:
    store = RunStore(tmp_path / "r")
    s = rich_state()
    store.save(s)
    for n in range(1, steps + 1):
        grow(store, s, n)
    return store


def test_state_json_names_each_part_in_its_fields_place_and_a_version_1_reader_fails_on_it(tmp_path):
    store = saved_run(tmp_path)
    raw = store.path.read_bytes()
    saved = json.loads(raw)
    assert saved["schema_version"] == SCHEMA_VERSION == 2 and "parts" not in saved
    for name in SAVED_APART:  # every part, an empty one too: a reader always finds where it is
        assert set(saved[name]) >= {"file", "lines", "generation"}
        assert (store.folder / saved[name]["file"]).is_file()
    assert saved["persona_compactions"]["lines"] == 2 and saved["facts"]["base"] == "state.facts.json"
    # An mmb of version 1 read state.json straight into its RunState, whose fields hold the content: it fails
    # on every part, where it would otherwise have read a run with no grades and no facts.
    with pytest.raises(ValidationError) as err:
        RunState.model_validate_json(raw)
    assert {e["loc"][0] for e in err.value.errors()} == SAVED_APART


def test_a_state_json_naming_its_parts_apart_in_version_1_still_reads(tmp_path):
    """The layout of the mmb between the flat saves and version 2: the parts named in `parts`, schema_version 1."""
    store = saved_run(tmp_path)
    whole = read_state(store.folder)
    old = json.loads(store.path.read_text())
    old["parts"] = {name: old.pop(name) for name in SAVED_APART}
    old["schema_version"] = 1
    store.path.write_text(json.dumps(old))
    assert read_state(store.folder) == whole
    again = RunStore(store.folder)
    loaded = again.load()
    assert loaded == whole
    grow(again, loaded, 3)
    assert json.loads(store.path.read_text())["evaluations"]["lines"] == 3, "its next save is version 2"
    assert [e.check_id for e in read_state(store.folder).evaluations] == ["c1", "c2", "c3"]


def test_a_state_of_a_newer_mmb_is_refused_with_one_line_and_nothing_changed(tmp_path):
    store = saved_run(tmp_path)
    newer = json.loads(store.path.read_text())
    newer["schema_version"] = SCHEMA_VERSION + 1
    newer["grades"] = newer.pop("evaluations")  # what a newer mmb may change: its fields need not read here
    newer["facts"] = [newer["facts"]]
    store.path.write_text(json.dumps(newer))
    with open(store.folder / "state.log.jsonl", "a") as f:  # what a restart would trim, were it read
        f.write('"a torn li')
    (store.folder / "state.log.9.jsonl").write_text("")  # and a part it does not name, which a restart would remove
    before = folder_bytes(store.folder)
    line = (f"{store.path} is schema_version {SCHEMA_VERSION + 1}, newer than this mmb knows ({SCHEMA_VERSION}): "
            "read it with a newer mmb")
    with pytest.raises(StateTooNew) as err:
        read_state(store.folder)
    assert str(err.value) == line
    with pytest.raises(RunError) as err:
        RunStore(store.folder).load()
    assert str(err.value) == line
    assert folder_bytes(store.folder) == before


def _missing(folder):
    (folder / "state.evaluations.jsonl").unlink()


def _short(folder):  # its last counted line torn: a copy cut short, not a save a kill interrupted
    path = folder / "state.evaluations.jsonl"
    path.write_bytes(path.read_bytes()[:-5])


def _bad_line(folder):
    path = folder / "state.evaluations.jsonl"
    first, second = path.read_text().splitlines()
    path.write_text(first + "\n" + second.replace('"check_id":"c2",', "") + "\n")


def _outside(folder):
    state = json.loads((folder / "state.json").read_text())
    state["log"]["file"] = "../victim.jsonl"
    (folder / "state.json").write_text(json.dumps(state, indent=1))


@pytest.mark.parametrize("breaking, why", [
    (_missing, "{folder}/state.json names state.evaluations.jsonl, which is not there: the state cannot be read whole"),
    (_short, "{folder}/state.evaluations.jsonl: 1 complete line(s), state.json counts 2: the state cannot be read whole"),
    (_bad_line, "{folder}/state.evaluations.jsonl:2: check_id: Field required"),
    (_outside, "{folder}/state.json:{line}: not a run's state (log.file: Value error, '../victim.jsonl' is not the name of "
               "a part file (state.<part>.jsonl beside state.json))"),
], ids=["part missing", "part shorter than counted", "a counted line that does not parse", "a part outside the folder"])
def test_a_state_that_cannot_be_read_whole_is_refused_naming_the_file_and_nothing_changed(tmp_path, breaking, why):
    store = saved_run(tmp_path)
    (tmp_path / "victim.jsonl").write_text("kept\n")
    breaking(store.folder)
    for name in ("transcript.jsonl", "state.agent_notices.jsonl"):  # what a restart would trim, were it read whole
        with open(store.folder / name, "a") as f:
            f.write('{"turn": 9, "sess')
    before = folder_bytes(store.folder)
    line = next((i for i, text in enumerate(store.path.read_text().splitlines(), 1) if '"file": "../' in text), None)
    expected = why.format(folder=store.folder, line=line)
    with pytest.raises(StateUnreadable) as err:
        read_state(store.folder)
    assert str(err.value) == expected
    with pytest.raises(RunError) as err:
        RunStore(store.folder).load()
    assert str(err.value) == f"{expected}; the run's files are left as they are (move its folder away to start over)"
    assert folder_bytes(store.folder) == before
    assert (tmp_path / "victim.jsonl").read_text() == "kept\n"


def test_a_transcript_shorter_than_its_state_counts_stops_a_restart_and_reports_say_so(tmp_path, caplog):
    store = saved_run(tmp_path)
    s = store.load()
    for turn in (1, 2):
        store.append_exchange(s, Exchange(turn=turn, session=0, phase=0, sent=f"m{turn}", reply=["ok"]))
    store.save(s)
    transcript = store.transcript_path.read_bytes()
    store.transcript_path.write_bytes(transcript[:transcript.index(b"\n") + 1])  # a copy that lost its last line
    before = folder_bytes(store.folder)
    with pytest.raises(RunError) as err:
        RunStore(store.folder).load()
    assert str(err.value) == (f"{store.transcript_path}: 1 complete line(s), state.json counts 2: the state cannot be "
                              "read whole; the run's files are left as they are (move its folder away to start over)")
    assert folder_bytes(store.folder) == before
    state, exchanges = read_run(store.folder)  # the reports show what there is, and say what is not
    assert [e.sent for e in exchanges] == ["m1"] and state.transcript_len == 2
    assert caplog.messages == [f"run r: {store.transcript_path}: 1 complete line(s), state.json counts 2: turns are "
                               "missing from its transcript"]
