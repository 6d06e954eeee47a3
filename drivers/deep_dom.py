"""Finding elements inside the page across open shadow roots: the one query helper of every script
the drivers run in the page (the reply watch, the new-chat check, message counts, the probe).

Playwright's locators already pierce open shadow roots; `document.querySelectorAll` does not, nor do
`closest`, `contains`, `compareDocumentPosition` or a MutationObserver on the document. Chats built
from web components (deep-chat, Lit or Stencil widgets) keep their messages in such roots, often
nested. The helper gives the page-side scripts the same view as the locators:

* `Q.all(selector, scope)`: every match in the scope and in every open shadow root inside it, in
  composed tree order (a host's shadow content right after the host, before its light children);
* `Q.closest`, `Q.contains`, `Q.after`: the DOM's own, across shadow boundaries;
* `Q.observe(callback)`: every change in the document and in every shadow root, those attached
  later included (from one MutationObserver shared by all who watch the page);
* `Q.live(selector)`: `Q.all` of the whole page, kept up to date from the change records, and
  `Q.structure()`, which changes whenever an element is added, removed or moved;
* `Q.text(el, exact, skip)`: an element's text with what its open shadow roots show (a bubble made
  of web components, as Panel's Bokeh ones are, has none of its words in its own innerText).

Shadow roots are known without walking the DOM on every query: `SHADOW_HOOK_JS`, added as an init
script before the page's own scripts run, records every open root as it is attached; the first use
in a document walks it once for the roots it could not see (declarative `<template shadowrootmode>`);
it also makes the shared observer observe a root as it is attached, so what the page puts in it
makes change records.
Without the hook (a page opened by someone else) the walk is repeated at each `Q.refresh()`.
Closed shadow roots stay closed, as they do for Playwright.
"""

from __future__ import annotations

# Runs in every frame before the page's scripts: records each open shadow root when it is attached.
SHADOW_HOOK_JS = r"""(() => {
  if (window.__mmbShadowRoots) return;
  // (fresh: the roots attached since the query helper last looked, in order)
  const hook = {roots: new Set(), fresh: [], listeners: new Set(), observers: new Map(), version: 0};
  Object.defineProperty(window, "__mmbShadowRoots", {value: hook, enumerable: false});
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const root = attach.call(this, init);
    if (init && init.mode === "open") {
      hook.roots.add(root);
      hook.fresh.push(root);
      hook.version++;
      // Watched from its first moment: what the page puts in it makes change records like any other.
      for (const [observer, options] of hook.observers) observer.observe(root, options);
      // Told once the page's own code has run on (a host gets its root before it is put in the page).
      queueMicrotask(() => {
        for (const listener of hook.listeners) { try { listener(root); } catch (e) { /* a watch gone wrong */ } }
      });
    }
    return root;
  };
})();"""

