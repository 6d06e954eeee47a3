"""The in-page half of `mmb discover`: what a page shows, told apart by general rules.

One script, run in a frame with the deep-DOM helper (`Q`, open shadow roots included), keeps the
elements it has handed out in `window.__mmbDisc` and answers one operation per call:

* `inputs`: visible, editable text boxes (textarea, contenteditable, text input, role=textbox), scored
  by what marks a chat composer (a name or placeholder about messages, a place low on the page, its size);
* `controls`: visible clickable elements (buttons, role=button, links), with their accessible names
  and how near the input they are (send);
* `launchers`: small elements fixed in a corner of the window that take clicks (a launcher bubble);
* `selector`: stable selectors for one element that find it alone among visible ones: test ids,
  roles and labels, names, semantic ids and class names; never positions, generated ids, or a
  class's counter (`stopButton-149` is found by its stable prefix, `[class*="stopButton-"]`; a
  nameless counter such as `jss12` never); a whole name a build generated (`css-1x2y3z`) comes after
  the page's own names;
* `arm`, `state`, `turn`: our test message's turn, read by drivers/discover_turn.py (a part of this
  script);
* `shows`: whether a selector's elements show our tag; `still`: how long the page has been still.
"""

from __future__ import annotations

import json
import re

from .deep_dom import in_page
from .discover_turn import TURN_JS

# A whole class name a build generated (css-1x2y3z, sc-abc123, _x3k9q_1, xnmpuk0): it holds until the next
# deploy. Shared by the page's half (it ranks them after the page's own names) and discover.py (it says so).
GENERATED_CLASS = (r"^(?:css|sc|jss|emotion|svelte|styled|tw|astro)-[a-z0-9]*[0-9][a-z0-9]*$|^_[a-z0-9]{5,}_[0-9]+$"
                   r"|^x(?=[a-z0-9]*[0-9])[a-z0-9]{5,7}$")
GENERATED = re.compile(GENERATED_CLASS, re.I)

