"""Where a run's grades come from: tool version and commit, the benchmark's files, models and hosts,
prompts, driver profile and browser. Recorded in state.json (`provenance`) at a run's start and on
every resume that differs, and shown in every report entry. Hosts only: never a key, path or query.

A resume over a changed benchmark is refused unless the user accepts it, since the run's checks
and facts would no longer be the ones it started with.
"""

from __future__ import annotations

import hashlib
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse

from persona.benchmark.loader import MANIFEST, Benchmark
from persona.config import JudgeConfig, PersonaConfig
from persona.engine.judge import rubric, sha256_text
from persona.engine.scenario import system_prompt
from persona.errors import RunError
from persona.state import Provenance, RunState

PACKAGE = "marathonmembench"
SOURCE_ROOT = Path(__file__).resolve().parents[2]


def endpoint_host(url: str | None) -> str | None:
    """The host (and port) of an endpoint; never its user, password, path or query, where keys may hide."""
    if not url:
        return None
    parsed = urlparse(url)
    if not parsed.hostname:
        return None
    return f"{parsed.hostname}:{parsed.port}" if parsed.port else parsed.hostname


@cache
def tool_version() -> str:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown"


@cache
def git_commit(root: Path = SOURCE_ROOT) -> str | None:
    """The checkout's commit, "+dirty" with uncommitted changes to tracked files; None outside a checkout."""
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def benchmark_files(bench: Benchmark) -> dict[str, str]:
    """sha256 of every file the benchmark is read from."""
    m = bench.manifest
    names = dict.fromkeys([MANIFEST, m.instructions, m.profile, *m.fact_files, *m.chapters])
    return {name: hashlib.sha256((bench.root / name).read_bytes()).hexdigest() for name in names
            if (bench.root / name).is_file()}


def files_digest(files: dict[str, str]) -> str:
    return sha256_text("".join(f"{name}\0{digest}\n" for name, digest in sorted(files.items())))


def make_provenance(bench: Benchmark, persona: PersonaConfig, judge: JudgeConfig | None, driver: str,
                    profile_json: str | None) -> Provenance:
    files = benchmark_files(bench)
    with_model = judge is not None and judge.kind == "openai"
    return Provenance(
        tool_version=tool_version(), git_commit=git_commit(), benchmark_files=files, benchmark_sha256=files_digest(files),
        persona_model=persona.label, persona_host=endpoint_host(persona.base_url) if persona.kind == "openai" else None,
        judge=judge.label if judge else "persona", judge_host=endpoint_host(judge.base_url) if with_model else None,
        system_prompt_sha256=sha256_text(system_prompt(bench, judged=judge is not None)),
        rubric_sha256=sha256_text(rubric()) if with_model else None, driver=driver,
        profile_sha256=sha256_text(profile_json) if profile_json is not None else None)


def changed_files(before: Provenance, now: Provenance) -> list[str]:
    old, new = before.benchmark_files, now.benchmark_files
    return sorted(f"{name} ({'added' if name not in old else 'removed' if name not in new else 'changed'})"
                  for name in old.keys() | new.keys() if old.get(name) != new.get(name))


def check_benchmark(state: RunState, now: Provenance, accept: bool = False) -> None:
    """Before a resume: a benchmark whose files changed since the run started stops it, unless accepted."""
    last = state.provenance[-1] if state.provenance else None
    if last is None or not state.messages or last.benchmark_sha256 == now.benchmark_sha256:
        return
    changed = ", ".join(changed_files(last, now))
    if not accept:
        raise RunError(f"the benchmark changed since this run started ({changed}); undo the change, delete the "
                       "run's folder to start over, or resume anyway with --accept-benchmark-change")
    now.accepted_change = True
    state.log.append(f"turn {state.turn}: resumed over a changed benchmark ({changed}), accepted")


def record(state: RunState, now: Provenance) -> None:
    """Add `now` to the state's provenance when anything differs from the last record."""
    last = state.provenance[-1] if state.provenance else None
    if last is now:  # recorded already at this start: filled in since (the browser)
        return
    if last is None or last.differences(now) or now.accepted_change:
        state.provenance.append(now)
