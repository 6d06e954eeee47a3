"""`mmb`: the command line."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from drivers.settings import BrowserConfig
from persona.benchmark.loader import load_benchmark, manifest_schema
from persona.config import Config, load_config
from persona.errors import InputError, RunError
from persona.secrets import RedactingFilter

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="MarathonMemBench: test an AI agent's long-term memory through its chat UI.")

ConfigOption = Annotated[Path, typer.Option("--config", "-c", help="The config file")]


def _fail(problems: InputError | str, code: int = 2) -> None:
    text = "\n".join(str(p) for p in problems.problems) if isinstance(problems, InputError) else problems
    typer.secho(text, fg="red", err=True)
    raise typer.Exit(code)


def _console_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.DEBUG if verbose else logging.WARNING)
    handler.addFilter(RedactingFilter())
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.DEBUG if verbose else logging.INFO)


TRACE_MODES = ("on", "off", "retain-on-failure")
HeadedOption = Annotated[bool, typer.Option("--headed", help="Show the browser (needs a display, or xvfb-run -a)")]
SlowMoOption = Annotated[int | None, typer.Option("--slow-mo", help="Slow each browser action by MS", min=0)]
TraceOption = Annotated[str | None, typer.Option(
    "--trace", help="on | off | retain-on-failure: a Playwright trace.zip per chat session")]
VideoOption = Annotated[bool, typer.Option("--video", help="Record a video (.webm) of each chat")]


def _apply_overrides(config: Config | BrowserConfig, headed: bool, slow_mo: int | None, trace: str | None,
                     video: bool) -> None:
    """The browser flags over the config's `browser` section."""
    if trace not in (None, *TRACE_MODES):
        _fail(f"--trace must be on, off or retain-on-failure, not {trace!r}")
    b = config.browser if isinstance(config, Config) else config
    b.headless = b.headless and not headed
    b.slow_mo_ms = slow_mo if slow_mo is not None else b.slow_mo_ms
    b.trace = trace or b.trace  # type: ignore[assignment]
    b.video = b.video or video


def _browser_config(config: Path | None) -> tuple[BrowserConfig, Path]:
    """The `browser` section of --config (or the defaults) and the folder relative paths start from."""
    if config is None:
        return BrowserConfig(), Path.cwd()
    try:
        cfg = load_config(config)
    except InputError as e:
        _fail(e)
    return cfg.browser, cfg.base_dir


@app.command()
def run(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="The config file [default: config.jsonc]")] = None,
    run_ids: Annotated[list[str] | None, typer.Option("--run", "-r", help="Only these run ids")] = None,
    headed: HeadedOption = False,
    slow_mo: SlowMoOption = None,
    trace: TraceOption = None,
    video: VideoOption = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    dry: Annotated[bool, typer.Option("--dry", help="Scripted persona against an agent that knows every answer, "
                                      "in process: is every check reachable and gradable, how long is it?")] = False,
    benchmark: Annotated[list[Path] | None, typer.Option("--benchmark", "-b", help="With --dry: this benchmark "
                                                            "folder, no config needed")] = None,
    repeat: Annotated[int | None, typer.Option("--repeat", min=1, help="Play each run N times, independently "
                                               "(results/<id>.r1/ ...), over its `repeat` in the config")] = None,
    accept_benchmark_change: Annotated[bool, typer.Option(
        "--accept-benchmark-change", help="Resume runs whose benchmark files changed since they started")] = False,
) -> None:
    """Play the runs of the config (all, or --run ID...). Reruns continue where they stopped."""
    from persona.engine.runner import Runner, plan_runs
    from persona.report.progress import make_progress

    if dry or benchmark:
        _dry(config, run_ids, benchmark or [], dry)
        return
    config = config or Path("config.jsonc")
    if trace not in (None, *TRACE_MODES):
        _fail(f"--trace must be on, off or retain-on-failure, not {trace!r}")
    _console_logging(verbose)
    try:
        cfg = load_config(config)
        plans = plan_runs(cfg, run_ids, repeat)
    except InputError as e:
        _fail(e)
    _apply_overrides(cfg, headed, slow_mo, trace, video)
    try:
        with make_progress() as progress:
            runner = Runner(cfg, progress=progress, accept_benchmark_change=accept_benchmark_change)
            outcomes = asyncio.run(runner.run_all(plans))
    except KeyboardInterrupt:
        typer.echo("interrupted: the state is saved; run the same command again to continue", err=True)
        raise typer.Exit(130) from None
    except RunError as e:
        _fail(str(e), 1)
    if any(o.status != "finished" for o in outcomes):
        raise typer.Exit(1)


