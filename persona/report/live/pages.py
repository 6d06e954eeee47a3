"""The pages of `mmb view`: the static pages' own templates, rendered from the watcher's views, and
the fragments a live page replaces when a run changes.

A page is built once per version of what it shows (a run page: that run's; the index, the
leaderboard, a comparison: the folder's), whoever asks, and cached with its fragments: the parts
of the page each partial template renders, keyed by element id. A client is sent the fragments
whose HTML differs from what it has; a transcript row is one fragment, so a long run sends only
the turns that changed.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from persona.benchmark.loader import Benchmark
from persona.report.catalog import Entry, entry, newest_first
from persona.report.compare import Comparison, Side, compare, difference_line
from persona.report.cost import PriceTable
from persona.report.export import rows_of_run
from persona.report.html import RunReport
from persona.report.leaderboard import page_context, rank
from persona.report.live.watch import RunView, Watcher
from persona.report.publish import benchmark_at
from persona.report.templating import environment
from persona.tokens import TokenCounter

log = logging.getLogger(__name__)

CACHED_PAGES = 64
NO_PROCESS = "no mmb process holds it: it stopped without saving its end; run the same command to resume it"


@dataclass(frozen=True)
class Fragment:
    id: str  # the element's id
    html: str
    parent: str | None = None  # a keyed row of this container: replaced where it is, else appended


@dataclass
class Built:
    """A page's data at one version: the full page renders from it, and so do its fragments."""

    version: Any
    template: str
    context: dict[str, Any]
    fragments: list[Fragment] = field(default_factory=list)

    def page(self, live: dict[str, str]) -> str:
        return environment().get_template(self.template).render(**self.context, live=live)


def _render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


class Benchmarks:
    """Each run's benchmark, loaded once (a load plays its JS blocks): the config's for its runs, else
    where the state says it is. A run from another machine whose benchmark is not here gets None: its
    page shows phase numbers instead of titles, as `mmb report` does."""

    def __init__(self, configured: dict[str, Path] | None = None):
        self.configured = configured or {}
        self._loaded: dict[str, Benchmark | None] = {}
        self._lock = threading.Lock()

    def of(self, run: RunView) -> Benchmark | None:
        path = self.configured.get(run.state.run_id) or Path(run.state.benchmark)
        key = str(path)
        with self._lock:
            if key not in self._loaded:
                bench = benchmark_at(key)
                if bench is None:
                    log.info("%s: benchmark %s does not load here; its page shows phase numbers", run.name, key)
                self._loaded[key] = bench
            return self._loaded[key]

    def planned(self) -> dict[str, int]:
        """Checks per benchmark folder name, of those loaded, for states too old to say."""
        with self._lock:
            return {b.root.name: len(b.checks) for b in self._loaded.values() if b is not None}


