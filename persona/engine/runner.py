"""Playing the runs of config.jsonc: check everything first, then run them in parallel.

Each run gets its own browser context, its own results/<id>/ folder and log; one run failing never
stops the others, and every run's end (finished, failed or interrupted) appends to report.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from drivers.auth import AuthError, SavedLogin, find_login
from drivers.base import ChatDriver, DriverError
from drivers.browser import BrowserHost, BrowserStartError, browser_host
from drivers.generic import PlaywrightDriver
from drivers.observed import Observed
from drivers.profile import Profile
from drivers.registry import build_profile, needs_browser
from drivers.resilient import ResilientDriver
from drivers.tracing import show_trace_command
from drivers.url_secrets import ChatUrl
from persona.benchmark.loader import Benchmark, load_benchmark
from persona.config import Config, JudgeConfig, PersonaConfig, RunConfig
from persona.crashpoints import crash_point
from persona.engine.fit import fit_problems
from persona.engine.judge import Judge, make_judge, memory_judge
from persona.engine.llm import OpenAIPersona, api_key
from persona.engine.loop import PersonaLoop
from persona.engine.memory import judge_paraphrases, watch_memory
from persona.engine.model import PersonaModel
from persona.engine.oracle import OracleDriver
from persona.engine.preflight import Preflight, judge_preflight, preflight
from persona.engine.provenance import check_benchmark, make_provenance, record
from persona.engine.scripted import ScriptedPersona
from persona.errors import InputError, Problem, RunError, StorageError, storage_error
from persona.report.cost import PriceTable, money
from persona.report.markdown import append_entry_once, mean
from persona.report.persona_lines import end_summary
from persona.report.progress import Progress, QuietProgress
from persona.report.publish import entry_parts, publish_run
from persona.secrets import RedactingFilter, known_secrets, redact, register_secret
from persona.state import Provenance, RunState, RunStore
from persona.tokens import TokenCounter

log = logging.getLogger(__name__)
current_run: contextvars.ContextVar[str] = contextvars.ContextVar("current_run", default="")


@dataclass
class RunPlan:
    """A run checked and ready: nothing about it can fail on bad input any more."""

    run: RunConfig
    bench: Benchmark
    profile: Profile | None  # None for in-process drivers
    persona: PersonaConfig
    folder: Path
    login: SavedLogin | None = None  # agent.auth: read in place, never copied into the folder
    judge: JudgeConfig | None = None  # None: the persona grades as it goes (config `judge: "persona"`)
    repeat_of: str | None = None  # the configured run's id, when this is one of its repeats
    repeat: int | None = None  # which repeat, from 1


@dataclass
class RunOutcome:
    run_id: str
    status: str
    mean_score: float | None
    error: str | None = None


def plan_runs(config: Config, only: list[str] | None = None, repeat: int | None = None) -> list[RunPlan]:
    """Validate every selected run (benchmark, driver, persona key); one InputError lists all problems.

    A run with `repeat: N` (or every run, with `repeat`) becomes N plans with stable ids and folders,
    <id>.r1 ... <id>.rN; `only` names runs or single repeats."""
    problems: list[Problem] = config.id_clashes(repeat) if repeat else []
    plans = []
    known = {r.id for r in config.runs} | {i for r in config.runs for i in r.repeat_ids(repeat)}
    for wanted in only or []:
        if wanted not in known:
            problems.append(Problem(str(config.source), None, f"no run with id {wanted!r} (runs: {', '.join(sorted(known))})"))
    benches: dict[Path, Benchmark] = {}
    for i, run in enumerate(config.runs):
        ids = run.repeat_ids(repeat)
        if only and run.id not in only and not set(ids) & set(only):
            continue
        path = config.benchmark_path(run)
        try:
            if path not in benches:
                bench = load_benchmark(path)
                if fitting := fit_problems(bench, config.compaction, config.problem(("compaction", "max_tokens"), "")):
                    raise InputError(fitting)  # it would stop there, however long it had played
            bench = benches.setdefault(path, bench)
        except InputError as e:
            problems += [config.problem(("runs", i, "benchmark"), f"benchmark {run.benchmark}:")] + e.problems
            continue
        try:
            profile = build_profile(run.agent.driver, run.agent.selectors, run.agent.profile_options())
        except ValueError as e:
            problems.append(config.problem(("runs", i, "agent"), f"run {run.id}: {e}"))
            continue
        if profile is not None and run.agent.driver != "demo" and not (run.agent.url or profile.url):
            problems.append(config.problem(("runs", i, "agent"), f"run {run.id}: agent.url is required for driver {run.agent.driver!r}"))
        elif profile is not None and (url := run.agent.url or profile.url):
            try:
                ChatUrl(url)
            except ValueError as e:
                problems.append(config.problem(("runs", i, "agent", "url"), f"run {run.id}: {e}"))
        login = None
        if run.agent.auth:
            try:
                login = find_login(config.auth_path(), run.agent.auth)
            except AuthError as e:
                problems.append(config.problem(("runs", i, "agent", "auth"), f"run {run.id}: {e}"))
        persona = config.persona_for(run)
        if persona.kind == "openai":
            try:
                api_key(persona)
            except RunError as e:
                problems.append(config.problem(("runs", i) if run.persona else ("persona",), str(e)))
        judge = config.judge_for(run)
        if judge is not None and judge.kind == "openai":
            try:
                api_key(judge, "judge")
            except RunError as e:
                problems.append(config.problem(("runs", i) if run.judge is not None else ("judge",), str(e)))
        for k, run_id in enumerate(ids, 1):
            if only and run.id not in only and run_id not in only:
                continue
            repeated = len(ids) > 1
            plans.append(RunPlan(run=run.model_copy(update={"id": run_id}) if repeated else run, bench=bench,
                                 profile=profile, persona=persona, folder=config.results_path() / run_id, login=login,
                                 judge=judge, repeat_of=run.id if repeated else None, repeat=k if repeated else None))
    if problems:
        raise InputError(problems)
    return plans


def make_persona(plan: RunPlan) -> PersonaModel:
    if plan.persona.kind == "scripted":
        return ScriptedPersona(language=plan.bench.manifest.language)
    return OpenAIPersona(plan.persona)


def new_state(plan: RunPlan) -> RunState:
    return RunState(
        run_id=plan.run.id, benchmark=plan.run.benchmark, benchmark_title=plan.bench.title,
        driver=plan.run.agent.driver, persona_model=plan.persona.label,
        judge=plan.judge.label if plan.judge else "persona", repeat_of=plan.repeat_of, repeat=plan.repeat,
        facts={name: ff.model_copy(deep=True) for name, ff in plan.bench.fact_files.items()},
    )


@contextlib.asynccontextmanager
async def agent_url(plan: RunPlan) -> AsyncIterator[str | None]:
    """The chat URL; for the demo driver without one, the bundled demo chat, started for this run."""
    if plan.run.agent.url or plan.run.agent.driver != "demo":
        yield plan.run.agent.url
        return
    from demo_agent.web import DemoChatServer

    with DemoChatServer(plan.folder / "agent-data") as server:
        yield server.url


class Runner:
    def __init__(self, config: Config, *, print_line: Callable[[str], None] = print,
                 store_factory: Callable[[Path], RunStore] = RunStore, progress: Progress | None = None,
                 entries_dir: Path | None = None, accept_benchmark_change: bool = False):
        self.config = config
        self.accept_benchmark_change = accept_benchmark_change  # resume runs whose benchmark files changed
        self.print = print_line
        self.store_factory = store_factory  # dry runs pass a store that skips durability
        self.progress = progress or QuietProgress()
        self.prices = PriceTable(config.prices)
        self.entries_dir = entries_dir or config.results_path()  # where report.md gets each run's entry

    async def run_all(self, plans: list[RunPlan]) -> list[RunOutcome]:
        async with self._browsers(any(needs_browser(p.run.agent.driver) for p in plans)) as browsers:
            gate = asyncio.Semaphore(self.config.parallel)

            async def gated(plan: RunPlan) -> RunOutcome:
                async with gate:
                    return await self.run_one(plan, browsers)

            return list(await asyncio.gather(*(gated(p) for p in plans)))

    @contextlib.asynccontextmanager
    async def _browsers(self, wanted: bool) -> AsyncIterator[BrowserHost | None]:
        """One browser for all runs (each gets its own context), started when a run first needs it."""
        if not wanted:
            yield None
            return
        try:
            async with browser_host(self.config.browser, self.config.base_dir) as host:
                yield host
        except BrowserStartError as e:
            raise RunError(str(e)) from None

    async def run_one(self, plan: RunPlan, browser: BrowserHost | None) -> RunOutcome:
        current_run.set(plan.run.id)
        store = self.store_factory(plan.folder)
        try:
            store.lock()
        except RunError as e:  # this run only: the others go on
            return self._refused(plan, str(e))
        try:
            handler = _run_log_handler(plan)
        except OSError as e:
            store.unlock()
            return self._refused(plan, str(storage_error(e, "open the run log", plan.folder / "run.log")))
        try:
            try:
                state = store.load() or new_state(plan)
                provenance = _provenance(plan)
                if state.status != "finished":  # a finished run is only reported, whatever changed since
                    _check_resumable(plan.bench, state)
                    check_benchmark(state, provenance, self.accept_benchmark_change)
            except RunError as e:  # nothing is written: the state stays as it was for a person to look at
                return self._refused(plan, str(e))
            except OSError as e:
                return self._refused(plan, str(storage_error(e, "read the run's state in", plan.folder)))
            if state.ends > state.reported_ends:  # killed at its last end, before every output was written
                try:
                    path, pages = await self._report(plan, store, state)
                except (StorageError, OSError) as e:
                    return self._refused(plan, str(e if isinstance(e, StorageError) else storage_error(e)))
                self.print(f"[{plan.run.id}] wrote what its last end ({state.status}) had left unwritten: "
                           f"report: {path}" + (f", {pages[0]}" if pages else ""))
            if state.status == "finished":
                self.print(f"[{plan.run.id}] already finished; delete {plan.folder} to run it again")
                return RunOutcome(plan.run.id, "finished", mean(state.evaluations))
            if state.status == "running":  # no process holds it (we do now): the last one died before its end
                died = "the mmb before this one ended without recording its end (killed, or its disk filled)"
                _note(state, died)
                self.print(f"[{plan.run.id}] {died}; going on from its last save")
            if store.resumable:
                store.set_aside()  # what the run's end will need if the disk fills under it
            resumed = bool(state.messages)
            state.phase_count, state.checks_planned = len(plan.bench.phases), len(plan.bench.checks)
            self.progress.begin(plan.bench, state)
            self.print(f"[{plan.run.id}] {'resuming' if resumed else 'starting'}: {plan.bench.title} @ {plan.run.agent.driver}")
            return await self._play(plan, browser, store, state, provenance)
        finally:
            logging.getLogger().removeHandler(handler)
            handler.close()
            store.unlock()

    def _refused(self, plan: RunPlan, error: str) -> RunOutcome:
        self.print(f"[{plan.run.id}] not started: {error}")
        return RunOutcome(plan.run.id, "failed", None, error)

    async def _play(self, plan: RunPlan, browser: BrowserHost | None, store: RunStore, state: RunState,
                    provenance: Provenance) -> RunOutcome:
        state.status, state.error = "running", None
        state.judge = provenance.judge
        model = make_persona(plan)
        judge = make_judge(plan.judge)
        failed = True
        storage: StorageError | None = None  # the run's files could not be written: it ends on that alone
        driver: ChatDriver | None = None
        try:
            # Recorded from the first save: a run that stops in its preflight still says what it ran on. The
            # browser starts with the first chat: until then, the last record's is assumed (filled in below).
            provenance.browser = state.provenance[-1].browser if state.provenance else None
            record(state, provenance)
            store.save(state)
            await self._preflight(plan, state)
            async with agent_url(plan) as url:
                driver = watch_memory(await self._driver(plan, browser, url, state, on_event=lambda text: _note(state, text)),
                                      plan.run.agent.memory, self.config.base_dir, plan.folder, state)
                if browser is not None and plan.profile is not None:
                    provenance.browser = browser.version  # the record made at the start, when it was appended
                record(state, provenance)
                store.save(state)
                loop = PersonaLoop(
                    bench=plan.bench, state=state, store=store, model=model, driver=driver,
                    counter=TokenCounter(self.config.compaction.encoding), compaction=self.config.compaction,
                    persona=plan.persona, prices=self.prices, on_change=self.progress.update, judge=judge)
                await loop.run()
                state.status, failed = "finished", False
                if judge is not None and plan.run.agent.memory is not None:
                    await self._judge_memory(plan, state, judge)
        except asyncio.CancelledError:
            state.status = "interrupted"
            raise
        except (StorageError, OSError) as e:  # a write of the run's own files: a full disk, a read-only folder
            storage = e if isinstance(e, StorageError) else storage_error(e, "write", plan.folder)
            state.status, state.error = "failed", str(storage)
            log.debug("run %s stopped on a storage error", plan.run.id, exc_info=True)
        except RunError as e:  # stalled and budget stops say so in the status
            state.status, state.error = e.status, redact(str(e))  # type: ignore[assignment]
        except (DriverError, BrowserStartError) as e:
            state.status, state.error = "failed", redact(str(e))
        except Exception as e:  # a bug of ours: record it, keep the state resumable
            log.exception("run %s crashed", plan.run.id)
            state.status, state.error = "failed", redact(f"{type(e).__name__}: {e}")
        finally:
            state, saved = self._record_end(store, state)
            crash_point("run.ended")
            await self._close(driver, failed)
            await model.aclose()
            if judge is not None:
                await judge.aclose()
            self.progress.end(state)
            try:
                path, pages = (None, []) if storage is not None else await self._report(plan, store, state)
            except (StorageError, OSError) as e:  # the disk filled at the very end
                storage, path, pages = e if isinstance(e, StorageError) else storage_error(e), None, []
                state.error = state.error or str(storage)
            if path is None:
                self._report_storage_end(plan, state, saved, storage)
            else:
                self.print(f"[{plan.run.id}] {state.status}: {end_summary(state)}"
                           + (f" — {state.error}" if state.error else "") + f"; cost {money(self.prices.run_cost(state).usd)}"
                           + f"; report: {path}"
                           + (f", {pages[0]}" if pages else ""))
        return RunOutcome(plan.run.id, state.status, mean(state.evaluations), state.error)

    def _record_end(self, store: RunStore, state: RunState) -> tuple[RunState, bool]:
        """The run's end saved: the state as last saved when the run did not finish (a step cut short by a
        signal or an error is redone by the rerun, as after a kill, never half recorded), with what only
        accumulated since carried over. False when even that could not be written (a full disk with no
        space set aside left): state.json then still says `running`, and its lock, free, says it is not."""
        if state.status != "finished" and store.resumable:
            state = _as_last_saved(store, state)
        state.ends += 1
        for attempt in range(2):
            try:
                store.save(state)
                return state, True
            except StorageError as e:
                if attempt or not store.give_back_reserve():
                    log.debug("the end of run %s could not be saved: %s", state.run_id, e)
        return state, False

    def _report_storage_end(self, plan: RunPlan, state: RunState, saved: bool, error: Exception | None) -> None:
        """A run its disk stopped: its report.md entry if the disk takes it (the pages wait for the next start
        or `mmb report`), and one line saying what failed, where and how much space is left."""
        if saved and state.reported_ends < state.ends:
            try:
                append_entry_once(self.entries_dir, plan.bench, state, self.prices, None)
            except OSError as e:
                log.debug("no report.md entry for %s: %s", plan.run.id, e)
        unsaved = "" if saved else " (its state could not be written either: it still says running, and `mmb list` " \
                                   "shows the run dead)"
        self.print(f"[{plan.run.id}] {state.status}: {error or state.error}{unsaved}")

    async def _report(self, plan: RunPlan, store: RunStore, state: RunState) -> tuple[Path, list[Path]]:
        """The outputs of the run's last end, each written once: its report.md entry, report.html and the
        leaderboard. A kill before all are written leaves `reported_ends` behind `ends`: the next start
        of the run, or `mmb report`, completes them."""
        parts = await asyncio.to_thread(entry_parts, plan.folder, state, plan.bench)  # reads the transcript
        path, _ = append_entry_once(self.entries_dir, plan.bench, state, self.prices, *parts)
        crash_point("report.appended")
        pages = await asyncio.to_thread(  # a long transcript takes a moment: keep the other runs going
            publish_run, plan.folder, state, plan.bench, self.config.results_path(),
            TokenCounter(self.config.compaction.encoding), self.prices)
        if pages:  # else publish_run logged why; the next start tries again
            state.reported_ends = state.ends
            store.save(state)
        return path, pages

    async def _judge_memory(self, plan: RunPlan, state: RunState, judge: Judge) -> None:
        """At a finished run's end, the judge reads the memory snapshot of each check the autopsy's matcher
        found nowhere (`never stored`): a paraphrase it finds goes to memory/judged.json, which the report's
        autopsy reads. Its calls count as the judge's; a failure is logged, never the run's outcome."""
        try:
            asked = await judge_paraphrases(plan.folder, state, plan.bench, memory_judge(judge, state), judge.label)
        except Exception as e:
            log.warning("the judge could not read the agent's memory for the autopsy: %s", e)
            state.log.append(redact(f"memory autopsy: the judge failed, the matcher's classes stand: {e}")[:500])
            return
        if asked:
            state.log.append(f"memory autopsy: the judge ({judge.label}) read the memory for {asked} check(s) "
                             "the matcher found nowhere")

    async def _preflight(self, plan: RunPlan, state: RunState) -> None:
        """An LLM persona, and a judge model, show in a few cheap calls that they can play and grade, before
        the agent sees anything (`persona.preflight: false` skips both)."""
        if not plan.persona.preflight:
            return
        if plan.persona.kind == "openai":
            self._preflighted(plan, state, await preflight(plan.persona))
        if plan.judge is not None and plan.judge.kind == "openai":  # after a persona that passed
            self._preflighted(plan, state, await judge_preflight(plan.judge))

    def _preflighted(self, plan: RunPlan, state: RunState, report: Preflight) -> None:
        (state.usage if report.role == "persona" else state.judge_usage).merge(report.usage, state.phase)
        state.log.append(f"preflight: {report.render()}"[:500])
        self.print(f"[{plan.run.id}] {report.render()}")
        if not report.ok:
            raise RunError(f"{report.role} preflight failed, nothing was sent to the agent: {report.failure()}")

    async def _driver(self, plan: RunPlan, browser: BrowserHost | None, url: str | None, state: RunState,
                      on_event: Callable[[str], None]) -> ChatDriver:
        if plan.profile is None:
            return OracleDriver(plan.bench)
        assert browser is not None
        profile = plan.profile
        b = self.config.browser

        generation = browser.generation
        observed = Observed(on_event=lambda text: _finding(state, text, on_event))  # kept across rebuilt drivers

        async def build() -> ChatDriver:  # again when a crash took the context down
            nonlocal generation
            chat = await browser.new_context(login=plan.login, video_dir=plan.folder / "videos" if b.video else None)
            if browser.generation != generation and generation:  # the browser died under this run: counted
                state.browser_relaunches += 1
                _note(state, f"the browser died; it was started again ({browser.version}), and the chat reopened in it")
            generation = browser.generation
            driver = PlaywrightDriver(profile, chat.context, base_url=url, artifacts=plan.folder,
                                      trace=b.trace, screenshot_on_failure=b.screenshot_on_failure,
                                      secrets=(*chat.secrets, *known_secrets()), observed=observed)
            for value in driver.url_secrets:  # masked wherever an error or log line might still quote it
                register_secret(value)
            return driver

        return ResilientDriver(await build(), plan.run.agent.recovery, rebuild=build, on_event=on_event)

    async def _close(self, driver: ChatDriver | None, failed: bool) -> None:
        if driver is None:
            return
        try:
            for f in await driver.close(failed=failed):
                what = f"trace: {show_trace_command(f)}" if f.name.endswith(".trace.zip") else f"video: {f}"
                self.print(f"[{current_run.get()}] {what}")
        except Exception as e:  # closing must not hide the run's own outcome
            gone = _is_gone(e)  # the browser went first (a Ctrl-C to the process group, a crash): nothing to close
            log.log(logging.INFO if gone else logging.WARNING, "closing the driver failed: %s", _first_line(e))


def _is_gone(error: BaseException) -> bool:
    text = str(error).lower()
    return "has been closed" in text or "connection closed" in text or "target closed" in text


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _provenance(plan: RunPlan) -> Provenance:
    profile = plan.profile.model_dump_json(exclude={"url", "new_session_url"}) if plan.profile else None  # URLs may hold tokens
    return make_provenance(plan.bench, plan.persona, plan.judge, plan.run.agent.driver, profile)


def _check_resumable(bench: Benchmark, state: RunState) -> None:
    """A benchmark edited between two runs must still hold where the saved run is, or resuming would break it."""
    if not state.messages:
        return
    if state.phase >= len(bench.phases):
        raise RunError(f"the benchmark has {len(bench.phases)} phases now, but this run is in phase {state.phase + 1}; "
                       f"undo the change, or delete the run's folder to start over")
    known = {c.id for c in bench.checks}
    if gone := [e.check_id for e in state.evaluations if e.check_id not in known]:
        raise RunError(f"checks graded in this run are gone from the benchmark: {', '.join(gone)}; undo the change, "
                       f"or delete the run's folder to start over")


def _as_last_saved(store: RunStore, state: RunState) -> RunState:
    """The state as the store last saved it, with what only accumulates carried over from `state`: the tokens
    spent, the log lines and judge notes written since (how the driver fought a sick chat, why the run
    stopped), the time played, the end's status and error."""
    try:
        saved = store.load()
    except RunError as e:
        log.debug("the last saved state does not read back (%s); the end is recorded on the state in memory", e)
        return state
    if saved is None:
        return state
    saved.status, saved.error = state.status, state.error
    saved.active_seconds = max(saved.active_seconds, state.active_seconds)
    saved.usage, saved.judge_usage, saved.quirks = state.usage, state.judge_usage, state.quirks
    saved.log += state.log[len(saved.log):]
    saved.judge_notes += state.judge_notes[len(saved.judge_notes):]
    return saved


