"""A benchmark folder: benchmark.json, instructions, profile, fact files and chapters.

`load_benchmark` validates everything it reads and raises one InputError listing every problem
with its file and line, so a broken benchmark is fixed in one pass and never half-played.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from drivers.files import PathText
from persona.benchmark.dates import StoryDate
from persona.benchmark.facts import FactFile, fact_file_name, load_fact_file
from persona.benchmark.js_check import PhasePlay, play_scripts
from persona.benchmark.js_sandbox import compile_check
from persona.benchmark.phases import Check, FactAddition, Phase, split_chapter, stray_directives
from persona.errors import InputError, Problem
from persona.jsonc import JsonPath, line_of, load_jsonc, pydantic_problems
from persona.textfile import read_user_text

MANIFEST = "benchmark.json"


class Manifest(BaseModel):
    """benchmark.json. Its JSON Schema is generated from this model (`mmb schema`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, title="MarathonMemBench benchmark")

    schema_ref: str | None = Field(None, alias="$schema", description="Path or URL of this JSON Schema, for editors")
    title: str = Field("", description="Shown in reports")
    language: str = Field("en", description="Language the persona writes in: en, ru, ...")
    description: str = Field("", description="What the benchmark measures, for people choosing one")
    chapters: list[PathText] = Field(..., min_length=1, description="Chapter files in play order; each '## ' section is a phase")
    fact_files: list[PathText] = Field([], description="Fact files besides the profile, e.g. family.md")
    instructions: PathText = Field("instructions.md", description="Appended to the persona's system prompt under 'Your scenario'")
    profile: PathText = Field("profile.md", description="Fact file always in the persona's context")
    docs: list[PathText] = Field([], description="Files for people, never read by the tool (e.g. SOURCE.md: where an "
                                 "imported benchmark comes from, its licence)")


class PhaseDate(BaseModel):
    """The story's date in a phase, and whether the persona tells it to the agent as the phase starts."""

    date: StoryDate | None = None  # in effect: the phase's own `📅` line, else the last one before it
    own: bool = False  # the phase has a `📅` line of its own
    tell: bool = False  # its own date, or a new chat (which never heard the date) while one is in effect


class Benchmark(BaseModel):
    root: Path
    manifest: Manifest
    instructions: str
    profile: FactFile
    fact_files: dict[str, FactFile]  # by name, the profile included under its own name
    phases: list[Phase]
    plays: list[PhasePlay] = []  # what each phase's JS block did when played at load time
    _names: dict[str, str] | None = PrivateAttr(None)  # fact file names by lower case
    _dates: list[PhaseDate] | None = PrivateAttr(None)

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def title(self) -> str:
        return self.manifest.title or self.root.name

    @property
    def checks(self) -> list[Check]:
        return [c for p in self.phases for c in p.checks]

    def display(self, name: str) -> str:
        """A file of the benchmark as problems name it: relative to the working directory when inside it."""
        return _rel(self.root, self.root / name)

    def phase_dates(self) -> list[PhaseDate]:
        """Each phase's date in the story: a `📅` line holds until the next one. The persona tells it when
        the phase has its own, and again when the phase opens a new chat (the agent's clock is not the
        story's, and a new chat never heard it)."""
        if self._dates is None or len(self._dates) != len(self.phases) or len(self.plays) != len(self.phases):
            out, current = [], None
            for phase in self.phases:
                current = phase.date or current
                new_chat = phase.index < len(self.plays) and self.plays[phase.index].new_sessions > 0
                out.append(PhaseDate(date=current, own=phase.date is not None,
                                     tell=phase.date is not None or (current is not None and new_chat)))
            self._dates = out
        return self._dates

    def resolve_fact_file(self, ref: str) -> str | None:
        """The canonical name of a fact file a phase or tool refers to, case-insensitively."""
        if self._names is None or len(self._names) != len(self.fact_files):
            self._names = {}
            for n in self.fact_files:
                self._names.setdefault(n.lower(), n)
        return self._names.get(fact_file_name(ref).lower())

    def additions_in_play(self) -> list[tuple[Phase, FactAddition, str, str]]:
        """Each ➕ line in play order with its fact file and the id the run will give the new fact: the next
        free number of its section, as FactFile.add counts it (worked out, never a copy of the files)."""
        taken: dict[tuple[str, int], int] = {}  # (file, section) -> the highest fact number so far
        out = []
        for phase in self.phases:
            for add in sorted(phase.additions, key=lambda a: a.line):
                name = self.resolve_fact_file(add.file)
                section = self.fact_files[name].section(add.section) if name is not None else None
                if name is None or section is None:
                    continue
                key = (name, add.section)
                if key not in taken:
                    taken[key] = max((int(f.id.split(".")[1]) for f in section.facts), default=0)
                taken[key] += 1
                out.append((phase, add, name, f"{add.section}.{taken[key]}"))
        return out


