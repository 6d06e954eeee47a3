"""The generic Playwright driver: any web chat, described by a Profile of selectors.

A reply is found and judged complete inside the page, by one polled function: new agent bubbles are
those after our own bubble (or, without a user selector, those not marked before sending); it is
complete when no busy marker is visible, the done marker is there (if the profile has them) and
the text has not changed for a quiet window. Placeholders ("Thinking…") and ignored bubbles
(welcome) never count. Polling runs in the page, so detection costs no Python round trips.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
import time
from pathlib import Path
from urllib.parse import urljoin

from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from .base import AgentErrorReply, ChatDriver, DriverError, OnSent, RateLimited, Reply, ReplyTimeout, SessionInfo
from .profile import Profile
from .tracing import SessionTracer, TraceMode

log = logging.getLogger(__name__)

_REPLY_JS = r"""
(cfg) => {
  const st = (window.__mmbWaits = window.__mmbWaits || {});
  const now = performance.now();
  const w = st[cfg.token] || (st[cfg.token] = {sig: null, since: now});
  const all = (s) => (s ? Array.from(document.querySelectorAll(s)) : []);
  const visible = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const after = (a, b) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
  const placeholders = cfg.placeholders.map((p) => new RegExp(p, "i"));
  const textOf = (el) => {
    let t = el.innerText || el.textContent || "";
    if (cfg.strip) for (const s of el.querySelectorAll(cfg.strip)) { const x = (s.innerText || s.textContent || "").trim(); if (x) t = t.replace(x, ""); }
    return t.trim();
  };
  let bubbles = all(cfg.assistant).filter((el) => !(cfg.ignore && el.closest(cfg.ignore)));
  const users = cfg.user ? all(cfg.user) : [];
  const anchor = users.length > cfg.usersBefore ? users[users.length - 1] : null;
  if (cfg.error) {  // an error where the reply should be ends the wait at once
    const errors = all(cfg.error).filter((el) => visible(el) && (anchor ? after(anchor, el) : !el.hasAttribute("data-mmb-seen")));
    if (errors.length) { delete st[cfg.token]; return {stage: "error shown", error: textOf(errors[errors.length - 1]) || "(an empty error)"}; }
  }
  if (cfg.user) {
    if (!anchor) return cfg.diagnose ? {stage: "our message is not shown"} : false;
    bubbles = bubbles.filter((el) => after(anchor, el));
  } else {
    bubbles = bubbles.filter((el) => !el.hasAttribute("data-mmb-seen"));
  }
  const real = bubbles.filter((el) => !placeholders.some((r) => r.test(textOf(el))));
  const texts = real.map(textOf);
  const busy = all(cfg.busy).some(visible);
  const last = bubbles[bubbles.length - 1];
  const done = !cfg.done || (!!last && (last.matches(cfg.done) || !!last.querySelector(cfg.done) ||
                all(cfg.done).some((d) => after(last, d))));
  const sig = JSON.stringify(texts);
  if (sig !== w.sig) { w.sig = sig; w.since = now; }
  const markers = !!(cfg.busy || cfg.done);
  const quiet = markers ? cfg.quietMarkers : cfg.quiet;
  const stableFor = now - w.since;
  if (cfg.diagnose) return {stage: texts.length ? "reply not complete" : "no reply bubble", busy, done,
                            bubbles: texts.length, last: (texts[texts.length - 1] || "").slice(-200), stableFor};
  if (cfg.firstOnly) return bubbles.length > 0;
  if (!texts.length || busy || !done || stableFor < quiet) return false;
  const notices = all(cfg.notice).filter((n) => !n.hasAttribute("data-mmb-seen")).map(textOf);
  delete st[cfg.token];
  const signal = [cfg.busy ? "busy-gone" : null, cfg.done ? "done" : null, `stable(${quiet}ms)`].filter(Boolean).join("+");
  return {bubbles: texts, signal, notices};
}
"""

_MARK_SEEN_JS = """(sels) => { for (const s of sels) for (const el of document.querySelectorAll(s)) el.setAttribute("data-mmb-seen", "1"); }"""

_tokens = itertools.count(1)


class PlaywrightDriver(ChatDriver):
    def __init__(self, profile: Profile, context: BrowserContext, *, base_url: str | None = None,
                 artifacts: Path, trace: TraceMode = "off", screenshot_on_failure: bool = True):
        self.profile = profile
        self.name = profile.name
        self.context = context
        self.base_url = base_url or profile.url
        if not self.base_url:
            raise DriverError(f"profile {profile.name!r} needs a chat URL (agent.url in config.jsonc)")
        self.artifacts = artifacts
        self.tracer = SessionTracer(context, artifacts / "traces", trace)
        self.screenshot_on_failure = screenshot_on_failure
        self.page: Page | None = None
        self._crashed = False
        self._session_index = 0
        self._turn = 0

    # -- lifecycle -----------------------------------------------------------------------------

    async def open(self, session_url: str | None, session_index: int = 0) -> SessionInfo:
        self._session_index = session_index
        if self.page is None:
            await self.tracer.start(session_index)
        if self.page is None or self.page.is_closed() or self._crashed:  # first open, or after a crash
            if self.page is not None and not self.page.is_closed():
                with contextlib.suppress(PlaywrightError):
                    await self.page.close()  # the crashed page: its renderer is gone
            self._crashed = False
            self.page = await self.context.new_page()
            self.page.on("crash", self._on_crash)
        url = urljoin(self.base_url, session_url) if session_url else self.base_url
        try:
            await self.page.goto(url, wait_until="domcontentloaded")
        except PlaywrightError as e:
            raise await self._error(f"cannot open the chat at {url}: {str(e).splitlines()[0]}") from None
        await self._wait_ready()
        return SessionInfo(url=self.session_url)

    def _on_crash(self, page: Page) -> None:
        log.warning("the chat page crashed")
        self._crashed = True

    async def close(self, failed: bool = False) -> list[Path]:
        files = []
        try:
            files = await self.tracer.finish(failed)
        finally:
            await self.context.close()
        return files

    @property
    def session_url(self) -> str | None:
        """The chat's address, relative to the base URL when under it (ports change across restarts)."""
        if self.page is None:
            return None
        url = self.page.url
        base = self.base_url.rstrip("/")
        return url[len(base):] or "/" if url.startswith(base) else url

    # -- sending and replies -------------------------------------------------------------------

    async def send(self, text: str, on_sent: OnSent | None = None) -> Reply:
        page = self._page()
        self._turn += 1
        await self.tracer.group(f"turn {self._turn}")
        started = time.monotonic()
        users_before = await self.user_message_count()
        await page.evaluate(_MARK_SEEN_JS, [s for s in (self._sel.assistant_message, self._sel.notice, self._sel.error) if s])
        await self._type(text)
        await self._submit()
        await self._wait_sent(users_before)
        if on_sent:
            await on_sent()
        reply = await self._wait_reply(users_before or 0)
        reply.seconds = time.monotonic() - started
        await self.tracer.end_group()
        return reply

    async def user_message_count(self) -> int | None:
        if not self._sel.user_message:
            return None
        return await self._page().locator(self._sel.user_message).count()

    async def recover(self, text: str, user_messages_before: int | None) -> Reply | None:
        """Our message is in the chat if there are more user bubbles than before and the last is ours."""
        if not self._sel.user_message or user_messages_before is None:
            return None
        users = self._page().locator(self._sel.user_message)
        count = await users.count()
        if count <= user_messages_before:
            return None
        shown = " ".join((await users.nth(count - 1).inner_text()).split())
        if shown != " ".join(text.split()):
            return None
        log.info("resume: the message was already sent; waiting for its reply instead of sending it again")
        return await self._wait_reply(count - 1)

    async def _type(self, text: str) -> None:
        box = self._page().locator(self._sel.input).filter(visible=True).first
        try:
            if self.profile.input_method == "type":
                await box.click()
                await box.press_sequentially(text)
            else:
                await box.fill(text)
        except PlaywrightError as e:
            raise await self._error(f"cannot type into input {self._sel.input!r}: {str(e).splitlines()[0]}") from None

    async def _submit(self) -> None:
        page = self._page()
        try:
            if self._sel.send:
                await page.locator(self._sel.send).filter(visible=True).first.click(timeout=self.profile.send_timeout_s * 1000)
            else:
                await page.locator(self._sel.input).filter(visible=True).first.press("Enter")
        except PlaywrightError as e:
            raise await self._error(f"cannot send with {self._sel.send or 'Enter'!r}: {str(e).splitlines()[0]}") from None

    async def _wait_sent(self, users_before: int | None) -> None:
        if users_before is None:
            return
        try:
            await self._page().wait_for_function(
                "([s, n]) => document.querySelectorAll(s).length > n", arg=[self._sel.user_message, users_before],
                timeout=self.profile.send_timeout_s * 1000, polling=self.profile.completion.poll_ms)
        except PlaywrightTimeout:
            raise await self._error(
                f"the message did not show up as sent: no new {self._sel.user_message!r} "
                f"within {self.profile.send_timeout_s:g} s") from None

    async def _wait_reply(self, users_before: int) -> Reply:
        c = self.profile.completion
        cfg = {
            "token": next(_tokens), "assistant": self._sel.assistant_message, "user": self._sel.user_message,
            "usersBefore": users_before, "busy": self._sel.busy, "done": self._sel.done, "ignore": self._sel.ignore,
            "strip": self._sel.strip, "notice": self._sel.notice, "placeholders": c.placeholder_patterns,
            "quiet": c.quiet_ms, "quietMarkers": c.quiet_ms_with_markers, "diagnose": False, "firstOnly": False,
            "error": self._sel.error,
        }
        page = self._page()
        started = time.monotonic()
        try:
            await page.wait_for_function(_REPLY_JS, arg={**cfg, "firstOnly": True}, polling=c.poll_ms,
                                         timeout=c.first_bubble_timeout_s * 1000)
            left = max(1.0, c.timeout_s - (time.monotonic() - started))
            handle = await page.wait_for_function(_REPLY_JS, arg=cfg, polling=c.poll_ms, timeout=left * 1000)
        except PlaywrightTimeout:
            raise await self._reply_timeout(cfg, time.monotonic() - started) from None
        result = await handle.json_value()
        if "error" in result:
            raise await self._agent_error(result["error"], "the chat shows an error instead of a reply")
        reply = Reply(bubbles=result["bubbles"], signal=result["signal"], notices=result["notices"])
        if self._rate_limited(reply.text):
            raise await self._agent_error(reply.text, "the agent replied that it is rate limited")
        log.debug("reply complete: %s", result["signal"])
        return reply

    def _rate_limited(self, text: str) -> bool:
        return any(re.search(p, text, re.IGNORECASE) for p in self.profile.completion.rate_limit_patterns)

    async def _agent_error(self, text: str, what: str) -> AgentErrorReply:
        kind = RateLimited if self._rate_limited(text) else AgentErrorReply
        err = await self._error(f"{what}: {text[:300]!r}")
        return kind(str(err), text=text, screenshot=None)

    async def _reply_timeout(self, cfg: dict, waited: float) -> ReplyTimeout:
        state = await self._page().evaluate(_REPLY_JS, {**cfg, "diagnose": True})
        details = f"{state.get('stage')}"
        if "busy" in state:
            details += (f"; busy marker {'visible' if state['busy'] else 'gone'}, done marker "
                        f"{'shown' if state['done'] else 'missing'}, {state['bubbles']} bubble(s), last text "
                        f"{state['last']!r} stable for {state['stableFor'] / 1000:.1f} s")
        err = await self._error(f"no complete reply after {waited:.0f} s: {details}")
        return ReplyTimeout(str(err))

    # -- sessions ------------------------------------------------------------------------------

    async def new_session(self) -> SessionInfo:
        page = self._page()
        old_url = page.url
        mode = self.profile.new_session
        if mode == "message":
            reply = await self.send(self.profile.new_session_message)
            sign = f"sent {self.profile.new_session_message!r}; agent replied {reply.text[:80]!r}"
        else:
            if mode == "button":
                await self._click(self._sel.new_chat, "new chat")
                if self._sel.new_chat_confirm:
                    await self._click(self._sel.new_chat_confirm, "new chat confirmation")
            elif mode == "url":
                await page.goto(urljoin(self.base_url, self.profile.new_session_url or self.base_url))
            else:
                await page.reload()
            await self._wait_ready()
            sign = await self._verify_reset(old_url)
        self._session_index += 1
        await self.tracer.next_session(self._session_index)
        return SessionInfo(url=self.session_url, reset_sign=sign)

    async def _verify_reset(self, old_url: str) -> str:
        """A new chat shows none of our messages (and usually has a new URL); else it did not reset."""
        page = self._page()
        counted = self._sel.user_message or self._sel.assistant_message
        ignore = self._sel.ignore or ""
        try:
            await page.wait_for_function(
                "([s, ig]) => Array.from(document.querySelectorAll(s)).filter(e => !(ig && e.closest(ig))).length === 0",
                arg=[counted, ignore], timeout=15000, polling=100)
        except PlaywrightTimeout:
            raise await self._error(f"the chat did not reset after 'new chat': {counted!r} still shows messages") from None
        signs = ["no messages left"]
        if page.url != old_url:
            signs.insert(0, "url changed")
        return "; ".join(signs)

    # -- helpers -------------------------------------------------------------------------------

    @property
    def _sel(self):
        return self.profile.selectors

    def _page(self) -> Page:
        if self.page is None:
            raise DriverError("the chat is not open")
        return self.page

    async def _click(self, selector: str | None, what: str) -> None:
        if not selector:
            raise DriverError(f"profile {self.profile.name!r} has no selector for {what}")
        try:
            await self._page().locator(selector).filter(visible=True).first.click(timeout=15000)
        except PlaywrightError as e:
            raise await self._error(f"cannot click {what} {selector!r}: {str(e).splitlines()[0]}") from None

    async def _wait_ready(self) -> None:
        try:
            await self._page().locator(self._sel.input).filter(visible=True).first.wait_for(
                state="visible", timeout=self.profile.ready_timeout_s * 1000)
            if self._sel.ready:  # the history is rendered: a restart may now look for its own message
                await self._page().locator(self._sel.ready).first.wait_for(
                    state="attached", timeout=self.profile.ready_timeout_s * 1000)
        except PlaywrightTimeout:
            raise await self._error(
                f"input selector {self._sel.input!r} matched nothing visible at {self._page().url} "
                f"within {self.profile.ready_timeout_s:g} s") from None

    async def _error(self, message: str) -> DriverError:
        """A DriverError with a screenshot of the page as it was (when enabled and possible)."""
        shot = None
        if self.screenshot_on_failure and self.page is not None:
            self.artifacts.mkdir(parents=True, exist_ok=True)
            shot = self.artifacts / f"failure-{time.strftime('%Y%m%d-%H%M%S')}-{next(_tokens)}.png"
            try:
                await self.page.screenshot(path=str(shot), full_page=True)
            except PlaywrightError:
                shot = None
        return DriverError(message, screenshot=shot)
