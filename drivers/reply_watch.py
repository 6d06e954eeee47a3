"""Knowing when the agent's reply is complete: watched inside the page, judged by three signals.

Before a message is sent, `arm` marks what is already in the chat and starts a MutationObserver
that notices a busy marker even if it flashes between two polls. Then `wait` polls one function in
the page until the reply is complete:

* the reply is every agent bubble after our own (last) bubble; without a user selector, every
  bubble that was not there before sending (by node, or by text once the list was re-rendered);
* welcome and ignored bubbles never count; placeholder bubbles ("Thinking…", "…", empty) are not
  text, and one shown after the last real bubble means the agent is still working;
* complete = at least one real bubble, no busy marker visible, the done marker shown on or after
  the last bubble (when the profile has one), and nothing changed for a quiet window. The window
  is short (`quiet_ms_with_markers`) once a marker has spoken (busy seen and gone, or done shown)
  and long (`quiet_ms`) when only text stability can tell, e.g. a busy marker that never showed.

The result names the signals that fired, e.g. "busy-gone+done+stable(130ms)", which goes into
transcript.jsonl; a timeout says which stage it was stuck in.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeout

from .profile import Profile

WATCH_JS = r"""
({op, cfg}) => {
  const W = (window.__mmbWatch = window.__mmbWatch || {});
  const now = performance.now();
  const SEEN = "data-mmb-seen";
  const all = (s) => (s ? Array.from(document.querySelectorAll(s)) : []);
  const visible = (el) => (el.checkVisibility ? el.checkVisibility({visibilityProperty: true})
                                               : !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length));
  const after = (a, b) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
  const busyNow = () => all(cfg.busy).some(visible);
  const textOf = (el) => {
    let t = el.innerText || el.textContent || "";
    if (cfg.strip) for (const s of el.querySelectorAll(cfg.strip)) {
      const x = (s.innerText || s.textContent || "").trim();
      const at = x ? t.lastIndexOf(x) : -1;  // timestamps and buttons come last
      if (at >= 0) t = t.slice(0, at) + t.slice(at + x.length);
    }
    return t.trim();
  };
  const placeholders = cfg.placeholders.map((p) => new RegExp(p, "i"));
  const isPlaceholder = (text) => placeholders.some((r) => r.test(text));
  const candidates = () => all(cfg.assistant);

  // Which bubbles belong to this reply, and whether a placeholder still trails it.
  function assess(w) {
    let bubbles = candidates();
    let anchor = null;
    if (cfg.user) {
      const users = all(cfg.user);
      // A virtualized list (Telegram K, OpenClaw) drops old bubbles, so the count may not grow: a last
      // user bubble without our mark is new too, if marked ones remain (else the list was re-rendered).
      const fresh = w.marking && !!users.length && !users[users.length - 1].hasAttribute(SEEN) &&
                    users.some((u) => u.hasAttribute(SEEN));
      if (users.length <= cfg.usersBefore && !fresh) return null;  // our message is not shown yet
      anchor = users[users.length - 1];
      bubbles = bubbles.filter((el) => after(anchor, el));
    } else if (w.marked && !bubbles.some((el) => el.hasAttribute(SEEN))) {
      // Re-rendered list: our marks are gone; what is new is what follows the texts shown before.
      const texts = bubbles.map((el) => (cfg.ignore && el.closest(cfg.ignore) ? null : textOf(el)));
      let kept = 0, i = 0;
      for (; i < texts.length && kept < w.before.length; i++) {
        if (texts[i] === null) continue;
        if (texts[i] !== w.before[kept]) break;
        kept++;
      }
      bubbles = bubbles.slice(i);
    } else {
      bubbles = bubbles.filter((el) => !el.hasAttribute(SEEN));
    }
    const shown = bubbles.map((el) => ({el, text: textOf(el), ignored: !!(cfg.ignore && el.closest(cfg.ignore))}));
    const real = shown.filter((b) => !b.ignored && !isPlaceholder(b.text));
    const lastReal = real[real.length - 1];
    // A placeholder after the last real bubble: the agent is still at work on (a part of) the reply.
    const pending = cfg.placeholderBusy && shown.some((b) => isPlaceholder(b.text) && (!lastReal || after(lastReal.el, b.el)));
    if (pending) w.placeholderSeen = true;  // a placeholder held the reply open at least once
    return {anchor, shown, real, lastReal, pending};
  }

  function arm(mark) {
    for (const w of Object.values(W)) if (w.observer) w.observer.disconnect();
    for (const k of Object.keys(W)) delete W[k];
    const before = candidates();
    if (mark) for (const s of [cfg.assistant, cfg.user, cfg.notice, cfg.done]) for (const el of all(s)) el.setAttribute(SEEN, "1");
    const w = {since: now, sig: null, busySeen: busyNow() ? now : 0, placeholderSeen: false,
               before: before.filter((el) => !(cfg.ignore && el.closest(cfg.ignore))).map(textOf),
               marked: mark ? before.length : 0, marking: !!mark, observer: null};
    // Between two polls a busy marker or a placeholder may come and go: every DOM change is seen here.
    w.observer = new MutationObserver(() => {
      if (cfg.busy && !w.busySeen && busyNow()) w.busySeen = performance.now();
      if (!w.placeholderSeen) assess(w);
    });
    w.observer.observe(document.documentElement, {subtree: true, childList: true, attributes: true, characterData: true});
    W[cfg.token] = w;
    return w;
  }
  if (op === "arm") { arm(cfg.mark); return true; }
  // After a reload (or a restart of ours) there is no watch yet: one that marks nothing carries on.
  const w = W[cfg.token] || arm(false);
  if (op === "disarm") { if (w.observer) w.observer.disconnect(); delete W[cfg.token]; return true; }

  const seen = assess(w);
  if (seen === null) {
    return op !== "diagnose" ? false : {stage: "our message is not shown", busy: busyNow(), busySeen: !!w.busySeen,
                                        done: false, bubbles: 0, pending: false, last: "", stableFor: 0};
  }
  const {anchor, shown, real, lastReal, pending} = seen;
  const busy = busyNow();
  if (busy && !w.busySeen) w.busySeen = now;
  // Done "on" the bubble: it, a part of it, or its message container; or a fresh marker after it.
  const doneMark = (el) => !!el.closest(cfg.done) || !!el.querySelector(cfg.done) ||
                           all(cfg.done).some((d) => !d.hasAttribute(SEEN) && after(el, d));
  const done = !!cfg.done && !!lastReal && doneMark(lastReal.el);
  const texts = real.map((b) => b.text);
  // Stability counts from the last change of the text or of any marker.
  const sig = JSON.stringify([texts, busy, done, pending]);
  if (sig !== w.sig) { w.sig = sig; w.since = now; }
  const stableFor = now - w.since;
  if (op === "diagnose") {
    const name = texts.length ? "reply not complete" : (shown.length || busy ? "reply not started (only placeholders or a busy marker)" : "no reply bubble");
    return {stage: name, busy, busySeen: !!w.busySeen, done, bubbles: texts.length, pending,
            last: (texts[texts.length - 1] || "").slice(-200), stableFor};
  }
  if (op === "started") return shown.length > 0 || busy || !!w.busySeen;

  // op === "check"
  if (!texts.length || busy || pending || (cfg.done && !done)) return false;
  const markersSpoke = done || (!!cfg.busy && !!w.busySeen);
  const quiet = markersSpoke ? cfg.quietMarkers : cfg.quiet;
  if (stableFor < quiet) return false;
  const signal = [];
  if (cfg.busy) signal.push(w.busySeen ? "busy-gone" : "busy-unseen");
  if (cfg.done) signal.push("done");
  if (w.placeholderSeen) signal.push("placeholder-gone");
  signal.push(`stable(${Math.round(stableFor)}ms)`);
  const notices = all(cfg.notice).filter((n) => !n.hasAttribute(SEEN) && (!anchor || after(anchor, n))).map(textOf);
  if (w.observer) w.observer.disconnect();
  delete W[cfg.token];
  return {bubbles: texts, signal: signal.join("+"), notices};
}
"""

_tokens = itertools.count(1)


@dataclass
class Watched:
    bubbles: list[str]
    signal: str
    notices: list[str] = field(default_factory=list)


@dataclass
class WaitFailure:
    """Why a reply was not complete in time, in words, for the error message."""

    stage: str
    waited_s: float
    state: dict[str, Any]

    def describe(self) -> str:
        s = self.state
        text = f"{self.stage}"
        if s.get("stage") != "our message is not shown":
            text += (f"; busy marker {'visible' if s['busy'] else ('gone' if s['busySeen'] else 'never seen')}"
                     f", done marker {'shown' if s['done'] else 'missing'}, {s['bubbles']} bubble(s)"
                     + (", a placeholder still shown" if s.get("pending") else "")
                     + (f", last text {s['last']!r} stable for {s['stableFor'] / 1000:.1f} s" if s["bubbles"] else ""))
        return text


class ReplyWatch:
    """One reply being waited for: arm before sending, then wait."""

    def __init__(self, page: Page, profile: Profile, users_before: int):
        sel, c = profile.selectors, profile.completion
        self.page = page
        self.completion = c
        self.cfg = {
            "token": next(_tokens), "assistant": sel.assistant_message, "user": sel.user_message,
            "usersBefore": users_before, "busy": sel.busy, "done": sel.done, "ignore": sel.ignore,
            "strip": sel.strip, "notice": sel.notice, "placeholders": c.placeholder_patterns,
            "placeholderBusy": c.placeholder_means_busy, "quiet": c.quiet_ms, "quietMarkers": c.quiet_ms_with_markers,
            "mark": False,
        }

    async def _call(self, op: str) -> Any:
        return await self.page.evaluate(WATCH_JS, {"op": op, "cfg": self.cfg})

    async def arm(self) -> None:
        """Before sending: mark what the chat shows now, start watching for a busy marker."""
        self.cfg["mark"] = True
        await self._call("arm")

    async def wait(self) -> Watched | WaitFailure:
        """The complete reply, or why there was none within the profile's time limits."""
        c = self.completion
        started = time.monotonic()
        stage = "first"
        try:
            await self.page.wait_for_function(WATCH_JS, arg={"op": "started", "cfg": self.cfg}, polling=c.poll_ms,
                                              timeout=c.first_bubble_timeout_s * 1000)
            stage = "full"
            left = max(1.0, c.timeout_s - (time.monotonic() - started))
            handle = await self.page.wait_for_function(WATCH_JS, arg={"op": "check", "cfg": self.cfg},
                                                       polling=c.poll_ms, timeout=left * 1000)
        except PlaywrightTimeout:
            waited = time.monotonic() - started
            state = await self._call("diagnose")
            await self._call("disarm")
            limit = c.first_bubble_timeout_s if stage == "first" else c.timeout_s
            return WaitFailure(stage=f"{state['stage']} after {waited:.0f} s (limit {limit:g} s)",
                               waited_s=waited, state=state)
        result = await handle.json_value()
        return Watched(bubbles=result["bubbles"], signal=result["signal"], notices=result["notices"])