def _dry(config: Path | None, run_ids: list[str] | None, benchmarks: list[Path], dry: bool) -> None:
    """`run --dry`: exit 1 unless every benchmark reaches coverage 100 % with every check at 10."""
    from persona.engine.dry import play_dry

    if not dry:
        _fail("--benchmark plays a folder without a config only in a dry run: add --dry")
    _console_logging(False)
    try:
        ready = play_dry(config, run_ids, benchmarks, typer.echo)
    except InputError as e:
        _fail(e)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    if not ready:
        raise typer.Exit(1)


@app.command()
def report(
    config: ConfigOption = Path("config.jsonc"),
    run_ids: Annotated[list[str] | None, typer.Option("--run", "-r", help="Only these run ids")] = None,
    results: Annotated[Path | None, typer.Option("--results", help="Results folder (default: the config's)")] = None,
    grading: Annotated[str | None, typer.Option("--grading", help="Show this grading set (`mmb regrade`) where a run "
                                                "has it; the pages say which they show")] = None,
) -> None:
    """Rebuild results/<id>/report.html of every run and results/leaderboard.{md,html} from the saved states."""
    from persona.benchmark.loader import load_benchmark
    from persona.report.publish import rebuild
    from persona.tokens import TokenCounter

    cfg = None
    if config.exists():
        try:
            cfg = load_config(config)
        except InputError as e:
            _fail(e)
    folder = results or (cfg.results_path() if cfg else Path("results"))
    if not folder.is_dir():
        _fail(f"no results folder at {folder}")
    benches = {}
    for run in cfg.runs if cfg else []:  # benchmarks found through the config; others get a report without titles
        try:
            benches[run.id] = load_benchmark(cfg.benchmark_path(run))
        except InputError:
            typer.secho(f"{run.id}: benchmark {run.benchmark} does not load; its report has no phase titles", err=True)
    counter = TokenCounter(cfg.compaction.encoding) if cfg else None
    for path in rebuild(folder, benches, run_ids, counter, grading):
        typer.echo(str(path))


def _optional_config(config: Path) -> Config | None:
    if not config.exists():
        return None
    try:
        return load_config(config)
    except InputError as e:
        _fail(e)


