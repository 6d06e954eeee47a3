"""`mmb login` and agent.auth: a login saved owner-only, brought back whole, and never leaked."""

from __future__ import annotations

import asyncio
import io
import json
import os
import pty
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from drivers.auth import find_login, write_secret_json
from drivers.browser import BrowserHost
from drivers.settings import BrowserConfig
from drivers.trace_scrub import REDACTED, scrub_trace
from tests.conftest import REPO, demo_run, mmb
from tests.support.async_browser import BrowserHarness
from tests.support.chat_lab import ChatLab
from tests.support.login_site import LoginSite

pytestmark = pytest.mark.usefixtures("chromium")


@pytest.fixture
def site() -> Iterator[LoginSite]:
    with LoginSite(cookie="ck-" + secrets.token_hex(8), local="ls-" + secrets.token_hex(8),
                   idb="idb-" + secrets.token_hex(8)) as site:
        yield site


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def login(site: LoginSite, auth_dir: Path, *extra: str) -> tuple[int, str]:
    config = auth_dir.parent / "login-config.jsonc"
    config.write_text(json.dumps({"browser": {"auth_dir": str(auth_dir)}, "runs": [{"id": "x", "benchmark": "."}]}))
    done = mmb("login", "generic", "--url", site.url + "/login", "--name", "site", "--wait-for", "#ready",
               "--headless", "-c", str(config), *extra)
    return done.returncode, done.stdout + done.stderr


def read_back(harness: BrowserHarness, site: LoginSite, auth_dir: Path) -> dict[str, str]:
    """What a run's context, made from the saved login, shows on the site's check page."""

    async def go() -> dict[str, str]:
        host = BrowserHost(harness.pw, BrowserConfig())
        chat = await host.new_context(login=find_login(auth_dir, "site"))
        try:
            page = chat.context.pages[0] if chat.context.pages else await chat.context.new_page()
            await page.goto(site.url + "/check")
            await page.wait_for_selector("#idb[data-read='1']")
            return {k: await page.inner_text(f"#{k}") for k in ("cookie", "local", "idb")}
        finally:
            await chat.context.close()
            await host.close()

    return harness.run(go())


def test_login_saves_cookies_local_storage_and_indexeddb_owner_only(harness, site, tmp_path):
    auth_dir = tmp_path / ".auth"
    code, out = login(site, auth_dir)
    assert code == 0, out
    saved = auth_dir / "site.json"
    assert f"saved login 'site' (storage state: cookies, localStorage, IndexedDB) to {saved}" in out
    assert mode(auth_dir) == 0o700 and mode(saved) == 0o600
    assert read_back(harness, site, auth_dir) == site.secrets
    assert set(find_login(auth_dir, "site").secrets()) >= set(site.secrets.values())


def test_login_as_a_persistent_profile(harness, site, tmp_path):
    auth_dir = tmp_path / ".auth"
    code, out = login(site, auth_dir, "--kind", "profile")
    assert code == 0, out
    profile = auth_dir / "site.profile"
    assert profile.is_dir() and mode(profile) == 0o700 and mode(auth_dir) == 0o700
    assert read_back(harness, site, auth_dir) == site.secrets


def test_login_that_never_completes_saves_nothing(site, tmp_path):
    auth_dir = tmp_path / ".auth"
    code, out = login(site, auth_dir, "--timeout", "2", "--wait-for", "#never")
    assert code == 1
    assert "'#never' did not show within 2 s: not logged in, nothing saved" in out
    assert not (auth_dir / "site.json").exists()


def test_login_without_a_terminal_needs_a_condition(tmp_path):
    done = mmb("login", "generic", "--url", "http://127.0.0.1:9/")
    assert done.returncode == 2
    assert "not a terminal: give --wait-for SELECTOR (or --timeout S)" in done.stderr


def test_a_missing_login_is_a_config_error_at_its_line(write_config):
    config = write_config([demo_run(auth="nobody")])
    done = mmb("run", "-c", str(config))
    assert done.returncode == 2
    line = next(i for i, text in enumerate(config.read_text().splitlines(), 1) if '"auth"' in text)
    assert f"{config}:{line}: run demo: no login named 'nobody'" in done.stderr and "no login named 'nobody'" in done.stderr and "mmb login" in done.stderr


