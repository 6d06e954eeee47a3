"""The generic Playwright driver: any web chat, described by a Profile of selectors.

It types like a person (newlines as Shift+Enter, never a premature send), checks that our message
shows up as sent, leaves the judgement of "reply complete" to `reply_watch`, and after a new
chat checks that the chat really reset. Every failure is a DriverError naming the step and the
selector, with a screenshot of the page as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit, urlunsplit

from playwright.async_api import BrowserContext, Frame, Locator, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from .base import (
    Activity,
    AgentErrorReply,
    ChatBefore,
    ChatDriver,
    DriverError,
    InputCleared,
    NotResent,
    Presence,
    RateLimited,
    Reply,
    ReplyTimeout,
    SelectorError,
    SendJournal,
    SessionInfo,
    presence,
    squash,
)
from .deep_dom import SHADOW_HOOK_JS, in_page
from .frames import ChatScope, FrameInfo, FrameNotFound, frame_steps, list_frames, origin
from .observed import Observed
from .profile import Profile
from .reply_watch import ReplyWatch, WaitFailure
from .tracing import SessionTracer, TraceMode
from .url_secrets import ChatUrl, fragment
from .waiting import PAGE_GRACE_S, bounded, heartbeat

log = logging.getLogger(__name__)

_shots = itertools.count(1)
# Matched with document.querySelectorAll inside the page (reply_watch), so plain CSS only.
_CSS_ONLY = ("assistant_message", "user_message", "message", "author", "busy", "done", "ignore", "strip", "tool",
             "thought", "status", "notice", "error")
_RESET_SETTLE_MS = 300  # the list must stay empty this long: some UIs blank it before redrawing the old chat
_HISTORY_SETTLE_S = 3.0  # a reopened chat may render its history a moment after the input shows
_CLEARED_CHECK_S = 1.0  # while send is not clickable, whether what we typed is still in the input, this often
_RESEND_AFTER_S = 2.0  # a typed new-session command still in the input this long was not taken (doubles)
_LAUNCHER_RETRY_S = 2.0  # a launcher clicked before the widget's script was ready may do nothing: again after this (doubles)
_POLL_S = 0.1  # conditions spread over several frames are looked at this often, within their bound

# Messages shown (but ignored ones), open shadow roots included.
_SHOWN_JS = in_page("([s, ig]) => Q.all(s).filter((e) => !(ig && Q.closest(e, ig))).length")
# True once no message (but ignored ones) has been shown for `settle` ms; state lives in the page.
_EMPTY_FOR_JS = in_page("""([s, ig, settle]) => {
  const n = Q.all(s).filter((e) => !(ig && Q.closest(e, ig))).length;
  if (n) { window.__mmbEmptySince = null; return false; }
  window.__mmbEmptySince = window.__mmbEmptySince || performance.now();
  return performance.now() - window.__mmbEmptySince >= settle;
}""")
# The page's HTML with its open shadow roots inline, for the failure files.
_PAGE_HTML_JS = in_page("() => Q.html()")
# Matches and visible ones among elements a locator found.
_COUNT_JS = """(els) => [els.length, els.filter((e) => e.checkVisibility ? e.checkVisibility({visibilityProperty: true})
                                                   : !!(e.offsetWidth || e.offsetHeight)).length]"""
_IN_PAGE_COUNT_JS = in_page("(s) => Q.all(s).length")
# Open shadow roots in the chat's frame.
_SHADOW_ROOTS_JS = in_page("() => Q.shadowRoots()")
# What the page says in visible role=alert elements.
_ALERTS_JS = in_page("""() => Q.all("[role=alert]").filter((e) => e.checkVisibility())
  .map((e) => (e.innerText || "").trim()).filter(Boolean)""")


# The centre of the send button if a click there lands on it (enabled, not covered, not moving),
# scrolled into view first; "disabled" for a disabled one; else null. An element that an animation
# or transition moves must keep its place for a frame, as Playwright's own check wants. Frames have
# their own coordinates: null.
# Inside a shadow root the hit test asks that root, which answers with its own element, not the host.
_CLICK_POINT_JS = in_page("""async (el) => {
  if (el.matches(":disabled") || el.closest('[aria-disabled="true"]')) return "disabled";  // as Playwright's check
  if (window !== window.top) return null;
  const r0 = el.getBoundingClientRect();
  if (r0.top < 0 || r0.left < 0 || r0.bottom > innerHeight || r0.right > innerWidth) el.scrollIntoView({block: "nearest"});
  const at = () => {
    const r = el.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
    const hit = r.width > 0 && r.height > 0 && el.getRootNode().elementFromPoint(x, y);
    return hit && (hit === el || Q.contains(el, hit)) ? {x, y} : null;
  };
  const first = at();
  if (!first) return null;
  const moving = !document.getAnimations ||  // a browser that cannot tell: assume it may move
    document.getAnimations().some((a) => a.playState === "running" && a.effect && a.effect.target &&
                                         a.effect.target.nodeType === 1 && Q.contains(a.effect.target, el));
  if (!moving) return first;
  await new Promise((ok) => { requestAnimationFrame(() => ok()); setTimeout(ok, 50); });  // no frames when minimized
  const second = at();
  return second && second.x === first.x && second.y === first.y ? second : null;
}""")


@dataclass
class SelectorMatch:
    """What one selector of the profile finds on the page now, found as the driver finds it."""

    key: str
    selector: str
    count: int = 0  # Playwright's locator (pierces open shadow roots)
    visible: int = 0
    in_page: int | None = None  # messages and markers: what the page scripts see (deep_dom.py), which the run uses
    editable: bool | None = None  # the input: whether text can be typed into it
    error: str | None = None  # not a valid selector


class _CountCommand(SendJournal):
    """A command typed into the chat (`/new`) is counted as the driver's, not as a persona message."""

    def __init__(self, driver: PlaywrightDriver):
        self.driver = driver

    async def submitting(self) -> None:
        self.driver.commands_typed += 1


