"""Knowing when the agent's reply is complete: watched inside the page, judged by three signals.

Before a message is sent, `arm` marks what is already in the chat and starts a MutationObserver
that notices a busy marker even if it flashes between two checks. Then `wait_sent` and `wait` each
make one call into the page that returns when its stage is over: the page checks on every DOM
change, when a quiet window runs out and every `poll_ms`, so the end of a reply is seen within
milliseconds, with no round trip per poll. Everything is found across open shadow roots (the
helper of deep_dom.py), and a check looks only at what follows our message, so it costs the same
in a chat of 2,000 bubbles as in one of 10.

* the reply is every agent bubble after our own (last) bubble; without a user selector, every
  bubble that was not there before sending (by node, or by text once the list was re-rendered);
* welcome and ignored bubbles never count; placeholder bubbles ("Thinking…", "…", empty) are not
  text, and one shown after the last real bubble means the agent is still working;
* complete = at least one real bubble, no busy marker visible, the done marker shown on or after
  the last bubble (when the profile has one), and nothing changed for a quiet window: short
  (`quiet_ms_with_done`) when the done marker says so, longer (`quiet_ms_with_markers`) when only a
  busy marker seen and gone speaks, long (`quiet_ms`) when only text stability can tell.

The result names the signals that fired, e.g. "busy-gone+done+stable(45ms)", which goes into
transcript.jsonl; a timeout says which stage it was stuck in.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Error as PlaywrightError

from .base import ChatBefore, DriverError
from .deep_dom import in_page
from .frames import ChatScope, FrameNotFound
from .profile import Profile
from .waiting import HEARTBEAT_S, PAGE_GRACE_S, PageNotAnswering, beat, bounded

WATCH_JS = in_page(r"""
({op, cfg, limits}) => {
  const W = (window.__mmbWatch = window.__mmbWatch || {});
  // A burst of DOM changes (a streamed token touches several nodes) is judged once; on a page whose
  // check is slow checks are spaced at 10x their cost, so watching stays cheap.
  const MIN_GAP_MS = 8, COST_FACTOR = 10;
  // What a piece of the agent's work keeps of its text (a tool's result may be a whole file): the rest
  // is cut, and the cut says how much.
  const WORK_TEXT_MAX = 20000;
  // Open shadow roots included; the chat-wide lists are kept between checks until the DOM changes them
  // (deep_dom.py), and never changed here.
  const all = (s, scope) => (scope ? Q.all(s, scope) : Q.live(s));
  const visible = (el) => (el.checkVisibility ? el.checkVisibility({visibilityProperty: true})
                                               : !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length));

  // Reading order is top to bottom, as a person reads the chat. Most chats put the newest message
  // last in the DOM; some put it first and lay the list out bottom-up (column-reverse). Which one is
  // learned from where the first and the last message of the DOM stand on screen, once per page
  // (the two must be laid out apart), and every list is read in that order.
  const reversedNow = () => {
    if (window.__mmbReversed !== undefined) return window.__mmbReversed;
    const msgs = all(cfg.message || [cfg.assistant, cfg.user].filter(Boolean).join(", ")).filter((e) => e.getClientRects().length);
    if (msgs.length < 2) return false;
    const first = msgs[0], last = msgs[msgs.length - 1];
    if (Q.contains(first, last) || Q.contains(last, first)) return false;
    const a = first.getBoundingClientRect(), b = last.getBoundingClientRect();
    if (Math.abs(a.top - b.top) < 2) return false;
    return (window.__mmbReversed = b.top < a.top);
  };
  const inOrder = (list) => (reversedNow() ? list.slice().reverse() : list);
  // b comes after a for a reader (b inside a counts as after, as in the DOM)
  const after = (a, b) => (reversedNow() && !Q.contains(a, b) ? Q.after(b, a) : Q.after(a, b));
  const ordered = (s, scope) => inOrder(all(s, scope));
  const ignored = (el) => !!(cfg.ignore && Q.closest(el, cfg.ignore));
  // The elements of a list in reading order that come after `anchor`: a suffix, found from the end,
  // so a check costs what the new messages cost, not what the whole chat does. Where it starts is
  // kept while the list, the anchor and where elements stand (Q.structure) are the same: the compare
  // that finds the first element before the anchor costs, in Chromium, a walk of the whole chat.
  const tails = (window.__mmbTails = window.__mmbTails || new WeakMap());
  const tail = (list, anchor) => {
    const known = tails.get(list), now = Q.structure();
    if (known && known.anchor === anchor && known.structure === now) return list.slice(known.from);
    let i = list.length;
    while (i > 0 && after(anchor, list[i - 1])) i--;
    tails.set(list, {anchor, structure: now, from: i});
    return list.slice(i);
  };
  const busyNow = () => all(cfg.busy).some(visible);

  // The agent's work shown in the chat (tool cards, thoughts, status lines): never its answer.
  const KINDS = [["tool", cfg.tool], ["thought", cfg.thought], ["status", cfg.status]].filter(([, s]) => s);
  const workSel = KINDS.map(([, s]) => s).join(", ");
  const kindOf = (el) => (KINDS.find(([, s]) => el.matches(s)) || KINDS[0])[0];
  const isWork = (el) => !!workSel && !!Q.closest(el, workSel);
  // A heading a person would read the work by: its summary, toggle or title; else its first line.
  const TITLE = "summary, [aria-expanded], [role=button], button, h1, h2, h3, h4, h5, h6, [class*=title], " +
                "[class*=summary], [class*=header], [class*=label]";
  // Its text as the page holds it, a collapsed body included, lines broken where blocks are (no layout).
  const BLOCK = /^(ADDRESS|ARTICLE|ASIDE|BLOCKQUOTE|BR|BUTTON|DD|DETAILS|DIV|DL|DT|FIGCAPTION|FIGURE|FOOTER|FORM|H[1-6]|HEADER|HR|LI|MAIN|NAV|OL|P|PRE|SECTION|SUMMARY|TABLE|TR|UL)$/;
  // Icons are not words: hidden from assistive tech, drawn (svg), or glyphs of an icon font ("check",
  // "keyboard_arrow_right" in Material Symbols).
  const iconic = (el) => el.getAttribute("aria-hidden") === "true" || el.localName === "svg" ||
    /(^|[-_ ])(icon|icons|material-icons|material-symbols\w*)([-_ ]|$)/i.test(typeof el.className === "string" ? el.className : "") ||
    (el.isConnected && /icon|material|symbol|awesome|glyph/i.test((getComputedStyle(el).fontFamily || "").split(",")[0]));
  const blockText = (node) => [...node.childNodes].map((n) => (
    n.nodeType === Node.TEXT_NODE ? n.textContent
      : n.nodeType !== Node.ELEMENT_NODE || /^(script|style|template)$/i.test(n.localName) || iconic(n) ? ""
      : BLOCK.test(n.tagName.toUpperCase()) ? "\n" + blockText(n.shadowRoot || n) + "\n" : blockText(n.shadowRoot || n))).join("");
  function workOf(el) {
    const text = blockText(el).replace(/[ \t\r\f\v]+/g, " ").replace(/ *\n[\s]*/g, "\n").trim();
    const heading = Q.all(TITLE, el).map((h) => blockText(h).replace(/\s+/g, " ").trim()).find(Boolean);
    const title = (heading || text.split("\n")[0] || "").slice(0, 300);
    const cut = text.length > WORK_TEXT_MAX ? ` … [${text.length - WORK_TEXT_MAX} more characters not kept]` : "";
    return {kind: kindOf(el), title, text: text.slice(0, WORK_TEXT_MAX) + cut};
  }

  // A bubble's words: what `strip` matches (a time, the author's name) and the work shown in it (a tool
  // card in the answer's bubble) are left out where they stand, and words in open shadow roots are
  // read (a bubble of web components, as Panel's, has none in its own innerText). The text as shown
  // (innerText: line breaks, no hidden parts) lays the page out, which in a long chat costs a
  // millisecond or more: it is read once a reply looks complete, and for errors and notices. Until
  // then changes are followed by `quickText`, which needs no layout (and is what a re-rendered list
  // is compared by: the same for a node that left the page).
  const notWords = [cfg.strip, workSel].filter(Boolean).join(", ") || null;
  const textOf = (el) => Q.text(el, true, notWords).trim();
  const quickText = (el) => Q.text(el, false, notWords).replace(/\s+/g, " ").trim();
  const plainText = (el) => Q.text(el, false, cfg.strip);  // our own bubble, as the chat shows it
  const placeholders = cfg.placeholders.map((p) => new RegExp(p, "i"));
  const isPlaceholder = (text) => placeholders.some((r) => r.test(text));
  const seen = (w, el) => w.seen.has(el);

  // Where only the author's name tells the two sides apart (cfg.message with cfg.author), a bubble is
  // the agent's or ours by the name it shows (an avatar's alt, aria-label or title too), matched whole
  // and case-insensitively; a bubble showing none is by the author of the one before it. A side whose
  // pattern is not given is every author the other does not match.
  const byName = !!cfg.message;
  const whole = (p) => (p ? new RegExp("^(?:" + p + ")$", "i") : null);
  const agentName = whole(cfg.authorAgent), userName = whole(cfg.authorUser);
  const sideMemo = byName ? (window.__mmbSides = window.__mmbSides || new Map()) : null;
  const memoKey = [cfg.message, cfg.author, cfg.authorAgent, cfg.authorUser].join("\u0000");
  // own: each bubble's side by its own name; index: where a bubble stood in the list last worked out
  if (byName && !sideMemo.has(memoKey)) sideMemo.set(memoKey, {own: new WeakMap(), index: new WeakMap(), last: null});
  function nameOf(a) {  // the name an author element shows
    const img = a.matches("img, [role=img]") ? a : Q.all("img[alt], [role=img][aria-label]", a)[0];
    const said = Q.text(a).trim() || (img && (img.getAttribute("alt") || img.getAttribute("aria-label"))) ||
                 a.getAttribute("aria-label") || a.getAttribute("title") || "";
    return said.replace(/\s+/g, " ").trim() || null;
  }
  // From the bubble's own name: "agent", "user" or "other"; null when it has no author element, and
  // "unnamed" when its author element shows no name yet (a name drawn later is read then).
  function ownSide(el) {
    const memo = sideMemo.get(memoKey).own;
    if (memo.has(el)) return memo.get(el);
    const a = Q.all(cfg.author, el)[0];
    if (!a) return null;
    const name = nameOf(a);
    if (name === null) return "unnamed";
    const agent = !!agentName && agentName.test(name), user = !!userName && userName.test(name);
    const side = agent ? "agent" : user ? "user" : !agentName ? "agent" : !userName ? "user" : "other";
    memo.set(el, side);
    return side;
  }
  // [the agent's bubbles, ours], in reading order. Worked out again only from the first bubble that
  // may have changed since the last time, so a check in a long chat costs what its new bubbles cost:
  // the bubbles before stand as they were while the list of bubbles kept them in the same places and
  // the list of author elements only grew at its end, none of the new ones inside them (both lists
  // kept from the DOM's change records). A bubble whose author element shows no name yet is read
  // again every time, and so is every bubble after it.
  function sides() {
    const memo = sideMemo.get(memoKey), last = memo.last;
    const raw = all(cfg.message), authors = all(cfg.author), reversed = reversedNow();
    if (last && last.raw === raw && last.authors === authors && last.reversed === reversed &&
        last.unsure === last.list.length) return last.result;
    const list = reversed ? raw.slice().reverse() : raw;
    let from = 0;
    if (last && last.reversed === reversed) {
      const same = Math.min(last.list.length, list.length, last.unsure);
      while (from < same && last.list[from] === list[from]) from++;
      if (last.authors !== authors) from = Math.min(from, firstWithNewAuthor(last, authors, list, from));
    }
    const at = last ? last.at.slice(0, from) : [];  // each bubble's side, its own or the one before's
    const agent = [], user = [];
    for (let i = 0; i < from; i++) if (at[i] === "agent") agent.push(list[i]); else if (at[i] === "user") user.push(list[i]);
    let side = from ? at[from - 1] : null, unsure = list.length;
    for (let i = from; i < list.length; i++) {
      const el = list[i], own = ownSide(el);
      if (own === "unnamed" && unsure === list.length) unsure = i;
      side = (own !== "unnamed" && own) || side;
      at.push(side);
      memo.index.set(el, i);
      if (side === "agent") agent.push(el); else if (side === "user") user.push(el);
    }
    memo.last = {raw, authors, reversed, list, at, unsure, result: [agent, user]};
    return memo.last.result;
  }
  // The first bubble of the list's first `upTo` that a new author element may have named: 0 when the
  // list of them did not just grow at its end.
  function firstWithNewAuthor(last, authors, list, upTo) {
    const before = last.authors;
    if (authors.length < before.length || before.some((a, i) => authors[i] !== a)) return 0;
    const up = (el) => {
      const p = el.parentNode;
      const next = p instanceof ShadowRoot ? p.host : p && p.nodeType === Node.ELEMENT_NODE ? p : null;
      return next && Q.closest(next, cfg.message);
    };
    let first = upTo;
    for (const a of authors.slice(before.length)) {
      for (let m = Q.closest(a, cfg.message); m; m = up(m)) {
        const i = sideMemo.get(memoKey).index.get(m);
        if (i !== undefined && i < first && list[i] === m) first = i;
      }
    }
    return first;
  }
  const candidates = () => (byName ? sides()[0] : ordered(cfg.assistant));
  const ourBubbles = () => (byName ? sides()[1] : ordered(cfg.user));
  const tellsOurs = !!cfg.user || byName;

  // Our message is in the chat: more user bubbles than before, or (a virtualized list such as
  // Telegram K's or OpenClaw's drops old bubbles, so the count may not grow) a last user bubble
  // without our mark while marked ones remain (else the list was re-rendered).
  function ours(w) {
    const users = ourBubbles();
    const last = users[users.length - 1];
    const fresh = w.marking && !!last && !seen(w, last) && users.some((u) => seen(w, u));
    return users.length > w.usersBefore || fresh ? last : null;
  }

  // Which bubbles belong to this reply, and whether a placeholder still trails it; `exact` reads
  // their text as shown (see textOf). A bubble that is all work (a tool card matched as a bubble, a
  // thought with no words of the answer yet) is work, not a bubble of the reply.
  function assess(w, exact) {
    let bubbles = candidates();
    let anchor = null;
    if (tellsOurs) {
      anchor = ours(w);
      if (!anchor) return null;  // our message is not shown yet
      bubbles = tail(bubbles, anchor);
    } else if (w.marked && !bubbles.some((el) => seen(w, el))) {
      // Re-rendered list: our marks are gone; what is new is what follows the texts shown before.
      const keys = bubbles.map((el) => (ignored(el) ? null : quickText(el)));
      let kept = 0, i = 0;
      for (; i < keys.length && kept < w.before.length; i++) {
        if (keys[i] === null) continue;
        if (keys[i] !== w.before[kept]) break;
        kept++;
      }
      bubbles = bubbles.slice(i);
    } else {
      bubbles = bubbles.filter((el) => !seen(w, el));
    }
    const work = workSel ? workShown(w, anchor) : [];
    const shown = bubbles.filter((el) => !isWork(el))
      .map((el) => ({el, text: exact ? textOf(el) : quickText(el), ignored: ignored(el)}))
      .filter((b) => !(b.text === "" && work.some((x) => Q.contains(b.el, x))));
    const real = shown.filter((b) => !b.ignored && !isPlaceholder(b.text));
    const lastReal = real[real.length - 1];
    // A placeholder after the last real bubble: the agent is still at work on (a part of) the reply.
    const pending = cfg.placeholderBusy && shown.some((b) => isPlaceholder(b.text) && (!lastReal || after(lastReal.el, b.el)));
    if (pending) w.placeholderSeen = true;  // a placeholder held the reply open at least once
    // Work shown after the last words of the answer (outside its bubble): more words may follow it.
    const workAfter = !!lastReal && work.some((x) => !Q.contains(lastReal.el, x) && after(lastReal.el, x));
    return {anchor, shown, real, lastReal, pending, work, workAfter};
  }

  // The work this turn shows (after our message, or new since sending), outermost pieces only, in
  // reading order. Each piece is remembered, so a status line the page removes again ("Searching
  // memory…") is still the turn's; a piece the page replaced by a new node of the same kind (a
  // re-render, a tool card redrawn with its result) goes on as that node.
  function workShown(w, anchor) {
    let els = ordered(workSel);
    els = anchor ? tail(els, anchor) : els.filter((el) => !seen(w, el));
    els = els.filter((el) => !ignored(el) && !els.some((o) => o !== el && Q.contains(o, el)));
    const fresh = els.filter((el) => !w.work.has(el));
    for (const old of w.workOrder.filter((el) => !el.isConnected && !w.work.get(el).gone)) {
      w.work.get(old).gone = true;
      const twin = fresh.find((el) => kindOf(el) === w.work.get(old).kind);
      if (!twin) continue;
      fresh.splice(fresh.indexOf(twin), 1);
      w.workOrder[w.workOrder.indexOf(old)] = twin;
      w.work.set(twin, {kind: w.work.get(old).kind, key: null, gone: false});
    }
    for (const el of els) {
      if (!w.work.has(el)) { w.work.set(el, {kind: kindOf(el), key: null, gone: false}); w.workOrder.push(el); }
      const piece = w.work.get(el), words = Q.text(el), key = words.length + ":" + words.slice(-80);
      if (piece.key !== key) { piece.key = key; w.workChanged = performance.now(); }
    }
    return els;
  }
  // A piece that left the page is read as it was when it left (a detached node keeps its text).
  const workRecord = (w) => w.workOrder.map((el) => ({...workOf(el), kind: w.work.get(el).kind}));

  function end(w, value) {  // the watch is over: a pending wait resolves with `value`
    if (w.observer) w.observer.disconnect();
    if (w.stop) w.stop(value);
    for (const k of Object.keys(W)) if (W[k] === w) delete W[k];
    return value;
  }

  function arm(mark) {
    const began = performance.now();
    for (const other of Object.values(W)) end(other, null);
    Q.refresh();
    const before = candidates();
    const users = ourBubbles();
    // Marks live in the watch, not on the nodes: writing 2,000 attributes would restyle the whole chat.
    const marks = new WeakSet();
    if (mark) for (const s of [cfg.assistant, cfg.user, cfg.message, cfg.notice, cfg.done, cfg.error, workSel]) for (const el of all(s)) marks.add(el);
    const now = performance.now();
    const w = {since: now, sig: null, busySeen: busyNow() ? now : 0, busyLast: 0, firstFrom: 0, placeholderSeen: false, recheckAt: 0,
               usersBefore: cfg.usersBefore === null ? users.length : cfg.usersBefore,
               lastUser: users.length ? plainText(users[users.length - 1]) : null,
               before: tellsOurs ? [] : before.filter((el) => !ignored(el)).map(quickText),
               marked: mark ? before.length : 0, marking: !!mark, seen: marks, observer: null, stop: null,
               busyShown: false, checks: 0, checkMs: 0, work: new Map(), workOrder: [], workChanged: 0};
    // Between two checks a busy marker or a placeholder may come and go: every DOM change is seen here.
    // (While the last look found the busy marker shown, the next check looks again, within pollMs: a
    // look makes the page work out its styles, which after a change that restyles the whole page, a
    // <style> added with a tool card's icon, costs what the whole chat does.)
    w.observer = Q.observe(() => {
      const t = performance.now();
      if (cfg.busy && !w.busyShown && busyNow()) { w.busySeen = w.busySeen || t; w.busyLast = t; w.busyShown = true; }
      if (!w.placeholderSeen) assess(w);
      w.checkMs += performance.now() - t;
    });
    w.checkMs = performance.now() - began;  // arming is part of the watch's cost
    W[cfg.token] = w;
    return w;
  }

  // An error shown where the reply should be (a new one, after our message) ends the wait at once.
  function shownError(w) {
    if (!cfg.error) return null;
    const anchor = tellsOurs ? ours(w) : null;
    const shown = anchor ? tail(ordered(cfg.error), anchor) : all(cfg.error);
    const errors = shown.filter((el) => visible(el) && !seen(w, el));
    if (!errors.length) return null;
    return {error: textOf(errors[errors.length - 1]) || "(an empty error)", bubbles: [], signal: "error", notices: []};
  }

  // What the chat shows of the reply now; `complete` is set once busy, done, placeholders and
  // the quiet window all agree. `w.recheckAt` is when a quiet window still running will be over.
  function judge(w) {
    const now = performance.now();
    const seenNow = assess(w);
    if (seenNow === null) return {stage: "our message is not shown", started: false, busy: busyNow(), busySeen: !!w.busySeen,
                                  done: false, bubbles: 0, pending: false, work: 0, last: "", stableFor: 0};
    const {anchor, shown, real, lastReal, pending, work, workAfter} = seenNow;
    const busy = busyNow();
    if (busy) { w.busySeen = w.busySeen || now; w.busyLast = now; }
    w.busyShown = busy;
    // Done "on" the bubble: it, a part of it, or its message container; or a fresh marker after it.
    const doneMark = (el) => !!Q.closest(el, cfg.done) || all(cfg.done, el).length > 0 ||
                             tail(ordered(cfg.done), el).some((d) => !seen(w, d));
    const done = !!cfg.done && !!lastReal && doneMark(lastReal.el);
    const texts = real.map((b) => b.text);
    // Stability counts from the last change of the text, of the work shown or of any marker; with no
    // words of the answer yet nothing is stable (the quiet window starts once the answer appeared).
    const sig = JSON.stringify([texts, busy, done, pending, workAfter, w.workChanged]);
    if (sig !== w.sig || !texts.length) { w.sig = sig; w.since = now; }
    const stableFor = now - w.since;
    const stage = texts.length ? "reply not complete"
                : work.length ? `the agent is at work (${work.length} piece(s) of work shown), no answer yet`
                : (shown.length || busy ? "reply not started (only placeholders or a busy marker)" : "no reply bubble");
    // Started: a real bubble, work shown, or a busy marker shown now. A placeholder alone proves nothing
    // (a static empty element, or our own bubble matched by the agent's selector too), nor does a busy
    // marker gone again with nothing to show: the first-bubble limit runs from the last sign of work.
    const state = {stage, started: real.length > 0 || busy || work.length > 0, busy, busySeen: !!w.busySeen, done,
                   bubbles: texts.length, pending, work: work.length, last: (texts[texts.length - 1] || "").slice(-200),
                   stableFor};
    if (!texts.length || busy || pending || (cfg.done && !done)) return state;
    // The done marker is the UI saying so; a busy marker gone says less (another bubble may follow);
    // work shown after the answer's last words says more may follow once it is done.
    let quiet = done ? cfg.quietDone : (cfg.busy && w.busySeen ? cfg.quietMarkers : cfg.quiet);
    if (workAfter) quiet = Math.max(quiet, cfg.activityQuiet);
    if (stableFor < quiet) { w.recheckAt = w.since + quiet; return state; }
    // Looks complete: now the text as shown, which must agree (a placeholder may differ only there).
    const exact = assess(w, true);
    if (!exact.real.length || exact.pending) { w.recheckAt = now + quiet; return state; }
    const signal = [];
    if (cfg.busy) signal.push(w.busySeen ? "busy-gone" : "busy-unseen");
    if (cfg.done) signal.push("done");
    if (w.placeholderSeen) signal.push("placeholder-gone");
    signal.push(`stable(${Math.round(stableFor)}ms)`);
    if (w.workOrder.length) signal.push(`work(${w.workOrder.length})`);
    const notes = anchor ? tail(ordered(cfg.notice), anchor) : all(cfg.notice);
    const notices = notes.filter((n) => !seen(w, n)).map(textOf);
    state.complete = {bubbles: exact.real.map((b) => b.text), signal: signal.join("+"), notices, checks: w.checks + 1,
                      checkMs: w.checkMs, activity: workRecord(w)};
    return state;
  }

  // One stage of the exchange, waited for inside the page: checked at once, again on every DOM
  // change (so a reply's end is noticed within a few ms, not a polling period later), when a quiet
  // window runs out, and every pollMs (for what changes without a DOM mutation: styles, layout).
  function wait(w) {
    return new Promise((resolve, reject) => {
      const t0 = performance.now();
      let soon = null, later = null, last = 0, cost = 0, over = false;
      const tick = setInterval(() => run(), cfg.pollMs);
      const mo = Q.observe(() => {
        const gap = Math.max(MIN_GAP_MS, COST_FACTOR * cost);
        if (soon === null) soon = setTimeout(run, Math.max(0, gap - (performance.now() - last)));
      });
      const finish = (value, error) => {
        if (over) return;
        over = true;
        clearInterval(tick); clearTimeout(soon); clearTimeout(later); mo.disconnect();
        if (w.stop === finish) w.stop = null;
        if (error) reject(error); else resolve(value);
      };
      function run() {
        soon = null;
        if (over) return;
        last = performance.now();
        try { step(last - t0); } catch (e) { finish(null, e); } finally {
          cost = performance.now() - last;
          w.checks++; w.checkMs += cost;
        }
      }
      function step(elapsed) {
        if (limits.stage === "sent") {
          const mine = ours(w);
          if (mine) return finish({text: plainText(mine)});
          if (elapsed >= limits.totalMs) return finish({timeout: "sent"});
          if (elapsed >= limits.sliceMs) finish({pending: {stage: "our message is not shown"}});
          return;
        }
        const error = shownError(w);
        if (error) return finish(end(w, error));
        const state = judge(w);
        if (state.complete) return finish(end(w, state.complete));
        w.firstFrom = w.firstFrom || t0;
        if (!state.started && performance.now() - Math.max(w.firstFrom, w.busyLast, w.workChanged) >= limits.firstMs) return finish({timeout: "first"});
        if (elapsed >= limits.totalMs) return finish({timeout: "full"});
        // The Python side hears from the page at least this often (its heartbeat, its own bound).
        if (elapsed >= limits.sliceMs) return finish({pending: state});
        if (w.recheckAt) {
          clearTimeout(later);
          later = setTimeout(run, Math.max(0, w.recheckAt - performance.now()));
          w.recheckAt = 0;
        }
      }
      w.stop = finish;
      run();
    });
  }

  if (op === "arm") { const w = arm(true); return {users: w.usersBefore, last: w.lastUser}; }
  if (op === "ours") { const users = ourBubbles(); return {users: users.length, last: users.length ? plainText(users[users.length - 1]) : null}; }
  // After a reload (or a restart of ours) there is no watch yet: one that marks nothing carries on.
  const w = W[cfg.token] || arm(false);
  if (op === "disarm") { end(w, null); return true; }
  if (op === "diagnose") {
    const s = judge(w); delete s.complete;
    // The agent's selector also matching our own bubble (one class for both) explains a reply never seen.
    const mine = cfg.user ? ours(w) : null;
    s.assistantMatchesOurs = !!mine && (!!Q.closest(mine, cfg.assistant) || all(cfg.assistant, mine).length > 0);
    return s;
  }
  return wait(w);  // op === "wait"
}
""")

_tokens = itertools.count(1)


@dataclass
class Watched:
    bubbles: list[str]
    signal: str
    notices: list[str] = field(default_factory=list)
    error: str | None = None  # the text of an error the chat showed instead of a reply
    activity: list[dict[str, str]] = field(default_factory=list)  # the turn's work: {kind, title, text}
    checks: int = 0  # times the page judged the reply, and the time those checks took (the watch's own cost)
    check_ms: float = 0.0


@dataclass
class WaitFailure:
    """Why a reply was not complete in time, in words, for the error message."""

    stage: str
    waited_s: float
    state: dict[str, Any]  # the page's last judgement; empty when the page could not tell
    selectors: dict[str, Any] = field(default_factory=dict)  # the watch's cfg: which selector saw what

    def describe(self) -> str:
        """The stage, then what each selector of the reply saw, e.g. "no reply bubble after 120 s
        (limit 120 s): nothing matched assistant_message '.bot' after our message; busy '#stop' never seen"."""
        s, sel = self.state, self.selectors
        if not s:
            return self.stage
        if s.get("stage") == "our message is not shown":
            return f"{self.stage}: {_side_in_words(sel, 'user')} shows no new message of ours"
        found = (f"{s['bubbles']} bubble(s) matched {_side_in_words(sel, 'agent')}, the last "
                 f"{s['last']!r} stable for {s['stableFor'] / 1000:.1f} s" if s["bubbles"] else
                 f"{'only placeholders' if s.get('pending') else 'nothing'} matched {_side_in_words(sel, 'agent')} after our message")
        parts = [found]
        if s.get("assistantMatchesOurs"):
            parts.append(f"assistant_message {sel.get('assistant')!r} also matches our own message "
                         f"(user_message {sel.get('user')!r}): make it match the agent's bubbles only")
        if sel.get("busy"):
            parts.append(f"busy {sel['busy']!r} {'visible' if s['busy'] else ('gone' if s['busySeen'] else 'never seen')}")
        if sel.get("done"):
            parts.append(f"done {sel['done']!r} {'shown' if s['done'] else 'not shown'}")
        if s.get("pending"):
            parts.append("a placeholder still shown")
        if s.get("work"):
            parts.append(f"{s['work']} piece(s) of the agent's work shown (tool / thought / status)")
        return f"{self.stage}: " + "; ".join(parts)


