"""The browser commands: `mmb probe`, `mmb discover`, `mmb login`, `mmb browsers-path`, `mmb demo-agent`."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from drivers.probe import BUDGET_S, WAIT_S
from persona.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    HeadedOption,
    SlowMoOption,
    TraceOption,
    VerboseOption,
    apply_overrides,
    browser_config,
    console_logging,
    fail,
    run_stoppable,
)

# The options probe and discover share with a run: the same login, the same browser settings.
AuthOption = Annotated[str | None, typer.Option("--auth", help="Use a login saved by `mmb login`")]
BrowserConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="Take the browser settings from this config")]


def probe(
    url: Annotated[str, typer.Argument(help="The chat page")],
    profile: Annotated[str, typer.Option("--profile", "-p", help="A driver profile (demo, generic, ...)")] = "generic",
    selector: Annotated[list[str] | None, typer.Option("--selector", "-s", help="Override a selector: key=css")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="Override a profile setting: key=value (completion.quiet_ms=2000)")] = None,
    frame: Annotated[list[str] | None, typer.Option("--frame", help="The iframe holding the chat: its selector, or url=<glob>; repeat for nested frames, outermost first")] = None,
    send: Annotated[str | None, typer.Option("--send", help="The text of the test message (sent marked as a probe)")] = None,
    no_send: Annotated[bool, typer.Option("--no-send", help="Send nothing: only the selectors and New chat")] = False,
    wait: Annotated[float, typer.Option("--wait", help="Seconds the input may take to show up")] = WAIT_S,
    budget: Annotated[float, typer.Option("--timeout", help="Seconds the whole probe may take")] = BUDGET_S,
    out: Annotated[Path, typer.Option("--out", help="Where the screenshot (and traces) go")] = Path("results/probe"),
    auth: AuthOption = None,
    config: BrowserConfigOption = None,
    headed: HeadedOption = False,
    slow_mo: SlowMoOption = None,
    trace: TraceOption = "off",
    verbose: VerboseOption = False,
) -> None:
    """Check a profile against a live chat page the run's way: each selector's matches, one marked
    round trip, New chat and its reset check, a screenshot; within --timeout seconds."""
    started = time.monotonic()  # the budget counts from here: starting the browser is part of it
    from drivers.auth import AuthError
    from drivers.browser import BrowserStartError
    from persona.cli.browsing import parse_pairs, probe_page, resolve_profile

    console_logging(verbose)
    browser, base_dir = browser_config(config)
    apply_overrides(browser, headed, slow_mo, trace, False)
    try:
        options = parse_pairs(option or [], "--option")
        if frame:
            options["frame"] = frame
        prof = resolve_profile(profile, url, parse_pairs(selector or [], "--selector", json_values=False), options)
    except ValueError as e:
        fail(str(e))
    auth_dir = (base_dir / browser.auth_dir).resolve()
    try:
        report = run_stoppable(probe_page(prof, browser, base_dir=base_dir, out_dir=out, send=send, no_send=no_send,
                                        login_name=auth, auth_dir=auth_dir, wait_s=wait,
                                        budget_s=budget - (time.monotonic() - started)))
    except (AuthError, BrowserStartError) as e:
        fail(str(e), EXIT_FAILED)
    typer.echo(report.render())
    if not report.ok:  # a selector that is not valid is bad input
        raise typer.Exit(EXIT_BAD_INPUT if report.invalid else EXIT_FAILED)


def discover(
    url: Annotated[str, typer.Argument(help="The page with the chat (a host page for a widget)")],
    no_send: Annotated[bool, typer.Option("--no-send", help="Type nothing: a best guess from what the page shows")] = False,
    write: Annotated[Path | None, typer.Option("--write", help="Write the agent block into this config.jsonc (needs --run)")] = None,
    run: Annotated[str | None, typer.Option("--run", help="The run of --write whose agent block to set")] = None,
    budget: Annotated[float, typer.Option("--timeout", help="Seconds the whole discovery may take")] = 60.0,
    out: Annotated[Path, typer.Option("--out", help="Where the verification's screenshot (and traces) go")] = Path("results/discover"),
    auth: AuthOption = None,
    config: BrowserConfigOption = None,
    headed: HeadedOption = False,
    slow_mo: SlowMoOption = None,
    trace: TraceOption = "off",
    verbose: VerboseOption = False,
) -> None:
    """Find the chat on a page and write its agent block (JSON on stdout; what was tried on stderr): the
    input, send, bubbles, busy marker, New chat, frame and launcher, from ONE marked test message;
    then checked the run's way (mmb probe). Exit 0 only when that check passes."""
    import json

    from drivers.auth import AuthError
    from drivers.browser import BrowserStartError
    from persona.cli.browsing import discover_chat, write_agent
    from persona.errors import InputError

    console_logging(verbose)
    if (write is None) != (run is None):
        fail("--write and --run go together: the config file, and the run whose agent block to set")
    browser, base_dir = browser_config(config)
    apply_overrides(browser, headed, slow_mo, trace, False)

    def say(line: str) -> None:
        typer.echo(line, err=True)

    try:
        found = asyncio.run(discover_chat(url, browser, base_dir=base_dir, out_dir=out, login_name=auth,
                                          auth_dir=(base_dir / browser.auth_dir).resolve(), send=not no_send,
                                          budget_s=budget, say=say))
    except (AuthError, BrowserStartError) as e:
        fail(str(e), EXIT_FAILED)
    if found.verification is not None:
        say(found.verification.render())
    for problem in found.problems:
        say(f"NOT FOUND: {problem}")
    say(f"discovery took {found.seconds:.1f} s: " + ("OK, verified by mmb probe" if found.ok else "FAILED"))
    typer.echo(json.dumps(found.agent(), indent=2, ensure_ascii=False))
    if not found.ok:
        raise typer.Exit(EXIT_FAILED)
    if write is not None and run is not None:
        try:
            write_agent(write, run, found.agent())
        except InputError as e:
            fail(e)
        say(f"wrote the agent block of run {run!r} into {write}")


