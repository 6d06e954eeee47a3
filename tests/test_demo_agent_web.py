"""DemoMind's web chat in real headless Chromium: the DOM contract the Playwright driver relies on."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from demo_agent.brain import NOTICE_TEXT
from demo_agent.web import DemoChatServer
from drivers.browser import CHROMIUM_ARGS

CHROMIUM = "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing", allow_module_level=True)
pytest.importorskip("playwright.sync_api")

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402

ARGS = ["--no-sandbox", *CHROMIUM_ARGS]  # the driver's own offline flags
WELCOME = "Hi! I'm DemoMind. Tell me about your life — I'll try to remember."

# Records, in order, every bubble added to #messages (with its classes at that moment) and
# every bubble that got data-done, so tests can check the placeholder → stream → done sequence.
RECORDER = """
window.__log = [];
new MutationObserver((records) => {
  for (const r of records) {
    if (r.type === 'childList') {
      for (const n of r.addedNodes) {
        if (n.nodeType !== 1 || !n.classList.contains('msg')) continue;
        n.__id = window.__log.length;
        window.__log.push({t: 'add', id: n.__id, cls: n.className, text: n.textContent});
      }
    } else if (r.attributeName === 'data-done' && r.target.dataset.done === '1') {
      window.__log.push({t: 'done', id: r.target.__id, text: r.target.textContent});
    }
  }
}).observe(document, {childList: true, subtree: true, attributes: true, attributeFilter: ['data-done']});
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(8000)
    context.add_init_script(RECORDER)
    pg = context.new_page()
    yield pg
    context.close()


def start(data_dir: Path | None = None, **kw: float) -> DemoChatServer:
    server = DemoChatServer(data_dir, token_delay_s=kw.pop("token_delay_s", 0.001),
                            think_delay_s=kw.pop("think_delay_s", 0.01), **kw)  # type: ignore[arg-type]
    server.start("127.0.0.1", 0)
    return server


def send_and_wait(page: Page, text: str) -> None:
    """Send via Enter, then wait for the reply to finish (aria-busy goes back to false)."""
    sent = page.locator(".msg.user").count()
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")
    page.wait_for_function(
        """n => document.querySelectorAll('.msg.user').length > n
               && document.getElementById('messages').getAttribute('aria-busy') === 'false'""",
        arg=sent,
        polling="raf",
    )


def bubbles(page: Page) -> list[tuple[str, str]]:
    """(classes, text) of every bubble, in order."""
    rows = page.eval_on_selector_all(
        "#messages .msg", "els => els.map(e => [e.className, e.textContent])"
    )
    return [(c, t) for c, t in rows]


def test_welcome_then_streamed_reply(page: Page) -> None:
    server = start(think_delay_s=0.6, token_delay_s=0.06)
    try:
        page.goto(server.url + "/")
        assert "/c/" in page.url
        expect(page.locator("#messages[data-ready='1']")).to_have_count(1)
        assert bubbles(page) == [("msg assistant welcome", WELCOME)]
        expect(page.locator("h1")).to_have_text("DemoMind")
        expect(page.locator("#stop")).to_be_hidden()

        page.fill("#prompt", "My sister Anya is 24.")
        page.click("#send")
        expect(page.locator(".msg.user")).to_have_text("My sister Anya is 24.")
        placeholder = page.locator(".msg.assistant.placeholder")
        expect(placeholder).to_have_text("Thinking…")
        expect(page.locator("#stop")).to_be_visible()
        expect(page.locator("#stop")).to_have_text("Stop")
        expect(page.locator("#send")).to_be_disabled()
        expect(page.locator("#messages")).to_have_attribute("aria-busy", "true")
        assert page.input_value("#prompt") == ""

        # Mid-stream: no longer a placeholder, some text, not done yet.
        page.wait_for_function(
            """() => { const b = [...document.querySelectorAll('.msg.assistant')].pop();
                       return !b.classList.contains('placeholder') && !b.dataset.done
                              && b.textContent.length > 0 && b.textContent.length < 27; }""",
            polling="raf",
        )
        reply = page.locator(".msg.assistant:not(.welcome)")
        expect(reply).to_have_attribute("data-done", "1")
        expect(reply).to_have_text("Got it, I'll remember that.")
        expect(page.locator("#messages")).to_have_attribute("aria-busy", "false")
        expect(page.locator("#stop")).to_be_hidden()
        expect(page.locator("#send")).to_be_enabled()
        assert page.locator(".placeholder").count() == 0
    finally:
        server.stop()


