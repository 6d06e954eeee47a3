"""From flags and config to what Playwright gets: launch and context options, --selector/--option pairs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from drivers import playwright_home
from drivers.browser import CHROMIUM_ARGS, context_options, launch_options, safe_endpoint
from drivers.settings import BrowserConfig, ConnectConfig
from persona.cli.browsing import parse_pairs, resolve_profile
from persona.cli.common import apply_overrides


def test_headed_and_slow_mo_reach_the_launch():
    config = BrowserConfig()
    apply_overrides(config, headed=True, slow_mo=300, trace="on", video=True)
    options = launch_options(config)
    assert options["headless"] is False and options["slow_mo"] == 300 and options["args"] == CHROMIUM_ARGS
    assert (config.trace, config.video) == ("on", True)


def test_headless_launches_take_the_headless_shell_where_installed(tmp_path, monkeypatch):
    for name in ("chromium", "chromium-headless-shell"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MMB_CHROMIUM", raising=False)
    assert launch_options(BrowserConfig(headless=True))["executable_path"] == str(tmp_path / "chromium-headless-shell")
    assert launch_options(BrowserConfig(headless=False))["executable_path"] == str(tmp_path / "chromium")
    (tmp_path / "chromium-headless-shell").unlink()  # a distribution without the package: the full browser
    assert launch_options(BrowserConfig(headless=True))["executable_path"] == str(tmp_path / "chromium")
    monkeypatch.setenv("MMB_CHROMIUM", str(tmp_path / "chromium"))  # a choice of one's own wins
    (tmp_path / "chromium-headless-shell").write_text("#!/bin/sh\n")
    (tmp_path / "chromium-headless-shell").chmod(0o755)
    assert launch_options(BrowserConfig(headless=True))["executable_path"] == str(tmp_path / "chromium")


def test_no_flags_keep_the_config():
    config = BrowserConfig(headless=True, slow_mo_ms=120, trace="off")
    apply_overrides(config, headed=False, slow_mo=None, trace=None, video=False)
    assert launch_options(config)["headless"] is True and launch_options(config)["slow_mo"] == 120
    assert config.trace == "off"


def test_video_is_recorded_at_the_viewport_size(tmp_path):
    options = context_options(BrowserConfig(viewport=(640, 480)), video_dir=tmp_path)
    assert options == {"viewport": {"width": 640, "height": 480}, "record_video_dir": str(tmp_path),
                       "record_video_size": {"width": 640, "height": 480}}
    assert "record_video_dir" not in context_options(BrowserConfig())


def test_connect_needs_exactly_one_endpoint():
    assert ConnectConfig(cdp_url="http://127.0.0.1:9222").ws_endpoint is None
    for bad in ({}, {"ws_endpoint": "ws://a", "cdp_url": "http://b"}):
        with pytest.raises(ValidationError, match="exactly one of ws_endpoint and cdp_url"):
            ConnectConfig(**bad)


def test_endpoints_are_logged_without_their_tokens():
    assert safe_endpoint("wss://user:pw@cloud.example:443/chromium?token=s3cret") == "wss://cloud.example:443/chromium?…"
    assert safe_endpoint("ws://127.0.0.1:3000/") == "ws://127.0.0.1:3000/"


def test_selector_and_option_pairs():
    assert parse_pairs(["input=textarea[name=q]", "send=true", "busy="], "--selector", json_values=False) == {
        "input": "textarea[name=q]", "send": "true", "busy": None}
    assert parse_pairs(["completion.quiet_ms=2000", "new_session=message", "new_session_ack=null"], "--option") == {
        "completion": {"quiet_ms": 2000}, "new_session": "message", "new_session_ack": None}
    with pytest.raises(ValueError, match="--option 'quiet_ms': write it as key=value"):
        parse_pairs(["quiet_ms"], "--option")


def test_a_probe_profile_from_flags():
    profile = resolve_profile("demo", "http://127.0.0.1:1/", {"busy": None}, {"completion": {"quiet_ms": 50}})
    assert profile.url == "http://127.0.0.1:1/" and profile.selectors.busy is None
    assert profile.completion.quiet_ms == 50 and profile.selectors.input == "textarea#prompt"
    with pytest.raises(ValueError, match="selectors.input: Field required"):
        resolve_profile("generic", "http://127.0.0.1:1/", {}, {})
    with pytest.raises(ValueError, match="completion.quiet_msx: Extra inputs are not permitted"):
        resolve_profile("demo", None, {}, {"completion": {"quiet_msx": 1}})


@pytest.mark.skipif(not playwright_home.sys.platform.startswith("linux"), reason="Linux layout")
def test_linked_browsers_folder_has_playwrights_names_and_keeps_installed_builds(tmp_path, monkeypatch):
    normal = tmp_path / "normal"
    (normal / "firefox-1").mkdir(parents=True)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(normal))
    root = playwright_home.linked_browsers_path(tmp_path / "linked", chromium="/bin/true", ffmpeg="/bin/echo")
    rev = playwright_home.revisions()
    chrome = next(root.glob(f"chromium-{rev['chromium']}/chrome-linux*/chrome"))
    assert os.readlink(chrome) == "/bin/true"
    assert os.readlink(root / f"ffmpeg-{rev['ffmpeg']}" / "ffmpeg-linux") == "/bin/echo"
    assert (root / "firefox-1").resolve() == (normal / "firefox-1").resolve()
    assert playwright_home.has_playwright_chromium(root) and playwright_home.has_playwright_ffmpeg(root)
    assert not playwright_home.has_playwright_ffmpeg(Path(tmp_path / "empty"))
