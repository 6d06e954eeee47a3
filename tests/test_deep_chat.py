"""deep-chat, a real chat web component from the npm registry, whose whole UI lives in its open shadow
root: its bundle is served by the chat lab, which answers in deep-chat's stream protocol. The
`deep_chat` profile drives it as shipped (plus a New-chat button, as the lab keeps the history)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from drivers.base import AgentErrorReply
from drivers.deep_chat import PROFILE
from tests.conftest import mmb
from tests.support.chat_lab import ChatLab, LabScenario
from tests.support.node_frontends import npm_install

pytestmark = pytest.mark.usefixtures("chromium")

DEEP_CHAT = ("deep-chat@2.4.2",)


@pytest.fixture(scope="module")
def bundle() -> Path:
    """deep-chat's browser bundle, installed once into .frontends/deep-chat (a few seconds)."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed (apt-get install npm)")
    try:
        installed = npm_install("deep-chat", DEEP_CHAT, timeout_s=300)
    except RuntimeError as e:  # no registry here: say so rather than fail the suite
        pytest.skip(f"cannot install {DEEP_CHAT[0]} from the npm registry: {str(e)[:300]}")
    return installed.home / "node_modules" / "deep-chat" / "dist" / "deepChat.bundle.js"


def profile(lab: ChatLab, **options):
    return PROFILE.with_overrides({"new_chat": "#new-chat"}, {"new_session": "button", "keeps_history": True,
                                                             "url": lab.url + "/",
                                                             "completion": {"first_bubble_timeout_s": 20}, **options})


def test_a_conversation_with_a_new_chat_in_deep_chat(harness, bundle, tmp_path):
    async def go(lab: ChatLab):
        driver = await harness.driver(profile(lab), tmp_path)
        try:
            first = await driver.send("My cat is Tom.")
            second = await driver.send("Line one\nline two")
            users = (await driver.chat_before()).users
            info = await driver.new_session()
            third = await driver.send("Hello again")
            return [first, second, third], users, info
        finally:
            await driver.close()

    with ChatLab(LabScenario(frontend="deep-chat", first_token_ms=300, chunk_ms=30), deep_chat=bundle) as lab:
        replies, users, info = harness.run(go(lab))
        assert lab.received == ["My cat is Tom.", "Line one\nline two", "Hello again"]
    assert [r.bubbles for r in replies] == [["echo: My cat is Tom."], ["echo: Line one\nline two"], ["echo: Hello again"]]
    assert all(r.signal.startswith("busy-gone+placeholder-gone+stable(") for r in replies), replies
    assert users == 2 and info.reset_sign.endswith("no messages left (2 before)")


def test_deep_chat_error_bubble(harness, bundle, tmp_path):
    with ChatLab(LabScenario(frontend="deep-chat", error_next=1), deep_chat=bundle) as lab:
        with pytest.raises(AgentErrorReply) as caught:
            harness.chat(profile(lab), tmp_path, ["Are you there?"])
    assert caught.value.text == "Error, please try again."



def test_probe_agrees_with_the_run_on_deep_chat(bundle, tmp_path):
    with ChatLab(LabScenario(frontend="deep-chat"), deep_chat=bundle) as lab:
        done = mmb("probe", lab.url + "/", "--profile", "deep_chat", "-s", "new_chat=#new-chat",
                   "-o", "new_session=button", "--out", str(tmp_path))
        received = list(lab.received)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "; 1 open shadow root\n" in out, out
    assert "reply[0]: 'echo: [mmb probe] " in out and "no messages left (1 before)" in out
    assert out.rstrip().endswith("OK: the profile fits this page")
    assert len(received) == 1 and received[0].startswith("[mmb probe] "), received