DISCOVER_JS = in_page((r"""
({op, arg}) => {
  const D = (window.__mmbDisc = window.__mmbDisc || {els: [], ids: new WeakMap()});
  const ref = (el) => { let i = D.ids.get(el); if (i === undefined) { i = D.els.length; D.els.push(el); D.ids.set(el, i); } return i; };
  const get = (i) => D.els[i];
  const up = (n) => n.parentElement || (n.parentNode && n.parentNode.host) || null;  // the composed parent
  const visible = (el) => el.isConnected && (el.checkVisibility ? el.checkVisibility({visibilityProperty: true})
                                                                : !!(el.offsetWidth || el.offsetHeight));
  const norm = (t) => (t || "").replace(/\s+/g, " ").trim();
  const deepText = (el) => {  // the text as a person reads it: open shadow roots included
    let out = "";
    const walk = (n) => { for (const c of n.childNodes) { if (c.nodeType === 3) out += c.data + " ";
      else if (c.nodeType === 1 && !["SCRIPT", "STYLE", "TEMPLATE"].includes(c.tagName)) { if (c.shadowRoot) walk(c.shadowRoot); walk(c); } } };
    if (el.shadowRoot) walk(el.shadowRoot);
    walk(el);
    return norm(out);
  };
  // Text no one reads as the message: icon fonts ("smart_toy" in Material Symbols), hidden from assistive tech.
  const iconic = (el) => !!(el.closest && el.closest("[aria-hidden='true'], svg")) ||
    /icon|material|symbol|awesome|glyph/i.test((getComputedStyle(el).fontFamily || "").split(",")[0]) ||  // the font used, not the fallbacks
    /(^|[-_ ])(icon|icons|material-icons|material-symbols\w*)([-_ ]|$)/i.test(typeof el.className === "string" ? el.className : "");
  // Shown to a reader: visible, bigger than the 1px labels kept for screen readers, not an icon.
  const readable = (el) => { if (!visible(el) || iconic(el)) return false; const r = el.getBoundingClientRect(); return r.width > 2 && r.height > 2; };
  const ownText = (el) => norm([...el.childNodes].filter((c) => c.nodeType === 3).map((c) => c.data).join(" "));
  const cssq = (v) => '"' + String(v).replace(/["\\]/g, "\\$&") + '"';
  const name = (el) => norm(el.getAttribute("aria-label") || el.getAttribute("title") || el.getAttribute("alt") ||
                            el.getAttribute("placeholder") || (el.tagName === "INPUT" ? el.value : "") || deepText(el)).slice(0, 80);

  // -- stable features ------------------------------------------------------------------------------
  // What identifies an element without saying where it is: attributes that name a role or a kind, and
  // class names; not what changes with state, position or identity.
  const STATE = /(^|[-_])(active|hover|focus|focused|selected|open|opened|closed|show|shown|hidden|visible|fade|animat\w*|loading|streaming|pending|typing|last|first|odd|even|disabled|enabled|current|expanded|collapsed|dragging|transition\w*)([-_]|$)/i;
  const SEMANTIC = /(assistant|bot|ai|agent|model|reply|response|answer|incoming|received|inbound|user|human|me|mine|self|own|sent|outgoing|outbound|question|prompt|message|msg|bubble|chat|composer|input|send|stop|typing|launcher|widget)/i;
  const SKIP_ATTR = /^(id|class|style|href|src|srcset|d|viewbox|xmlns|tabindex|for|value|contenteditable|draggable|spellcheck|autocomplete|autocorrect|autocapitalize|rows|cols|maxlength|dir|lang|width|height|loading|decoding|disabled|hidden|checked|open|aria-hidden|aria-describedby|aria-labelledby|aria-controls|aria-owns|aria-activedescendant|aria-expanded|aria-selected|aria-pressed|aria-disabled|aria-busy|aria-live|aria-atomic|aria-posinset|aria-setsize|aria-rowindex|aria-colindex|aria-level|enterkeyhint|inputmode|jsaction|jscontroller|jsname|jslog|ng-\w+|_ng\w*|v-\w+|data-v-\w+)$/i;
  const VOLATILE_ATTR = /(^|[-_])(id|key|index|idx|uuid|guid|time|timestamp|ts|date|created|updated|pos|position|order|seq|count|state|status|testid-\d+)([-_]|$)/i;
  const STATE_ATTR = /(^|[-_])(active|selected|current|expanded|checked|pressed|open|focus|focused|hover|disabled|loading|busy|visible|hidden|highlighted|state|status|streaming|pending|last|first|new)([-_]|$)/i;
  // Identity, not kind: long numbers (ids, times), a word with a number (message-12, row3), hex or UUID ids, paths.
  const numbered = (v) => /\d{5,}/.test(v) || /^[a-z]+[-_]?\d+$/i.test(v);
  const idLike = (v) => /[0-9a-f]{12,}/i.test(v) || /[:\/]/.test(v) || v.length > 60;
  const uniqueLooking = (v) => numbered(v) || idLike(v);
  // A class with a number names one element (message-12, row3) when the page has the same name with another
  // number; alone it is a name a build generated (xnmpuk0, css-a12345), which may well name a kind.
  let numberedIndex = null;
  const stemOf = (c) => c.replace(/\d+/g, "#");
  const numberedClasses = () => {  // on this page: the stems that come with several numbers, and each class's uses
    if (numberedIndex) return numberedIndex;
    const values = new Map(), uses = new Map();
    for (const el of Q.all("*")) for (const c of el.classList) if (numbered(c)) {
      if (!values.has(stemOf(c))) values.set(stemOf(c), new Set());
      values.get(stemOf(c)).add(c);
      uses.set(c, (uses.get(c) || 0) + 1);
    }
    return (numberedIndex = {stems: new Set([...values].filter(([, v]) => v.size > 1).map(([stem]) => stem)), uses});
  };
  const identityClass = (c) => idLike(c) || (numbered(c) && numberedClasses().stems.has(stemOf(c)));
  // A counter after a separator, behind a name of four letters or more: stopButton-149, makeStyles-root-7.
  // (Not a whole name a build made, whose last number is part of it: _x3k9q_1.)
  const GENERATED = new RegExp(@GENERATED@, "i");  // a whole name a build made (css-1x2y3z, sc-abc123): stable to the next deploy
  const counterStem = (c) => { const m = /^(.*[-_])\d+$/.exec(c); return m && !GENERATED.test(c) && (m[1].match(/[a-z]/gi) || []).length >= 4 ? m[1] : null; };
  const NAMELESS_COUNTER = /^(jss|css|mui|sc|emotion|tw)\d+$/i;  // a generator's counter with no name at all: never a kind
  const numberedOnce = (c) => numbered(c) && numberedClasses().uses.get(c) === 1;
  // An id a person wrote (#send-button), not one a framework made (#radix-3, #webchat__layout__id--zdaou).
  const semanticId = (id) => /^[a-z][a-z_-]{2,40}$/i.test(id) && !/^(ember|react|radix|headlessui|mui|rc|el)[-_]/i.test(id) &&
                             !/--|(^|[-_])(id|uid|key)([-_]|$)/i.test(id);

  function features(el, bubble = false) {
    const tag = el.tagName.toLowerCase();
    const out = [];
    for (const a of el.attributes) {
      const n = a.name, v = a.value;
      if (SKIP_ATTR.test(n) || n.startsWith("on")) continue;
      if (VOLATILE_ATTR.test(n) && !/^(data-testid|data-test|data-qa|data-cy)$/.test(n)) continue;
      if (v === "" || uniqueLooking(v)) continue;
      if (STATE_ATTR.test(n) || /^(true|false)$/i.test(v)) continue;  // a state, which changes: data-active="true"
      // A role or test id, or an attribute of the page's own that names a kind (data-author, data-message-type).
      const strong = /^(role|data-testid|data-test|data-qa|data-cy)$/.test(n) ||
                     (n !== "type" && /author|role|from|sender|kind|type/.test(n));
      out.push({sel: `[${n}=${cssq(v)}]`, rank: strong ? 0 : (n === "aria-label" || n === "name" || n === "placeholder" || n === "title" ? 1 : 2)});
    }
    if (el.id && semanticId(el.id) && !bubble) out.push({sel: "#" + CSS.escape(el.id), rank: 0});  // one bubble's, never all
    for (const c of el.classList) {
      if (!c || STATE.test(c) || NAMELESS_COUNTER.test(c)) continue;
      // A class with a counter a build set (stopButton-149, makeStyles-root-7) changes with the next deploy, or
      // the next load: its stable prefix names the kind.
      const stem = counterStem(c);
      if (stem) { if (!STATE.test(stem)) out.push({sel: `[class*=${cssq(stem)}]`, rank: (SEMANTIC.test(stem) ? 1 : 3) + 0.2}); continue; }
      if (identityClass(c)) continue;
      // A numbered class seen once comes last: it may be an identity whose twins are yet to come (user-1); a
      // name a build generated (css-1x2y3z) after the page's own names.
      out.push({sel: "." + CSS.escape(c), rank: (SEMANTIC.test(c) ? 1 : 3) + (numberedOnce(c) ? 1.5 : 0) + (GENERATED.test(c) ? 0.5 : 0)});
    }
    if (bubble) out.push(...styleFeatures(el));
    out.push({sel: tag, rank: 4, tag: true});
    return out;
  }
  // Inline declarations that may tell a side (alignment, colours), as written in the style attribute; never
  // sizes or positions, which change with the text and the scroll.
  const SIDE_STYLE = /^(background|background-color|color|text-align|align-self|align-items|justify-content|justify-self|float|flex-direction|direction|border-color|margin-left|margin-right|margin-inline-start|margin-inline-end)$/i;
  function styleFeatures(el) {
    const out = [];
    for (const decl of (el.getAttribute("style") || "").split(";").map((d) => d.trim())) {
      const m = /^([a-z-]+)\s*:\s*(.+)$/i.exec(decl);
      if (!m || !SIDE_STYLE.test(m[1]) || /url\(|var\(/i.test(m[2])) continue;
      if (/^margin/i.test(m[1]) && !/^auto$/i.test(m[2].trim())) continue;  // a margin tells a side only when it pushes
      out.push({sel: `[style*=${cssq(decl)}]`, rank: 2.5});
    }
    return out;
  }
  const compose = (tag, f) => (f.tag ? f.sel : (/^[.#\[]/.test(f.sel) ? tag + f.sel : f.sel));

  // Selectors that find `el` alone among the visible matches in this frame (open shadow roots included).
  function controlSelectors(el) {
    const tag = el.tagName.toLowerCase();
    const fs = features(el).sort((a, b) => a.rank - b.rank);
    const cands = [];
    for (const f of fs) { cands.push({sel: compose(tag, f), rank: f.rank}); if (!f.tag) cands.push({sel: f.sel, rank: f.rank + 0.5}); }
    for (let i = 0; i < fs.length; i++) for (let j = i + 1; j < fs.length; j++) {
      if (fs[i].tag || fs[j].tag) continue;
      cands.push({sel: tag + fs[i].sel + fs[j].sel, rank: Math.max(fs[i].rank, fs[j].rank) + 0.3});
    }
    // Inside a form or a labelled region: the control's own selector scoped by it.
    const scopes = [];
    for (let p = up(el), d = 0; p && d < 6; p = up(p), d++) {
      if (p.getRootNode() !== el.getRootNode()) break;
      for (const f of features(p)) if (!f.tag && f.rank <= 3) scopes.push({sel: f.sel, rank: f.rank});
    }
    for (const s of scopes.slice(0, 6)) for (const f of fs.slice(0, 4)) cands.push({sel: `${s.sel} ${compose(tag, f)}`, rank: Math.max(s.rank, f.rank) + 0.6});
    // Alone in the frame first; alone among the visible ones only if nothing better (a hidden twin may show later).
    const alone = [], aloneVisible = [], seen = new Set();
    for (const c of cands.sort((a, b) => a.rank - b.rank || a.sel.length - b.sel.length)) {
      if (seen.has(c.sel)) continue;
      seen.add(c.sel);
      let hits;
      try { hits = Q.all(c.sel); } catch (e) { continue; }
      if (hits.length === 1 && hits[0] === el) alone.push(c.sel);
      else if (hits.filter(visible).length === 1 && hits.filter(visible)[0] === el) aloneVisible.push(c.sel);
      if (alone.length >= 4) break;
    }
    return alone.concat(aloneVisible).slice(0, 4);
  }

  // -- composer and controls --------------------------------------------------------------------------
  const EDITABLE = "textarea, [contenteditable=''], [contenteditable='true'], [contenteditable='plaintext-only'], " +
                   "input:not([type]), input[type='text'], [role='textbox']";
  const CHATTY = /(message|chat|ask|type|write|prompt|send|reply|question|talk|say|anything|сообщ|напиш|спрос|вопрос)/i;
  function inputs() {
    const vh = innerHeight || 1;
    return Q.all(EDITABLE).filter((el) => visible(el) && !el.disabled && !el.readOnly && el.getAttribute("aria-hidden") !== "true" &&
                                           !(el.closest && el.closest("[contenteditable]:not([contenteditable='false'])") !== el && el.isContentEditable && el.parentElement && el.parentElement.isContentEditable))
      .map((el) => {
        const r = el.getBoundingClientRect();
        const label = norm(el.getAttribute("aria-label") || el.getAttribute("placeholder") || el.getAttribute("title") || el.getAttribute("name") || "");
        let score = 0;
        if (el.tagName === "TEXTAREA") score += 3; else if (el.isContentEditable) score += 2.5; else score += 1;
        if (CHATTY.test(label)) score += 3;
        if (/search|filter|find|email|password|user ?name|login|поиск/i.test(label + " " + (el.getAttribute("type") || ""))) score -= 6;
        score += Math.max(0, Math.min(1, (r.top + r.height / 2) / vh)) * 2;  // composers sit low
        if (r.width > 200) score += 1;
        return {id: ref(el), tag: el.tagName.toLowerCase(), label, score, area: r.width * r.height};
      })
      .sort((a, b) => b.score - a.score);
  }

  const CLICKABLE = "button, [role='button'], a, input[type='submit'], input[type='button'], [aria-label][tabindex], summary";
  function controls(inputId) {
    const input = inputId === null ? null : get(inputId);
    const ir = input && input.getBoundingClientRect();
    return Q.all(CLICKABLE).filter(visible).map((el) => {
      const r = el.getBoundingClientRect();
      const near = ir ? Math.hypot((r.left + r.right) / 2 - (ir.left + ir.right) / 2, (r.top + r.bottom) / 2 - (ir.top + ir.bottom) / 2) : null;
      const sameForm = !!(input && el.form && el.form === input.form) ||
                       !!(input && input.closest && el.closest && input.closest("form") && input.closest("form") === el.closest("form"));
      return {id: ref(el), tag: el.tagName.toLowerCase(), name: name(el), type: el.getAttribute("type") || "",
              role: el.getAttribute("role") || "",
              disabled: !!(el.disabled || el.getAttribute("aria-disabled") === "true"), near, sameForm,
              href: el.tagName === "A" ? (el.getAttribute("href") || "") : null, w: r.width, h: r.height};
    });
  }

  // Launchers: small elements fixed in a corner of the window that take clicks (a bubble is often a
  // bare div with an icon and a script's click handler: no role, no name).
  function launchers() {
    const shown = (el) => el.checkVisibility ? el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}) : visible(el);
    const pointer = (el) => getComputedStyle(el).cursor === "pointer";
    const fixedWithin = (el) => { for (let p = el; p; p = up(p)) if (p.nodeType === 1 && getComputedStyle(p).position === "fixed") return true; return false; };
    const out = [];
    for (const el of Q.all("*")) {
      if (!(el.matches(CLICKABLE) || pointer(el)) || (up(el) && up(el).nodeType === 1 && pointer(up(el)) && !el.matches(CLICKABLE))) continue;
      const r = el.getBoundingClientRect();
      if (r.width < 24 || r.height < 24 || r.width > 160 || r.height > 160 || !shown(el)) continue;
      if (!(Math.min(innerWidth - r.right, r.left) < 140 && innerHeight - r.bottom < 160) || !fixedWithin(el)) continue;
      const hit = el.getRootNode().elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      if (!hit || !(hit === el || Q.contains(el, hit))) continue;  // covered, or not taking pointer events
      out.push({id: ref(el), tag: el.tagName.toLowerCase(), role: el.getAttribute("role") || "", name: name(el),
                href: el.tagName === "A" ? (el.getAttribute("href") || "") : null, w: r.width, h: r.height});
    }
    return out;
  }

  // A dialog over the page at load (a "What's new", a cookie banner in a modal): its close control,
  // scoped by the dialog, so a run's `dismiss` handler never clicks a Close elsewhere.
  const MODAL = ["[role='dialog']", "[role='alertdialog']", "dialog[open]", "[aria-modal='true']"];
  const CLOSE = /^(close|dismiss|×|✕|✖|x|got it|ok|okay|continue|skip|no,? thanks|maybe later|let'?s go|okay, let'?s go!?|accept|закрыть|понятно)$/i;
  function dialogs() {
    const out = [];
    for (const kind of MODAL) for (const d of Q.all(kind).filter(visible)) {
      const close = Q.all(CLICKABLE, d).filter((b) => visible(b) && CLOSE.test(name(b).replace(/[.!]+$/, "")));
      if (!close.length) continue;
      const sels = controlSelectors(close[0]);
      if (sels.length) out.push({sel: `${kind} ${sels[0]}`, name: name(close[0])});
    }
    return out;
  }

@TURN@
  // -- a guess without sending -----------------------------------------------------------------------
  // Bubbles already shown (a welcome, a history) whose class or attribute names a side.
  const SIDE = {assistant: /(^|[-_ ])(assistant|bot|ai|agent|model|response|answer|incoming|received)([-_ ]|$)/i,
                user: /(^|[-_ ])(user|human|me|mine|self|outgoing|sent|question)([-_ ]|$)/i};
  function guess() {
    const out = {};
    for (const [side, words] of Object.entries(SIDE)) {
      for (const el of Q.all("*")) {
        if (!visible(el) || !deepText(el) || el.closest("form, button, textarea")) continue;
        const hit = features(el).find((f) => !f.tag && words.test(f.sel.replace(/[.\[\]="#]/g, " ")));
        if (!hit) continue;
        try { if (Q.all(hit.sel).every((m) => !Q.contains(m, el) || m === el)) { out[side] = hit.sel; break; } } catch (e) { /* not CSS */ }
      }
    }
    return out;
  }

  // -- the operations ------------------------------------------------------------------------------
  if (op === "guess") return guess();
  if (op === "inputs") return inputs();
  if (op === "controls") return controls(arg === undefined ? null : arg);
  if (op === "launchers") return launchers();
  if (op === "dialogs") return dialogs();
  if (op === "selector") return controlSelectors(get(arg));
  if (op === "ref") return ref(arg);
  if (op === "count") return Q.all(arg).length;
  if (op === "isConnected") return !!get(arg) && get(arg).isConnected;
  if (op === "text") return get(arg) ? deepText(get(arg)) : null;
  if (op === "arm") return arm(arg);
  if (op === "state") return D.watch ? state(D.watch) : {ours: false};
  if (op === "turn") return turn(D.watch);
  // Whether elements of a selector show our tag (our message still in the chat), and how long the page has
  // been still (a reopened chat may still be drawing its history).
  if (op === "shows") { Q.refresh(); return Q.all(arg.sel).some((el) => deepText(el).includes(arg.tag)); }  // (roots of removed hosts dropped)
  if (op === "still") {
    if (!D.calm || !D.calm.on) { D.calm = {last: performance.now(), on: true}; Q.observe(() => { D.calm.last = performance.now(); }); }
    return performance.now() - D.calm.last;
  }
  if (op === "disarm") { if (D.watch && D.watch.mo) D.watch.mo.disconnect(); D.watch = null; return true; }
  throw new Error("unknown discovery operation " + op);
}
""").replace("@TURN@", TURN_JS).replace("@GENERATED@", json.dumps(GENERATED_CLASS)))