@app.command("regrade")
def regrade_cmd(
    run_id: Annotated[str, typer.Argument(help="The finished run to re-score (its folder in the results)")],
    judge_model: Annotated[str, typer.Option("--judge-model", "-m", help="The judge model; 'rules': the offline rule judge")],
    base_url: Annotated[str | None, typer.Option("--base-url", help="Its OpenAI-compatible endpoint [default: the "
                                                 "config's judge, else its persona]")] = None,
    api_key_env: Annotated[str | None, typer.Option("--api-key-env", help="Environment variable holding the key "
                                                    "[default: as the config]")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Name of the new grading set [default: judge-MODEL]")] = None,
    config: ConfigOption = Path("config.jsonc"),
    results: Annotated[Path | None, typer.Option("--results", help="Results folder (default: the config's)")] = None,
) -> None:
    """Re-score a finished run's saved answers with another judge into a new grading set, and print the agreement."""
    from persona.engine.regrade import agreement_lines, regrade_judge, regrade_run
    from persona.report.gradings import set_name

    _console_logging(False)
    cfg = _optional_config(config)
    folder = (results or (cfg.results_path() if cfg else Path("results"))) / run_id
    if not (folder / "state.json").is_file():
        _fail(f"no run {run_id!r}: {folder}/state.json not found")
    try:
        judge = regrade_judge(cfg, run_id, judge_model, base_url, api_key_env)
        gset, original, report = asyncio.run(regrade_run(folder, judge, name or set_name(judge.label), typer.echo))
    except RunError as e:
        _fail(str(e), 1)
    typer.echo(f"grading set {gset.name!r} of run {run_id}: {len(gset.grades)} checks graded by {gset.judge}"
               f" -> {folder}/gradings/{gset.name}.json")
    for line in agreement_lines(gset, original):
        typer.echo(line)
    if report:
        typer.echo(f"report entry appended to {report}")
    typer.echo(f"show it: mmb report --grading {gset.name}")


@app.command("validate")
def validate_cmd(
    benchmarks: Annotated[list[Path], typer.Argument(help="Benchmark folders")],
    strict: Annotated[bool, typer.Option("--strict", help="Fail on warnings too")] = False,
) -> None:
    """Check benchmarks: errors (unplayable) and warnings (likely mistakes), each with its file and line."""
    from persona.benchmark.lint import lint

    bad = 0
    for folder in benchmarks:
        try:
            bench = load_benchmark(folder)
        except InputError as e:
            bad += 1
            for p in e.problems:
                typer.secho(f"{p}", fg="red", err=True)
            typer.echo(f"{folder}: {len(e.problems)} error(s)")
            continue
        warnings = lint(bench)
        for w in warnings:
            typer.secho(f"warning: {w}", fg="yellow", err=True)
        bad += bool(warnings and strict)
        counts = f"{len(bench.phases)} phases, {sum(len(f.live_facts()) for f in bench.fact_files.values())} facts, " \
                 f"{len(bench.checks)} checks"
        typer.echo(f"{folder}: ok ({counts})" + (f", {len(warnings)} warning(s)" if warnings else ""))
    if bad:
        raise typer.Exit(2)


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="Folder name of the new benchmark")],
    folder: Annotated[Path, typer.Option("--dir", help="Where benchmark folders live")] = Path("benchmarks"),
    language: Annotated[str, typer.Option("--language", "-l", help="en or ru")] = "en",
) -> None:
    """Create a skeleton benchmark that validates and dry-runs; replace its content with yours."""
    from persona.benchmark.skeleton import create_skeleton

    try:
        files = create_skeleton(name, folder, language)
    except InputError as e:
        _fail(e)
    for f in files:
        typer.echo(f"wrote {f}")
    target = folder / name
    typer.echo(f"next: edit the files (see benchmarks/AUTHORING.md), then\n  mmb validate {target}\n"
               f"  mmb run --dry --benchmark {target}")


@app.command()
def schema() -> None:
    """Print the JSON Schema of benchmark.json."""
    typer.echo(json.dumps(manifest_schema(), indent=2, ensure_ascii=False))


@app.command("probe")
def probe_cmd(
    url: Annotated[str, typer.Argument(help="The chat page")],
    profile: Annotated[str, typer.Option("--profile", "-p", help="A driver profile (demo, generic, ...)")] = "generic",
    selector: Annotated[list[str] | None, typer.Option("--selector", "-s", help="Override a selector: key=css")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="Override a profile setting: key=value (completion.quiet_ms=2000)")] = None,
    send: Annotated[str | None, typer.Option("--send", help="Also send this message and show the reply")] = None,
    wait: Annotated[float, typer.Option("--wait", help="Seconds the input may take to show up")] = 15,
    out: Annotated[Path, typer.Option("--out", help="Where the screenshot (and traces) go")] = Path("results/probe"),
    auth: Annotated[str | None, typer.Option("--auth", help="Use a login saved by `mmb login`")] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Take the browser settings from this config")] = None,
    headed: HeadedOption = False,
    slow_mo: SlowMoOption = None,
    trace: TraceOption = "off",
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Check a profile against a live chat page: each selector's matches, a screenshot, one round trip."""
    from drivers.auth import AuthError
    from drivers.browser import BrowserStartError
    from persona.cli.browsing import parse_pairs, probe_page, resolve_profile

    _console_logging(verbose)
    browser, base_dir = _browser_config(config)
    _apply_overrides(browser, headed, slow_mo, trace, False)
    try:
        options = {"ready_timeout_s": wait, **parse_pairs(option or [], "--option")}
        prof = resolve_profile(profile, url, parse_pairs(selector or [], "--selector", json_values=False), options)
    except ValueError as e:
        _fail(str(e))
    auth_dir = (base_dir / browser.auth_dir).resolve()
    try:
        report = asyncio.run(probe_page(prof, browser, base_dir=base_dir, out_dir=out, send=send,
                                        login_name=auth, auth_dir=auth_dir))
    except (AuthError, BrowserStartError) as e:
        _fail(str(e), 1)
    typer.echo(report.render())
    if not report.ok:
        raise typer.Exit(1)


