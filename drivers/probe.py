"""`mmb probe`: does a profile fit a live chat page? Every selector with its matches, in minutes.

Opens the page like a run would, then reports for each selector of the profile how many elements
it matches and how many are visible (for the input: whether it is editable), saves a screenshot,
and optionally sends one message to show the reply and the signal that ended the wait. Required
selectors (the input, the send button when there is one, the new-chat button when that is how
sessions start) must match something visible; the others may match nothing before a reply.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from pydantic import BaseModel

from .base import DriverError
from .generic import PlaywrightDriver
from .profile import Profile

Verdict = Literal["ok", "missing", "invalid", "not editable", "info"]

# What a selector that matches nothing on a fresh page may still be fine for.
_LATER = {
    "assistant_message": "matches after a reply",
    "user_message": "matches after a message is sent",
    "busy": "shows while the agent works",
    "done": "shows on a finished reply",
    "ignore": "welcome and placeholder bubbles",
    "strip": "parts of a bubble",
    "notice": "agent notices",
    "new_chat_confirm": "shows after clicking new chat",
    "new_chat": "not used for this profile's new sessions",
}


class SelectorCheck(BaseModel):
    key: str
    selector: str
    required: bool
    count: int = 0
    visible: int = 0
    editable: bool | None = None
    verdict: Verdict = "info"
    note: str = ""


class SendCheck(BaseModel):
    text: str
    bubbles: list[str] = []
    signal: str = ""
    seconds: float = 0.0
    error: str | None = None


class ProbeReport(BaseModel):
    profile: str
    url: str
    title: str = ""
    user_agent: str = ""
    open_error: str | None = None
    checks: list[SelectorCheck] = []
    after_send: list[SelectorCheck] = []
    screenshot: Path | None = None
    send: SendCheck | None = None
    traces: list[Path] = []

    @property
    def ok(self) -> bool:
        failed = any(c.required and c.verdict != "ok" for c in self.checks + self.after_send)
        return not failed and not (self.send and self.send.error)

    def render(self) -> str:
        lines = [f"probe {self.profile} @ {self.url}", f"  page: {self.title!r}, {self.user_agent}"]
        if self.open_error:
            lines.append(f"  opening: {self.open_error}")
        lines += _table(self.checks)
        if self.send is not None:
            s = self.send
            if s.error:
                lines.append(f"send {s.text!r}: FAILED: {s.error}")
            else:
                lines.append(f"send {s.text!r}: reply in {s.seconds:.1f} s, {len(s.bubbles)} bubble(s), signal {s.signal}")
                lines += [f"  reply[{i}]: {b!r}" for i, b in enumerate(s.bubbles)]
            if self.after_send:
                lines.append("after the reply:")
                lines += _table(self.after_send)
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
        mark = {"ok": "ok", "info": "", "missing": "MISSING", "invalid": "INVALID", "not editable": "NOT EDITABLE"}[c.verdict]
        rows.append(f"  {c.key:<{width_key}}  {c.selector:<{width_sel}}  {found:<30} {mark}"
                    + (f"  ({c.note})" if c.note else ""))
    return rows


def required_keys(profile: Profile, *, after_send: bool) -> set[str]:
    keys = {"input"}
    if profile.selectors.send:
        keys.add("send")
    if profile.new_session == "button":
        keys.add("new_chat")
    if after_send:
        keys |= {"assistant_message"} | ({"user_message"} if profile.selectors.user_message else set())
    return keys


_COUNT_JS = """(els) => [els.length, els.filter(e => e.checkVisibility ? e.checkVisibility({visibilityProperty: true})
                                                    : !!(e.offsetWidth || e.offsetHeight)).length]"""


async def check_selectors(page: Page, profile: Profile, *, after_send: bool = False) -> list[SelectorCheck]:
    required = required_keys(profile, after_send=after_send)
    checks = []
    for key, selector in profile.selectors.model_dump().items():
        if not selector:
            continue
        check = SelectorCheck(key=key, selector=selector, required=key in required)
        locator = page.locator(selector)
        try:
            check.count, check.visible = await locator.evaluate_all(_COUNT_JS)
        except PlaywrightError as e:
            check.verdict, check.note = "invalid", str(e).splitlines()[0][:160]
            checks.append(check)
            continue
        if key == "input" and check.visible:
            try:
                check.editable = await locator.filter(visible=True).first.is_editable(timeout=5000)
            except PlaywrightError:  # not an input, textarea or contenteditable at all
                check.editable = False
        if check.required:
            if not check.visible:
                check.verdict = "missing"
                check.note = "matches nothing visible" if check.count else "matches nothing"
            elif check.editable is False:
                check.verdict = "not editable"
            else:
                check.verdict = "ok"
                if check.visible > 1 and key in ("input", "send"):
                    check.note = f"{check.visible} visible: the first is used"
        elif not check.count:
            check.note = _LATER.get(key, "")
        checks.append(check)
    return checks


async def probe(driver: PlaywrightDriver, *, out_dir: Path, send: str | None = None) -> ProbeReport:
    """Open the driver's chat, check every selector, screenshot, and try one round trip if asked."""
    report = ProbeReport(profile=driver.profile.name, url=driver.base_url)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        await driver.open(None)
    except DriverError as e:
        report.open_error = str(e)
    page = driver.page
    if page is None:
        return report
    report.url, report.title = driver.shown(page.url), await page.title()
    report.user_agent = await page.evaluate("navigator.userAgent")
    report.checks = await check_selectors(page, driver.profile)
    report.screenshot = out_dir / f"probe-{driver.profile.name}-{time.strftime('%Y%m%d-%H%M%S')}.png"
    await page.screenshot(path=str(report.screenshot), full_page=True)
    if send is not None:
        report.send = SendCheck(text=send)
        if any(c.required and c.verdict != "ok" for c in report.checks):
            report.send.error = "not tried: a required selector does not fit"
        else:
            try:
                reply = await driver.send(send)
                report.send.bubbles, report.send.signal, report.send.seconds = reply.bubbles, reply.signal, reply.seconds
            except DriverError as e:
                report.send.error = str(e)
            report.after_send = await check_selectors(page, driver.profile, after_send=True)
            await page.screenshot(path=str(report.screenshot), full_page=True)
    return report
