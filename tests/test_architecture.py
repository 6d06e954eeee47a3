"""Import direction: the layers of persona/ (see persona/__init__.py) and drivers/ never import upward.

Every import statement counts, the ones inside functions too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Root modules of persona/ that everything may use; they import only each other.
ROOT_UTILITIES = {"errors", "textfile", "jsonc", "tokens", "secrets", "crashpoints"}

# layer -> the persona layers it may import (besides itself and the root utilities)
ALLOWED = {
    "utilities": set(),
    "benchmark": set(),
    "state": {"benchmark"},
    "config": set(),
    "report": {"benchmark", "state", "config"},
    "engine": {"benchmark", "state", "config", "report"},
    "cli": {"benchmark", "state", "config", "report", "engine"},
}
MAY_IMPORT_DRIVERS = {"config", "engine", "cli"}  # drivers.files (atomic writes) is for everyone


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "utilities"  # persona/__init__.py
    if len(parts) == 2 and parts[1] in ROOT_UTILITIES | {"__init__", "__main__"}:
        return "cli" if parts[1] == "__main__" else "utilities"
    if len(parts) == 2 and parts[1] in {"state", "config"}:
        return parts[1]
    if len(parts) == 2 and parts[1] == "state_parts":  # the state's files that only grow
        return "state"
    assert parts[1] in ALLOWED, f"{module}: a module outside every layer (add it to tests/test_architecture.py)"
    return parts[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports_of(path: Path, module: str) -> list[tuple[int, str]]:
    """Absolute names of every module imported by the file, relative imports resolved."""
    package = module.split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found.append((node.lineno, base))
    return found


def python_files(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def test_drivers_never_import_the_engine():
    wrong = [f"{p.relative_to(REPO)}:{line} imports {name}"
             for p in python_files("drivers") for line, name in imports_of(p, module_name(p))
             if name == "persona" or name.startswith("persona.")]
    assert wrong == []


def outside_imports(folder: str, own: str) -> list[str]:
    """Imports of the project's other packages (persona, drivers, tests...) by the files of `folder`."""
    project = {p.name for p in REPO.iterdir() if (p / "__init__.py").is_file()} - {own}
    return [f"{p.relative_to(REPO)}:{line} imports {name}"
            for p in python_files(folder) for line, name in imports_of(p, module_name(p))
            if name.split(".")[0] in project]


def test_the_demo_agent_imports_nothing_of_the_tool():
    """DemoMind is the agent under test: it shares no code with what tests it, as a real agent would not."""
    assert outside_imports("demo_agent", "demo_agent") == []


def test_the_outside_check_sees_an_import(tmp_path, monkeypatch):
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "__init__.py").write_text("")
    (tmp_path / "agent" / "x.py").write_text("from drivers.files import atomic_write\n")
    (tmp_path / "drivers").mkdir()
    (tmp_path / "drivers" / "__init__.py").write_text("")
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    assert outside_imports("agent", "agent") == ["agent/x.py:1 imports drivers.files"]


def upward_imports(path: Path, module: str) -> list[str]:
    """The imports of `path` (the module named `module`) that break the layering."""
    layer = layer_of(module)
    allowed = ALLOWED[layer] | {layer, "utilities"}
    wrong = []
    for line, name in imports_of(path, module):
        if name.startswith("persona."):
            target = layer_of(name)
            if target not in allowed:
                wrong.append(f"{path.name}:{line}: {layer} imports {name} ({target})")
        elif name.startswith("drivers") and name != "drivers.files" and layer not in MAY_IMPORT_DRIVERS:
            wrong.append(f"{path.name}:{line}: {layer} imports {name}")
    return wrong


@pytest.mark.parametrize("path", python_files("persona"), ids=lambda p: str(p.relative_to(REPO)))
def test_persona_imports_run_one_way(path: Path):
    assert upward_imports(path, module_name(path)) == []


def test_the_checker_sees_a_wrong_import(tmp_path):
    """A test that cannot fail is no test: a lazy upward import in a report module is caught."""
    bad = tmp_path / "upward.py"
    bad.write_text("def f():\n    from persona.engine.runner import Runner\n", encoding="utf-8")
    assert upward_imports(bad, "persona.report.upward") == ["upward.py:2: report imports persona.engine.runner (engine)"]


