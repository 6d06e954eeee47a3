"""The parts of a run's state that only grow, each in a file of its own beside state.json.

Evaluations, the run log, the agent's notices, the judge's notes, the persona's compactions, and the
live fact files (each fact that changes: told, edited, added) would make state.json grow with the
run and cost more to rewrite at every save. Instead a save appends what is new to their files, so
it costs the same at the 10th graded check as at the 2,000th, with 20 facts or 20,000.

In state.json each of these fields holds a PartRef in place of its content: the file, and how many
lines of it this state knows. Lines past that (a torn last line among them) belong to a save a kill
interrupted: readers leave them, a restart drops them, as for transcript.jsonl. A file that is not
there, or holds fewer complete lines than counted, is a state that cannot be read whole: an error,
never a shorter list. A list that changed otherwise than by growing (and fact files replaced whole)
is written whole to a new generation of its file, which state.json names; the old generation is
removed once state.json no longer does.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError, field_validator

from drivers.files import atomic_write
from persona.benchmark.facts import Fact, FactChanges, FactFile

PREFIX = "state."
FACTS = "facts"


class PartRef(BaseModel):
    """Where one part of the state is, and how much of it the state.json naming it knows: in state.json
    it stands where the part's content would (`"evaluations": {"file": ..., "lines": 12}`)."""

    file: str  # beside state.json, e.g. "state.evaluations.jsonl"
    lines: int = 0  # lines of `file` that belong to this state
    generation: int = 0
    base: str | None = None  # facts: the live copies as they were when this generation began ("state.facts.json")

    @field_validator("file", "base")
    @classmethod
    def _beside_state(cls, name: str | None) -> str | None:
        """A part is a file beside state.json, never a path (a copied state.json must not name files elsewhere:
        a restart trims the files it names)."""
        if name is not None and (not is_part_file(name) or "/" in name or "\\" in name):
            raise ValueError(f"{name!r} is not the name of a part file (state.<part>.jsonl beside state.json)")
        return name


def part_file(name: str, generation: int, suffix: str = ".jsonl") -> str:
    return f"{PREFIX}{name}{f'.{generation}' if generation else ''}{suffix}"


def is_part_file(filename: str) -> bool:
    return filename.startswith(PREFIX) and filename.endswith((".jsonl", ".json")) and filename != "state.json"


# -- reading ----------------------------------------------------------------------------------------


def is_ref(value: Any) -> bool:
    """Whether a field's value in state.json is a part's reference, not the content itself (a list, or the
    fact files by name: those are objects, never a string)."""
    return isinstance(value, dict) and isinstance(value.get("file"), str)


class PartShort(ValueError):
    """A part holds fewer complete lines than the state counts: the state cannot be read whole."""


def first_problem(error: Exception) -> str:
    """One line for an error reading saved data: a ValidationError's first problem (where, and what; never
    the value, which may be the agent's text), with how many more there are."""
    if isinstance(error, KeyError):
        return f"no {error.args[0]!r}"
    if not isinstance(error, ValidationError):
        return str(error).splitlines()[0] if str(error) else type(error).__name__
    first = error.errors()[0]
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{'.'.join(map(str, first['loc'])) or '(top level)'}: {first['msg']}{more}"


def read_lines(path: Path, count: int) -> list[str]:
    """The first `count` complete lines of `path` (what follows, a torn last line too, is not this state's);
    PartShort when it has fewer, FileNotFoundError when it is not there."""
    data = path.read_bytes()
    complete = data.count(b"\n")
    if complete < count:
        raise PartShort(f"{path}: {complete} complete line(s), state.json counts {count}")
    if count == 0:
        return []
    return [line.decode("utf-8") for line in data.split(b"\n", count)[:count]]


def trim_lines(path: Path, count: int) -> None:
    """Cut `path` after its `count`-th line: lines appended by a save that never completed (cut off in
    place, which works on a full disk too). PartShort when it has fewer (its reader checked it has not)."""
    if not path.exists():
        return
    data = path.read_bytes()
    end = 0
    for _ in range(count):
        if (nl := data.find(b"\n", end)) < 0:
            raise PartShort(f"{path}: fewer than the {count} lines state.json counts")
        end = nl + 1
    if len(data) > end:
        os.truncate(path, end)


def read_list(folder: Path, ref: PartRef, parse: Callable[[str], Any]) -> list[Any]:
    """The items of a list part; ValueError naming the file and line of one that does not parse."""
    items = []
    for number, line in enumerate(read_lines(folder / ref.file, ref.lines), 1):
        try:
            items.append(parse(line))
        except ValueError as e:
            raise ValueError(f"{folder / ref.file}:{number}: {first_problem(e)}") from None
    return items


def read_facts(folder: Path, ref: PartRef) -> dict[str, FactFile]:
    """The live fact files: the generation's base, and each change after it in order. ValueError naming the
    file (and line) of what does not parse."""
    if ref.base is None:
        raise ValueError(f"the reference to {ref.file} names no base (state.facts.json)")
    try:
        files = {name: FactFile.model_validate(data) for name, data in json.loads((folder / ref.base).read_bytes()).items()}
    except (ValueError, AttributeError) as e:
        raise ValueError(f"{folder / ref.base}: {first_problem(e)}") from None
    where: dict[tuple[str, str], tuple[list[Fact], int]] = {}  # (file, fact id) -> its section's list, index
    for name, ff in files.items():
        for section in ff.sections:
            for i, fact in enumerate(section.facts):
                where[(name, fact.id)] = (section.facts, i)
    for number, line in enumerate(read_lines(folder / ref.file, ref.lines), 1):
        try:
            change = json.loads(line)
            name, fact = change["file"], Fact.model_validate(change["fact"])
            if (name, fact.id) in where:
                facts, i = where[(name, fact.id)]
                facts[i] = fact
                continue
            # an added fact: its id names its section
            section = files[name].section(int(fact.id.split(".")[0])) if name in files else None
            if section is None:
                raise ValueError(f"fact {name} {fact.id} has no section to go in")
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{folder / ref.file}:{number}: {first_problem(e)}") from None
        section.facts.append(fact)
        where[(name, fact.id)] = (section.facts, len(section.facts) - 1)
    return files