def login(
    profile: Annotated[str, typer.Argument(help="The driver profile whose page to log in to (or generic with --url)")],
    url: Annotated[str | None, typer.Option("--url", help="The login page (default: the profile's)")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Save it under this name (default: PROFILE); runs use it as agent.auth")] = None,
    kind: Annotated[str, typer.Option("--kind", help="storage: cookies + localStorage + IndexedDB in one file; profile: a whole Chromium profile folder")] = "storage",
    wait_for: Annotated[str | None, typer.Option("--wait-for", help="Save as soon as this selector shows (e.g. the chat list)")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Stop waiting after S seconds (with --wait-for: fail)")] = None,
    headless: Annotated[bool, typer.Option("--headless", help="No window: for scripted logins with --wait-for")] = False,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Take the browser settings (auth_dir, connect) from this config")] = None,
    verbose: VerboseOption = False,
) -> None:
    """Log in to a chat UI once, in a real browser window; runs reuse it (agent.auth). It is a secret."""
    from drivers.auth import AuthError, check_name
    from drivers.browser import BrowserStartError
    from persona.cli.browsing import login as do_login
    from persona.cli.browsing import login_url

    console_logging(verbose)
    if kind not in ("storage", "profile"):
        fail(f"--kind must be storage or profile, not {kind!r}")
    browser, base_dir = browser_config(config)
    browser.headless = headless
    interactive = wait_for is None and timeout is None
    if interactive and not sys.stdin.isatty():
        fail("not a terminal: give --wait-for SELECTOR (or --timeout S) to know when the login is done")
    try:
        saved = run_stoppable(do_login(login_url(profile, url), browser, base_dir=base_dir, auth_dir=(base_dir / browser.auth_dir).resolve(),
                                     name=check_name(name or profile), kind=kind, wait_for=wait_for, timeout_s=timeout,
                                     interactive=interactive, say=typer.echo))
    except (ValueError, AuthError, BrowserStartError) as e:
        fail(str(e), EXIT_FAILED)
    what = "a Chromium profile" if saved.kind == "profile" else "storage state: cookies, localStorage, IndexedDB"
    typer.echo(f"saved login {saved.name!r} ({what}) to {saved.path} (owner-only; never commit it)\n"
               f'use it in config.jsonc: "agent": {{"auth": "{saved.name}", ...}}')


def browsers_path(
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
        root = linked_browsers_path(folder.resolve(), chromium=chromium, ffmpeg=find_ffmpeg(),
                                    headless_shell=find_system_chromium(headless=True))
    except (BrowserStartError, RuntimeError) as e:
        fail(str(e), EXIT_FAILED)
    if chromium is None:
        typer.secho("no system Chromium found: only ffmpeg is linked", fg="yellow", err=True)
    typer.echo(str(root))


def demo_agent(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1")] = 8765,
    data: Annotated[Path | None, typer.Option(help="Memory folder (default: in memory)")] = None,
) -> None:
    """Serve the bundled demo chat agent, to try it by hand or point a profile at it."""
    from demo_agent.web import DemoChatServer

    server = DemoChatServer(data)
    typer.echo(f"DemoMind at {server.start(port=port)}  (Ctrl-C stops)")
    try:
        run_stoppable(asyncio.Event().wait())
    except KeyboardInterrupt:
        server.stop()