def _finding(state: RunState, text: str, note: Callable[[str], None]) -> None:
    """What the run saw of the chat page: in the report's own line (once, a restart too) and the run log."""
    text = redact(text)[:500]
    if text not in state.page_findings:
        state.page_findings.append(text)
    note(text)


def _note(state: RunState, text: str) -> None:
    """A line in the state's log (saved with the next step), e.g. how the driver recovered."""
    state.log.append(redact(f"turn {state.turn}: {text}")[:500])


class _RunFilter(logging.Filter):
    def __init__(self, run_id: str):
        super().__init__()
        self.run_id = run_id

    def filter(self, record: logging.LogRecord) -> bool:
        return current_run.get() == self.run_id


class _RunLog(logging.FileHandler):
    """run.log; a line it cannot write (a full disk) is dropped without a word: the run's own end says
    why, once, where logging's default would print a traceback per line."""

    def handleError(self, record: logging.LogRecord) -> None:
        self.failed = getattr(self, "failed", 0) + 1


def _run_log_handler(plan: RunPlan) -> logging.Handler:
    """results/<id>/run.log gets the log lines of this run's task only (debug ones too with -v: a storage
    error's traceback)."""
    plan.folder.mkdir(parents=True, exist_ok=True)
    handler = _RunLog(plan.folder / "run.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_RunFilter(plan.run.id))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    handler.setLevel(logging.DEBUG if root.level == logging.DEBUG else logging.INFO)
    root.addHandler(handler)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    return handler
