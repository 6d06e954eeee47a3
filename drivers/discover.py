"""`mmb discover`: a chat page's profile from its URL alone, found by what the page shows and what
changes when we type, then verified the run's own way.

The steps, each bounded and told to `say` (stderr):

1. the composer: the best visible text box in any frame (open shadow roots included); when none
   shows, a launcher is looked for (a control fixed in a corner, named for chat or help) and clicked;
2. the frame that holds it, as a chain of stable iframe selectors (title, name, test id, the frame's
   address without its query), and the input's own stable selector;
3. the send control: a button by the input that is named for sending, submits its form, or turns
   enabled once text is typed; else Enter;
4. ONE marked test message: our bubble is the element that shows its unique tag, the reply is the
   text new since we sent that a reader sees after it (below it on screen, whatever the DOM's order);
   the wait lasts until the page is still (longer once the agent shows its work: a tool may run a
   while with nothing changing). Then (drivers/discover_turn.py, read by discover_reading.py) the
   agent's work is told from its answer (collapsible blocks, elements named for tools or thinking,
   status lines: selectors tool, thought, status, and completion.activity_quiet_ms from the longest
   pause seen), the message list and its rows give selectors for our bubbles and the agent's (or,
   where none tells them apart, every bubble and the element naming its author: message, author,
   options.authors), and elements seen only while the agent worked (or the text box disabled
   meanwhile) give the busy marker;
5. whether a reload shows the chat again, as seen (`keeps_history` true, false, or left out when the
   page never settled), then New chat: controls named for it (with a confirmation dialog if one
   opens), else a reload or forgetting the origin's storage, whichever empties the chat (never the
   storage when it holds a saved login: that would log out);
6. the profile found is checked by `mmb probe`'s own code path (a round trip, New chat and its
   reset check) on a fresh browser context: only then is discovery a success.

It never uses positions (nth-child), generated ids, counters in class names (their stable prefix
instead) or the markup of any page it was tested on, and says which selectors rest on class names a
build generated.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets as token_source
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, Frame, Page
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel

from .base import DriverError
from .deep_dom import SHADOW_HOOK_JS
from .discover_page import DISCOVER_JS
from .discover_reading import Found, Reading, build_made, busy, sides, strip, work
from .frames import list_frames
from .generic import PlaywrightDriver
from .probe import DEFAULT_TEXT, ProbeReport, probe, probe_message
from .profile import Profile, Selectors, profile_from_dict
from .url_secrets import ChatUrl
from .waiting import PAGE_GRACE_S, bounded

Say = Callable[[str], None]
NewContext = Callable[[], Awaitable[BrowserContext]]

BUDGET_S = 60.0
VERIFY_S = 25.0  # kept for the probe at the end
POLL_S = 0.15
QUIET_S = 2.0  # the reply counts as complete once unchanged this long (and no busy sign shows)
WORK_QUIET_S = 6.0  # a turn that shows the agent's work: a tool may run this long with nothing changing
QUIET_BUSY_S = 20.0  # ... and while a busy sign that came with our message still shows, up to this long
HISTORY_S = 8.0  # a reopened chat is looked at this long for our message
STILL_S = 1.5  # a reopened chat still this long without our message has shown it does not keep it
LAUNCHER_AFTER_S = 2.0  # a page with no text box this long after loading may hide its chat behind a launcher

_LAUNCHER_NAME = re.compile(r"chat|help|support|message|assistant|ask|talk|contact|open|bot|💬|чат|помощ", re.I)
_SEND_NAME = re.compile(r"\bsend\b|submit|отправ|➤|➢|▶|↑|⬆", re.I)
_NOT_SEND = re.compile(r"stop|cancel|new|attach|upload|file|mic|voice|record|emoji|clear|delete|menu|settings|close|share|copy", re.I)
_NEW_CHAT = re.compile(r"\bnew\b.{0,12}\b(chat|conversation|session|thread|topic|dialog)|^\s*new\s*$|start\s+(a\s+)?(new|over)|"
                       r"\brestart\b|\breset\b|^\s*clear\b|новый\s+(чат|диалог)|^\s*[+＋]\s*$", re.I)
_CONFIRM = re.compile(r"^\s*(confirm|yes|ok|okay|continue|proceed|start new|new chat|clear|reset|delete|да|подтверд)\b", re.I)


class Discovery(BaseModel):
    url: str
    frame: list[str] | None = None
    selectors: dict[str, str] = {}
    options: dict[str, Any] = {}
    found: list[Found] = []
    problems: list[str] = []
    seconds: float = 0.0
    verification: ProbeReport | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and self.verification is not None and self.verification.ok

    def agent(self) -> dict[str, Any]:
        """The `agent` block of config.jsonc."""
        block: dict[str, Any] = {"driver": "generic", "url": self.url}
        if self.frame:
            block["frame"] = self.frame if len(self.frame) > 1 else self.frame[0]
        block["selectors"] = self.selectors
        if self.options:
            block["options"] = self.options
        return block

    def profile(self) -> Profile:
        return profile_from_dict({"name": "generic", "url": self.url, "selectors": self.selectors,
                                  **({"frame": self.frame} if self.frame else {}), **self.options})


@dataclass
class _Turn:
    """What the wait for the test reply saw: the agent's work (said once), and the longest pause between two
    changes once the work showed."""

    work: str | None = None
    longest_pause_s: float = 0.0


@dataclass
class _Composer:
    frame: Frame
    input_id: int
    score: float
    launcher: str | None = None


class _Out(Exception):
    """A part that could not be found: discovery stops with what it has."""


async def _call(frame: Frame, op: str, arg: Any = None, limit_s: float = PAGE_GRACE_S) -> Any:
    return await bounded(frame.evaluate(DISCOVER_JS, {"op": op, "arg": arg}), limit_s, f"discovery: {op}")


_WORDS = re.compile(r"^[^\W\d_][\w ,.'’!?-]{1,38}$")
_ROLES = {"button": "button", "a": "link", "summary": "button"}


async def control_selectors(frame: Frame, control: dict[str, Any]) -> list[str]:
    """A control's stable selectors: its role and accessible name first (`role=button[name="New chat"]`,
    Playwright's syntax, which input, send, new_chat, launcher and dismiss may use) when its name is
    words and finds it alone, then the page's own (test ids, labels, classes)."""
    own = await _call(frame, "selector", control["id"])
    role = control.get("role") or _ROLES.get(control.get("tag", ""), "")
    name = control.get("name", "")
    if role in ("button", "link") and _WORDS.match(name):
        by_role = f'role={role}[name="{name}"]'
        with contextlib.suppress(PlaywrightError):
            if await frame.locator(by_role).count() == 1:
                return [by_role, *own]
    return own


