"""The browser commands behind `mmb probe` and `mmb login`: profile + browser config in, a result out."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from drivers.auth import SavedLogin, find_login, profile_path, run_login, secure_folder, storage_path
from drivers.browser import browser_host
from drivers.discover import Discovery, discover
from drivers.files import atomic_write
from drivers.generic import PlaywrightDriver
from drivers.probe import BUDGET_S as PROBE_BUDGET_S
from drivers.probe import DEFAULT_TEXT, ProbeReport, for_probe, probe
from drivers.probe import WAIT_S as PROBE_WAIT_S
from drivers.profile import Profile
from drivers.registry import GENERIC, build_profile
from drivers.settings import BrowserConfig
from persona.config import Config
from persona.engine.preflight import Preflight, judge_preflight, preflight
from persona.engine.runner import RunPlan, agent_url
from persona.errors import InputError
from persona.jsonc import load_jsonc, set_value


def parse_pairs(pairs: list[str], what: str, *, json_values: bool = True) -> dict[str, Any]:
    """`key=value` flags into a dict. With json_values, values that read as JSON (numbers, true,
    null) become that; otherwise they stay text, and an empty value is None (no such selector).

    A dotted key nests: `completion.quiet_ms=2000` -> {"completion": {"quiet_ms": 2000}}.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} {pair!r}: write it as key=value")
        value: Any = raw or None
        if json_values:
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw
        *parents, leaf = key.split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ValueError(f"{what} {pair!r}: {p} is not a group of settings")
        node[leaf] = value
    return out


def resolve_profile(name: str, url: str | None, selectors: dict[str, Any], options: dict[str, Any]) -> Profile:
    profile = build_profile(name, selectors, options)
    if profile is None:
        raise ValueError(f"driver {name!r} has no browser profile to probe")
    if url:
        profile = profile.model_copy(update={"url": url})
    if not profile.url:
        raise ValueError(f"profile {name!r} has no URL: give one")
    return profile


async def probe_page(profile: Profile, browser: BrowserConfig, *, base_dir: Path, out_dir: Path,
                     send: str | None, no_send: bool, login_name: str | None, auth_dir: Path, wait_s: float,
                     budget_s: float) -> ProbeReport:
    """The run's driver on the page, its time limits cut to the probe's budget (see drivers/probe.py);
    `send` is the test message's text (None: the default one)."""
    login = find_login(auth_dir, login_name) if login_name else None
    started = time.monotonic()
    async with browser_host(browser, base_dir) as host:
        chat = await host.new_context(login=login, video_dir=out_dir / "videos" if browser.video else None)
        budget_s -= time.monotonic() - started  # the browser's start is part of it
        driver = PlaywrightDriver(for_probe(profile, wait_s), chat.context, artifacts=out_dir, trace=browser.trace,
                                  screenshot_on_failure=browser.screenshot_on_failure, secrets=chat.secrets)
        failed = True
        try:
            report = await probe(driver, out_dir=out_dir, send=None if no_send else send or DEFAULT_TEXT,
                                 budget_s=budget_s)
            failed = not report.ok
        finally:
            files = await driver.close(failed=failed)
        report.traces = [f for f in files if f.name.endswith(".trace.zip")]
        return report


async def discover_chat(url: str, browser: BrowserConfig, *, base_dir: Path, out_dir: Path, login_name: str | None,
                        auth_dir: Path, send: bool, budget_s: float, say: Callable[[str], None]) -> Discovery:
    """`mmb discover`: the chat found on a page of the run's browser, checked on a fresh context (drivers/discover.py)."""
    login = find_login(auth_dir, login_name) if login_name else None
    async with browser_host(browser, base_dir) as host:
        first = await host.new_context(login=login)

        async def fresh():
            return (await host.new_context(login=login)).context

        return await discover(first.context, url, new_context=fresh, out_dir=out_dir, say=say, send=send,
                              budget_s=budget_s, logged_in=login is not None)