# The web server of `mmb view` lives in its own package of the report layer, and nowhere else: the other
# commands never load it. It reads: atomic writes are not its to import (tests/test_view.py checks that a
# served folder is left as it was, no lock taken).
WEB_PACKAGES = ("starlette", "uvicorn")
LIVE = "persona.report.live"
WRITERS = {"drivers.files"}


def web_imports(path: Path, module: str) -> list[str]:
    wrong = []
    for line, name in imports_of(path, module):
        if name.split(".")[0] in WEB_PACKAGES and not module.startswith(LIVE):
            wrong.append(f"{path.name}:{line}: {module} imports {name} (only {LIVE} serves pages)")
        if module.startswith(LIVE) and name in WRITERS:
            wrong.append(f"{path.name}:{line}: {module} imports {name} (the viewer only reads)")
    return wrong


@pytest.mark.parametrize("path", python_files("persona"), ids=lambda p: str(p.relative_to(REPO)))
def test_only_the_live_viewer_serves_pages_and_it_only_reads(path: Path):
    assert web_imports(path, module_name(path)) == []


def test_the_web_checker_sees_a_wrong_import(tmp_path):
    bad = tmp_path / "leak.py"
    bad.write_text("import uvicorn\nfrom drivers.files import atomic_write\n", encoding="utf-8")
    assert web_imports(bad, "persona.report.html") == ["leak.py:1: persona.report.html imports uvicorn (only persona.report.live serves pages)"]
    assert web_imports(bad, "persona.report.live.app") == ["leak.py:2: persona.report.live.app imports drivers.files (the viewer only reads)"]


def persona_imports(paths: list[Path], root: Path = REPO) -> dict[str, set[str]]:
    """module -> the modules of persona/ it imports (lazy imports too), names resolved to their module."""
    modules = {".".join(p.relative_to(root).with_suffix("").parts[:-1] if p.name == "__init__.py"
                        else p.relative_to(root).with_suffix("").parts): p for p in paths}
    graph = {}
    for module, path in modules.items():
        targets = set()
        for _, name in imports_of(path, module):
            while name and name not in modules:  # `from persona.engine.llm import X` names a module's member
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle of imports, as the modules on it in import order (one per strongly connected group)."""
    cycles, seen = [], set()
    for start in sorted(graph):
        if start in seen:
            continue
        path = _circle_through(graph, start)
        if path:
            cycles.append(path)
            seen.update(path)
    return cycles


def _circle_through(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """The shortest import path from `start` back to itself, or None."""
    frontier, parent = [start], {start: None}
    while frontier:
        step = []
        for module in frontier:
            for target in sorted(graph.get(module, ())):
                if target == start:
                    path = [module]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    return list(reversed(path))
                if target not in parent:
                    parent[target] = module
                    step.append(target)
        frontier = step
    return None


def test_persona_has_no_import_circles():
    """A circle (judge -> llm -> tools -> judge was one) forces lazy imports and makes a module's meaning
    depend on import order; every layer, the engine's modules among themselves too, imports one way."""
    cycles = import_cycles(persona_imports(python_files("persona")))
    assert cycles == [], " ; ".join(" -> ".join([*c, c[0]]) for c in cycles)


def test_the_circle_checker_sees_a_lazy_circle(tmp_path):
    package = tmp_path / "persona" / "engine"
    package.mkdir(parents=True)
    (package / "a.py").write_text("from persona.engine.b import B\n", encoding="utf-8")
    (package / "b.py").write_text("from persona.engine.c import C\n", encoding="utf-8")
    (package / "c.py").write_text("def f():\n    from persona.engine.a import A\n", encoding="utf-8")
    (package / "d.py").write_text("from persona.engine.a import A\n", encoding="utf-8")
    graph = persona_imports(sorted(package.glob("*.py")), root=tmp_path)
    assert import_cycles(graph) == [["persona.engine.a", "persona.engine.b", "persona.engine.c"]]
