"""An agent in a messenger, end to end: Synapse, the Hydrogen web client, OpenClaw's Matrix channel.

Everything runs on 127.0.0.1 and comes from a package registry: Synapse from PyPI (SQLite; the
tester and the bot registered with the shared secret), Hydrogen from npm (hydrogen-view-sdk,
tests/support/matrix_client.py), OpenClaw from npm with its Matrix channel plugin installed the
way its docs say (`openclaw plugins install`), its model the local server with the memory model of
the OpenClaw web-chat memory test (tests/support/openclaw_memory.py): each fact written to OpenClaw's
memory note with OpenClaw's read and write tools, each question answered from `memory_search` alone,
with the same memory settings (keyword search, no recall from other conversations, no dreaming).

The tester starts an end-to-end encrypted DM with the bot (as Element and Hydrogen make DMs), logs
in to Hydrogen once through its form, and the storage state is kept as `mmb login` keeps it. Then
the real `mmb run` plays tests/support/openclaw_bench through the `hydrogen` profile, opened by
the DM's deep link: facts told over several messages, answers that come as several messages,
`/new` (typed `//new`, Hydrogen's escape) acknowledged by the bot, checks graded. After `/new` the bot
knows only what its memory files hold, so the checks score as the web-chat memory test's do, and the
run's snapshots of those files give report.md's memory autopsy. What the run recorded is checked
against the room's events as Synapse stored them: every message typed once, every answer the bot sent
scraped whole, all of them encrypted (the server holds no message text).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from pathlib import Path

import pytest
from playwright.async_api import async_playwright

from drivers.auth import save_storage
from drivers.browser import launch_chromium
from tests.conftest import mmb
from tests.frontends.test_openclaw import _files_mention, _tail
from tests.support.frontends import install
from tests.support.matrix_client import hydrogen_client, served_hydrogen
from tests.support.node_frontends import MatrixChannel, install_openclaw, openclaw_gateway
from tests.support.openclaw_memory import MEMORY_SETTINGS, OpenClawMemoryModel
from tests.support.openclaw_memory_run import BENCH, UNWRITTEN, assert_kept_in_memory_files, memory_snapshots
from tests.support.quirk_server import QuirkServer
from tests.support.run_process import saved_state
from tests.support.synapse import Account, Homeserver, homeserver, synapse_frontend

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("chromium")]

MODEL = "mmb-test-model"
ENCRYPTED = True  # the bot supports E2EE (matrix-js-sdk's Rust crypto), so the DM is encrypted as clients make DMs
JOIN_TIMEOUT_S = 180
# The bot's longer answers go out as several messages, as a bot's often do: OpenClaw splits at a space
# before this many characters (its textChunkLimit), and sends the parts one after the other.
CHUNK_CHARS = 48


def _wait_joined(hs: Homeserver, room: str, tester: Account, bot_id: str) -> float:
    """Seconds until the bot accepted the DM's invite (OpenClaw's autoJoin); bounded."""
    started = time.monotonic()
    while bot_id not in hs.joined_members(room, tester):
        if time.monotonic() - started > JOIN_TIMEOUT_S:
            raise AssertionError(f"the bot did not join the DM within {JOIN_TIMEOUT_S} s")
        time.sleep(0.5)  # polling the homeserver: the join happens in another process
    return time.monotonic() - started


async def _log_in(client_url: str, account: Account, auth_file: Path) -> str:
    """Hydrogen's login form, once, as a person signs in; the login kept. Returns the session's address
    (`#/session/<n>`), which the DMs' links start with."""
    async with async_playwright() as pw:
        browser = await launch_chromium(pw)
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await context.new_page()
        await page.goto(client_url)
        await page.fill("#username", account.user_id.split(":")[0][1:])
        await page.fill("#password", account.password)
        await page.click("button[type=submit]")
        await page.locator(".RoomList").wait_for(timeout=120_000)  # first sync done
        await save_storage(context, auth_file)  # what `mmb login` writes: storage state with IndexedDB
        session = page.url
        await browser.close()
    assert "#/session/" in session, session
    return session


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    work = tmp_path_factory.mktemp("matrix")
    began = time.monotonic()
    synapse = install(synapse_frontend(""))
    openclaw = install_openclaw()
    client = hydrogen_client()
    print(f"\ninstalls: synapse {synapse.versions} {synapse.seconds:.0f} s, openclaw {openclaw.versions} "
          f"{openclaw.seconds:.0f} s, hydrogen {client.versions} {client.seconds:.0f} s (0 = cached)")
    model = OpenClawMemoryModel(unwritten=UNWRITTEN)
    with homeserver(work / "synapse") as hs:
        tester, bot = hs.register("rui"), hs.register("openclaw")
        hs.set_display_name(tester, "Rui")
        hs.set_display_name(bot, "OpenClaw")
        rooms = {"run": hs.create_dm(tester, bot, encrypted=ENCRYPTED),
                 "discover": hs.create_dm(tester, bot, encrypted=ENCRYPTED)}
        channel = MatrixChannel(hs.url, bot.user_id, bot.access_token, bot.device_id, (tester.user_id,),
                                tuple(rooms.values()), ENCRYPTED, chunk_chars=CHUNK_CHARS)
        started = time.monotonic()
        with QuirkServer(model, profile="vllm", model=MODEL, chunk_delay_s=0.1) as server, \
                openclaw_gateway(openclaw, model_url=server.base_url, model=MODEL, workdir=work / "openclaw",
                                 token=secrets.token_hex(16), matrix=channel, extra=MEMORY_SETTINGS) as gateway:
            ready = time.monotonic() - started
            joined = [_wait_joined(hs, room, tester, bot.user_id) for room in rooms.values()]
            with served_hydrogen(client, work / "hydrogen", hs.url) as client_url:
                auth = work / "auth"
                session = asyncio.run(_log_in(client_url, tester, auth / "hydrogen.json"))
                # the DM's address as Hydrogen shows it (`#/last-session/room/…` would open the last room
                # instead: Hydrogen 0.3.1 reads the last session only after it has parsed the address)
                links = {k: f"{session}/room/{room}" for k, room in rooms.items()}
                print(f"gateway ready {ready:.0f} s, bot joined {max(joined):.0f} s later, "
                      f"stack up {time.monotonic() - began:.0f} s")
                yield {"hs": hs, "tester": tester, "bot": bot, "rooms": rooms, "links": links, "auth": auth,
                       "model": model, "gateway_log": gateway.log, "workspace": work / "openclaw" / "workspace"}