def test_enter_sends_shift_enter_is_newline_and_multi_bubble(page: Page) -> None:
    server = start()
    try:
        page.goto(server.url + "/")
        page.click("#prompt")
        page.keyboard.type("line one")
        page.keyboard.press("Shift+Enter")
        page.keyboard.type("line two")
        assert page.input_value("#prompt") == "line one\nline two"
        assert page.locator(".msg.user").count() == 0
        page.keyboard.press("Enter")
        expect(page.locator("#messages")).to_have_attribute("aria-busy", "false")
        assert page.locator(".msg.user").text_content() == "line one\nline two"

        send_and_wait(page, "My salary is 3000 EUR a month.")
        send_and_wait(page, "Now my salary is 4000 EUR a month.")
        page.evaluate("window.__log = []")
        send_and_wait(page, "What is my salary?")
        replies = [t for c, t in bubbles(page) if c == "msg assistant"][-2:]
        assert replies == [
            "You told me: Now my salary is 4000 EUR a month.",
            "Also: My salary is 3000 EUR a month.",
        ]
        log = page.evaluate("window.__log")
        events = [(e["t"], e.get("cls", ""), e["text"]) for e in log]
        assert events[:3] == [
            ("add", "msg user", "What is my salary?"),
            ("add", "msg assistant placeholder", "Thinking…"),
            ("done", "", replies[0]),
        ]
        # The second bubble only after the first is done. The recorder reads its class and text when the
        # observer runs, which may be after its first chunk came in the same network read (a loaded
        # machine): then it is already the reply's start, no longer the placeholder.
        kind, cls, text = events[3]
        assert kind == "add" and ((cls, text) == ("msg assistant placeholder", "Thinking…")
                                  or (cls == "msg assistant" and replies[1].startswith(text))), events
        assert events[4:] == [("done", "", replies[1])], events
    finally:
        server.stop()


def test_new_chat_changes_url_and_keeps_only_notes(page: Page) -> None:
    server = start()
    try:
        page.goto(server.url + "/")
        first_url = page.url
        send_and_wait(page, "My dog Rex is 7 years old.")
        send_and_wait(page, "I love green tea in the morning.")
        page.click("#new-chat")
        page.wait_for_url(lambda u: u != first_url and "/c/" in u)
        expect(page.locator("#messages[data-ready='1']")).to_have_count(1)
        assert bubbles(page) == [("msg assistant welcome", WELCOME)]

        send_and_wait(page, "How old is my dog?")
        send_and_wait(page, "What do I love in the morning?")
        replies = [t for c, t in bubbles(page) if c == "msg assistant"]
        assert replies == ["You told me: My dog Rex is 7 years old.", "I don't think you told me that."]
    finally:
        server.stop()


