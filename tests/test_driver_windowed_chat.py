"""The generic driver on a chat that keeps only its last messages in the page and opens a popup.

Open WebUI renders only the last 8 messages and greets a new version with a "What's New" dialog
over the chat; this page does both (a window of 4 bubbles, a dialog over it from the start), so the
driver's sent-detection and `dismiss` selector are tested without installing anything.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from playwright.async_api import async_playwright

from drivers.browser import launch_chromium
from drivers.generic import PlaywrightDriver
from drivers.profile import Profile, Selectors

pytestmark = pytest.mark.usefixtures("chromium")

PAGE = """<!doctype html><html><body>
<div id="log"></div><textarea id="in"></textarea><button id="send">Send</button>
<script>
const log = document.getElementById("log"), box = document.getElementById("in");
const add = (cls, text) => { const d = document.createElement("div"); d.className = cls; d.textContent = text;
  log.appendChild(d); while (log.children.length > 4) log.firstChild.remove(); return d; };
document.getElementById("send").onclick = () => {
  const text = box.value; box.value = ""; add("user", text);
  const bot = add("bot", ""); let i = 0; const reply = "you said: " + text;
  const t = setInterval(() => { bot.textContent = reply.slice(0, i += 3); if (i >= reply.length) clearInterval(t); }, 30);
};
const popup = document.createElement("div"); popup.id = "whatsnew";
popup.style = "position:fixed;inset:0;background:#0008"; popup.innerHTML = '<button aria-label="Close">x</button>';
popup.querySelector("button").onclick = () => popup.remove(); document.body.appendChild(popup);
</script></body></html>"""


def test_replies_are_read_in_a_windowed_chat_with_a_popup(tmp_path: Path) -> None:
    (tmp_path / "chat.html").write_text(PAGE)
    profile = Profile(name="windowed", selectors=Selectors(
        input="#in", send="#send", assistant_message=".bot", user_message=".user",
        dismiss="#whatsnew button[aria-label=Close]"))

    async def play() -> list[str]:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            try:
                driver = PlaywrightDriver(profile, await browser.new_context(),
                                          base_url=(tmp_path / "chat.html").as_uri(), artifacts=tmp_path)
                await driver.open(None)
                texts = [(await driver.send(f"message {n}")).text for n in range(4)]
                assert await driver.page.locator("#whatsnew").count() == 0
                await driver.close()
                return texts
            finally:
                await browser.close()

    assert asyncio.run(play()) == [f"you said: message {n}" for n in range(4)]