def manifest_schema() -> dict:
    return Manifest.model_json_schema(by_alias=True)


def _rel(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _load_manifest(root: Path) -> tuple[Manifest, dict[JsonPath, int]]:
    path = root / MANIFEST
    try:
        found = root.is_dir()
    except OSError as e:  # a name too long, a folder we may not enter
        raise InputError.single(str(root)[:300], None, f"cannot open the benchmark folder: {e.strerror}") from None
    if not found:
        raise InputError.single(root, None, "benchmark folder not found")
    data, lines = load_jsonc(path)
    if not isinstance(data, dict):
        raise InputError.single(path, 1, "benchmark.json must hold an object")
    try:
        return Manifest.model_validate(data), lines
    except ValidationError as e:
        raise InputError(pydantic_problems(e, path, lines)) from None


def load_benchmark(root: Path) -> Benchmark:
    root = root.resolve()
    manifest, lines = _load_manifest(root)
    show = lambda name: _rel(root, root / name)  # noqa: E731 - paths as the user typed them

    def at(message: str, *path: str | int) -> Problem:
        """A problem at a value of benchmark.json, e.g. at("...", "chapters", 2)."""
        return Problem(show(MANIFEST), line_of(lines, path), message)

    problems: list[Problem] = _listing_problems(manifest, at)
    problems += [at(f"doc {doc} not found", "docs", i) for i, doc in enumerate(manifest.docs) if not (root / doc).is_file()]

    instructions = ""
    if (root / manifest.instructions).is_file():
        try:
            instructions = read_user_text(root / manifest.instructions, show(manifest.instructions)).strip()
        except InputError as e:
            problems += e.problems
    else:
        problems.append(at(f"instructions file {manifest.instructions} not found", "instructions"))

    profile, profile_problems = load_fact_file(root / manifest.profile, show(manifest.profile))
    problems += profile_problems
    fact_files = {profile.name: profile}
    for i, name in enumerate(manifest.fact_files):
        if name in manifest.fact_files[:i] or name in (manifest.profile, manifest.instructions, *manifest.chapters):
            continue  # listed in two roles: reported by _listing_problems, not parsed twice
        ff, ff_problems = load_fact_file(root / name, show(name))
        if ff.name in fact_files:
            problems.append(at(f"fact file {name} has the same name as another one: phases could not tell them apart",
                               "fact_files", i))
        problems += ff_problems
        fact_files[ff.name] = ff

    phases: list[Phase] = []
    for i, chapter in enumerate(manifest.chapters):
        path = root / chapter
        if chapter in manifest.chapters[:i]:
            continue  # reported by _listing_problems; played once
        if not path.is_file():
            problems.append(at(f"chapter {chapter} not found", "chapters", i))
            continue
        try:
            text = read_user_text(path, show(chapter))
        except InputError as e:
            problems += e.problems
            continue
        chapter_phases, chapter_problems = split_chapter(text, show(chapter), len(phases))
        phases += chapter_phases
        problems += chapter_problems

    problems += stray_directives(instructions, show(manifest.instructions), 1, "in the instructions")
    bench = Benchmark(root=root, manifest=manifest, instructions=instructions, profile=profile,
                      fact_files=fact_files, phases=phases)
    problems += _cross_checks(bench, show)
    if problems:
        raise InputError(problems)
    return bench


class _Facts:
    """Every fact of the benchmark by (file, id), and those its ➕ lines will add: each reference looked up
    once, whatever the size of the files."""

    def __init__(self, bench: Benchmark):
        self.bench = bench
        self.ids = {(name, f.id) for name, ff in bench.fact_files.items() for f in ff.all_facts()}
        self.added = {(name, fact_id) for _, _, name, fact_id in bench.additions_in_play()}

    def missing(self, where: str, line: int, file: str, fact_id: str, quote: str = "") -> list[Problem]:
        """What is wrong with a reference to fact `fact_id` of fact file `file`, if anything."""
        name = self.bench.resolve_fact_file(file)
        if name is None:
            return [Problem(where, line, f"{quote}unknown fact file '{file}'")]
        if (name, fact_id) not in self.ids:
            return [Problem(where, line, f"fact {fact_id} does not exist in {name}.md")]
        return []

    def link_problems(self, where: str, check: Check) -> list[Problem]:
        """Facts named after 🔗 must exist, in their file or as a ➕ line will add them."""
        problems = []
        for link in check.links or []:
            name = self.bench.resolve_fact_file(link.file)
            if name is not None and (name, link.fact_id) in self.added:
                continue
            problems += [Problem(p.file, p.line, f"check {check.id}: 🔗 {link.file} {link.fact_id}: {p.message}")
                         for p in self.missing(where, check.line, link.file, link.fact_id)]
        return problems


def _cross_checks(bench: Benchmark, show) -> list[Problem]:
    """Rules that span files: references, unique check ids, JS that compiles, unlisted files."""
    problems: list[Problem] = []
    facts = _Facts(bench)
    seen_checks: dict[str, str] = {}
    broken: set[int] = set()  # phases whose JS block does not compile: not played
    for phase in bench.phases:
        where = phase.chapter
        for ref in phase.fact_refs:
            if bench.resolve_fact_file(ref) is None:
                problems.append(Problem(where, phase.line, f"phase '{phase.title}' refers to fact file '{ref}', "
                                        f"which is not listed in benchmark.json fact_files"))
        for edit in phase.edits:
            problems += facts.missing(where, edit.line, edit.file, edit.fact_id)
        for mention in phase.mentions:
            problems += facts.missing(where, mention.line, mention.file, mention.fact_id,
                                      quote=f"'fact {mention.file} {mention.fact_id}': ")
        for add in phase.additions:
            name = bench.resolve_fact_file(add.file)
            if name is None:
                problems.append(Problem(where, add.line, f"unknown fact file '{add.file}'"))
            elif bench.fact_files[name].section(add.section) is None:
                problems.append(Problem(where, add.line, f"{name}.md has no section {add.section}"))
        for check in phase.checks:
            problems += facts.link_problems(where, check)
            if check.id in seen_checks:
                problems.append(Problem(where, check.line, f"check id {check.id} repeats {seen_checks[check.id]}"))
            seen_checks[check.id] = f"{where}:{check.line}"
        if phase.script is not None and (err := compile_check(phase.script)):
            line = phase.script_line + (err.line or 1) - 1
            problems.append(Problem(where, line, f"JS block does not compile: {err.message}"))
            broken.add(phase.index)
    bench.plays, play_problems = play_scripts(bench.phases, bench.resolve_fact_file, broken)
    problems += play_problems
    listed = {bench.manifest.instructions, bench.manifest.profile, *bench.manifest.fact_files, *bench.manifest.chapters,
              *bench.manifest.docs}
    for md in sorted(bench.root.glob("*.md")):
        if md.name not in listed:
            problems.append(Problem(show(md.name), None, "not listed in benchmark.json (a chapter, fact file, profile or instructions?)"))
    return problems


def _listing_problems(manifest: Manifest, at) -> list[Problem]:
    """Each file plays one role, once: a chapter listed twice would be played twice, or silently once."""
    problems = []
    roles: dict[str, str] = {}
    listed = [(manifest.instructions, "instructions", ("instructions",)), (manifest.profile, "profile", ("profile",)),
              *((f, "fact file", ("fact_files", i)) for i, f in enumerate(manifest.fact_files)),
              *((c, "chapter", ("chapters", i)) for i, c in enumerate(manifest.chapters)),
              *((d, "doc", ("docs", i)) for i, d in enumerate(manifest.docs))]
    for name, role, path in listed:
        if name in roles:
            first = roles[name]
            other = f"the {first}" if first in ("instructions", "profile") else f"a {first}"
            how = f"twice as a {role}" if first == role else f"as a {role} and as {other}"
            problems.append(at(f"{name} is listed {how}: a file plays one role, once", *path))
        roles.setdefault(name, role)
    return problems


def validate(root: Path) -> list[Problem]:
    try:
        load_benchmark(root)
    except InputError as e:
        return e.problems
    return []