class Discoverer:
    def __init__(self, page: Page, url: str, *, say: Say, budget_s: float = BUDGET_S, shown: Callable[[str], str] = str,
                 logged_in: bool = False):
        self.page, self.url, self.say, self.shown = page, url, say, shown
        self.logged_in = logged_in  # a saved login (--auth) lives in the browser's storage
        self.deadline = time.monotonic() + max(budget_s - VERIFY_S, 10.0)
        self.result = Discovery(url=url)
        self.tag = f"check {token_source.randbelow(9000) + 1000}"

    # -- helpers -------------------------------------------------------------------------------

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def note(self, part: str, selector: str | None, how: str, rejected: list[str] | None = None) -> None:
        self.result.found.append(Found(part=part, selector=selector, how=how, rejected=rejected or []))
        if selector:
            self.say(f"{part}: {selector!r} ({how})")
        else:  # a selector not found says so; another finding (history, a completion window) says what it is
            self.say(f"{part}: none ({how})" if part.replace(" ", "_") in Selectors.model_fields else f"{part}: {how}")
        for r in (rejected or [])[:6]:
            self.say(f"  rejected {r}")

    async def frames(self) -> list[Frame]:
        return [self.page.main_frame] + [f for f in self.page.frames if f is not self.page.main_frame and not f.is_detached()]

    # -- 1, 2: the composer, the launcher, the frame ---------------------------------------------

    async def best_input(self) -> _Composer | None:
        best: _Composer | None = None
        for frame in await self.frames():
            try:
                found = await _call(frame, "inputs")
            except (PlaywrightError, DriverError):  # a frame navigating or gone: looked at again next time
                continue
            if found and (best is None or found[0]["score"] > best.score):
                best = _Composer(frame, found[0]["id"], found[0]["score"])
        return best

    async def find_composer(self) -> _Composer:
        loaded = time.monotonic()
        tried: set[tuple[str, str]] = set()
        rejected: list[str] = []
        while True:
            composer = await self.best_input()
            if composer is not None and composer.score >= 3:
                return composer
            if time.monotonic() - loaded >= LAUNCHER_AFTER_S:
                launched = await self.try_launchers(tried, rejected)
                if launched is not None:
                    return launched
            if self.left() <= 0:
                if composer is not None:
                    return composer
                raise _Out("no text box to type a message into, in any frame" +
                           (f"; launchers tried: {'; '.join(rejected)}" if rejected else "; no launcher found"))
            await asyncio.sleep(POLL_S * 2)

    async def try_launchers(self, tried: set[tuple[str, str]], rejected: list[str]) -> _Composer | None:
        candidates = []
        for frame in await self.frames():
            with contextlib.suppress(PlaywrightError, DriverError):
                for c in await _call(frame, "launchers"):  # all fixed in a corner, taking clicks
                    score = (3 if _LAUNCHER_NAME.search(c["name"]) else 0) + (1 if c["w"] < 130 and c["h"] < 130 else 0)
                    if c["href"] not in (None, "", "#") or (frame.url, str(c["id"])) in tried:
                        continue
                    candidates.append((score, frame, c))
        for _score, frame, c in sorted(candidates, key=lambda t: -t[0])[:3]:
            tried.add((frame.url, str(c["id"])))
            sels = await control_selectors(frame, c)
            if not sels:
                rejected.append(f"{c['name']!r}: no stable selector")
                continue
            try:
                await frame.locator(sels[0]).first.click(timeout=PAGE_GRACE_S * 1000)
            except PlaywrightError as e:
                rejected.append(f"{sels[0]!r}: {str(e).splitlines()[0]}")
                continue
            until = time.monotonic() + 4
            while time.monotonic() < min(until, self.deadline):
                composer = await self.best_input()
                if composer is not None and composer.score >= 3:
                    composer.launcher = sels[0]
                    self.note("launcher", sels[0], f"named {c['name']!r}, fixed in a corner: clicking it showed a text box")
                    return composer
                await asyncio.sleep(POLL_S)
            rejected.append(f"{sels[0]!r}: clicking it showed no text box")
        return None

    async def input_selectors(self, composer: _Composer) -> list[str]:
        """The text box's stable selectors. An app finishing its start-up may put a new text box in place of
        the first (Chainlit does): then the new one is found and asked."""
        for _ in range(10):
            if await _call(composer.frame, "isConnected", composer.input_id):
                sels = await _call(composer.frame, "selector", composer.input_id)
                if sels:
                    return sels
            await asyncio.sleep(POLL_S * 2)  # replaced, or two text boxes for a moment (the old one going)
            fresh = await self.best_input()
            if fresh is not None:
                composer.frame, composer.input_id, composer.score = fresh.frame, fresh.input_id, fresh.score
        raise _Out("the text box has no stable selector (no label, name, test id or class), or keeps being replaced")

    async def dismiss_dialogs(self) -> None:
        """A dialog over the chat at load is closed, and its close control becomes `dismiss` (the run
        clicks it whenever it shows up again)."""
        for frame in await self.frames():
            with contextlib.suppress(PlaywrightError, DriverError):
                for d in await _call(frame, "dialogs"):
                    await frame.locator(d["sel"]).first.click(timeout=PAGE_GRACE_S * 1000)
                    self.result.selectors.setdefault("dismiss", d["sel"])
                    self.note("dismiss", d["sel"], f"a dialog over the page at load, closed with {d['name']!r}")

    async def frame_chain(self, frame: Frame) -> list[str] | None:
        """The steps from the page down to `frame`, each a stable selector of the iframe element."""
        if frame is self.page.main_frame:
            return None
        steps: list[str] = []
        node: Frame | None = frame
        while node is not None and node.parent_frame is not None:
            steps.insert(0, await self.iframe_step(node))
            node = node.parent_frame
        return steps

    async def iframe_step(self, frame: Frame) -> str:
        parent = frame.parent_frame
        assert parent is not None
        element = await frame.frame_element()
        index = await parent.evaluate(DISCOVER_JS, {"op": "ref", "arg": element})
        own = [s for s in await _call(parent, "selector", index) if s != "iframe"]
        if own:
            return own[0]
        parts = urlsplit(frame.url)
        if parts.netloc:  # the frame's address without its query (which may hold a site token)
            by_src = f'iframe[src*="{parts.netloc}{parts.path}"]'
            if await parent.locator(by_src).count() == 1:
                return by_src
        if await parent.locator("iframe").count() == 1:
            return "iframe"
        return f"url={parts.scheme}://{parts.netloc}{parts.path}*"

    # -- 3, 4: send, the exchange, the bubbles -----------------------------------------------------

    async def type_into(self, frame: Frame, input_sel: str, text: str) -> None:
        """Type the message and see it stay: an app finishing its start-up may clear the first typing."""
        box = frame.locator(input_sel).first
        for _ in range(3):
            await box.fill(text, timeout=PAGE_GRACE_S * 1000)
            await asyncio.sleep(0.5)  # the window in which such apps clear it (a quiet window, not a sync)
            if " ".join((await box.evaluate("el => el.value ?? el.innerText ?? ''")).split()) == " ".join(text.split()):
                return
            self.say("the page cleared what was typed (an app still starting up?): typing it again")
        raise _Out("the page keeps clearing the text box: nothing can be typed into it")

    async def send_control(self, frame: Frame, input_id: int, input_sel: str, text: str) -> str | None:
        """A button by the input that is named for sending, submits its form, or is enabled only while the
        input holds text (seen by emptying the input once)."""
        await self.type_into(frame, input_sel, text)
        with_text = await _call(frame, "controls", input_id)
        await frame.locator(input_sel).first.fill("", timeout=PAGE_GRACE_S * 1000)
        await asyncio.sleep(0.3)  # the page's own handlers update the buttons (a quiet window, not a sync)
        empty = {c["id"]: c["disabled"] for c in await _call(frame, "controls", input_id)}
        await self.type_into(frame, input_sel, text)
        best, best_score, weighed = None, 2.5, []
        for c in with_text:
            buttonish = c["tag"] in ("button", "input") or c["role"] == "button"
            if c["disabled"] or not buttonish or _NOT_SEND.search(c["name"]) or c["href"] not in (None, ""):
                continue
            toggles = empty.get(c["id"], False)  # disabled without text, enabled with it
            named = bool(_SEND_NAME.search(c["name"]))
            if not (named or c["type"] == "submit" or toggles):
                continue  # a button that only stands near the input is no evidence
            score = (3 if c["sameForm"] else 0) + (3 if c["type"] == "submit" else 0) + (4 if named else 0) + (3 if toggles else 0)
            if c["near"] is not None and c["near"] < 300:
                score += 2 * (1 - c["near"] / 300)
            weighed.append(f"{c['name'][:30]!r} scored {score:.1f}")
            if score > best_score:
                best, best_score = c, score
        if best is None:
            self.note("send", None, "no button by the input is named for sending or submits its form: Enter sends", weighed)
            return None
        sels = await control_selectors(frame, best)
        if not sels:
            self.note("send", None, f"the best button {best['name']!r} has no stable selector: Enter sends", weighed)
            return None
        self.note("send", sels[0], f"named {best['name']!r}, score {best_score:.1f}")
        return sels[0]

    async def exchange(self, frame: Frame, input_id: int, input_sel: str, send: str | None, text: str) -> _Turn:
        """Send the one marked message (typed already) and wait for the reply to settle: unchanged a while with
        no busy sign shown (a stop control, the text box disabled, an "… is working" line), longer once the
        agent shows its work (a tool may run a while with nothing changing), longer still while a busy sign
        that came with our message shows."""
        await _call(frame, "arm", {"tag": self.tag, "input": input_id})
        box = frame.locator(input_sel).first
        if send:
            await frame.locator(send).first.click(timeout=PAGE_GRACE_S * 1000)
        else:
            await box.press("Enter", timeout=PAGE_GRACE_S * 1000)
        shown_by, enter_at = time.monotonic() + 10, time.monotonic() + 3
        state: dict[str, Any] = {}
        while not state.get("ours"):
            state = await _call(frame, "state")
            if state.get("ours"):
                break
            if send and time.monotonic() > enter_at and text.split()[0] in await box.evaluate("el => el.value ?? el.innerText ?? ''"):
                # the button did not send (the text is still there, so nothing was sent): Enter, once
                self.result.selectors.pop("send", None)
                self.note("send", None, f"{send!r} did not send the message (it stayed in the text box): Enter sends")
                await box.press("Enter", timeout=PAGE_GRACE_S * 1000)
                send = None
            if time.monotonic() > min(shown_by, self.deadline):
                raise _Out(f"our message did not show in the chat after pressing {send or 'Enter'!r}")
            await asyncio.sleep(POLL_S)
        last, since, started = None, time.monotonic(), time.monotonic()
        next_beat = started + 15
        seen = _Turn()
        while True:
            state = await _call(frame, "state")
            now = time.monotonic()
            if state.get("work") and not seen.work:
                seen.work = state["work"]
                self.say(f"the agent shows its work ({seen.work}): the reply counts as whole once the page is still "
                         f"{WORK_QUIET_S:.0f} s")
            if state.get("reply") != last:
                if seen.work and last:
                    seen.longest_pause_s = max(seen.longest_pause_s, now - since)
                last, since = state.get("reply"), now
            quiet = now - since
            needed = QUIET_BUSY_S if state.get("busy") else WORK_QUIET_S if seen.work else QUIET_S
            if last and quiet >= needed:
                if state.get("busy"):
                    self.say(f"the reply settled while {state['busy']}: taken as complete after {quiet:.0f} s unchanged")
                return seen
            if now >= next_beat:
                self.say(f"waiting for the reply: {now - started:.0f} s")
                next_beat += 15
            if now > self.deadline:
                raise _Out("no reply to our message came (or it never settled) within discovery's time")
            await asyncio.sleep(POLL_S)

    async def read_turn(self, frame: Frame, seen: _Turn) -> None:
        """The reply complete: the sides, the agent's work and the busy marker, as the page read them."""
        found = await _call(frame, "turn", limit_s=PAGE_GRACE_S * 3)
        if "error" in found:
            raise _Out(f"could not tell the bubbles apart: {found['error']}")
        told = sides(found)
        self.take(told)
        if told.problem:
            raise _Out(told.problem)
        self.take(strip(found))
        self.take(work(found, seen.longest_pause_s, seen.work))
        self.take(busy(found["markers"]))

    def take(self, reading: Reading) -> None:
        self.result.selectors.update(reading.selectors)
        for key, value in reading.options.items():
            if isinstance(value, dict) and isinstance(self.result.options.get(key), dict):
                self.result.options[key].update(value)
            else:
                self.result.options[key] = value
        for f in reading.findings:
            self.note(f.part, f.selector, f.how, f.rejected)

    # -- 5: history and New chat -------------------------------------------------------------------

    def driver(self) -> PlaywrightDriver:
        """The run's own driver on the discovered profile so far (a stand-in for the bubbles not yet found)."""
        selectors = dict(self.result.selectors)
        if "assistant_message" not in selectors and "message" not in selectors:
            selectors["assistant_message"] = "[data-mmb-not-yet]"
        authors = {"authors": self.result.options["authors"]} if "authors" in self.result.options else {}
        profile = profile_from_dict({"name": "generic", "url": self.url, "selectors": selectors, "ready_timeout_s": 15,
                                     **authors, **({"frame": self.result.frame} if self.result.frame else {})})
        return PlaywrightDriver(profile, self.page.context, artifacts=Path("."), screenshot_on_failure=False)

    async def reopened(self) -> Frame:
        """The chat's frame once its input shows again, as the driver waits for it (launcher included)."""
        driver = self.driver()
        await driver.adopt(self.page)
        try:
            return await driver.wait_ready()
        except DriverError as e:
            raise _Out(f"the chat did not show again after reopening the page: {e}") from None

    async def shows_ours(self, frame: Frame) -> bool:
        """Our test message in the chat: a bubble of ours (as the profile finds them) showing its tag."""
        sel = self.result.selectors.get("user_message") or self.result.selectors["message"]
        return bool(await _call(frame, "shows", {"sel": sel, "tag": self.tag}))

    async def empties(self, frame: Frame, within_s: float) -> bool:
        """Our message gone from the chat, and still gone a moment later."""
        until = time.monotonic() + within_s
        while time.monotonic() < until:
            with contextlib.suppress(PlaywrightError, DriverError):
                if not await self.shows_ours(frame):
                    await asyncio.sleep(0.3)
                    if not await self.shows_ours(frame):
                        return True
            await asyncio.sleep(POLL_S)
        return False

    async def history_kept(self) -> tuple[Frame, bool | None]:
        """Whether a reload shows the chat again (a restart can then look for the message it sent), as seen:
        our message shown again, or a chat that kept still a while without it; else not known, and left out."""
        await self.page.reload(wait_until="domcontentloaded")
        frame = await self.reopened()
        until = time.monotonic() + HISTORY_S
        while time.monotonic() < until:
            with contextlib.suppress(PlaywrightError, DriverError):
                if await self.shows_ours(frame):
                    self.result.options["keeps_history"] = True
                    self.note("history", None, "a reload shows our message again: keeps_history true")
                    return frame, True
                if await _call(frame, "still") >= STILL_S * 1000:
                    self.result.options["keeps_history"] = False
                    self.note("history", None, f"a reload shows a chat without our message, still for {STILL_S:g} s: "
                                               "keeps_history false")
                    return frame, False
            await asyncio.sleep(POLL_S)
        self.note("history", None, f"a reload showed no message of ours, but the page never kept still {STILL_S:g} s in "
                                   f"{HISTORY_S:g} s: whether it keeps its chat is not known (keeps_history left out: the "
                                   "run sees it for itself)")
        return frame, None

    async def new_chat_controls(self, frame: Frame) -> list[tuple[bool, str, str]]:
        """Controls named for a new chat, in the chat's frame first, then in the page: (in the page's
        own frame, selector, name); selectors, so they can be found again after a reload."""
        out: list[tuple[bool, str, str]] = []
        for scope in dict.fromkeys([frame, self.page.main_frame]):
            with contextlib.suppress(PlaywrightError, DriverError):
                for c in await _call(scope, "controls"):
                    if _NEW_CHAT.search(c["name"]):
                        sels = await control_selectors(scope, c)
                        if sels and all(sels[0] != known for _, known, _ in out):
                            out.append((scope is self.page.main_frame, sels[0], c["name"]))
        return out

    async def new_chat(self, frame: Frame, kept: bool | None, remembered: list[tuple[bool, str, str]]) -> None:
        """A control that empties the chat (tried only while the chat still shows our message); else a
        reload where it empties the chat, else forgetting the origin's storage."""
        controls = remembered + [c for c in await self.new_chat_controls(frame) if c not in remembered]
        weighed: list[str] = []
        if not kept:  # the reload emptied the chat already (or may have): the probe's own New chat will check a control
            if controls:
                _, sel, label = controls[0]
                self.result.selectors["new_chat"] = sel
                self.note("new chat", sel, f"named {label!r} (checked by the probe: a reload already emptied the chat)")
                return
            self.result.options["new_session"] = "reload"
            self.note("new chat", None, "no control named for it; a reload empties the chat: new_session reload")
            return
        for in_page, sel, label in controls[:5]:
            scope = self.page.main_frame if in_page else await self.reopened()
            before = {d["id"] for d in await _call(scope, "controls")}
            try:
                await scope.locator(sel).filter(visible=True).first.click(timeout=PAGE_GRACE_S * 1000)
            except PlaywrightError as e:
                weighed.append(f"{sel!r}: {str(e).splitlines()[0]}")
                continue
            confirm = await self.confirm(scope, before)
            chat = await self.reopened()
            if await self.empties(chat, 5):
                self.result.selectors["new_chat"] = sel
                if confirm:
                    self.result.selectors["new_chat_confirm"] = confirm
                self.note("new chat", sel, f"named {label!r}: clicking it emptied the chat" +
                          (f", after confirming with {confirm!r}" if confirm else ""), weighed)
                return
            weighed.append(f"{sel!r}: the chat still shows our message after clicking it")
        if self.logged_in:  # forgetting the storage would log out: the chat would never show again
            self.note("new chat", None, "no control named for a new chat empties it", weighed)
            raise _Out("no way to start a new chat: no control named for it empties the chat, and forgetting the "
                       "browser's storage would end the login (--auth) with it. A bot in a messenger starts a new "
                       'session with its command: set options.new_session to "message" (new_session_message, '
                       'default "/new"), as the telegram and hydrogen profiles do')
        self.note("new chat", None, "no control named for a new chat empties it: trying the browser's storage", weighed)
        await self.forget_storage()

    async def confirm(self, scope: Frame, before: set[int]) -> str | None:
        """A confirmation the click opened (a dialog's Yes / New chat / OK), pressed; its selector."""
        until = time.monotonic() + 1.5
        while time.monotonic() < until:
            with contextlib.suppress(PlaywrightError, DriverError):
                for c in await _call(scope, "controls"):
                    if c["id"] not in before and _CONFIRM.search(c["name"]):
                        sels = await control_selectors(scope, c)
                        if sels:
                            await scope.locator(sels[0]).first.click(timeout=PAGE_GRACE_S * 1000)
                            return sels[0]
            await asyncio.sleep(POLL_S)
        return None

    async def forget_storage(self) -> None:
        """As the driver's `storage` new session does (the same code), checked the same way."""
        driver = self.driver()
        await driver.adopt(self.page)
        try:
            await driver.forget_storage()
        except PlaywrightError as e:
            raise _Out(f"no way to start a new chat: forgetting the storage failed ({str(e).splitlines()[0]})") from None
        self.page = driver.page or self.page
        if await self.empties(await self.reopened(), 5):
            self.result.options["new_session"] = "storage"
            self.note("new chat", None, "forgetting the chat origin's storage empties it: new_session storage")
            return
        raise _Out("no way to start a new chat: no control named for it empties the chat, and neither does "
                   "forgetting the browser's storage")

    # -- the whole ---------------------------------------------------------------------------------

    async def run(self, *, send: bool) -> Discovery:
        started = time.monotonic()
        await self.page.add_init_script(SHADOW_HOOK_JS)
        try:
            await self.page.goto(self.url, wait_until="domcontentloaded")
            composer = await self.find_composer()
            frame = composer.frame
            await self.dismiss_dialogs()
            self.result.frame = await self.frame_chain(frame)
            if self.result.frame:
                self.note("frame", " > ".join(self.result.frame), f"the text box is in the frame at {self.shown(frame.url)}")
            if composer.launcher:
                self.result.selectors["launcher"] = composer.launcher
            input_sels = await self.input_selectors(composer)
            frame = composer.frame
            self.result.selectors["input"] = input_sels[0]
            self.note("input", input_sels[0], f"score {composer.score:.1f}")
            if not send:
                await self.guess_without_sending(frame, composer.input_id)
                return self.result
            text = probe_message(f"Hello! Please answer with a short greeting. ({self.tag})")
            send_sel = await self.send_control(frame, composer.input_id, input_sels[0], text)
            if send_sel:
                self.result.selectors["send"] = send_sel
            seen = await self.exchange(frame, composer.input_id, input_sels[0], send_sel, text)
            await self.read_turn(frame, seen)
            remembered = await self.new_chat_controls(frame)  # some show only while the chat has messages
            frame, kept = await self.history_kept()
            await self.new_chat(frame, kept, remembered)
            for line in build_made(self.result.selectors):
                self.say(line)
        except _Out as e:
            self.result.problems.append(str(e))
            self.say(f"stopped: {e}")
        except (PlaywrightError, TimeoutError) as e:
            self.result.problems.append(f"the page failed us: {str(e).splitlines()[0]}")
        finally:
            self.result.seconds = time.monotonic() - started
        return self.result

    async def guess_without_sending(self, frame: Frame, input_id: int) -> None:
        """Typing nothing: the send control and New chat by their names, the bubbles by names of a side
        on bubbles already shown (a welcome); what is missing is said."""
        for c in await _call(frame, "controls", input_id):
            buttonish = c["tag"] in ("button", "input") or c["role"] == "button"
            if buttonish and not c["disabled"] and _SEND_NAME.search(c["name"]) and not _NOT_SEND.search(c["name"]):
                sels = await control_selectors(frame, c)
                if sels:
                    self.result.selectors["send"] = sels[0]
                    self.note("send", sels[0], f"named {c['name']!r} (not tried: --no-send)")
                    break
        for _, sel, label in (await self.new_chat_controls(frame))[:1]:
            self.result.selectors["new_chat"] = sel
            self.note("new chat", sel, f"named {label!r} (checked by the probe)")
        guessed = await _call(frame, "guess")
        for side, part in (("assistant", "assistant_message"), ("user", "user_message")):
            if side in guessed:
                self.result.selectors[part] = guessed[side]
                self.note(part, guessed[side], "a guess from a bubble already shown whose name says whose it is")
        if "assistant_message" not in self.result.selectors:
            self.result.problems.append("--no-send: no bubble on the page says whose it is, so the agent's bubbles "
                                        "cannot be told without a message: run without --no-send")