def test_reload_and_restart_show_history_with_compaction(page: Page, tmp_path: Path) -> None:
    server = start(tmp_path, context_messages=4)
    try:
        page.goto(server.url + "/")
        conv_path = page.url.split(server.url, 1)[1]
        send_and_wait(page, "I love green tea.")
        send_and_wait(page, "I walk every evening with Rex.")  # a name: also a note
        send_and_wait(page, "What do I love?")  # 5th context message: compaction
        expect(page.locator(".msg.notice.compaction")).to_have_text(NOTICE_TEXT)
        live = bubbles(page)
        assert [c for c, _ in live] == [
            "msg assistant welcome",
            "msg user", "msg assistant",
            "msg user", "msg assistant",
            "msg user", "msg notice compaction", "msg assistant",
        ]  # fmt: skip

        page.reload()
        expect(page.locator("#messages[data-ready='1']")).to_have_count(1)
        assert bubbles(page) == live
        assert page.locator(".msg.assistant:not(.welcome):not([data-done='1'])").count() == 0
    finally:
        server.stop()

    server = start(tmp_path, context_messages=4)  # a new process would do the same: same data dir
    try:
        page.goto(server.url + conv_path)
        expect(page.locator("#messages[data-ready='1']")).to_have_count(1)
        assert bubbles(page) == live
        send_and_wait(page, "Who do I walk with in the evening?")  # compacts again: from notes
        assert bubbles(page)[-3:] == [
            ("msg user", "Who do I walk with in the evening?"),
            ("msg notice compaction", NOTICE_TEXT),
            ("msg assistant", "You told me: I walk every evening with Rex."),
        ]
    finally:
        server.stop()


def test_stop_cuts_the_stream_but_the_reply_is_saved(page: Page) -> None:
    server = start(think_delay_s=0.05, token_delay_s=0.2)
    try:
        page.goto(server.url + "/")
        page.fill("#prompt", "hello")
        page.click("#send")
        page.wait_for_selector(".msg.assistant:not(.welcome):not(.placeholder)")
        page.click("#stop")
        expect(page.locator("#messages")).to_have_attribute("aria-busy", "false")
        cut = page.locator(".msg.assistant[data-stopped='1']")
        expect(cut).to_have_attribute("data-done", "1")
        assert cut.text_content() != "Got it, I'll remember that."
        page.reload()
        expect(page.locator(".msg.assistant:not(.welcome)")).to_have_text("Got it, I'll remember that.")
    finally:
        server.stop()


def test_http_routes_without_a_browser(tmp_path: Path) -> None:
    with DemoChatServer(tmp_path, token_delay_s=0, think_delay_s=0) as server:
        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a: object, **k: object) -> None:
                return None

        opener = urllib.request.build_opener(NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as redirect:
            opener.open(server.url + "/")
        assert redirect.value.code == 302
        assert redirect.value.headers["Location"].startswith("/c/")

        def post(path: str, body: bytes) -> tuple[int, str, bytes]:
            req = urllib.request.Request(server.url + path, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req) as r:
                    return r.status, r.headers["Content-Type"], r.read()
            except urllib.error.HTTPError as e:
                return e.code, e.headers["Content-Type"], e.read()

        status, _, body = post("/api/new", b"")
        conv = json.loads(body)["id"]
        assert status == 200 and conv

        status, ctype, body = post(f"/api/c/{conv}/messages", json.dumps({"text": "I am Sergey."}).encode())
        assert status == 200 and ctype.startswith("text/event-stream")
        names = [line[7:] for line in body.decode().splitlines() if line.startswith("event: ")]
        assert names[0] == "bubble" and names[-2:] == ["bubble_done", "done"]
        assert set(names[1:-2]) == {"chunk"}
        chunks = [json.loads(line[6:])["text"] for line in body.decode().splitlines()
                  if line.startswith("data: ") and '"text"' in line][:-1]
        assert "".join(chunks) == "Got it, I'll remember that." and max(map(len, chunks)) <= 4

        assert post(f"/api/c/{conv}/messages", b'{"text": "  "}')[0] == 400
        assert post(f"/api/c/{conv}/messages", b"not json")[0] == 400
        with urllib.request.urlopen(f"{server.url}/api/c/{conv}") as r:
            history = json.loads(r.read())
        assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
        with urllib.request.urlopen(f"{server.url}/api/c/never-seen") as r:
            assert json.loads(r.read())["messages"] == []
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(server.url + "/nope")
        assert missing.value.code == 404
