"""The in-page half of `mmb discover`: what a page shows, told apart by general rules.

One script, run in a frame with the deep-DOM helper (`Q`, open shadow roots included), keeps the
elements it has handed out in `window.__mmbDisc` and answers one operation per call:

* `inputs`: visible, editable text boxes (textarea, contenteditable, text input, role=textbox), scored
  by what marks a chat composer (a name or placeholder about messages, a place low on the page, its size);
* `controls`: visible clickable elements (buttons, role=button, links), with their accessible names
  and how near the input they are (send);
* `launchers`: small elements fixed in a corner of the window that take clicks (a launcher bubble);
* `selector`: stable selectors for one element that find it alone among visible ones: test ids,
  roles and labels, names, semantic ids and class names; never positions or generated ids;
* `arm` / `sample` / `state`: the chat before our message, then what changes: our bubble (the element
  holding our message's unique tag), the reply (new text after it), and every element that shows up
  or becomes visible meanwhile (busy-marker candidates);
* `bubbles`: once the reply is complete, the message list and its rows, and selectors for our bubbles
  and the agent's: each must match exactly one element per row of its side, none of the other side's,
  only inside the list, no two nested, and hold the row's text; candidates rejected are said with why;
* `markers`: among elements seen only while the agent worked, selectors that match nothing now.
"""

from __future__ import annotations

from .deep_dom import in_page