# -- writing ----------------------------------------------------------------------------------------


def append_lines(path: Path, lines: Iterable[str], durable: bool) -> int:
    """Append the lines (fsynced when `durable`); a write the disk takes only in part is undone, so the next
    append never follows half a line."""
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    if not data:
        return 0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)
    return data.count(b"\n")


class Growing(list):
    """A list of the state that only grows. Appending (append, extend, +=) leaves it as it is: a save
    writes the new items alone. Any other change (an item replaced or removed, a sort) marks it, and its
    store writes it whole anew. Slicing gives a plain list: assigned back, it is a list replaced."""

    __slots__ = ("changed",)

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__(items)
        self.changed = False


def _marking(name: str) -> Callable[..., Any]:
    original = getattr(list, name)

    def method(self: Growing, *args: Any, **kwargs: Any) -> Any:
        self.changed = True
        return original(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in ("__setitem__", "__delitem__", "__imul__", "insert", "pop", "remove", "sort", "reverse", "clear"):
    setattr(Growing, _name, _marking(_name))


class ListPart:
    """One list of the state that only grows, appended to its own file at each save.

    The store puts a Growing list in its place: while it is that list, unmarked, only the items after
    those written are new (what a save costs does not depend on how many there are). A list replaced,
    or marked, is written whole to a new generation. Items are records: replaced, never edited in place."""

    def __init__(self, name: str, dump: Callable[[Any], str]):
        self.name = name
        self.dump = dump
        self._list: Growing | None = None
        self._count = 0  # its items written

    def seen(self, holder: Any) -> None:
        """The list `holder` (a state) has now is what is saved: watched from here on."""
        self._list = Growing(getattr(holder, self.name))
        self._count = len(self._list)
        setattr(holder, self.name, self._list)

    def save(self, folder: Path, holder: Any, ref: PartRef | None, durable: bool) -> tuple[PartRef, str | None]:
        """Write what is new of the list `holder` (a state) has (an empty list too: a file, so that state.json
        always names each part); the part's reference for state.json, and a file that is no longer needed."""
        items = getattr(holder, self.name)
        if ref is not None and items is self._list and not items.changed and len(items) >= self._count:
            added = append_lines(folder / ref.file, (self.dump(x) for x in items[self._count:]), durable)
            self._count = len(items)
            return ref.model_copy(update={"lines": ref.lines + added}), None
        generation = ref.generation + 1 if ref is not None else 0
        name = part_file(self.name, generation)
        atomic_write(folder / name, "".join(self.dump(x) + "\n" for x in items), durable=durable)
        self.seen(holder)
        stale = ref.file if ref is not None and ref.file != name else None
        return PartRef(file=name, lines=len(items), generation=generation), stale


class FactsPart:
    """The live fact files: written whole once per generation, then each changed fact appended.

    The facts tell a FactChanges of their own when they change (persona/benchmark/facts.py), so a save
    looks at the facts that changed, never at all of them."""

    def __init__(self) -> None:
        self._files: dict[str, FactFile] | None = None
        self._changes: FactChanges | None = None

    def seen(self, files: dict[str, FactFile], changes: FactChanges) -> None:
        self._files, self._changes = dict(files), changes

    def _intact(self, files: dict[str, FactFile], changes: FactChanges | None) -> bool:
        return (self._files is not None and changes is not None and changes is self._changes
                and files.keys() == self._files.keys() and all(files[n] is ff for n, ff in self._files.items()))

    def save(self, folder: Path, files: dict[str, FactFile], changes: FactChanges | None, ref: PartRef | None,
             durable: bool) -> tuple[PartRef, FactChanges, list[str]]:
        """What changed appended (or everything, as a new generation); the reference, the tracker to keep,
        and files no longer needed."""
        if ref is not None and self._intact(files, changes):
            assert changes is not None
            lines = [json.dumps({"file": name, "fact": fact.model_dump(mode="json")}, ensure_ascii=False)
                     for name, fact in changes.take()]
            added = append_lines(folder / ref.file, lines, durable)
            return ref.model_copy(update={"lines": ref.lines + added}), changes, []
        generation = ref.generation + 1 if ref is not None else 0
        base, journal = part_file(FACTS, generation, ".json"), part_file(FACTS, generation)
        data = {name: ff.model_dump(mode="json") for name, ff in files.items()}
        atomic_write(folder / base, json.dumps(data, ensure_ascii=False), durable=durable)
        atomic_write(folder / journal, "", durable=durable)
        changes = FactChanges()
        for ff in files.values():
            ff.track(changes)
        self.seen(files, changes)
        stale = [f for f in (ref.file, ref.base) if f and f not in (base, journal)] if ref is not None else []
        return PartRef(file=journal, lines=0, generation=generation, base=base), changes, stale