def test_a_run_uses_the_login_and_keeps_it_out_of_results_and_traces(write_bench, write_config, tmp_path):
    from tests.test_debugging import LAB_SELECTORS, TINY

    bench = write_bench(TINY)
    cookie, token = "ck-" + secrets.token_hex(8), "tok-" + secrets.token_hex(8)
    with ChatLab() as lab:
        write_secret_json(tmp_path / ".auth" / "lab.json", {
            "cookies": [{"name": "sid", "value": cookie, "domain": "127.0.0.1", "path": "/", "expires": -1,
                         "httpOnly": True, "secure": False, "sameSite": "Lax"}],
            "origins": [{"origin": lab.url, "localStorage": [{"name": "token", "value": token}]}]})
        run = {"id": "a", "benchmark": str(bench),
               "agent": {"driver": "generic", "url": lab.url + "/", "selectors": LAB_SELECTORS, "auth": "lab"}}
        config = write_config([run], browser={"trace": "on", "auth_dir": str(tmp_path / ".auth")})
        done = mmb("run", "-c", str(config))
        sent_cookies = list(lab.cookies)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sent_cookies and all(c == f"sid={cookie}" for c in sent_cookies), "the run used the login"
    results = tmp_path / "results"
    traces = sorted((results / "a" / "traces").iterdir())
    assert len(traces) == 2
    for path in results.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert cookie.encode() not in data and token.encode() not in data, path
    with zipfile.ZipFile(traces[0]) as z:
        network = z.read("trace.network").decode()
    assert f'"name":"Cookie","value":"{REDACTED}"' in network  # the header is there, its value is not


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_scrub_trace_redacts_credentials_and_known_secrets(tmp_path):
    secret = 'tok"en\u00e9-123456'
    request = {"type": "resource-snapshot", "snapshot": {
        "request": {"headers": [{"name": "Cookie", "value": "sid=abcdef"}, {"name": "Accept", "value": "*/*"},
                                {"name": "authorization", "value": "Bearer xyz123"}],
                    "cookies": [{"name": "sid", "value": "abcdef"}]},
        "response": {"headers": [{"name": "Set-Cookie", "value": "sid=abcdef; HttpOnly"}], "cookies": []}}}
    image = b"\xff\xd8" + secret.encode() + b"\xff\xd9"
    trace = tmp_path / "t.trace.zip"
    trace.write_bytes(_zip({
        "trace.network": (json.dumps(request) + "\n").encode(),
        "trace.trace": json.dumps({"type": "after", "result": {"value": secret}}).encode(),
        "resources/page.html": f"<p>{secret}</p>".encode(),
        "screencast/shot.jpeg": image,
    }))
    scrub_trace(trace, [secret, "short"])
    with zipfile.ZipFile(trace) as z:
        network = json.loads(z.read("trace.network"))["snapshot"]
        text = z.read("trace.trace").decode() + z.read("resources/page.html").decode()
        assert z.read("screencast/shot.jpeg") == image  # images are left as they are
    headers = {h["name"]: h["value"] for h in network["request"]["headers"]}
    assert headers == {"Cookie": REDACTED, "Accept": "*/*", "authorization": REDACTED}
    assert network["request"]["cookies"] == [{"name": "sid", "value": REDACTED}]
    assert network["response"]["headers"][0]["value"] == REDACTED
    assert "abcdef" not in json.dumps(network) and "tok" not in text and text.count(REDACTED) == 2


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is not installed")
def test_interactive_login_in_a_headed_window_saves_on_enter(site, tmp_path):
    """As a person does it: a window opens (under Xvfb here), they log in, then press Enter."""
    auth_dir = tmp_path / ".auth"
    config = tmp_path / "login-config.jsonc"
    config.write_text(json.dumps({"browser": {"auth_dir": str(auth_dir)}, "runs": [{"id": "x", "benchmark": "."}]}))
    leader, follower = pty.openpty()  # the CLI asks for Enter only on a terminal
    proc = subprocess.Popen(["xvfb-run", "-a", sys.executable, "-m", "persona", "login", "generic", "--url",
                             site.url + "/login", "--name", "site", "-c", str(config)],
                            cwd=REPO, stdin=follower, stdout=follower, stderr=subprocess.PIPE, start_new_session=True)
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 120
        while b"then press Enter here" not in seen:
            assert time.monotonic() < deadline and proc.poll() is None, seen.decode(errors="replace")
            if select.select([leader], [], [], 1)[0]:
                seen += os.read(leader, 4096)
        os.write(leader, b"\n")  # the login cookie came with the page itself
        assert proc.wait(timeout=120) == 0, proc.stderr.read().decode()
        while select.select([leader], [], [], 1)[0]:
            try:
                seen += os.read(leader, 4096)
            except OSError:
                break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
        os.close(leader)
    assert b"saved login 'site'" in seen
    saved = json.loads((auth_dir / "site.json").read_text())
    assert any(c["value"] == site.secrets["cookie"] for c in saved["cookies"])


def test_runs_that_start_together_share_one_browser(harness):
    async def go() -> int:
        host = BrowserHost(harness.pw, BrowserConfig())
        chats = await asyncio.gather(*(host.new_context() for _ in range(3)))
        try:
            return len({id(chat.context.browser) for chat in chats})
        finally:
            for chat in chats:
                await chat.context.close()
            await host.close()

    assert harness.run(go()) == 1