DISCOVER_JS = in_page(r"""
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
      if (!c || STATE.test(c) || identityClass(c)) continue;
      // A numbered class seen once comes last: it may be an identity whose twins are yet to come (user-1).
      out.push({sel: "." + CSS.escape(c), rank: (SEMANTIC.test(c) ? 1 : 3) + (numberedOnce(c) ? 1.5 : 0)});
    }
    out.push({sel: tag, rank: 4, tag: true});
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

  // -- watching the exchange -----------------------------------------------------------------------
  function arm(tag) {
    const everything = Q.all("*");
    const before = new WeakSet(everything);
    const shownBefore = new WeakSet(everything.filter(visible));
    const w = {tag, before, shownBefore, touched: new Set(), added: new WeakSet(), timeline: new Map(), samples: 0,
               sentAt: performance.now()};
    w.mo = Q.observe((records) => {
      for (const r of records) {
        if (r.type === "childList") for (const n of r.addedNodes) {
          if (n.nodeType !== 1) continue;
          w.touched.add(n);
          w.added.add(n);
          for (const d of Q.all("*", n)) if (w.touched.size < 4000) w.touched.add(d);
        } else if (r.target && r.target.nodeType === 1 && w.touched.size < 4000) w.touched.add(r.target);
      }
    });
    D.watch = w;
    return true;
  }
  // Our bubble: the first element holding our tag that was not there before, outside any text box.
  function ours(w) {
    if (w.ours && w.ours.isConnected) return w.ours;
    for (const el of Q.all("*")) {
      if (el.isContentEditable || /^(TEXTAREA|INPUT|SCRIPT|STYLE|TITLE)$/.test(el.tagName)) continue;
      if (ownText(el).includes(w.tag) && readable(el)) { w.ours = el; return el; }
    }
    return null;
  }
  // Text-holding elements that came after our bubble: the reply, as it shows so far.
  function replyHolders(w, mine) {
    const out = [];
    let after = false;
    for (const el of Q.all("*")) {
      if (el === mine) { after = true; continue; }
      if (!after || Q.contains(mine, el) || el.isContentEditable || /^(TEXTAREA|INPUT|SCRIPT|STYLE|BUTTON|svg)$/i.test(el.tagName)) continue;
      if (el.closest && el.closest("button, [role=button], form, textarea")) continue;
      const t = ownText(el);
      if (t && readable(el)) out.push(el);
    }
    return out;
  }
  function sample(w) {
    w.samples++;
    const t = performance.now() - w.sentAt;
    for (const el of w.touched) {
      if (el.nodeType !== 1) continue;
      let line = w.timeline.get(el);
      if (!line) { line = {on: []}; w.timeline.set(el, line); }
      if (visible(el)) line.on.push(t);
    }
  }
  function state(w) {
    sample(w);
    const mine = ours(w);
    if (!mine) return {ours: false};
    const holders = replyHolders(w, mine);
    return {ours: true, reply: holders.map(ownText).join("\n").slice(0, 4000), holders: holders.length,
            stopShown: Q.all(CLICKABLE).some((el) => visible(el) && /^(stop|cancel|abort)\b|stop (generat|respond)/i.test(name(el)))};
  }

  // -- bubbles ---------------------------------------------------------------------------------------
  const lca = (a, b) => { const chain = new Set(); for (let n = a; n; n = up(n)) chain.add(n); for (let n = b; n; n = up(n)) if (chain.has(n)) return n; return null; };
  const rowOf = (list, el) => { let n = el; while (n && up(n) !== list) n = up(n); return n; };
  // The chain from a text holder up to (not beyond) its own tree's top or the list: where a selector
  // for its bubble may point (the watch reads an element's text within its own tree).
  function chainIn(el, list) {
    const out = [];
    for (let n = el; n && n !== list && n.getRootNode() === el.getRootNode(); n = n.parentElement) out.push(n);
    return out;
  }

  function candidatesFor(chain) {
    const comps = [];
    chain.forEach((el, depth) => {
      for (const f of features(el, true)) comps.push({el, depth, sel: f.sel, rank: f.rank, tag: !!f.tag});
      const tag = el.tagName.toLowerCase();
      const fs = features(el, true).filter((f) => !f.tag);
      for (let i = 0; i < fs.length; i++) for (let j = i + 1; j < fs.length; j++) {
        comps.push({el, depth, sel: (/^[.\[]/.test(fs[i].sel) ? "" : tag) + fs[i].sel + fs[j].sel, rank: Math.max(fs[i].rank, fs[j].rank) + 0.3});
      }
    });
    const out = comps.map((c) => ({sel: c.sel, rank: c.rank, depth: c.depth}));
    // An ancestor's feature, then the element's own: "row-kind bubble".
    for (const a of comps) for (const b of comps) {
      if (a.depth <= b.depth || a.tag) continue;
      out.push({sel: `${a.sel} ${b.sel}`, rank: Math.max(a.rank, b.rank) + 0.6, depth: b.depth});
    }
    return out;
  }

  // A feature the other side's bubble has and this side's lacks, negated: `.bubble:not(.bubble--from-user)`
  // (chats that mark only one side).
  function negated(chain, otherChain) {
    const out = [];
    const theirs = otherChain.flatMap((el) => features(el, true).filter((f) => !f.tag && f.rank <= 3));
    chain.forEach((el, depth) => {
      for (const f of features(el, true).filter((f) => !f.tag).slice(0, 4)) {
        for (const g of theirs) {
          if (g.sel === f.sel || el.matches(g.sel)) continue;
          out.push({sel: `${f.sel}:not(${g.sel})`, rank: Math.max(f.rank, g.rank) + 1, depth});
        }
      }
    });
    return out;
  }

  // The rows of one side (`mine`: rows whose text holders came from us or from the agent), checked.
  function pick(side, others, list) {
    const [first] = side;
    const chain = chainIn(first.holder, list);
    const tried = [], ok = [], seen = new Set();
    const cands = candidatesFor(chain).concat(negated(chain, chainIn(others[0].holder, list)));
    for (const c of cands.sort((a, b) => a.rank - b.rank || a.sel.length - b.sel.length)) {
      if (seen.has(c.sel) || ok.length >= 16) continue;
      seen.add(c.sel);
      let hits;
      try { hits = Q.all(c.sel); } catch (e) { continue; }
      const why = judgeBubbles(hits, side, others, list);
      if (why) { if (tried.length < 40) tried.push([c.sel, why]); continue; }
      // A bubble that also holds an avatar's icon text, a name or a time reads worse than the message alone.
      const extra = Math.max(...side.map((s) => deepText(hits.find((h) => h === s.row || Q.contains(s.row, h))).length - s.message.length));
      ok.push({sel: c.sel, rank: c.rank + (extra > 2 ? 1.5 : 0)});
    }
    ok.sort((a, b) => a.rank - b.rank || a.sel.length - b.sel.length);
    return {ok: ok.slice(0, 5).map((c) => c.sel), rejected: tried.slice(0, 12)};
  }
  // What a person reads as the message in a row: its text holders, icons left out.
  const messageText = (row) => norm([row, ...Q.all("*", row)].filter((el) => ownText(el) && readable(el))
                                                             .map(ownText).join(" "));
  function judgeBubbles(hits, side, others, list) {
    if (!hits.length) return "matches nothing";
    const outside = hits.filter((h) => !Q.contains(list, h) || h === list);
    if (outside.length) return `matches ${outside.length} element(s) outside the message list`;
    for (const s of side) {
      const inRow = hits.filter((h) => h === s.row || Q.contains(s.row, h));
      if (inRow.length !== 1) return `matches ${inRow.length} elements in one of its rows (wants 1)`;
      const text = deepText(inRow[0]);
      if (!text.includes(norm(ownText(s.holder)).slice(0, 40))) return "misses the row's text";
      if (text.length < 0.6 * s.message.length) return "holds only part of the row's text";
    }
    for (const o of others) if (hits.some((h) => h === o.row || Q.contains(o.row, h))) return "also matches the other side's bubble";
    for (const a of hits) for (const b of hits) if (a !== b && Q.contains(a, b)) return "matches an element and one inside it";
    return null;
  }

  // Rows of one list are alike: the same tag, and a role or a class in common (two messages), unlike a
  // sidebar entry and a chat pane that merely both hold our words.
  const alike = (a, b) => a.tagName === b.tagName &&
    ((a.getAttribute("role") && a.getAttribute("role") === b.getAttribute("role")) || [...a.classList].some((c) => b.classList.contains(c)));
  const depth = (el) => { let d = 0; for (let n = el; n; n = up(n)) d++; return d; };

  // Our bubble and the list: of the elements showing our tag (the chat's title and the sidebar may show
  // our words too), the one whose row and a row of new text after it are alike, in the deepest list.
  function anchor(w) {
    const mines = Q.all("*").filter((el) => !el.isContentEditable && !/^(TEXTAREA|INPUT|SCRIPT|STYLE|TITLE)$/.test(el.tagName) &&
                                            ownText(el).includes(w.tag) && readable(el));
    let best = null;
    for (const mine of mines) {
      for (const h of replyHolders(w, mine).slice(0, 60)) {
        const list = lca(mine, h);
        if (!list || list === mine || list === h) continue;
        const row = rowOf(list, mine), other = rowOf(list, h);
        if (!row || !other || row === other) continue;
        const score = (alike(row, other) ? 1000 : 0) + depth(list) + Math.min(ownText(h).length, 200) / 1000;
        if (!best || score > best.score) best = {mine, list, score};
      }
    }
    return best;
  }

  function bubbles(w) {
    if (!ours(w)) return {error: "our message is not shown"};
    const found = anchor(w);
    if (!found) return {error: "no reply after our message"};
    const {mine, list} = found;
    const holders = replyHolders(w, mine);
    const row = rowOf(list, mine);
    const byRow = new Map();
    for (const h of holders) {  // a row's main text (not the model's name or a time above it) leads its chain
      const r = rowOf(list, h);
      if (!r || r === row) continue;
      if (!byRow.has(r) || ownText(h).length > ownText(byRow.get(r)).length) byRow.set(r, h);
    }
    const reply = [...byRow.entries()].map(([r, h]) => ({row: r, holder: h, text: deepText(r), message: messageText(r)}))
                     .filter((s) => s.text && !/^(…|\.\.\.|thinking|typing|loading)/i.test(s.text));
    if (!reply.length) return {error: "the reply has no text of its own"};
    const me = [{row, holder: mine, text: deepText(row), message: messageText(row)}];
    const assistant = pick(reply, me, list), user = pick(me, reply, list);
    return {assistant, user, rows: reply.length, replyTexts: reply.map((s) => s.text.slice(0, 300)),
            ourText: me[0].text.slice(0, 300), list: ref(list)};
  }

  // -- busy markers ----------------------------------------------------------------------------------
  // Seen only while the agent worked: not visible before our message, visible at some sample after it,
  // not visible now; and not a message (no reply text in it, not inside a reply row).
  function markers(w, listId) {
    const list = listId === null ? null : get(listId);
    const out = [], tried = [];
    const replyText = new Set(replyHolders(w, ours(w) || document.body).map(ownText));
    for (const el of w.touched) if (el.nodeType === 1 && !w.timeline.has(el)) w.timeline.set(el, {on: []});
    for (const [el, line] of w.timeline) {
      // Seen shown while the agent worked, or put in the page after our message and gone again (too quick to sample).
      const flashed = w.added.has(el) && !el.isConnected;
      if ((!line.on.length && !flashed) || w.shownBefore.has(el)) continue;
      if (el.isConnected && visible(el)) continue;
      if ([...replyText].some((t) => t && deepText(el).includes(t))) continue;
      const tag = el.tagName.toLowerCase();
      const sels = features(el).map((f) => ({sel: compose(tag, f), rank: f.rank})).filter((c) => !/^(div|span|p|li|svg|path)$/.test(c.sel));
      for (const c of sels.sort((a, b) => a.rank - b.rank)) {
        let now;
        try { now = Q.all(c.sel).filter(visible).length; } catch (e) { continue; }
        const inList = list && el.isConnected && Q.contains(list, el) && !/stop|typing|dots|loading|spinner|busy|thinking/i.test(c.sel);
        if (now === 0 && !inList) { out.push({sel: c.sel, rank: c.rank - (/stop|typing|dots|loading|spinner|busy|thinking|generat/i.test(c.sel + name(el)) ? 2 : 0), name: name(el), seen: line.on.length}); break; }
        if (tried.length < 20) tried.push([c.sel, now ? `${now} visible now the reply is over` : "inside the message list"]);
      }
    }
    out.sort((a, b) => a.rank - b.rank || b.seen - a.seen);
    return {found: out.slice(0, 5), rejected: tried.slice(0, 8)};
  }

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
  if (op === "bubbles") return bubbles(D.watch);
  if (op === "markers") return markers(D.watch, arg);
  if (op === "disarm") { if (D.watch && D.watch.mo) D.watch.mo.disconnect(); D.watch = null; return true; }
  throw new Error("unknown discovery operation " + op);
}
""")
