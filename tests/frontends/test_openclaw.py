"""OpenClaw's real web chat: `npm openclaw` installed from the registry, its gateway on 127.0.0.1.

The gateway's model is a custom OpenAI-compatible provider pointed at a local server whose model
(tests/support/node_frontends.OpenClawChatModel) remembers only the conversation it is sent. The
scripted persona plays tests/support/frontend_bench through the Control UI with the `openclaw`
profile via the real `mmb run`: facts told, "+" for a new session, checks graded, state.json and
report.md written. A second test types `/new` instead and checks that the agent forgot.

The last test gives OpenClaw an agent model that uses its memory (tests/support/openclaw_memory.py):
facts written to the workspace's memory note with OpenClaw's own tools, memory_search after the new
chat, a small context that makes OpenClaw compact; the run snapshots those real files and the
autopsy classifies the misses from them.
"""

from __future__ import annotations

import asyncio
import io
import json
import secrets
import time
import zipfile
from pathlib import Path

import pytest
from playwright.async_api import async_playwright

from drivers.base import DriverError
from drivers.browser import launch_chromium
from drivers.generic import PlaywrightDriver
from drivers.registry import build_profile
from tests.conftest import mmb
from tests.support.chat_model import UNKNOWN
from tests.support.node_frontends import OpenClawChatModel, install_openclaw, openclaw_gateway
from tests.support.openclaw_memory import MEMORY_SETTINGS, OpenClawMemoryModel
from tests.support.openclaw_memory_run import BENCH as MEMORY_BENCH
from tests.support.openclaw_memory_run import UNWRITTEN, assert_kept_in_memory_files, memory_snapshots
from tests.support.quirk_server import QuirkServer
from tests.support.run_process import saved_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("chromium")]

BENCH = Path(__file__).resolve().parents[1] / "support" / "frontend_bench"
MODEL = "mmb-test-model"
TOKEN_ENV = "OPENCLAW_GATEWAY_TOKEN"
FRAGMENT = "#token=${" + TOKEN_ENV + "}"  # the token itself never enters the config
EXPECTED_SCORES = {"s1": 10, "n1": 0, "n2": 10}  # see frontend_bench/chapter2.md
# OpenClaw is told the model holds 20,000 tokens and trims its own prompt to that (a system prompt of
# about 8,500 tokens), the model server refuses requests past 11,000 as vLLM does: the first chat
# outgrows it after about five facts, and OpenClaw compacts.
CONTEXT_WINDOW, CONTEXT_LIMIT = 20000, 11000


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    installed = install_openclaw()
    model = OpenClawChatModel(think_s=0.5)
    token = secrets.token_hex(16)
    started = time.monotonic()
    # vLLM's rules: a frontend may send request fields of its own, which vLLM ignores and OpenAI refuses.
    with QuirkServer(model, profile="vllm", model=MODEL, chunk_delay_s=0.1) as server, \
            openclaw_gateway(installed, model_url=server.base_url, model=MODEL,
                             workdir=tmp_path_factory.mktemp("openclaw"), token=token) as running:
        port = running.url.split(":")[2].split("/")[0]
        print(f"\nopenclaw {installed.versions}: install {installed.seconds:.0f} s (0 = cached), "
              f"gateway ready {time.monotonic() - started:.0f} s")
        yield {"url": f"http://127.0.0.1:{port}/{FRAGMENT}", "token": token, "model": model, "log": running.log}


@pytest.fixture
def memory_gateway(tmp_path_factory):
    installed = install_openclaw()
    model = OpenClawMemoryModel(unwritten=UNWRITTEN, context_tokens=CONTEXT_LIMIT)
    token = secrets.token_hex(16)
    workdir = tmp_path_factory.mktemp("openclaw-memory")
    with QuirkServer(model, profile="vllm", model=MODEL, chunk_delay_s=0.05) as server, \
            openclaw_gateway(installed, model_url=server.base_url, model=MODEL, workdir=workdir, token=token,
                             context_window=CONTEXT_WINDOW, extra=MEMORY_SETTINGS) as running:
        port = running.url.split(":")[2].split("/")[0]
        yield {"url": f"http://127.0.0.1:{port}/{FRAGMENT}", "token": token, "model": model, "log": running.log,
               "workspace": workdir / "workspace", "server": server}


def _files_mention(folder: Path, secret: str) -> list[Path]:
    """Files (and trace.zip members) that contain the secret."""
    found = []
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        if path.suffix == ".zip":
            with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as z:
                if any(secret.encode() in z.read(n) for n in z.namelist()):
                    found.append(path)
        elif secret.encode() in path.read_bytes():
            found.append(path)
    return found