class Pages:
    def __init__(self, watcher: Watcher, benchmarks: Benchmarks, counter: TokenCounter, prices: PriceTable):
        self.watcher, self.benchmarks, self.counter, self.prices = watcher, benchmarks, counter, prices
        self._cache: OrderedDict[tuple, Built] = OrderedDict()
        self._locks: dict[tuple, threading.Lock] = {}
        self._guard = threading.Lock()

    def _built(self, key: tuple, version: Any, build: Callable[[], Built]) -> Built:
        """The page of `key` at `version`, built by the first caller; the others wait for it and share it."""
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            cached = self._cache.get(key)
            if cached is None or cached.version != version:
                cached = build()
            with self._guard:
                self._cache[key] = cached
                self._cache.move_to_end(key)
                while len(self._cache) > CACHED_PAGES:  # pages nobody asked for in a while (old comparisons)
                    old, _ = self._cache.popitem(last=False)
                    self._locks.pop(old, None)
            return cached

    # -- the index and the leaderboard --

    def entries(self, views: dict[str, RunView]) -> list[Entry]:
        planned = self.benchmarks.planned()
        out = []
        for v in views.values():
            e = entry(v.state, v.folder, planned, self.prices)
            note = NO_PROCESS if v.held is False and v.state.status == "running" else ""
            out.append(replace(e, has_html=True, note=note))  # every run has its page here, finished or not
        return out

    def index(self) -> Built:
        return self._built(("index",), self.watcher.version, self._build_index)

    def _build_index(self) -> Built:
        version = self.watcher.version
        entries = self.entries(self.watcher.views())
        runs = newest_first(entries)
        benchmarks, statuses = sorted({e.benchmark for e in entries}), sorted({e.status for e in entries})
        parts = environment().get_template("index_parts.html").make_module({})
        return Built(version, "index.html", dict(runs=runs, leaderboard="leaderboard.html", benchmarks=benchmarks,
                                                 statuses=statuses), [
            Fragment("run-count", str(len(runs))),
            Fragment("runs-body", str(parts.rows(runs))),
            Fragment("benchmark", str(parts.options(benchmarks, "every benchmark"))),
            Fragment("status", str(parts.options(statuses, "every status"))),
        ])

    def leaderboard(self) -> Built:
        return self._built(("leaderboard",), self.watcher.version, self._build_leaderboard)

    def _build_leaderboard(self) -> Built:
        version = self.watcher.version
        context = page_context(rank(self.entries(self.watcher.views())))
        parts = environment().get_template("leaderboard_parts.html").make_module(context)
        return Built(version, "leaderboard.html", context, [Fragment("board", str(parts.board_tables(context["board"])))])

    # -- a run --

    def run(self, name: str) -> Built | None:
        view = self.watcher.views().get(name)
        if view is None:
            return None
        return self._built(("run", name), view.version, lambda: self._build_run(view))

    def _build_run(self, view: RunView) -> Built:
        bench = self.benchmarks.of(view)
        r = RunReport(view.state, view.exchanges, view.folder, bench, self.counter, self.prices)
        notes = []
        if view.held is False and view.state.status == "running":
            notes.append(NO_PROCESS)
        if view.unreadable:
            notes.append(f"{view.unreadable} line(s) of transcript.jsonl are not exchanges and are not shown")
        r.note = "; ".join(notes)
        context = r.context()
        fragments = [Fragment(f"run-{part}", _render(f"run_{part}.html", **context))
                     for part in ("header", "scores", "decay", "cost", "failures", "pending")]
        fragments.append(Fragment("run-memory", _render("memory.html", **context)))
        fragments.append(Fragment("turn-count", f"({len(r.exchanges)} turns)"))
        fragments += [Fragment(f"row-{row.ex.turn}", _render("run_row.html", **context, row=row), parent="transcript")
                      for row in r.transcript_rows()]
        return Built(view.version, "run.html", context, fragments)

    # -- two runs compared --

    def compare(self, a: str, b: str) -> Built:
        views = self.watcher.views()
        version = tuple(views[n].version if n in views else None for n in (a, b))
        return self._built(("compare", a, b), version, lambda: self._build_compare(views, a, b, version))

    def _build_compare(self, views: dict[str, RunView], a: str, b: str, version: Any) -> Built:
        cmp: Comparison | None = None
        problem = ""
        if a and b:
            missing = [n for n in (a, b) if n not in views]
            if missing:
                problem = f"no run {', '.join(missing)} in this folder"
            else:
                try:
                    cmp = compare(*(Side(n, rows_of_run(views[n].state, views[n].exchanges, self.counter)) for n in (a, b)))
                except ValueError as e:
                    problem = str(e)
        context = dict(cmp=cmp, problem=problem, a=a, b=b, runs=sorted(views), difference_line=difference_line)
        parts = environment().get_template("compare_parts.html").make_module(context)
        return Built(version, "compare.html", context, [Fragment("compare-result", str(parts.result(cmp, problem)))])