def _messages(hs: Homeserver, room: str, tester: Account) -> list[dict]:
    """The room's messages as Synapse stored them (encrypted or not), oldest first."""
    return [e for e in hs.events(room, tester) if e["type"] in ("m.room.message", "m.room.encrypted")]


@pytest.mark.timeout(3600)
def test_a_benchmark_plays_through_a_matrix_client_to_openclaws_bot(matrix, tmp_path: Path, write_config) -> None:
    hs, tester, bot, room = matrix["hs"], matrix["tester"], matrix["bot"], matrix["rooms"]["run"]
    model: OpenClawMemoryModel = matrix["model"]
    config = write_config([{"id": "matrix", "benchmark": str(BENCH),
                            "agent": {"driver": "hydrogen", "url": matrix["links"]["run"], "auth": "hydrogen",
                                      "memory": memory_snapshots(matrix["workspace"])}}],
                          browser={"trace": "on", "auth_dir": str(matrix["auth"])})
    began = time.monotonic()
    done = mmb("run", "-c", str(config), timeout=2400)
    print(f"matrix run {time.monotonic() - began:.0f} s, {len(model.requests)} model requests, "
          f"tools {[u.name for u in model.tool_uses]}")
    results = tmp_path / "results"
    folder = results / "matrix"
    assert done.returncode == 0, (f"{done.stdout}\n{done.stderr}\n{_tail(folder / 'run.log')}\n"
                                  f"{_tail(matrix['gateway_log'])}")
    state = saved_state(folder)
    assert state["status"] == "finished"
    exchanges = [json.loads(line) for line in (folder / "transcript.jsonl").read_text().splitlines()]

    # `/new` was the new session, acknowledged by the bot; the model never saw the first session again:
    # after `/new` the dog's name first reached it in what its memory_search returned, and the person never
    # said it (the messages that say it are the model's answer from that search).
    assert [s["reason"] for s in state["sessions"]] == ["start", "newSession"]
    assert state["sessions"][1]["reset_sign"].startswith("agent acknowledged '//new'"), state["sessions"][1]
    after_reset = [r for r in model.requests if "What is our dog called?" in json.dumps(r)]
    saying = [[m["role"] for m in r if "Biscuit" in json.dumps(m)] for r in after_reset]
    assert [roles for roles in saying if roles][:1] == [["tool"]], saying
    assert not any({"system", "user"} & set(roles) for roles in saying), saying
    report = (results / "report.md").read_text()
    assert_kept_in_memory_files(folder, matrix["workspace"], model, state, report)

    # Against the room as Synapse stored it: each persona message and the one `/new` typed once,
    # each answer one the model gave, scraped whole; the bot sent nothing the run did not take.
    stored = _messages(hs, room, tester)
    ours = [e for e in stored if e["sender"] == tester.user_id]
    theirs = [e for e in stored if e["sender"] == bot.user_id]
    assert len(ours) == len(exchanges) + 1, (len(ours), len(exchanges))
    squash = lambda t: " ".join(t.split())  # noqa: E731
    answers = [squash(a) for a in model.answers]
    replies = [squash("\n".join(x["reply"])) for x in exchanges]
    assert all(r in answers for r in replies), replies
    assert any(len(x["reply"]) > 1 for x in exchanges), [x["reply"] for x in exchanges]  # several messages, one answer
    assert len(theirs) == sum(len(x["reply"]) for x in exchanges) + 1  # + the acknowledgement of /new

    # End-to-end encrypted: the server holds ciphertext only, none of the words said.
    assert hs.is_encrypted(room, tester) is ENCRYPTED
    assert {e["type"] for e in stored} == {"m.room.encrypted"}
    assert "Biscuit" not in json.dumps(stored)

    assert "4 of 4 planned checks graded" in report
    # The login (Hydrogen keeps the access token in localStorage) reached no file of the run, traces included.
    assert list((folder / "traces").glob("*.trace.zip"))
    assert _files_mention(results, tester.access_token) == []