async def discover(context: BrowserContext, url: str, *, new_context: NewContext, out_dir: Path, say: Say,
                   send: bool = True, budget_s: float = BUDGET_S, logged_in: bool = False) -> Discovery:
    """Find the chat on `url` in a page of `context` (`logged_in`: it holds a saved login), then verify the
    profile on a fresh context."""
    started = time.monotonic()
    hidden = ChatUrl(url)
    page = await context.new_page()
    finder = Discoverer(page, hidden.opened, say=say, budget_s=budget_s, shown=hidden.hide, logged_in=logged_in)
    found = await finder.run(send=send)
    found.url = url
    with contextlib.suppress(PlaywrightError):
        frames = list_frames(finder.page)
        if len(frames) > 1:
            say("frames: " + "; ".join(hidden.hide(f.describe()) for f in frames))
        await context.close()
    if found.problems and send:
        return found
    if "input" not in found.selectors or not ({"assistant_message", "message"} & found.selectors.keys()):
        return found
    say("verifying the profile the run's way (mmb probe) on a fresh browser context")
    verify_context = await new_context()
    driver = PlaywrightDriver(found.profile(), verify_context, artifacts=out_dir)
    try:
        found.verification = await probe(driver, out_dir=out_dir, send=DEFAULT_TEXT if send else None,
                                         budget_s=max(budget_s - (time.monotonic() - started), VERIFY_S * 0.6))
    finally:
        await driver.close(failed=not (found.verification and found.verification.ok))
    found.seconds = time.monotonic() - started
    return found
