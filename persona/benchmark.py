"""A benchmark folder: benchmark.json, instructions, profile, fact files and chapters.

`load_benchmark` validates everything it reads and raises one InputError listing every problem
with its file and line, so a broken benchmark is fixed in one pass and never half-played.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import InputError, Problem
from .facts import FactFile, fact_file_name, load_fact_file
from .jsonc import load_jsonc, pydantic_problems
from .phases import Check, Phase, split_chapter
from .scenario_js import compile_check
from .textfile import read_user_text

MANIFEST = "benchmark.json"


class Manifest(BaseModel):
    """benchmark.json. Its JSON Schema is generated from this model (`mmb schema`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, title="MarathonMemBench benchmark")

    schema_ref: str | None = Field(None, alias="$schema", description="Path or URL of this JSON Schema, for editors")
    title: str = Field("", description="Shown in reports")
    language: str = Field("en", description="Language the persona writes in: en, ru, ...")
    description: str = Field("", description="What the benchmark measures, for people choosing one")
    chapters: list[str] = Field(..., min_length=1, description="Chapter files in play order; each '## ' section is a phase")
    fact_files: list[str] = Field([], description="Fact files besides the profile, e.g. family.md")
    instructions: str = Field("instructions.md", description="Appended to the persona's system prompt under 'Your scenario'")
    profile: str = Field("profile.md", description="Fact file always in the persona's context")


class Benchmark(BaseModel):
    root: Path
    manifest: Manifest
    instructions: str
    profile: FactFile
    fact_files: dict[str, FactFile]  # by name, the profile included under its own name
    phases: list[Phase]

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def title(self) -> str:
        return self.manifest.title or self.root.name

    @property
    def checks(self) -> list[Check]:
        return [c for p in self.phases for c in p.checks]

    def resolve_fact_file(self, ref: str) -> str | None:
        """The canonical name of a fact file a phase or tool refers to, case-insensitively."""
        wanted = fact_file_name(ref).lower()
        return next((n for n in self.fact_files if n.lower() == wanted), None)


def manifest_schema() -> dict:
    return Manifest.model_json_schema(by_alias=True)


def _rel(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _load_manifest(root: Path) -> Manifest:
    path = root / MANIFEST
    if not root.is_dir():
        raise InputError.single(root, None, "benchmark folder not found")
    data, lines = load_jsonc(path)
    if not isinstance(data, dict):
        raise InputError.single(path, 1, "benchmark.json must hold an object")
    try:
        return Manifest.model_validate(data)
    except ValidationError as e:
        raise InputError(pydantic_problems(e, path, lines)) from None


def load_benchmark(root: Path) -> Benchmark:
    root = root.resolve()
    manifest = _load_manifest(root)
    show = lambda name: _rel(root, root / name)  # noqa: E731 - paths as the user typed them
    problems: list[Problem] = []

    instructions = ""
    if (root / manifest.instructions).is_file():
        try:
            instructions = read_user_text(root / manifest.instructions, show(manifest.instructions)).strip()
        except InputError as e:
            problems += e.problems
    else:
        problems.append(Problem(show(MANIFEST), None, f"instructions file {manifest.instructions} not found"))

    profile, profile_problems = load_fact_file(root / manifest.profile, show(manifest.profile))
    problems += profile_problems
    fact_files = {profile.name: profile}
    for name in manifest.fact_files:
        ff, ff_problems = load_fact_file(root / name, show(name))
        problems += ff_problems
        if ff.name in fact_files:
            problems.append(Problem(show(MANIFEST), None, f"fact file {name} is listed twice"))
        fact_files[ff.name] = ff

    phases: list[Phase] = []
    for chapter in manifest.chapters:
        path = root / chapter
        if not path.is_file():
            problems.append(Problem(show(MANIFEST), None, f"chapter {chapter} not found"))
            continue
        try:
            text = read_user_text(path, show(chapter))
        except InputError as e:
            problems += e.problems
            continue
        chapter_phases, chapter_problems = split_chapter(text, show(chapter), len(phases))
        phases += chapter_phases
        problems += chapter_problems

    bench = Benchmark(root=root, manifest=manifest, instructions=instructions, profile=profile,
                      fact_files=fact_files, phases=phases)
    problems += _cross_checks(bench, show)
    if problems:
        raise InputError(problems)
    return bench


def _cross_checks(bench: Benchmark, show) -> list[Problem]:
    """Rules that span files: references, unique check ids, JS that compiles, unlisted files."""
    problems: list[Problem] = []
    seen_checks: dict[str, str] = {}
    for phase in bench.phases:
        where = phase.chapter
        for ref in phase.fact_refs:
            if bench.resolve_fact_file(ref) is None:
                problems.append(Problem(where, phase.line, f"phase '{phase.title}' refers to fact file '{ref}', "
                                        f"which is not listed in benchmark.json fact_files"))
        for edit in phase.edits:
            name = bench.resolve_fact_file(edit.file)
            if name is None:
                problems.append(Problem(where, edit.line, f"unknown fact file '{edit.file}'"))
            elif bench.fact_files[name].get(edit.fact_id) is None:
                problems.append(Problem(where, edit.line, f"fact {edit.fact_id} does not exist in {name}.md"))
        for add in phase.additions:
            name = bench.resolve_fact_file(add.file)
            if name is None:
                problems.append(Problem(where, add.line, f"unknown fact file '{add.file}'"))
            elif bench.fact_files[name].section(add.section) is None:
                problems.append(Problem(where, add.line, f"{name}.md has no section {add.section}"))
        for check in phase.checks:
            if check.id in seen_checks:
                problems.append(Problem(where, check.line, f"check id {check.id} repeats {seen_checks[check.id]}"))
            seen_checks[check.id] = f"{where}:{check.line}"
        if phase.script is not None:
            err = compile_check(phase.script)
            if err:
                line = phase.script_line + (err.line or 1) - 1
                problems.append(Problem(where, line, f"JS block does not compile: {err.message}"))
            problems += _require_all_refs(bench, phase)
    listed = {bench.manifest.instructions, bench.manifest.profile, *bench.manifest.fact_files, *bench.manifest.chapters}
    for md in sorted(bench.root.glob("*.md")):
        if md.name not in listed:
            problems.append(Problem(show(md.name), None, "not listed in benchmark.json (a chapter, fact file, profile or instructions?)"))
    return problems


def _require_all_refs(bench: Benchmark, phase: Phase) -> list[Problem]:
    """`vars.require_all_facts = "x"` must name a real fact file (read statically from the source)."""
    problems = []
    for m in re.finditer(r"require_all_facts\s*=\s*(\[[^\]]*\]|\"[^\"]*\"|'[^']*')", phase.script or ""):
        try:
            value = json.loads(m.group(1).replace("'", '"'))
        except ValueError:
            continue
        for ref in value if isinstance(value, list) else [value]:
            if not isinstance(ref, str) or bench.resolve_fact_file(ref) is None:
                line = phase.script_line + phase.script[: m.start()].count("\n")
                problems.append(Problem(phase.chapter, line, f"require_all_facts names unknown fact file {ref!r}"))
    return problems


def validate(root: Path) -> list[Problem]:
    try:
        load_benchmark(root)
    except InputError as e:
        return e.problems
    return []