def _side_in_words(sel: dict[str, Any], side: str) -> str:
    """How the profile finds one side's bubbles ("agent" or "user"), in words."""
    if not sel.get("message"):
        return f"assistant_message {sel.get('assistant')!r}" if side == "agent" else f"user_message {sel.get('user')!r}"
    other = "user" if side == "agent" else "agent"
    key, other_key = f"author{side.title()}", f"author{other.title()}"
    who = f"authors.{side} {sel[key]!r}" if sel.get(key) else f"any author but authors.{other} {sel.get(other_key)!r}"
    return f"message {sel['message']!r} whose author {sel.get('author')!r} is {who}"


def _progress(state: dict[str, Any]) -> str:
    """A heartbeat's detail: the stage the page reported last, and what it saw."""
    if not state:
        return "no word from the page yet"
    detail = f"stage: {state.get('stage', '?')}"
    if state.get("bubbles"):
        detail += f", {state['bubbles']} bubble(s), the last ending {state.get('last', '')[-60:]!r}"
    if state.get("work"):
        detail += f", {state['work']} piece(s) of work shown"
    if state.get("busy"):
        detail += ", busy marker shown"
    return detail


class ReplyWatch:
    """One reply being waited for: arm before sending, then wait_sent, then wait.

    Each call into the page is bounded on this side: the page answers a stage's wait at least every
    `HEARTBEAT_S` with where it stands (a heartbeat line is logged from that), and a page that does
    not answer within that plus `PAGE_GRACE_S` is taken for stuck: the wait fails with the stage,
    within its limit plus a few seconds, like any reply that did not come."""

    def __init__(self, scope: ChatScope, profile: Profile, users_before: int | None = None, *,
                 first_bubble_s: float | None = None):
        sel, c = profile.selectors, profile.completion
        self.scope = scope
        self.completion = c
        self.first_bubble_s = c.first_bubble_timeout_s if first_bubble_s is None else first_bubble_s
        self.send_timeout_s = profile.send_timeout_s
        self.cfg = {
            "token": next(_tokens), "assistant": sel.assistant_message, "user": sel.user_message,
            "usersBefore": users_before, "busy": sel.busy, "done": sel.done, "ignore": sel.ignore,
            # the author's name is not the bubble's text: stripped like a timestamp
            "strip": ", ".join(x for x in (sel.strip, sel.author) if x) or None,
            "notice": sel.notice, "error": sel.error, "placeholders": c.placeholder_patterns,
            "tool": sel.tool, "thought": sel.thought, "status": sel.status, "message": sel.message, "author": sel.author,
            "authorAgent": profile.authors.agent if profile.authors else None,
            "authorUser": profile.authors.user if profile.authors else None,
            "placeholderBusy": c.placeholder_means_busy, "quiet": c.quiet_ms, "quietMarkers": c.quiet_ms_with_markers,
            "quietDone": c.quiet_ms_with_done, "activityQuiet": c.activity_quiet_ms, "pollMs": c.poll_ms,
        }
        self.last_state: dict[str, Any] = {}

    async def _call(self, op: str, limits: dict[str, Any] | None = None, *, bound_s: float | None = None) -> Any:
        """One call into the chat's frame, bounded (by the send limit unless told otherwise)."""
        frame = await self.scope.frame()
        call = frame.evaluate(WATCH_JS, {"op": op, "cfg": self.cfg, "limits": limits})
        return await bounded(call, self.send_timeout_s + PAGE_GRACE_S if bound_s is None else bound_s, f"reply watch: {op}")

    async def arm(self) -> ChatBefore:
        """Before sending: mark what the chat shows now, start watching for a busy marker; returns
        our bubbles as they were (counted in the same call), the proof a later look compares with."""
        self.cfg["usersBefore"] = None  # counted in the page
        shown = await self._call("arm")
        self.cfg["usersBefore"] = shown["users"]
        return ChatBefore(users=shown["users"], last_user=shown["last"])

    async def ours(self) -> ChatBefore:
        """Our bubbles in the chat now, counted and read as `arm` does (needs the user selector)."""
        shown = await self._call("ours")
        return ChatBefore(users=shown["users"], last_user=shown["last"])

    async def wait_sent(self) -> str | None:
        """Our message's text as the chat shows it once it is there; None if it did not show up in time.
        Needs the profile's user selector."""
        result = await self._wait_in_page("sent", first_s=self.send_timeout_s, total_s=self.send_timeout_s)
        return None if "timeout" in result else result["text"]

    async def wait(self) -> Watched | WaitFailure:
        """The complete reply, or why there was none within the profile's time limits."""
        c = self.completion
        started = time.monotonic()
        result = await self._wait_in_page("reply", first_s=self.first_bubble_s, total_s=c.timeout_s)
        if "timeout" not in result:
            return Watched(bubbles=result["bubbles"], signal=result["signal"], notices=result["notices"],
                           error=result.get("error"), checks=result.get("checks", 0), check_ms=result.get("checkMs", 0.0),
                           activity=result.get("activity", []))
        waited = time.monotonic() - started
        kind = result["timeout"]
        state = await self._last_look()
        if kind == "first":
            stage = f"{state.get('stage', 'no reply bubble')} after {waited:.0f} s (limit {self.first_bubble_s:g} s)"
        elif kind == "full":
            stage = f"{state.get('stage', 'reply not complete')} after {waited:.0f} s (limit {c.timeout_s:g} s)"
        elif kind == "replaced":
            stage = f"the watch was replaced by another after {waited:.0f} s"
        else:  # the page's side of the wait failed or went silent: say so, with what it showed last
            stage = f"{result['why']} after {waited:.0f} s"
        return WaitFailure(stage=stage, waited_s=waited, state=state, selectors=self.cfg)

    async def _last_look(self) -> dict[str, Any]:
        """The page's judgement now (or the last one it sent, if it cannot answer), the watch ended."""
        try:
            state = await self._call("diagnose", bound_s=PAGE_GRACE_S)
            await self._call("disarm", bound_s=PAGE_GRACE_S)
            return state
        except (PlaywrightError, DriverError, FrameNotFound):
            return self.last_state

    async def _wait_in_page(self, stage: str, *, first_s: float, total_s: float) -> dict[str, Any]:
        """The page's answer when the stage is over: its result, or {"timeout": kind} (kinds: "first",
        "full", "sent", "replaced", "stuck" or "error" with a "why"). The page answers at least every
        HEARTBEAT_S with where it stands; a navigation destroys its side of the wait, which is taken
        up again in the new document (or the new frame) for the time that is left."""
        began = time.monotonic()
        what = "waiting for our message to show" if stage == "sent" else "waiting for the reply"
        while True:
            spent = time.monotonic() - began
            if spent >= total_s:
                return {"timeout": "sent" if stage == "sent" else "full"}
            slice_s = min(HEARTBEAT_S, total_s - spent)
            limits = {"stage": stage, "firstMs": first_s * 1000,  # the page counts it from the last sign of work
                      "totalMs": (total_s - spent) * 1000, "sliceMs": slice_s * 1000}
            try:
                result = await self._call("wait", limits, bound_s=slice_s + PAGE_GRACE_S)
            except PageNotAnswering:
                return {"timeout": "stuck", "why": f"the page stopped answering during '{self.last_state.get('stage', stage)}' "
                                                   f"(no word from its watch for {slice_s + PAGE_GRACE_S:.0f} s)"}
            except FrameNotFound as e:
                return {"timeout": "error", "why": f"the chat's frame is gone: {e}"}
            except PlaywrightError as e:
                if not _navigated(e):
                    return {"timeout": "error", "why": f"the reply watch failed in the page: {str(e).splitlines()[0][:300]}"}
                await self._after_navigation()
                continue
            if result is None:
                return {"timeout": "replaced"}
            if "pending" not in result:
                return result
            self.last_state = result["pending"]
            beat(what, began, _progress(self.last_state))

    async def _after_navigation(self) -> None:
        with contextlib.suppress(PlaywrightError, FrameNotFound, TimeoutError):
            frame = await self.scope.frame(timeout_s=PAGE_GRACE_S)
            await frame.wait_for_load_state("domcontentloaded", timeout=PAGE_GRACE_S * 1000)


def _navigated(error: PlaywrightError) -> bool:
    text = str(error)
    return "Execution context was destroyed" in text or "navigat" in text.lower() or "detached" in text.lower()