@pytest.mark.timeout(1200)
def test_discover_on_the_dm_page(matrix, tmp_path: Path, write_config) -> None:
    """What `mmb discover` finds on Hydrogen's DM page with no profile, logged in as a run would be."""
    config = write_config([{"id": "unused", "benchmark": str(BENCH),  # discover reads only the browser settings
                            "agent": {"driver": "hydrogen", "url": matrix["links"]["discover"]}}],
                          browser={"auth_dir": str(matrix["auth"])})
    began = time.monotonic()
    found = mmb("discover", matrix["links"]["discover"], "--auth", "hydrogen", "-c", str(config),
                "--timeout", "300", "--out", str(tmp_path / "discover"), timeout=600)
    print(f"discover exit {found.returncode} in {time.monotonic() - began:.0f} s\n--- stdout\n{found.stdout}\n"
          f"--- stderr\n{found.stderr}")
    # It finds the composer and tells the sides apart by Hydrogen's own `.own`; no busy marker (Hydrogen
    # shows no typing); but no control starts a new chat, and forgetting the storage would log out.
    assert found.returncode == 1
    agent = json.loads(found.stdout)
    selectors = agent["selectors"]
    assert selectors["input"].startswith("textarea") and "busy" not in selectors, agent
    assert "own" in selectors["user_message"] and ":not(.own)" in selectors["assistant_message"], agent
    assert "forgetting the browser's storage would end the login (--auth)" in found.stderr
    # The deep link opened the DM it names: the one probe message is there, answered by the bot (in parts).
    senders = [e["sender"] for e in _messages(matrix["hs"], matrix["rooms"]["discover"], matrix["tester"])]
    assert senders[0] == matrix["tester"].user_id and set(senders[1:]) == {matrix["bot"].user_id}, senders