@app.command("login")
def login_cmd(
    profile: Annotated[str, typer.Argument(help="The driver profile whose page to log in to (or generic with --url)")],
    url: Annotated[str | None, typer.Option("--url", help="The login page (default: the profile's)")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Save it under this name (default: PROFILE); runs use it as agent.auth")] = None,
    kind: Annotated[str, typer.Option("--kind", help="storage: cookies + localStorage + IndexedDB in one file; profile: a whole Chromium profile folder")] = "storage",
    wait_for: Annotated[str | None, typer.Option("--wait-for", help="Save as soon as this selector shows (e.g. the chat list)")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Stop waiting after S seconds (with --wait-for: fail)")] = None,
    headless: Annotated[bool, typer.Option("--headless", help="No window: for scripted logins with --wait-for")] = False,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Take the browser settings (auth_dir, connect) from this config")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Log in to a chat UI once, in a real browser window; runs reuse it (agent.auth). It is a secret."""
    from drivers.auth import AuthError, check_name
    from drivers.browser import BrowserStartError
    from persona.cli.browsing import login, login_url

    _console_logging(verbose)
    if kind not in ("storage", "profile"):
        _fail(f"--kind must be storage or profile, not {kind!r}")
    browser, base_dir = _browser_config(config)
    browser.headless = headless
    interactive = wait_for is None and timeout is None
    if interactive and not sys.stdin.isatty():
        _fail("not a terminal: give --wait-for SELECTOR (or --timeout S) to know when the login is done")
    try:
        saved = asyncio.run(login(login_url(profile, url), browser, base_dir=base_dir, auth_dir=(base_dir / browser.auth_dir).resolve(),
                                  name=check_name(name or profile), kind=kind, wait_for=wait_for, timeout_s=timeout,
                                  interactive=interactive, say=typer.echo))
    except (ValueError, AuthError, BrowserStartError) as e:
        _fail(str(e), 1)
    what = "a Chromium profile" if saved.kind == "profile" else "storage state: cookies, localStorage, IndexedDB"
    typer.echo(f"saved login {saved.name!r} ({what}) to {saved.path} (owner-only; never commit it)\n"
               f'use it in config.jsonc: "agent": {{"auth": "{saved.name}", ...}}')


@app.command("browsers-path")
def browsers_path_cmd(
    folder: Annotated[Path, typer.Option("--dir", help="Where to make it")] = Path(".ms-playwright"),
) -> None:
    """Print a PLAYWRIGHT_BROWSERS_PATH whose builds link to the system Chromium and ffmpeg (Linux).

    For `playwright run-server` or `playwright show-trace` on a machine without `playwright install`:
    PLAYWRIGHT_BROWSERS_PATH=$(mmb browsers-path) playwright run-server --host 127.0.0.1 --port 3000
    """
    from drivers.browser import BrowserStartError, find_system_chromium
    from drivers.playwright_home import find_ffmpeg, linked_browsers_path

    try:
        chromium = find_system_chromium()
        root = linked_browsers_path(folder.resolve(), chromium=chromium, ffmpeg=find_ffmpeg())
    except (BrowserStartError, RuntimeError) as e:
        _fail(str(e), 1)
    if chromium is None:
        typer.secho("no system Chromium found: only ffmpeg is linked", fg="yellow", err=True)
    typer.echo(str(root))


@app.command("demo-agent")
def demo_agent(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1")] = 8765,
    data: Annotated[Path | None, typer.Option(help="Memory folder (default: in memory)")] = None,
) -> None:
    """Serve the bundled demo chat agent, to try it by hand or point a profile at it."""
    from demo_agent.web import DemoChatServer

    server = DemoChatServer(data)
    typer.echo(f"DemoMind at {server.start(port=port)}  (Ctrl-C stops)")
    try:
        asyncio.run(asyncio.Event().wait())
    except KeyboardInterrupt:
        server.stop()


def main() -> None:  # pragma: no cover - console entry point
    app()