# An expression whose value is the helper `Q`, built once per document (kept on window.__mmbDom).
DEEP_DOM_JS = r"""(() => {
  if (window.__mmbDom) return window.__mmbDom;
  const FOLLOWING = Node.DOCUMENT_POSITION_FOLLOWING;
  const hook = window.__mmbShadowRoots || {roots: new Set(), fresh: [], listeners: new Set(), observers: new Map(), version: 0};
  const hooked = !!window.__mmbShadowRoots;
  const roots = hook.roots;
  let walks = 0;

  // Roots the hook could not see: declarative ones, or all of them on a page without the hook.
  function walk(top) {
    const it = document.createTreeWalker(top, NodeFilter.SHOW_ELEMENT);
    for (let el = it.nextNode(); el; el = it.nextNode()) {
      if (!el.shadowRoot) continue;
      if (!roots.has(el.shadowRoot)) {
        roots.add(el.shadowRoot);
        walks++;
        if (shared) shared.observe(el.shadowRoot, ALL);
      }
      walk(el.shadowRoot);
    }
  }
  let prunedAt = -1;
  function refresh() {
    if (shared) spread(shared.takeRecords());
    if (!shared || prunedAt !== removals) {  // (a host leaves the page only with an element removed)
      prunedAt = removals;
      for (const r of roots) if (!r.host.isConnected) { roots.delete(r); walks++; }
    }
    if (!hooked) walk(document);
  }

  // Shadow roots grouped by the tree their host lives in, each group in tree order; brought up to
  // date when a root came, when a host left the page (a message removed by a new chat: its root must
  // not be searched any more), or when a host that was not in the page (given
  // its root before it was put there) is in it now (a host moved elsewhere in the page is not noticed
  // until then). Roots that came after every other of their tree (a new message's), none gone from
  // the page, are put at the end; anything else sorts them all again (one sort of 2,000 hosts costs
  // milliseconds, a new message in a long chat brings several roots).
  let layout = null, layoutAt = -1, outside = [], walksAt = -1, removalsAt = -1, hostMovesAt = -1;
  const inPage = (list) => list.every((r) => r.host.isConnected);
  // No known root's host left the page or moved in it: looked at again only after an element was
  // removed (the shared observer counts them, and the moves of elements holding a host).
  function allInPage() {
    if (shared) spread(shared.takeRecords());
    if (shared && removalsAt === removals) return true;
    const moved = hostMovesAt !== hostMoves;
    removalsAt = removals;
    hostMovesAt = hostMoves;
    return !moved && [...layout.values()].every(inPage);
  }
  function childRoots() {
    const version = hook.version + walks;
    const intact = !layout || allInPage();
    if (layout && intact && layoutAt === version && !outside.some((r) => r.host.isConnected)) return layout;
    const came = [...outside, ...hook.fresh.splice(0)];
    if (layout && intact && walksAt === walks) {
      outside = came.filter((r) => !r.host.isConnected);
      if (came.every((r) => !r.host.isConnected || atEnd(r))) { layoutAt = version; return layout; }
    }
    layout = new Map();
    outside = [];
    for (const r of roots) {
      if (!r.host.isConnected) { outside.push(r); continue; }
      const tree = r.host.getRootNode();
      if (!layout.has(tree)) layout.set(tree, []);
      layout.get(tree).push(r);
    }
    for (const list of layout.values()) list.sort((a, b) => (a.host.compareDocumentPosition(b.host) & FOLLOWING ? -1 : 1));
    layoutAt = version;
    walksAt = walks;
    removalsAt = removals;
    hostMovesAt = hostMoves;
    return layout;
  }
  function atEnd(r) {  // put at the end of its tree's roots if it is last there
    const tree = r.host.getRootNode();
    const list = layout.get(tree);
    if (!list) return layout.set(tree, [r]), true;
    if (!(list[list.length - 1].host.compareDocumentPosition(r.host) & FOLLOWING)) return false;
    list.push(r);
    return true;
  }

  // Matches in `tree` (a document, shadow root or element) and in the shadow roots inside it, merged
  // in composed order: a root's matches go right after its host.
  function collect(sel, tree, kids) {
    const own = tree.querySelectorAll(sel);
    const subs = tree.nodeType === Node.ELEMENT_NODE ? rootsIn(tree, kids) : kids.get(tree) || [];
    if (!subs.length) return Array.from(own);
    const out = [];
    let i = 0;
    for (const r of subs) {
      while (i < own.length && !(r.host.compareDocumentPosition(own[i]) & FOLLOWING)) out.push(own[i++]);
      for (const el of collect(sel, r, kids)) out.push(el);
    }
    while (i < own.length) out.push(own[i++]);
    return out;
  }
  // The roots whose hosts are `el` or inside it: a run of its tree's roots (in tree order), found by
  // halves, not by a look at each of a long chat's roots.
  function rootsIn(el, kids) {
    const list = kids.get(el.getRootNode());
    if (!list) return [];
    let lo = 0, hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1, host = list[mid].host;
      if (host === el || el.compareDocumentPosition(host) & FOLLOWING) hi = mid; else lo = mid + 1;
    }
    let end = lo;
    while (end < list.length && el.contains(list[end].host)) end++;
    return list.slice(lo, end);
  }
  function all(sel, scope) {
    if (!sel) return [];
    const kids = childRoots();
    if (!kids.size) return Array.from((scope || document).querySelectorAll(sel));
    return collect(sel, scope || document, kids);
  }

  const hostOf = (n) => { const r = n.getRootNode(); return r instanceof ShadowRoot ? r.host : null; };
  function closest(el, sel) {
    for (let n = el; n; n = hostOf(n)) { const hit = n.closest(sel); if (hit) return hit; }
    return null;
  }
  function contains(a, b) {
    for (let n = b; n; n = hostOf(n)) if (a.contains(n)) return true;
    return false;
  }
  // b comes after a in composed tree order: compared in the deepest tree that holds both (or their hosts).
  function after(a, b) {
    if (a.getRootNode() === b.getRootNode()) return !!(a.compareDocumentPosition(b) & FOLLOWING);
    const chainB = [];
    for (let n = b; n; n = hostOf(n)) chainB.push(n);
    for (let x = a; x; x = hostOf(x)) {
      const tree = x.getRootNode();
      const y = chainB.find((n) => n.getRootNode() === tree);
      if (!y) continue;
      if (x === y) return x === a;  // one is inside the other's shadow root: the host comes first
      return !!(x.compareDocumentPosition(y) & FOLLOWING);
    }
    return false;  // not in one document
  }

  // Every DOM change in the document and its shadow roots, those attached later included: one
  // MutationObserver for all who watch the page (observing thousands of shadow roots once, not at
  // every wait), which the hook makes observe a new root as it is attached (so what the page puts in
  // it makes records). Each watcher gets every record (of every kind), and a call with no records
  // once a new root's page code has run on; records one watcher takes early reach the others in a
  // microtask. A watcher that throws does not keep the others from theirs (the error is reported).
  const ALL = {subtree: true, childList: true, attributes: true, attributeOldValue: true, characterData: true};
  const watchers = new Set();
  let shared = null, delivering = false, removals = 0, hostMoves = 0;
  function sharedObserver() {
    if (shared) return shared;
    shared = new MutationObserver((records) => { spread(records); deliver(); });
    shared.observe(document, ALL);  // not documentElement: null in a page that has only begun to load (a reload)
    for (const r of roots) shared.observe(r, ALL);  // (a host not in the page yet may be put there later)
    hook.observers.set(shared, ALL);
    hook.listeners.add((r) => {
      shared.observe(r, ALL);
      for (const w of [...watchers]) if (watchers.has(w)) call(w, []);
    });
    return shared;
  }
  function spread(records) {  // every record, once, as it is taken from the observer
    if (!records.length) return;
    for (const r of records) {
      if (r.type !== "childList") continue;
      for (const n of r.removedNodes) {
        if (n.nodeType !== Node.ELEMENT_NODE) continue;
        removals++;
        if (n.isConnected && [...roots].some((x) => x.host === n || n.contains(x.host))) hostMoves++;  // moved, not removed
      }
    }
    for (const w of watchers) w.buffer.push(...records);
    if (!delivering) { delivering = true; queueMicrotask(deliver); }
  }
  function deliver() {
    delivering = false;
    for (const w of [...watchers]) {
      if (!watchers.has(w) || !w.buffer.length) continue;
      const records = w.buffer;
      w.buffer = [];
      call(w, records);
    }
  }
  function call(w, records) {
    try { w.callback(records); } catch (e) { setTimeout(() => { throw e; }); }
  }
  function observe(callback) {
    const mo = sharedObserver();
    spread(mo.takeRecords());  // changes made before it are not its
    const w = {callback, buffer: []};
    watchers.add(w);
    return {disconnect() { watchers.delete(w); },
            takeRecords() { spread(mo.takeRecords()); const records = w.buffer; w.buffer = []; return records; }};
  }

  // `all`, kept between calls and brought up to date from the DOM's change records: a check of the
  // reply costs what changed since the last one, not what the whole chat holds. A match added is put
  // in its place (at the end for a new message; found by halves when it comes before others: a card
  // put first in a bubble, a list shown newest first); anything else that may change the list (a
  // match moved, a changed attribute the selector reads on an element holding matches) drops it, to
  // be queried again. Selectors with a pseudo-class (:hover, :last-child, :has()...) may change
  // without a telling record: never kept.
  const kept = new Map();  // selector -> {sel, list (null: query again), set}
  let keeper = null, changes = 0;
  function caughtUp() {  // every change so far followed
    if (!keeper) {
      // (a new shadow root needs nothing of its own: the records of what goes in it are followed)
      keeper = observe((records) => records.length && track(records));
    }
    const pending = keeper.takeRecords();
    if (pending.length) track(pending);
  }
  // How many times an element was added, removed or moved anywhere so far: where elements stand
  // relative to each other holds while it stays the same (text changing in place does not count).
  function structure() {
    caughtUp();
    return changes;
  }
  function live(sel) {
    if (!sel) return [];
    if (sel.includes(":")) return all(sel);
    caughtUp();
    let entry = kept.get(sel);
    if (!entry) kept.set(sel, (entry = {sel, list: null, set: null}));
    if (!entry.list) { entry.list = all(sel); entry.set = new Set(entry.list); }
    return entry.list;
  }
  function track(records) {
    const isElement = (n) => n.nodeType === Node.ELEMENT_NODE;
    for (const r of records) if (r.type === "childList" && ([...r.addedNodes].some(isElement) || [...r.removedNodes].some(isElement))) changes++;
    for (const entry of kept.values()) {
      if (!entry.list) continue;
      if (!records.every((r) => follow(r, entry))) entry.list = null;
    }
  }
  // One change applied to a kept list (a new array: lists handed out are never changed); false when
  // only a new query can tell.
  function follow(record, entry) {
    const {sel} = entry;
    const isElement = (n) => n.nodeType === Node.ELEMENT_NODE;
    if (record.type === "attributes") {
      if (!reads(sel, record)) return true;
      const el = record.target;
      if (el.firstElementChild && (el.querySelector(sel) || entry.list.some((m) => m !== el && el.contains(m)))) return false;
      if (el.matches(sel) === entry.set.has(el)) return true;
      return entry.set.has(el) ? drop(entry, [el]) : insert(entry, [el]);
    }
    const gone = [...record.removedNodes].filter(isElement);
    // Moved, not removed: it (or what it holds) may now stand elsewhere in the list.
    if (gone.some((n) => n.isConnected && (entry.set.has(n) || all(sel, n).length))) return false;
    if (gone.length) drop(entry, entry.list.filter((m) => !m.isConnected));
    for (const n of record.addedNodes) {
      if (!isElement(n) || !n.isConnected) continue;
      const hits = all(sel, n);
      if (n.matches(sel)) hits.unshift(n);
      if (hits.length) insert(entry, hits);
    }
    return true;
  }
  function drop(entry, els) {
    if (!els.length) return true;
    const out = new Set(els);
    entry.list = entry.list.filter((m) => !out.has(m));
    for (const m of els) entry.set.delete(m);
    return true;
  }
  function insert(entry, els) {  // the matches of one element added (or changed), in composed order: they stand together
    const fresh = els.filter((m) => !entry.set.has(m));
    if (!fresh.length) return true;
    // (matches removed by a change not followed yet have no place to compare with)
    drop(entry, entry.list.filter((m) => !m.isConnected));
    const list = entry.list;
    let lo = 0, hi = list.length;
    if (!hi || after(list[hi - 1], fresh[0])) lo = hi;
    else while (lo < hi) { const mid = (lo + hi) >> 1; if (after(list[mid], fresh[0])) lo = mid + 1; else hi = mid; }
    entry.list = lo === list.length ? list.concat(fresh) : [...list.slice(0, lo), ...fresh, ...list.slice(lo)];
    for (const m of fresh) entry.set.add(m);
    return true;
  }
  // Whether a changed attribute is one the selector reads: a class it names, an id, an [attribute].
  function reads(sel, record) {
    const name = record.attributeName;
    if (name === "class") {
      const before = new Set((record.oldValue || "").split(/\s+/)), now = new Set(record.target.classList);
      const changed = [...before, ...now].filter((c) => c && before.has(c) !== now.has(c));
      return /\[\s*class\b/i.test(sel) ||
        changed.some((c) => !/^[\w-]+$/.test(c) || new RegExp("\\." + c + "(?![\\w-])").test(sel));
    }
    if (name === "id") return sel.includes("#") || /\[\s*id\b/i.test(sel);
    return new RegExp("\\[\\s*" + name.replace(/[^\w-]/g, "\\$&") + "(?![\\w-])", "i").test(sel);
  }

  // The page as HTML with its open shadow roots inline (declarative templates), for failure reports.
  function html() {
    const el = document.documentElement;
    const open = [...roots].filter((r) => r.host.isConnected);
    return el.getHTML ? el.getHTML({serializableShadowRoots: true, shadowRoots: open}) : el.outerHTML;
  }

  const shadowRoots = () => [...roots].filter((r) => r.host.isConnected).length;

  // An element's text with what its open shadow roots show (innerText and textContent stop at a
  // shadow host: a bubble built of web components, as Bokeh's are in Panel, reads as ""). `exact`:
  // as shown (hidden parts out, a line break around each block); else as the DOM holds it, with no
  // layout. Elements matching `skip` are left out where they stand (a name, a time inside a bubble).
  // A part holding no root and nothing skipped is read by the browser's own innerText / textContent.
  function hasRoot(el) {
    return !!el.shadowRoot || rootsIn(el, childRoots()).length > 0;
  }
  const NOT_TEXT = /^(SCRIPT|STYLE|TEMPLATE|NOSCRIPT)$/;
  const BLOCK = /^(ADDRESS|ARTICLE|ASIDE|BLOCKQUOTE|DD|DETAILS|DIV|DL|DT|FIELDSET|FIGCAPTION|FIGURE|FOOTER|FORM|H[1-6]|HEADER|HR|LI|MAIN|NAV|OL|P|PRE|SECTION|SUMMARY|TABLE|TR|UL)$/;
  function composedText(el, exact, skip) {
    const plain = !hasRoot(el) && !(skip && el.querySelector(skip)) &&  // a slot shows what innerText does not see
                  !(el.getRootNode() instanceof ShadowRoot && (el.tagName === "SLOT" || el.querySelector("slot")));
    if (plain) return exact ? el.innerText || "" : el.textContent || "";
    const slotted = el.tagName === "SLOT" ? el.assignedNodes({flatten: true}) : [];
    const kids = el.shadowRoot ? el.shadowRoot.childNodes : slotted.length ? slotted : el.childNodes;
    let out = "";
    for (const n of kids) {
      if (n.nodeType === Node.TEXT_NODE) {
        const holder = n.parentElement || el;  // a text right in a shadow root: its host's
        const style = exact ? getComputedStyle(holder) : null;
        if (style && style.visibility !== "visible") continue;
        out += style && !style.whiteSpace.startsWith("pre") ? n.textContent.replace(/\s+/g, " ") : n.textContent;
      } else if (n.nodeType === Node.ELEMENT_NODE && !NOT_TEXT.test(n.tagName) && !(skip && n.matches(skip))) {
        const display = exact ? getComputedStyle(n).display : "";
        // (a slot, or an element with display: contents, has no box of its own but shows its children)
        if (exact && n.checkVisibility && !n.checkVisibility() && display !== "contents") continue;
        const part = composedText(n, exact, skip);
        const block = exact ? !display.startsWith("inline") && display !== "contents" : BLOCK.test(n.tagName);
        out += block ? "\n" + part.replace(/^ +| +$/g, "") + "\n" : part;
      }
    }
    return out;
  }
  const text = (el, exact = false, skip = null) => composedText(el, exact, skip || null).replace(/\n{3,}/g, "\n\n");

  const Q = {all, live, structure, closest, contains, after, observe, refresh, html, shadowRoots, text, hasRoot};
  Object.defineProperty(window, "__mmbDom", {value: Q, enumerable: false, configurable: true});
  walk(document);
  return Q;
})()"""


def in_page(function: str) -> str:
    """A page function (`(arg) => ...` or `(el, arg) => ...`) with the helper in scope as `Q`."""
    return f"(a, b) => {{ const Q = {DEEP_DOM_JS}; return ({function})(a, b); }}"
