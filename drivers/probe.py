"""`mmb probe`: does a profile fit a live chat page? It goes the run's own way, on a short clock.

It opens the page with the run's driver, then reports for each selector of the profile how many
elements it matches and how many are visible, counted as the run finds them (the messages and
markers by the page scripts, open shadow roots included; the rest by Playwright's locators) and
flags a selector the two see differently. Then, unless `--no-send`, it sends one message marked as a
probe ("[mmb probe] ... not a fact about me") through the run's own send and reply watch, shows the
reply and the signal that ended the wait, and leaves that chat with New chat, checking that it
reset, as a run does. A screenshot is saved. Everything ends within the budget (25 s by default):
the run's time limits are cut to fit it, and a stage that would overrun is stopped, with what each
selector matched at that moment.

`ok` when everything fits; `invalid` when a selector is not valid (a message or marker selector that
is not plain CSS, or one Playwright cannot parse): `mmb probe` exits 1 or, for that, 2.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel

from .base import DriverError, InputCleared, SelectorError
from .generic import PlaywrightDriver, SelectorMatch
from .profile import Profile

T = TypeVar("T")
Verdict = Literal["ok", "missing", "invalid", "not editable", "split", "info"]

PROBE_MARK = "[mmb probe]"
DEFAULT_TEXT = "Hello! I am checking that this chat works."
BUDGET_S = 25.0
WAIT_S = 8.0  # the input may take this long to show up
_RESERVE_S = 3.0  # kept back from the budget for the last look at the page and the screenshot

# What a selector that matches nothing on a fresh page may still be fine for.
_LATER = {
    "assistant_message": "matches after a reply",
    "user_message": "matches after a message is sent",
    "message": "matches once the chat has messages",
    "author": "names the author of each message",
    "tool": "shows while the agent works with a tool",
    "thought": "shows while the agent reasons",
    "status": "shows while the agent works",
    "busy": "shows while the agent works",
    "done": "shows on a finished reply",
    "ignore": "welcome and placeholder bubbles",
    "strip": "parts of a bubble",
    "notice": "agent notices",
    "error": "shows when the agent fails",
    "new_chat_confirm": "shows after clicking new chat",
    "new_chat": "not used for this profile's new sessions",
    "send": "may show only once text is typed: the round trip tries it",
    "launcher": "shows while the chat is closed",
}


def probe_message(text: str) -> str:
    """What the probe types: marked, so the agent does not take it for a fact about the user."""
    return f"{PROBE_MARK} {text} (a test message from the MarathonMemBench probe, not a fact about me: no need to remember it)"


def for_probe(profile: Profile, wait_s: float) -> Profile:
    """The profile with its time limits cut so that a failing probe answers within the budget."""
    c = profile.completion
    return profile.model_copy(update={
        "ready_timeout_s": min(profile.ready_timeout_s, wait_s), "send_timeout_s": min(profile.send_timeout_s, 5),
        "reset_timeout_s": min(profile.reset_timeout_s, 5),
        "completion": c.model_copy(update={"first_bubble_timeout_s": min(c.first_bubble_timeout_s, 8),
                                           "timeout_s": min(c.timeout_s, 12)})})


class SelectorCheck(BaseModel):
    key: str
    selector: str
    required: bool
    count: int = 0
    visible: int = 0
    in_page: int | None = None  # messages and markers: the matches the page scripts see
    editable: bool | None = None
    verdict: Verdict = "info"
    note: str = ""


class SendCheck(BaseModel):
    text: str
    retyped: int = 0  # the page cleared what was typed before send (nothing sent), so it was typed again
    bubbles: list[str] = []
    work: list[str] = []  # the work the reply showed beside its answer, "kind: title"
    signal: str = ""
    seconds: float = 0.0
    error: str | None = None


class NewChatCheck(BaseModel):
    how: str
    sign: str = ""
    error: str | None = None


class ProbeReport(BaseModel):
    profile: str
    url: str
    title: str = ""
    user_agent: str = ""
    shadow_roots: int = 0
    frames: list[str] = []  # every frame of the page, the one that holds the chat marked
    open_error: str | None = None
    input_in_frames: list[str] = []  # when the chat did not open: frames where the input selector matches
    checks: list[SelectorCheck] = []
    send: SendCheck | None = None
    after_send: list[SelectorCheck] = []
    new_chat: NewChatCheck | None = None
    out_of_time: str | None = None  # the stage the budget ran out in
    input_waited_s: float | None = None  # the input was hidden at the first look: waited this long for it
    screenshot: Path | None = None
    traces: list[Path] = []

    @property
    def invalid(self) -> bool:
        return any(c.verdict == "invalid" for c in self.checks + self.after_send)

    @property
    def ok(self) -> bool:
        failed = any(c.verdict in ("invalid", "split") or (c.required and c.verdict != "ok")
                     for c in self.checks + self.after_send)
        return not (failed or self.open_error or self.out_of_time or (self.send and self.send.error)
                    or (self.new_chat and self.new_chat.error))

    def render(self) -> str:
        lines = [f"probe {self.profile} @ {self.url}", f"  page: {self.title!r}, {self.user_agent}; "
                 f"{self.shadow_roots} open shadow root{'s' if self.shadow_roots != 1 else ''}"]
        if len(self.frames) > 1:
            lines.append("  frames:")
            lines += [f"    {f}" for f in self.frames[:12]]
            if len(self.frames) > 12:
                lines.append(f"    ... and {len(self.frames) - 12} more")
        if self.open_error:
            lines.append(f"  opening: {self.open_error}")
        if self.input_waited_s is not None:
            lines.append(f"  the input was hidden just after the chat opened: waited {self.input_waited_s:.1f} s "
                         "for it to show again, as a run does before typing")
        for where in self.input_in_frames:
            lines.append(f"  the input matches in the frame at {where}: give that frame (--frame, agent.frame)")
        lines += _table(self.checks)
        if self.send is not None:
            s = self.send
            if s.error:
                lines.append(f"send {s.text!r}: FAILED: {s.error}")
            else:
                lines.append(f"send {s.text!r}: reply in {s.seconds:.1f} s, {len(s.bubbles)} bubble(s), signal {s.signal}"
                             + (f" (typed again {s.retyped} time(s): the page had cleared the input before send)"
                                if s.retyped else ""))
                lines += [f"  reply[{i}]: {b!r}" for i, b in enumerate(s.bubbles)]
                lines += [f"  work[{i}] (not the answer): {w!r}" for i, w in enumerate(s.work)]
            if self.after_send:
                lines.append("after the reply:")
                lines += _table(self.after_send)
        if self.new_chat is not None:
            n = self.new_chat
            lines.append(f"new chat ({n.how}): " + (f"FAILED: {n.error}" if n.error else n.sign))
        if self.out_of_time:
            lines.append(f"out of time: the probe's budget ran out while {self.out_of_time}")
        if self.screenshot:
            lines.append(f"screenshot: {self.screenshot}")
        lines += [f"trace: {t}" for t in self.traces]
        lines.append("OK: the profile fits this page" if self.ok else "FAILED: fix the selectors marked above "
                     "(override them with --selector key=css, then in config.jsonc agent.selectors)")
        return "\n".join(lines)


def _table(checks: list[SelectorCheck]) -> list[str]:
    width_key = max((len(c.key) for c in checks), default=0)
    width_sel = min(max((len(c.selector) for c in checks), default=0), 48)
    rows = []
    for c in checks:
        found = f"{c.count} match{'es' if c.count != 1 else ''}, {c.visible} visible"
        if c.editable is not None:
            found += ", editable" if c.editable else ", NOT editable"
        mark = {"ok": "ok", "info": "", "missing": "MISSING", "invalid": "INVALID", "not editable": "NOT EDITABLE",
                "split": "SPLIT"}[c.verdict]
        rows.append(f"  {c.key:<{width_key}}  {c.selector:<{width_sel}}  {found:<30} {mark}"
                    + (f"  ({c.note})" if c.note else ""))
    return rows


def required_keys(profile: Profile, *, after_send: bool) -> set[str]:
    """What must match something visible: the input at once; the bubbles, and a New chat button, once the
    chat has a message and its reply. Many UIs show send only once text is typed (Open WebUI) and a New
    chat or Clear button only once the chat has messages (Gradio): the round trip and New chat try those."""
    keys = {"input"}
    if after_send:
        sel = profile.selectors
        keys |= {"message", "author"} if sel.by_author else \
            {"assistant_message"} | ({"user_message"} if sel.user_message else set())
        if profile.new_session == "button":
            keys.add("new_chat")
    return keys


def judge(match: SelectorMatch, required: bool, new_session: str = "button") -> SelectorCheck:
    """What the probe says about one selector, from what the driver found with it."""
    check = SelectorCheck(key=match.key, selector=match.selector, required=required, count=match.count,
                          visible=match.visible, in_page=match.in_page, editable=match.editable)
    if match.error:
        check.verdict, check.note = "invalid", match.error[:200]
    elif match.in_page is not None and match.in_page != match.count:
        check.verdict = "split"
        check.note = (f"the page scripts see {match.in_page}, Playwright {match.count}: write it as inside one shadow "
                      "root, it must not cross a shadow boundary")
    elif check.required:
        if not check.visible:
            check.verdict = "missing"
            check.note = "matches nothing visible" if check.count else "matches nothing"
        elif check.editable is False:
            check.verdict = "not editable"
        else:
            check.verdict = "ok"
            if check.visible > 1 and match.key in ("input", "send"):
                check.note = f"{check.visible} visible: the first is used"
    elif not check.count:
        check.note = ("may show only once the chat has messages: New chat tries it"
                      if match.key == "new_chat" and new_session == "button" else _LATER.get(match.key, ""))
    return check


async def check_selectors(driver: PlaywrightDriver, *, after_send: bool = False) -> list[SelectorCheck]:
    required = required_keys(driver.profile, after_send=after_send)
    return [judge(m, m.key in required, driver.profile.new_session) for m in await driver.selector_matches()]


async def probe(driver: PlaywrightDriver, *, out_dir: Path, send: str | None = DEFAULT_TEXT,
                budget_s: float = BUDGET_S) -> ProbeReport:
    """Open the driver's chat, check every selector, send a marked message and leave with New chat
    (unless `send` is None), screenshot; all within `budget_s`."""
    report = ProbeReport(profile=driver.profile.name, url=driver.base_url)
    out_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + max(budget_s - _RESERVE_S, 1.0)

    async def within(stage: str, step: Awaitable[T]) -> T | None:
        try:
            return await asyncio.wait_for(step, max(deadline - time.monotonic(), 0.1))
        except TimeoutError:
            report.out_of_time = report.out_of_time or stage
            return None

    try:
        await within("opening the chat", driver.open(None))
    except SelectorError as e:
        report.open_error = str(e)  # the table below marks the selector
    except DriverError as e:
        report.open_error = str(e)
    page = driver.page
    if page is None:
        return report
    report.url, report.title = driver.shown(page.url), await page.title()
    report.user_agent = await page.evaluate("navigator.userAgent")
    report.shadow_roots, frames = await driver.page_parts()
    for info in frames:  # a chat that did not open is not known to be where the profile looked
        info.chat = info.chat and not report.open_error
    report.frames = [f.describe() for f in frames]
    if report.open_error and len(frames) > 1:
        report.input_in_frames = await driver.frames_with_input()
    report.checks = await check_selectors(driver)
    if not report.open_error and _input_hidden(report.checks):
        # An app may hide its input a while just after it showed (a chat area suspended while the rest
        # loads): the run waits for it before typing, and so does the check.
        began = time.monotonic()
        try:
            await within("waiting for the input to show again", driver.wait_ready())
        except DriverError as e:
            report.open_error = str(e)
        report.input_waited_s = time.monotonic() - began
        report.checks = await check_selectors(driver)
    report.screenshot = out_dir / f"probe-{driver.profile.name}-{time.strftime('%Y%m%d-%H%M%S')}.png"
    await page.screenshot(path=str(report.screenshot), full_page=True)
    fits = not report.open_error and not report.out_of_time and not any(
        c.verdict in ("invalid", "split") or (c.required and c.verdict != "ok") for c in report.checks)
    if send is not None:
        report.send = SendCheck(text=probe_message(send))
        if not fits:
            report.send.error = "not tried: a selector above does not fit"
        else:
            await _send(driver, report.send, within)
            report.after_send = await check_selectors(driver, after_send=True)
    if fits and not report.out_of_time:
        await _new_chat(driver, report, within, sent=send is not None)
    page = driver.page or page  # a new chat by forgetting storage opens the chat in a new tab
    await page.screenshot(path=str(report.screenshot), full_page=True)
    return report


def _input_hidden(checks: list[SelectorCheck]) -> bool:
    return any(c.key == "input" and c.count and not c.visible for c in checks)


async def _send(driver: PlaywrightDriver, check: SendCheck, within, cleared_retries: int = 2) -> None:
    """The run's send; a page that cleared the input before send (nothing was sent) gets it typed again,
    as a run's recovery does."""
    for attempt in range(cleared_retries + 1):
        try:
            reply = await within("waiting for the reply", driver.send(check.text))
            break
        except InputCleared as e:
            if attempt == cleared_retries:
                check.error = str(e)
                return
            check.retyped += 1
        except DriverError as e:
            check.error = str(e)
            return
    if reply is None:
        check.error = "no complete reply within the probe's budget"
        return
    check.bubbles, check.signal, check.seconds = reply.bubbles, reply.signal, reply.seconds
    check.work = [f"{a.kind}: {a.title}" for a in reply.activity]


async def _new_chat(driver: PlaywrightDriver, report: ProbeReport, within, *, sent: bool) -> None:
    """New chat as the run starts one, and the check that the chat reset; the probe's message is left behind."""
    mode = driver.profile.new_session
    if mode == "message" and not sent:
        report.new_chat = NewChatCheck(how=mode, sign=f"not tried: it would type {driver.profile.new_session_message!r}")
        return
    report.new_chat = NewChatCheck(how=mode)
    try:
        info = await within("starting a new chat", driver.new_session())
    except DriverError as e:
        report.new_chat.error = str(e)
        return
    if info is None:
        report.new_chat.error = "the new chat did not finish within the probe's budget"
    else:
        report.new_chat.sign = info.reset_sign