@pytest.mark.timeout(3600)
def test_a_benchmark_plays_through_openclaws_web_chat(gateway, tmp_path: Path, write_config) -> None:
    model: OpenClawChatModel = gateway["model"]
    config = write_config([{"id": "openclaw", "benchmark": str(BENCH),
                            "agent": {"driver": "openclaw", "url": gateway["url"]}}],
                          browser={"trace": "on"})
    began = time.monotonic()
    done = mmb("run", "-c", str(config), timeout=2400, env={TOKEN_ENV: gateway["token"]})
    print(f"openclaw run {time.monotonic() - began:.0f} s")
    results = tmp_path / "results"
    folder = results / "openclaw"
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{_tail(folder / 'run.log')}\n{_tail(gateway['log'])}"
    state = saved_state(folder)
    assert state["status"] == "finished"

    # Every reply is one the model gave, scraped whole once the UI said "Done in N s".
    exchanges = [json.loads(line) for line in (folder / "transcript.jsonl").read_text().splitlines()]
    squash = lambda t: " ".join(t.split())  # noqa: E731
    answers = {squash(a) for a in model.answers}
    assert all(squash("\n".join(x["reply"])) in answers for x in exchanges), [x["reply"] for x in exchanges]
    assert all("busy-gone" in x["signal"] and "done" in x["signal"] for x in exchanges), [x["signal"] for x in exchanges]

    # "+" opened a new session: the old transcript left the screen and the model never saw it again.
    assert [s["reason"] for s in state["sessions"]] == ["start", "newSession"]
    assert "no messages left" in state["sessions"][1]["reset_sign"]
    assert state["sessions"][1]["url"].startswith("/chat/")
    after_reset = [r for r in model.requests if "What is my dog called?" in json.dumps(r)]
    assert after_reset and not any("Biscuit" in json.dumps(r) for r in after_reset)

    scores = {e["check_id"]: e["score"] for e in state["evaluations"]}
    assert scores == EXPECTED_SCORES
    report = (results / "report.md").read_text()
    assert "3 of 3 planned checks graded" in report and "#### n1" in report

    # The gateway token reached the browser but none of the run's files, traces included.
    assert list((folder / "traces").glob("*.trace.zip"))
    assert _files_mention(results, gateway["token"]) == []
    assert "${OPENCLAW_GATEWAY_TOKEN}" in config.read_text()


@pytest.mark.timeout(1800)
def test_typing_new_opens_a_fresh_session_the_agent_knows_nothing_in(gateway, tmp_path: Path,
                                                                      monkeypatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, gateway["token"])
    profile = build_profile("openclaw", {}, {"new_session": "message"})

    async def play() -> tuple[str, str, list[str]]:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            driver = PlaywrightDriver(profile, await browser.new_context(viewport={"width": 1280, "height": 900}),
                                      base_url=gateway["url"], artifacts=tmp_path)
            try:
                await driver.open(None)
                told = await driver.send("Our cat is called Pixel.")
                asked_before = await driver.send("What is our cat called?")
                info = await driver.new_session()
                asked_after = await driver.send("What is our cat called?")
            finally:
                await driver.close()
                await browser.close()
            return info.reset_sign, driver.session_url or "", [told.text, asked_before.text, asked_after.text]

    try:
        sign, url, replies = asyncio.run(play())
    except DriverError as e:  # what the gateway did meanwhile tells why the UI did not follow
        pytest.fail(f"{e}\n--- gateway log (tail) ---\n{_tail(gateway['log'])}", pytrace=False)
    assert sign.startswith("sent '/new'; url changed") and "no messages left" in sign
    assert url.startswith("/chat/")
    assert "Pixel" in replies[1], replies
    assert replies[2] == UNKNOWN, replies


@pytest.mark.timeout(3600)
def test_openclaw_keeps_the_facts_in_its_memory_files_and_the_autopsy_reads_them(memory_gateway, tmp_path: Path,
                                                                                 write_config) -> None:
    model: OpenClawMemoryModel = memory_gateway["model"]
    config = write_config([{"id": "openclaw-memory", "benchmark": str(MEMORY_BENCH),
                            "agent": {"driver": "openclaw", "url": memory_gateway["url"],
                                      "memory": memory_snapshots(memory_gateway["workspace"])}}])
    began = time.monotonic()
    done = mmb("run", "-c", str(config), timeout=2400, env={TOKEN_ENV: memory_gateway["token"]})
    results = tmp_path / "results"
    folder = results / "openclaw-memory"
    print(f"openclaw memory run {time.monotonic() - began:.0f} s, {model.overflows} overflow(s), "
          f"{model.summaries} compaction summary(ies), tools {[u.name for u in model.tool_uses]}")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{_tail(folder / 'run.log')}\n{_tail(memory_gateway['log'])}"
    state = saved_state(folder)
    assert state["status"] == "finished"
    refused = memory_gateway["server"].rejections
    assert all(status == 400 and "maximum context length" in why for status, why in refused), refused

    # Every reply is the model's answer alone; the tool work it did is the turn's activity, never its text.
    exchanges = [json.loads(line) for line in (folder / "transcript.jsonl").read_text().splitlines()]
    squash = lambda t: " ".join(t.split())  # noqa: E731
    answers = {squash(a) for a in model.answers}
    assert all(squash("\n".join(x["reply"])) in answers for x in exchanges), [x["reply"] for x in exchanges]
    told = next(x for x in exchanges if x["sent"] == "Our dog is called Biscuit.")
    assert [a["title"] for a in told["activity"] if a["kind"] == "tool"] == ["1 read · 1 write"], told["activity"]
    asked = next(x for x in exchanges if x["sent"] == "What is our dog called?")
    assert [a for a in asked["activity"] if a["kind"] == "tool"], asked["activity"]
    assert "read" not in json.dumps(asked["activity"])  # a search, not a file read

    # The facts are in OpenClaw's own memory note, and only there: the new chat found them by searching;
    # the run's snapshots are those files, and the autopsy classifies each miss from them.
    report = (results / "report.md").read_text()
    assert_kept_in_memory_files(folder, memory_gateway["workspace"], model, state, report)

    # Each time the model refused a request for its length OpenClaw compacted (the first time in the
    # first chat) and said so in the thread: report.md counts them as the agent's compactions.
    notices = state["agent_notices"]
    assert model.overflows >= 1 and model.summaries >= model.overflows
    assert len(notices) == model.overflows and notices[0]["session"] == 0, notices
    assert all(n["text"].startswith("Context compacted\nEarlier messages were summarized") for n in notices), notices
    assert f"**Agent compactions observed:** {len(notices)} — turn {notices[0]['turn']} (session 0): ` Context compacted" \
        in report


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""