def write_agent(config: Path, run_id: str, agent: dict[str, Any]) -> None:
    """Put `agent` into the run `run_id` of config.jsonc, keeping the file's comments and layout."""
    data, _ = load_jsonc(config)
    runs = data.get("runs") if isinstance(data, dict) else None
    index = next((i for i, r in enumerate(runs or []) if isinstance(r, dict) and r.get("id") == run_id), None)
    if index is None:
        known = ", ".join(str(r.get("id")) for r in runs or [] if isinstance(r, dict))
        raise InputError.single(config, None, f"no run with id {run_id!r} (runs: {known or 'none'}): add it first")
    text = config.read_text(encoding="utf-8")
    atomic_write(config, set_value(text, ("runs", index, "agent"), agent), mode=config.stat().st_mode & 0o777)


async def check_runs(config: Config, plans: list[RunPlan], say: Callable[[str], None]) -> bool:
    """`mmb check`: each run's persona model and judge model (the run's own preflight) and chat page (a
    probe, nothing sent), without playing; True when all pass. A model shared by runs is checked once."""
    ok = True
    checked: dict[tuple[str | None, ...], Preflight] = {}
    for plan in plans:
        if plan.persona.kind == "openai":
            key = (plan.persona.base_url, plan.persona.model)
            checked[key] = report = checked.get(key) or await preflight(plan.persona)
            say(f"[{plan.run.id}] {report.render()}")
            ok = ok and report.ok
        else:
            say(f"[{plan.run.id}] persona: scripted (offline, nothing to check)")
        if plan.judge is not None and plan.judge.kind == "openai":
            key = ("judge", plan.judge.base_url, plan.judge.model or "")
            checked[key] = report = checked.get(key) or await judge_preflight(plan.judge)
            say(f"[{plan.run.id}] {report.render()}")
            ok = ok and report.ok
        if plan.profile is None:
            say(f"[{plan.run.id}] agent: {plan.run.agent.driver}, in process (no chat page)")
            continue
        async with agent_url(plan) as url:
            profile = plan.profile.model_copy(update={"url": url or plan.profile.url})
            probe = await probe_page(profile, config.browser, base_dir=config.base_dir,
                                     out_dir=config.results_path() / "check" / plan.run.id, send=None,
                                     no_send=True,  # a check before a run puts nothing in the agent's memory
                                     login_name=plan.run.agent.auth, auth_dir=config.auth_path(),
                                     wait_s=PROBE_WAIT_S, budget_s=PROBE_BUDGET_S)
        say(f"[{plan.run.id}] chat page {profile.url}:\n{probe.render()}")
        ok = ok and probe.ok
    return ok


def login_url(profile: str, url: str | None) -> str:
    """The page `mmb login PROFILE` opens: --url, else the profile's own."""
    if url:
        return url
    if profile == GENERIC:
        raise ValueError("the generic profile has no page of its own: give --url")
    built = build_profile(profile, {}, {})
    if built is None or not built.url:
        raise ValueError(f"profile {profile!r} has no URL of its own: give --url")
    return built.url


async def login(url: str, browser: BrowserConfig, *, base_dir: Path, auth_dir: Path, name: str,
                kind: str, wait_for: str | None, timeout_s: float | None, interactive: bool,
                say: Callable[[str], None]) -> SavedLogin:
    """Open the login page, let the user log in, keep the login under auth_dir (owner-only)."""
    secure_folder(auth_dir)
    if kind == "profile":
        target = SavedLogin(name, "profile", profile_path(auth_dir, name))
        target.path.mkdir(mode=0o700, exist_ok=True)
        os.chmod(target.path, 0o700)
        start_from: SavedLogin | None = target
    else:
        target = SavedLogin(name, "storage", storage_path(auth_dir, name))
        start_from = target if target.path.is_file() else None  # a re-login refreshes the old one
    browser = browser.model_copy(update={"video": False})  # a recording would hold the login itself
    async with browser_host(browser, base_dir) as host:
        chat = await host.new_context(login=start_from)
        try:
            await run_login(chat.context, url=url, login=target, wait_for=wait_for,
                            timeout_s=timeout_s, interactive=interactive, say=say)
        finally:
            await chat.context.close()
    return target
