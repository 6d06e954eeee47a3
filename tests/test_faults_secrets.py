"""No secret in what a run leaves behind: the persona's API key (in the environment, and echoed by
a flaky endpoint), the agent page's session cookie and local storage, with traces on; through the
real CLI in real Chromium."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from demo_agent.faults import ENV as DEMO_FAULTS_ENV
from drivers.trace_scrub import REDACTED
from tests.conftest import REPO, mmb
from tests.support.quirk_server import QuirkServer, scripted_responder
from tests.support.tiny import TINY

pytestmark = pytest.mark.usefixtures("chromium")

KEY = "sk-live-do-not-leak-7f3a9c2e5b"
COOKIE = "sess-do-not-leak-41d8e0b7c6"


def everything_written(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, with each zip (traces) opened up."""
    out = {}
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        out[str(path)] = data
        if zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                out |= {f"{path}!{name}": z.read(name) for name in z.namelist()}
    return out


def test_no_key_cookie_or_storage_in_results_with_traces_on(write_bench, write_config, tmp_path):
    bench = write_bench(TINY)
    echoing = {"status": 500, "message": f"upstream said: bad key {KEY}"}
    with QuirkServer(scripted_responder()) as server:
        server.faults = [echoing]
        persona = {"kind": "openai", "base_url": server.base_url, "model": "m", "api_key_env": "MMB_TEST_SECRET_KEY"}
        run = {"id": "s", "benchmark": str(bench), "agent": {"driver": "demo"}}
        config = write_config([run], persona=persona)
        done = mmb("run", "-c", str(config), "--trace", "on",
                   env={"MMB_TEST_SECRET_KEY": KEY, DEMO_FAULTS_ENV: json.dumps({"set_cookie": COOKIE})})
    assert done.returncode == 0, done.stderr + done.stdout
    assert server.requests[0] and KEY not in done.stderr + done.stdout
    results = tmp_path / "results"
    files = everything_written(results)
    traces = [name for name in files if name.endswith(".trace.zip")]
    assert len(traces) == 2, "one trace per chat session"
    assert any(name.endswith("!trace.network") for name in files)
    log = (results / "s" / "run.log").read_text()
    assert "retrying" in log and "bad key ***" in log, "the echoed key was logged, masked"
    for name, data in files.items():
        assert KEY.encode() not in data, name
        assert COOKIE.encode() not in data, name
    network = next(data for name, data in files.items() if name.endswith("!trace.network"))
    entries = [json.loads(line) for line in network.decode().splitlines() if line.strip()]
    assert any(h["name"].lower() == "set-cookie" and h["value"] == REDACTED
               for e in entries for h in e.get("snapshot", {}).get("response", {}).get("headers", []))


def test_log_files_mask_registered_secrets_in_messages_and_tracebacks(tmp_path):
    import logging

    from persona.secrets import RedactingFilter, register_secret

    register_secret(KEY)
    handler = logging.FileHandler(tmp_path / "run.log")
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("test.secrets")
    logger.addHandler(handler)
    try:
        logger.warning("calling with %s", KEY)
        try:
            raise ValueError(f"bad key {KEY}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
        handler.close()
    text = (tmp_path / "run.log").read_text()
    assert KEY not in text and text.count("***") == 2, text


URL_TOKENS = {"MMB_T_PATH": "pathtok-4f1c9e2a7b", "MMB_T_QUERY": "querytok-8d3b0c5e1f", "MMB_T_FRAG": "fragtok-2a6e9d4c0b"}


def test_tokens_in_the_chat_url_reach_no_output_and_show_as_placeholders(write_bench, write_config, tmp_path):
    """A token in the URL's path, query and fragment: the run is killed right after its new chat opened
    and resumed (the saved chat address is filled in again to reopen it); no file, trace or line of
    the terminal holds a token, and the addresses it shows have `${NAME}` where each one was."""
    import signal

    from demo_agent.web import DemoChatServer
    from persona.crashpoints import ENV as CRASH_ENV

    bench = write_bench(TINY)
    with DemoChatServer(tmp_path / "agent", think_delay_s=0.01, token_delay_s=0.001) as server:
        url = server.url + "/c/${MMB_T_PATH}?k=${MMB_T_QUERY}#f=${MMB_T_FRAG}"
        config = write_config([{"id": "u", "benchmark": str(bench), "agent": {"driver": "demo", "url": url}}])

        def run(**env: str) -> tuple[int, str]:
            done = subprocess.run([sys.executable, "-m", "persona", "run", "-v", "--trace", "on", "-c", str(config)],
                                  cwd=REPO, env={**os.environ, **URL_TOKENS, **env}, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, start_new_session=True, timeout=300)
            return done.returncode, done.stdout

        killed, first = run(**{CRASH_ENV: "session.opened#1"})
        done, second = run()
    assert killed == -signal.SIGKILL and done == 0, second[-3000:]
    assert "resuming" in second
    state = json.loads((tmp_path / "results" / "u" / "state.json").read_text())
    assert state["status"] == "finished" and len(server.brain.conversation_ids()) == 3, "first chat, a new one, and the redone new one"
    assert state["sessions"][0]["url"].endswith("#f=${MMB_T_FRAG}")
    assert "/c/${MMB_T_PATH}?k=${MMB_T_QUERY}#f=${MMB_T_FRAG} -> " in state["sessions"][1]["reset_sign"]
    report = (tmp_path / "results" / "report.md").read_text()
    assert "${MMB_T_PATH}" in report
    outputs = {"terminal, first run": first.encode(), "terminal, second run": second.encode(),
               **everything_written(tmp_path / "results")}
    assert any(name.endswith("!trace.network") for name in outputs)
    for name, data in outputs.items():
        for token in URL_TOKENS.values():
            assert token.encode() not in data, (name, token)
