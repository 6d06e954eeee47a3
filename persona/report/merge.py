"""`mmb report --merge DIR...`: several machines' results folders (e.g. the shards of `mmb run --shard`)
into one, whose report, leaderboard and index then cover every run.

Each run folder (one holding a state.json) is copied whole (transcript, traces, screenshots) into the
target. A run already there with the same state is left as it is; the same run id with a different
state is a conflict, and nothing is copied until it is resolved. report.md entries are merged too:
every entry once, in the order they were written. Folders that hold no run are named, not copied.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from drivers.files import atomic_write
from persona.report.catalog import run_folders
from persona.report.markdown import REPORT_FILE, REPORT_HEADER
from persona.state import LOCK_FILE, RESERVE_FILE, STATE_FILE

_ENTRY = re.compile(r"^## (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC", re.MULTILINE)


class MergeConflict(ValueError):
    """The same run id with different states in two folders."""


@dataclass
class Merged:
    copied: list[str] = field(default_factory=list)  # run ids
    present: list[str] = field(default_factory=list)  # already in the target, the same
    not_runs: list[Path] = field(default_factory=list)  # folders of the sources without a state.json
    entries: int = 0  # report.md entries in the target after the merge


def _plan(sources: list[Path], target: Path) -> tuple[dict[str, Path], Merged]:
    """Which run folder to copy from where; raises MergeConflict before anything is written."""
    merged, chosen, conflicts = Merged(), {}, []
    have = {rid: (folder / STATE_FILE).read_bytes() for rid, folder in run_folders(target).items()} if target.is_dir() else {}
    for source in sources:
        runs = run_folders(source)
        merged.not_runs += sorted(p for p in source.iterdir() if p.is_dir() and p.name not in runs)
        for rid, folder in runs.items():
            state = (folder / STATE_FILE).read_bytes()
            if rid in chosen and (chosen[rid] / STATE_FILE).read_bytes() != state:
                conflicts.append(f"run {rid!r} is in both {chosen[rid].parent} and {source}, with different states")
            elif rid in have:
                if have[rid] != state:
                    conflicts.append(f"run {rid!r} of {source} differs from the one already in {target}")
                elif rid not in merged.present:
                    merged.present.append(rid)
            else:
                chosen.setdefault(rid, folder)
    if conflicts:
        raise MergeConflict("; ".join(conflicts) + ": keep one of each (move the other away) and merge again")
    return chosen, merged


def merge_results(sources: list[Path], target: Path) -> Merged:
    sources = [s for s in sources if s.resolve() != target.resolve()]  # merging into one of them: its runs stay
    chosen, merged = _plan(sources, target)
    target.mkdir(parents=True, exist_ok=True)
    for rid, folder in chosen.items():
        shutil.copytree(folder, target / rid, ignore=shutil.ignore_patterns(LOCK_FILE, RESERVE_FILE, ".state.*.tmp"),
                        copy_function=shutil.copyfile)  # new files, with this user's umask
        merged.copied.append(rid)
    merged.entries = _merge_entries([*sources, target], target / REPORT_FILE)
    return merged


def _entries(path: Path) -> list[str]:
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    starts = [m.start() for m in _ENTRY.finditer(text)]
    return [text[a:b].strip("\n") + "\n" for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def _merge_entries(folders: list[Path], target: Path) -> int:
    """Every entry of every report.md once, ordered by the time in its heading (stable for ties)."""
    entries = list(dict.fromkeys(e for folder in folders for e in _entries(folder / REPORT_FILE)))
    if not entries:
        return 0
    entries.sort(key=lambda e: _ENTRY.match(e).group(1))  # type: ignore[union-attr]
    atomic_write(target, REPORT_HEADER + "".join("\n" + e for e in entries))
    return len(entries)