class PlaywrightDriver(ChatDriver):
    def __init__(self, profile: Profile, context: BrowserContext, *, base_url: str | None = None,
                 artifacts: Path, trace: TraceMode = "off", screenshot_on_failure: bool = True,
                 secrets: tuple[str, ...] = (), observed: Observed | None = None):
        self.profile = profile
        self.name = profile.name
        self.context = context
        self.base_url = base_url or profile.url  # as configured: `${NAME}` placeholders stay, for messages
        if not self.base_url:
            raise DriverError(f"profile {profile.name!r} needs a chat URL (agent.url in config.jsonc)")
        try:
            self._url = ChatUrl(self.base_url)
        except ValueError as e:
            raise DriverError(f"profile {profile.name!r}: {e}") from None
        self._open_url = self._url.opened
        self.artifacts = artifacts
        self._secrets = tuple(s for s in (*secrets, *self._url.secrets) if s)
        self.tracer = SessionTracer(context, artifacts / "traces", trace, secrets=self._secrets)
        self.screenshot_on_failure = screenshot_on_failure
        self.page: Page | None = None
        self.scope: ChatScope | None = None  # the frame of the page that holds the chat
        self._crashed = False
        self._css_checked = False
        self._session_index = 0
        self._turn = 0
        self.commands_typed = 0
        self.observed = observed or Observed()  # what the run has seen of the page (shared across rebuilt drivers)
        self._confirmed: ChatBefore | None = None  # our bubbles after the last exchange confirmed in this page

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
            # A persistent profile opens with a blank tab: use it rather than leave it beside ours.
            blank = [p for p in self.context.pages if p.url in ("about:blank", "") and not p.is_closed()]
            await self._use_page(blank[0] if blank else None)
        url = self._address(self._open_url, self._url.reopen(session_url) if session_url else None)
        shown = self.shown(self._address(self.base_url, session_url))
        try:
            await self.page.goto(url, wait_until="domcontentloaded")
        except PlaywrightError as e:
            raise await self._error(f"cannot open the chat at {shown}: {str(e).splitlines()[0]}") from None
        if self._sel.start:
            await self._press_start()
        await self._wait_ready()
        if self._confirmed is not None and self.observed.keeps_history is None:
            await self._see_history(self._confirmed)
        return SessionInfo(url=self.session_url)

    async def _see_history(self, confirmed: ChatBefore) -> None:
        """Reopened after a confirmed exchange: whether the chat still shows our messages is whether it
        keeps them (history drawn late is waited for, as find_sent waits)."""
        deadline = time.monotonic() + (0 if self._sel.ready else _HISTORY_SETTLE_S)
        while True:
            now = await self.chat_before()
            if now is None:
                return
            if now.users or time.monotonic() >= deadline:
                break
            await asyncio.sleep(_POLL_S)
        self._confirmed = None
        if now.users:
            why = f"reopened at its address, it shows our messages again ({now.users}; {confirmed.users} before)"
        else:
            why = f"reopened at its address, it shows none of our {confirmed.users} message(s)"
        self.observed.history(bool(now.users), why, self.profile.keeps_history)

    @property
    def keeps_history(self) -> bool | None:
        """Whether the chat shows its messages when reopened: as seen in this run, else as the profile says."""
        seen = self.observed.keeps_history
        return self.profile.keeps_history if seen is None else seen

    async def adopt(self, page: Page) -> None:
        """Drive a page opened by someone else (`mmb discover`), as if `open` had opened it."""
        await self._use_page(page)

    async def wait_ready(self) -> Frame:
        """The chat shown (its launcher clicked if needed); its frame."""
        await self._wait_ready()
        return await self._frame()

    async def _use_page(self, page: Page | None) -> Page:
        """Make `page` (a new one when None) the chat's page: the shadow-root hook in every frame, the
        dismiss handler, the crash watch, and the scope that finds the chat's frame in it."""
        try:
            page = page or await self.context.new_page()
        except PlaywrightError as e:
            raise DriverError(f"cannot open a browser page: {str(e).splitlines()[0]}") from None
        self.page = page
        self.scope = ChatScope(page, frame_steps(self.profile.frame))
        await page.add_init_script(SHADOW_HOOK_JS)  # open shadow roots, known as they are attached (every frame)
        if self._sel.dismiss:  # Playwright clicks it away before any action it would block
            where = self.scope.frame_locator() or page
            await page.add_locator_handler(where.locator(self._sel.dismiss), lambda popup: popup.first.click())
        page.on("crash", self._on_crash)
        return page

    def _on_crash(self, page: Page) -> None:
        log.warning("the chat page crashed")
        self._crashed = True

    @staticmethod
    def _address(base: str, session_url: str | None) -> str:
        """Where to open a saved chat; the base URL's fragment (a token handoff) goes along."""
        if not session_url:
            return base
        url = urljoin(base, session_url)
        return url if "#" in url else url + fragment(base)

    async def close(self, failed: bool = False) -> list[Path]:
        """Traces first (they need the open context), then the video, written once the context closed."""
        files = []
        video = self.page.video if self.page is not None else None
        try:
            files = await self.tracer.finish(failed)
        finally:
            await self.context.close()
        if video is not None:
            files.append(await self._keep_video(video))
        return files

    async def _keep_video(self, video) -> Path:
        """videos/chat.webm (chat.part2.webm after a restart): one video of the whole page."""
        folder = self.artifacts / "videos"
        folder.mkdir(parents=True, exist_ok=True)
        path, part = folder / "chat.webm", 1
        while path.exists():
            part += 1
            path = folder / f"chat.part{part}.webm"
        await video.save_as(path)
        await video.delete()
        return path

    @property
    def session_url(self) -> str | None:
        """The chat's address, without its origin when on the base URL's (ports change across restarts;
        the path stays whole, so a chat at /app/chat.html is reopened there), with the URL's secrets
        as their `${NAME}` placeholders."""
        if self.page is None:
            return None
        url = urlsplit(self.page.url)
        base = urlsplit(self._open_url)
        if (url.scheme, url.netloc) != (base.scheme, base.netloc):
            return self.shown(self.page.url)
        return self.shown(urlunsplit(("", "", url.path or "/", url.query, url.fragment)))

    @property
    def url_secrets(self) -> tuple[str, ...]:
        """The values the chat URL's `${NAME}` placeholders stand for, in every form a URL may hold them."""
        return self._url.secrets

    def shown(self, text: str) -> str:
        """A URL, or a message naming one, as it may be shown or saved: secrets as `${NAME}`."""
        return self._url.hide(text)

    # -- sending and replies -------------------------------------------------------------------

    async def send(self, text: str, journal: SendJournal | None = None) -> Reply:
        journal = journal or SendJournal()
        self._turn = journal.turn or self._turn + 1  # typed again, a message keeps its turn
        return await self._exchange(text, journal, f"turn {self._turn}")

    async def _exchange(self, text: str, journal: SendJournal, step: str) -> Reply:
        await self.tracer.group(step)
        try:
            started = time.monotonic()
            watch = ReplyWatch(self._scope(), self.profile)
            await watch.arm()
            await self._type(text)
            await self._submit(journal, typed=text)
            confirmed = await self._wait_sent(watch, text)
            if confirmed:
                await journal.shown()
            reply = await self._collect(watch, step)
            reply.seconds = time.monotonic() - started
            if confirmed and self.observed.keeps_history is None:
                self._confirmed = await self.chat_before()
            return reply
        finally:
            await self.tracer.end_group()

    async def chat_before(self) -> ChatBefore | None:
        """Our bubbles (user_message, or message by our author), counted and read in the page as the reply
        watch does."""
        if not self._sel.tells_ours:
            return None
        return await ReplyWatch(self._scope(), self.profile).ours()

    async def find_sent(self, text: str, before: ChatBefore | None) -> Presence:
        """Where `text` is. Without a `ready` selector to say the history is rendered, a reopened chat
        may still be drawing it: "absent" (which allows typing it again) must hold for a few seconds,
        and a chat showing fewer of our messages than before gets as long to catch up."""
        deadline = time.monotonic() + (0 if self._sel.ready else _HISTORY_SETTLE_S)
        while True:
            now = await self.chat_before()
            found = presence(text, before, now, keeps_history=self.keeps_history)
            growing = found.state == "unknown" and now is not None and before is not None and now.users < before.users
            if found.state == "shown" or time.monotonic() >= deadline or (found.state == "unknown" and not growing):
                return found
            await asyncio.sleep(0.1)

    async def reply_to_last(self, *, first_bubble_s: float | None = None) -> Reply:
        now = await self.chat_before()
        if now is None or not now.users:
            raise NotResent("the chat shows no message of ours to take the reply of")
        if first_bubble_s is not None:
            first_bubble_s = min(first_bubble_s, self.profile.completion.first_bubble_timeout_s)
        watch = ReplyWatch(self._scope(), self.profile, now.users - 1, first_bubble_s=first_bubble_s)
        return await self._collect(watch, f"turn {self._turn}" if self._turn else "the message sent before a restart")

    async def _collect(self, watch: ReplyWatch, step: str) -> Reply:
        outcome = await watch.wait()
        if isinstance(outcome, WaitFailure):
            raise await self._error(f"no complete reply ({step}): {outcome.describe()}", ReplyTimeout)
        if outcome.error is not None:
            raise await self._agent_error(outcome.error, f"the chat shows an error instead of a reply ({step})")
        # A page knows the token it was opened with and may echo it: it is kept as its placeholder.
        reply = Reply(bubbles=[self.shown(b) for b in outcome.bubbles], signal=outcome.signal,
                      notices=[self.shown(n) for n in outcome.notices], watch_ms=outcome.check_ms, watch_checks=outcome.checks,
                      activity=[Activity(kind=a["kind"], title=self.shown(a["title"]), text=self.shown(a["text"]))
                                for a in outcome.activity])
        if self._rate_limited(reply.text):
            raise await self._agent_error(reply.text, f"the agent replied that it is rate limited ({step})")
        self.observed.reply(self._sel.busy, busy_seen="busy-unseen" not in outcome.signal)
        log.info("%s: reply complete, %d bubble(s)%s, signal %s", step, len(outcome.bubbles),
                 f", {len(reply.activity)} piece(s) of work ({', '.join(sorted({a.kind for a in reply.activity}))})"
                 if reply.activity else "", outcome.signal)
        return reply

    def _rate_limited(self, text: str) -> bool:
        return any(re.search(p, text, re.IGNORECASE) for p in self.profile.completion.rate_limit_patterns)

    async def _agent_error(self, text: str, what: str) -> AgentErrorReply:
        """An error shown where the reply should be; RateLimited when it says to slow down."""
        kind = RateLimited if self._rate_limited(text) else AgentErrorReply
        err = await self._error(f"{what}: {text[:300]!r}")
        return kind(str(err), text=text)

    async def _type(self, text: str) -> None:
        box = (await self._frame()).locator(self._sel.input).filter(visible=True).first
        try:
            if self.profile.input_method == "type":
                await box.click()
                # A typed newline is Enter, which sends in most chats: Shift+Enter breaks the line.
                for i, line in enumerate(text.split("\n")):
                    if i:
                        await box.press("Shift+Enter")
                    if line:
                        await box.press_sequentially(line)
            else:
                await box.fill(text)
        except PlaywrightError as e:
            raise await self._error(f"cannot type into input {self._sel.input!r}: {str(e).splitlines()[0]}") from None

    async def _submit(self, journal: SendJournal | None = None, typed: str | None = None) -> None:
        """Press send, telling the journal just before: a button that never became clickable was
        never pressed, so the message is known not to be in the chat and may be typed again."""
        frame, journal = await self._frame(), journal or SendJournal()
        try:
            if not self._sel.send:
                if typed and not (await self._input_text()).strip():  # empty: typing it again cannot double it
                    raise InputCleared("the page cleared the input before Enter could be pressed (an app still "
                                       "starting up?); nothing was sent")
                await journal.submitting()
                await frame.locator(self._sel.input).filter(visible=True).first.press(
                    "Enter", timeout=self.profile.send_timeout_s * 1000)
                return
            await self._press_send(frame.locator(self._sel.send).filter(visible=True).first, journal, typed)
        except PlaywrightError as e:
            raise await self._error(f"cannot send with {self._sel.send or 'Enter'!r}: {str(e).splitlines()[0]}") from None

    async def _wait_sent(self, watch: ReplyWatch, text: str) -> bool:
        """Our bubble is in the chat (True); False where the profile cannot see our bubbles."""
        if not self._sel.tells_ours:
            return False
        shown = await watch.wait_sent()
        if shown is None:
            ours = self._sel.user_message or f"{self._sel.message!r} by our author"
            raise await self._error(
                f"the message did not show up as sent: no new {ours!r} within {self.profile.send_timeout_s:g} s")
        if squash(shown) != squash(text):  # markdown rendering changes text, so this only warns
            log.warning("the chat shows our message as %r, not as typed (%r)", shown[:120], text[:120])
        return True

    # -- what the selectors find (mmb probe) ----------------------------------------------------

    async def selector_matches(self) -> list[SelectorMatch]:
        """Each selector of the profile, counted the way the driver uses it."""
        frame = self._scope().current()
        found = []
        for key, selector in self._sel.model_dump().items():
            if not selector:
                continue
            match = SelectorMatch(key=key, selector=selector)
            # The launcher may stand in the host page or another frame: counted where the driver looks for it.
            # No frame found: nothing matches (opening said why).
            locator = await self._launcher_locator() if key == "launcher" else frame.locator(selector) if frame else None
            if locator is None:
                found.append(match)
                continue
            try:
                match.count, match.visible = await locator.evaluate_all(_COUNT_JS)
                if key in _CSS_ONLY and frame is not None:
                    match.in_page = await frame.evaluate(_IN_PAGE_COUNT_JS, selector)
            except PlaywrightError as e:
                match.error = str(e).splitlines()[0]
                if key in _CSS_ONLY and "is not a valid selector" in match.error:
                    match.error = "not plain CSS, which the page scripts need: " + match.error
            if key == "input" and match.visible:
                try:
                    match.editable = await locator.filter(visible=True).first.is_editable(timeout=5000)
                except PlaywrightError:  # not an input, textarea or contenteditable at all
                    match.editable = False
            found.append(match)
        return found

    async def frames_with_input(self) -> list[str]:
        """The addresses of the frames (not the chat's) where the input selector finds something visible."""
        page, chat = self._page(), self._scope().current()
        found = []
        for frame in page.frames:
            if frame is chat or frame.is_detached():
                continue
            with contextlib.suppress(PlaywrightError):
                if await frame.locator(self._sel.input).filter(visible=True).count():
                    found.append(self.shown(frame.url))
        return found

    async def page_parts(self) -> tuple[int, list[FrameInfo]]:
        """The open shadow roots of the chat's frame (how many), and every frame of the page, the chat's marked
        (addresses with the URL's secrets hidden)."""
        frame = self._scope().current()
        roots = await bounded(frame.evaluate(_SHADOW_ROOTS_JS), PAGE_GRACE_S, "counting shadow roots") if frame else 0
        frames = list_frames(self._page(), frame)
        for info in frames:
            info.url = self.shown(info.url)
        return roots, frames

    # -- sessions ------------------------------------------------------------------------------

    async def new_session(self) -> SessionInfo:
        page = self._page()
        old_url = page.url
        mode = self.profile.new_session
        self._confirmed = None  # the old chat's: a new one shows none of it, whatever the page keeps
        await self.tracer.group("new session")
        try:
            if mode == "message" and self.profile.new_session_message_opens_chat:
                command = self.profile.new_session_message
                before = await self._messages_shown()
                await self._type(command)
                self.commands_typed += 1
                await self._submit()
                sign = f"sent {command!r}; " + await self._verify_reset(mode, old_url, before, resend=command)
            elif mode == "message":
                sign = await self._reset_by_message()
            else:
                before = await self._messages_shown()
                if mode == "button":
                    # The reset's own limit: a missing button fails as soon as stale messages would.
                    await self._click(self._sel.new_chat, "new chat", self.profile.reset_timeout_s)
                    if self._sel.new_chat_confirm:
                        await self._click(self._sel.new_chat_confirm, "new chat confirmation", self.profile.reset_timeout_s)
                elif mode == "url":
                    await page.goto(self._address(self._open_url, self._url.reopen(self.profile.new_session_url or "")))
                elif mode == "storage":
                    await self.forget_storage()
                else:
                    await page.reload()
                sign = await self._verify_reset(mode, old_url, before)
        finally:
            await self.tracer.end_group()
        log.info("new session: %s", sign)
        self._session_index += 1
        await self.tracer.next_session(self._session_index)
        return SessionInfo(url=self.session_url, reset_sign=sign)

    async def _reset_by_message(self) -> str:
        """`/new` for bots: the chat stays, so the sign of a reset is the agent's acknowledgement."""
        command = self.profile.new_session_message
        reply = await self._exchange(command, _CountCommand(self), "new session")
        said = reply.text.replace(command, " ")
        pattern = self.profile.new_session_ack
        if pattern is not None and not re.search(pattern, said, re.IGNORECASE):
            raise await self._error(
                f"the chat did not reset: the agent answered {command!r} with {reply.text[:200]!r}, which does not "
                f"acknowledge a new session (pattern {pattern!r}; set agent.options.new_session_ack to match "
                "its acknowledgement, or null to accept any reply)")
        return f"agent acknowledged {command!r}: {reply.text[:120]!r}"

    async def forget_storage(self) -> None:
        """New chat for widgets that keep their conversation id in the browser: the chat's origin (the
        frame's, for a widget in an iframe) loses its localStorage, IndexedDB, cookies and caches, and the
        chat opens in a new tab (sessionStorage belongs to the tab, so the old one goes, after which its
        unload handlers can write nothing more)."""
        old = self._page()
        chat_origin = origin((await self._frame()).url)
        video = old.video
        await self._use_page(None)
        with contextlib.suppress(PlaywrightError):
            await old.close()
        if video is not None:  # the old tab's video is complete now: kept as a part
            await self._keep_video(video)
        cdp = await self.context.new_cdp_session(self._page())
        try:
            await cdp.send("Storage.clearDataForOrigin", {"origin": chat_origin, "storageTypes": "all"})
        finally:
            with contextlib.suppress(PlaywrightError):
                await cdp.detach()
        for cookie in await self.context.cookies(chat_origin):
            await self.context.clear_cookies(name=cookie["name"], domain=cookie["domain"], path=cookie["path"])
        log.info("new session: forgot the storage of %s and opened the chat in a new tab", self.shown(chat_origin))
        await self._page().goto(self._open_url, wait_until="domcontentloaded")

    async def _messages_shown(self) -> int:
        if self._sel.by_author:  # ours, by their author: a new chat may greet us in the agent's name
            return (await ReplyWatch(self._scope(), self.profile).ours()).users
        counted = self._sel.user_message or self._sel.assistant_message
        frame = await self._frame()
        return await bounded(frame.evaluate(_SHOWN_JS, [counted, self._sel.ignore or ""]), PAGE_GRACE_S, "counting messages")

    async def _verify_reset(self, mode: str, old_url: str, before: int, resend: str | None = None) -> str:
        """A new chat shows none of the old messages (and often has a new URL); else it did not reset.

        The chat is made ready first (a reloaded widget is opened with its launcher), and the check is
        made again if the widget had closed and its launcher opened it once more: what a person sees
        on reopening it is what counts.

        With `resend` (a typed command such as OpenClaw's `/new`): a UI may turn the command down for
        the moment and leave it in the input, as a person would see it. OpenClaw does so while it
        still reloads the chat after a turn (Enter only picks `/new` in its command menu) or refreshes
        the session list ("Session list is still refreshing. Try New Chat again in a moment.").
        The command is then sent again, after 2, 4, 8... s, within reset_timeout_s.
        """
        page = self._page()
        deadline = time.monotonic() + self.profile.reset_timeout_s
        reopened = await self._wait_ready()
        sent = await self._wait_empty(mode, deadline, before, old_url, resend)
        if await self._wait_ready():
            reopened = True
            await self._wait_empty(mode, time.monotonic() + self.profile.reset_timeout_s, before, old_url, None)
        signs = [f"no messages left ({before} before)"]
        if page.url != old_url:
            signs.insert(0, f"url changed {self.shown(old_url)} -> {self.shown(page.url)}")
        if reopened:
            signs.append(f"reopened with the launcher {self._sel.launcher!r}")
        if sent > 1:
            signs.append(f"sent {sent} times: the UI had left it in the input")
        return "; ".join(signs)

    async def _wait_empty(self, mode: str, deadline: float, before: int, old_url: str, resend: str | None) -> int:
        """Wait until the chat's frame shows no message for a moment; returns how often `resend` was sent."""
        page = self._page()
        counted = self._sel.user_message or self._sel.assistant_message
        gap_s, sent = _RESEND_AFTER_S, 1
        while True:
            left_s = deadline - time.monotonic()
            wait_s = min(left_s, gap_s) if resend else left_s
            try:
                if self._sel.by_author:
                    await self._none_of_ours_for(_RESET_SETTLE_MS / 1000, max(wait_s, 0.05))
                else:
                    frame = await self._frame()
                    await frame.wait_for_function(_EMPTY_FOR_JS, arg=[counted, self._sel.ignore or "", _RESET_SETTLE_MS],
                                                  timeout=max(wait_s, 0.05) * 1000, polling=50)
                return sent
            except PlaywrightTimeout:
                if resend and time.monotonic() < deadline:
                    if await self._still_in_input(resend):  # demonstrably not taken: send it again
                        log.warning("new session: %r not taken after %.0f s, still in the input%s; sending it again",
                                    resend, gap_s, await self._alerts())
                        self.commands_typed += 1
                        await self._submit()
                        sent += 1
                    gap_s *= 2
                    continue
            except PlaywrightError as e:  # the frame navigated or was replaced: look again in the new one
                if time.monotonic() < deadline:
                    log.debug("new session: the chat's frame changed while checking the reset (%s)", str(e).splitlines()[0])
                    continue
            left = await self._messages_shown()
            counted = f"{self._sel.message!r} by our author" if self._sel.by_author else repr(counted)
            url = "URL changed" if page.url != old_url else "URL unchanged"
            still = f"; {resend!r} still in the input, sent {sent} times" if resend and await self._still_in_input(resend) else ""
            raise await self._error(
                f"the chat did not reset after new session ({mode}): {left} of {before} message(s) matching "
                f"{counted} still shown after {self.profile.reset_timeout_s:g} s, {url} ({page.url}){still}"
                f"{await self._alerts()}") from None

    async def _none_of_ours_for(self, settle_s: float, timeout_s: float) -> None:
        """Where only authors tell the sides apart: none of our bubbles shown for `settle_s` (a welcome in the
        agent's name is no message of the old chat); PlaywrightTimeout after `timeout_s`, as the in-page wait."""
        watch = ReplyWatch(self._scope(), self.profile)
        deadline, empty_since = time.monotonic() + timeout_s, None
        while True:
            now = time.monotonic()
            if (await watch.ours()).users:
                empty_since = None
            elif now - (empty_since := empty_since or now) >= settle_s:
                return
            if now >= deadline:
                raise PlaywrightTimeout(f"our messages still shown after {timeout_s:g} s")
            await asyncio.sleep(_POLL_S / 2)

    async def _press_send(self, button: Locator, journal: SendJournal, typed: str | None) -> None:
        """A button that is plainly clickable gets one real mouse click at its centre. One disabled
        is waited for (a trial click presses nothing) and then looked at again, because a page may
        disable it once more in between: Chainlit, finishing its start-up, emptied its input right
        after its button became clickable, and a waiting click then waited out send_timeout_s on a
        button that stays disabled for an empty input. A button covered, moving or in a frame is
        waited for and clicked as Playwright's click does."""
        deadline = time.monotonic() + self.profile.send_timeout_s
        while True:
            left = max(deadline - time.monotonic(), 0.05)
            point = await button.evaluate(_CLICK_POINT_JS, timeout=left * 1000)
            if isinstance(point, dict):
                await journal.submitting()  # dispatched into the page, which answers once its handlers ran
                await bounded(self._page().mouse.click(point["x"], point["y"]), left + PAGE_GRACE_S, "pressing send")
                return
            await self._wait_clickable(button, typed, deadline - time.monotonic())
            if point is None or time.monotonic() >= deadline:  # or our look and Playwright's disagree to the end
                await journal.submitting()
                await button.click(timeout=max(deadline - time.monotonic(), 0.05) * 1000)
                return

    async def _wait_clickable(self, button: Locator, typed: str | None, timeout_s: float) -> None:
        """Wait as Playwright's click would, pressing nothing (a trial click). A page that emptied its
        input after we typed (an app finishing its start-up remounts it) will not enable its button
        for it: that is InputCleared at once, not a wait to the end of send_timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                await button.click(timeout=max(min(left, _CLEARED_CHECK_S), 0.05) * 1000, trial=True)
                return
            except PlaywrightTimeout:
                if typed and not (await self._input_text()).strip():  # empty: typing it again cannot double it
                    raise InputCleared(f"the page cleared the input before {self._sel.send!r} could be pressed "
                                       "(an app still starting up?); nothing was sent") from None
                if left <= _CLEARED_CHECK_S:
                    raise

    async def _input_text(self) -> str:
        """What the input holds now ('' when it is gone)."""
        box = (await self._frame()).locator(self._sel.input).filter(visible=True)
        if not await box.count():
            return ""
        return await box.first.evaluate("el => el.value ?? el.innerText ?? ''")

    async def _still_in_input(self, text: str) -> bool:
        return squash(await self._input_text()) == squash(text)

    async def _alerts(self) -> str:
        """What the page says in visible role=alert elements, e.g. why it turned a command down."""
        texts = await bounded((await self._frame()).evaluate(_ALERTS_JS), PAGE_GRACE_S, "reading alerts")
        return f" (the page says: {'; '.join(t[:200] for t in texts)!r})" if texts else ""

    # -- helpers -------------------------------------------------------------------------------

    @property
    def _sel(self):
        return self.profile.selectors

    def _page(self) -> Page:
        if self.page is None:
            raise DriverError("the chat is not open")
        return self.page

    def _scope(self) -> ChatScope:
        if self.scope is None:
            raise DriverError("the chat is not open")
        return self.scope

    async def _frame(self, wait_s: float = PAGE_GRACE_S) -> Frame:
        """The frame that holds the chat (the page's own unless the profile names one), found again if it
        was replaced; a DriverError naming the step when it is not in the page."""
        try:
            return await self._scope().frame(timeout_s=wait_s)
        except FrameNotFound as e:
            raise await self._error(f"the chat's frame is not in the page at {self.shown(self._page().url)}: {e}") from None

    async def _click(self, selector: str | None, what: str, timeout_s: float) -> None:
        if not selector:
            raise DriverError(f"profile {self.profile.name!r} has no selector for {what}")
        try:
            await (await self._frame()).locator(selector).filter(visible=True).first.click(timeout=timeout_s * 1000)
        except PlaywrightError as e:
            raise await self._error(f"cannot click {what} {selector!r}: {str(e).splitlines()[0]}") from None

    async def _press_start(self) -> None:
        """A bot chat opened for the first time shows START where the input goes: press it (the bot gets
        '/start', counted as a command), take the greeting."""
        frame = await self._frame(self.profile.ready_timeout_s)
        try:
            await frame.locator(f"{self._sel.input}, {self._sel.start}").filter(visible=True).first.wait_for(
                state="visible", timeout=self.profile.ready_timeout_s * 1000)
        except PlaywrightTimeout:
            return  # _wait_ready names the input that is missing
        start = frame.locator(self._sel.start).filter(visible=True)
        if not await start.count():
            return
        watch = ReplyWatch(self._scope(), self.profile)
        await watch.arm()
        self.commands_typed += 1
        await self._click(self._sel.start, "start", self.profile.ready_timeout_s)
        await self._wait_sent(watch, "/start")
        greeting = await self._collect(watch, "start")
        log.info("pressed start; the agent greeted with %r", greeting.text[:120])

    async def _launcher_locator(self) -> Locator | None:
        """The launcher where a person would see it: the host page first, then the frames (a widget
        may put its bubble in a frame of its own); None when no frame shows one."""
        if not self._sel.launcher:
            return None
        page = self._page()
        frames = [page.main_frame] + [f for f in page.frames if f is not page.main_frame and not f.is_detached()]
        for frame in frames:
            locator = frame.locator(self._sel.launcher).filter(visible=True)
            with contextlib.suppress(PlaywrightError):
                if await locator.count():
                    return locator.first
        return None

    async def _input_shown(self) -> tuple[Frame | None, str]:
        """The chat's frame when its input is visible in it; else None and what is missing."""
        try:
            frame = await self._scope().find()
        except FrameNotFound as e:
            return None, str(e)
        with contextlib.suppress(PlaywrightError):
            if await frame.locator(self._sel.input).filter(visible=True).count():
                return frame, ""
        return None, f"input selector {self._sel.input!r} matched nothing visible"

    async def _wait_ready(self) -> bool:
        """The chat is open: its frame found, its input visible (opened with the launcher when it is not
        shown) and, where the profile names one, the `ready` marker there (the history is rendered, so a
        restart may look for its own message). Returns whether the launcher had to be clicked."""
        page, limit = self._page(), self.profile.ready_timeout_s
        deadline, clicked, next_click, gap = time.monotonic() + limit, 0, 0.0, _LAUNCHER_RETRY_S
        missing = ""
        async with heartbeat("waiting for the chat to be ready", lambda: missing):
            while True:
                frame, missing = await self._input_shown()
                if frame is not None:
                    break
                now = time.monotonic()
                if self._sel.launcher and now >= next_click:
                    launcher = await self._launcher_locator()
                    if launcher is not None:
                        with contextlib.suppress(PlaywrightError):
                            await launcher.click(timeout=PAGE_GRACE_S * 1000)
                            clicked += 1
                            log.info("opened the chat with the launcher %r", self._sel.launcher)
                        next_click, gap = now + gap, gap * 2  # a widget not yet listening: once more, later
                if now >= deadline:
                    opened = (f"; the launcher {self._sel.launcher!r} was clicked {clicked} time(s)" if clicked else
                              f"; the launcher {self._sel.launcher!r} matched nothing visible" if self._sel.launcher else "")
                    raise await self._error(f"the chat did not show at {self.shown(page.url)} within {limit:g} s: "
                                            f"{missing}{opened}")
                await asyncio.sleep(_POLL_S)
        if not self._css_checked:  # the profile does not change: once per driver is enough
            await self._check_css_selectors(frame)
            self._css_checked = True
        if self._sel.ready:
            try:
                await frame.locator(self._sel.ready).first.wait_for(
                    state="attached", timeout=max(deadline - time.monotonic(), 0.05) * 1000)
            except PlaywrightTimeout:
                raise await self._error(f"ready selector {self._sel.ready!r} matched nothing attached at "
                                        f"{self.shown(page.url)} within {limit:g} s") from None
        return clicked > 0

    async def _check_css_selectors(self, frame: Frame) -> None:
        """The selectors read inside the page (messages, markers) must be plain CSS: say which is not."""
        named = {k: v for k, v in self._sel.model_dump().items() if k in _CSS_ONLY and v}
        bad = await bounded(frame.evaluate(
            "(named) => Object.entries(named).flatMap(([k, s]) => { try { document.querySelector(s); return []; }"
            " catch (e) { return [[k, s, e.message]]; } })", named), PAGE_GRACE_S, "checking the selectors")
        if bad:
            raise SelectorError("; ".join(f"selectors.{k} {s!r} is not a valid CSS selector ({m})" for k, s, m in bad)
                                + " (Playwright-only syntax such as text= or :has-text() works only for input, send, "
                                  "new_chat, new_chat_confirm, dismiss, ready, start and launcher)")

    async def _error(self, message: str, kind: type[DriverError] = DriverError) -> DriverError:
        """A DriverError with a screenshot of the page as it was and its DOM (when enabled and possible)."""
        shot = dom = None
        if self.screenshot_on_failure and self.page is not None:
            stem = f"failure-{time.strftime('%Y%m%d-%H%M%S')}-{next(_shots)}"
            shot = self.artifacts / f"{stem}.png"
            try:
                self.artifacts.mkdir(parents=True, exist_ok=True)
                try:
                    await self.page.screenshot(path=str(shot), full_page=True)
                except PlaywrightError:
                    shot = None
                dom = await self._save_dom(self.artifacts / f"{stem}.dom.txt")
            except OSError as e:  # a full disk: a warning, never the chat's fault; no partial file left
                log.warning("failure screenshot %s not written: %s", stem, e)
                for partial in (f"{stem}.png", f"{stem}.dom.txt"):
                    with contextlib.suppress(OSError):
                        (self.artifacts / partial).unlink(missing_ok=True)
                shot = dom = None
        message = self.shown(message)  # Playwright's own messages name the page's URL
        log.warning("%s", message)
        return kind(message, screenshot=shot, dom=dom)

    async def _save_dom(self, path: Path) -> Path | None:
        """The chat's DOM, open shadow roots inline, as text (never a page a browser would run), with
        the run's secrets masked; for a chat in a frame, the frame's DOM and then the host page's."""
        page = self.page
        if page is None:
            return None
        chat = self.scope.current() if self.scope is not None else None
        parts = []
        for frame in dict.fromkeys(f for f in (chat, page.main_frame) if f is not None):
            try:
                html = await bounded(frame.evaluate(_PAGE_HTML_JS), PAGE_GRACE_S, "saving the page's DOM")
            except (PlaywrightError, DriverError):
                continue
            if html is not None:
                parts.append(f"<!-- {'the page' if frame is page.main_frame else 'the chat frame'}: {frame.url} -->\n{html}")
        if not parts:
            return None
        html = "\n\n".join(parts)
        for secret in self._secrets:
            html = html.replace(secret, "***")
        # a hostile page may hold lone surrogates: replaced, never a write that fails
        path.write_text(self.shown(html), encoding="utf-8", errors="replace")
        return path
