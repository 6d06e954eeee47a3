"""The in-page half of `mmb discover` that reads our test message's turn: what changed when we typed.

A part of the script of drivers/discover_page.py (its helpers in scope: `features`, `deepText`,
`readable`, `Q`...), answering these operations:

* `arm` / `state`: the chat before our message, then what changes: our bubble (the element showing our
  message's unique tag), the reply (text new or changed since we sent that a reader sees after our
  bubble: below it on screen, whatever the DOM's order), whether the agent shows work (a collapsible
  block, an element named for tools or thinking, a status line) and whether a busy marker shows now;
  every element that shows up or becomes visible meanwhile is followed (busy-marker candidates);
* `turn`: once the reply is complete, the message list and its rows; the agent's work told from its
  answer (kinds tool, thought, status, each with a selector); selectors for our bubbles and the
  agent's (each must match exactly one element per row of its side, none of the other side's, only
  inside the list, no two nested, and hold the row's text), or, where no selector tells the sides
  apart, the element in each bubble that names its author; the parts of a bubble that are not its
  words (an emoji avatar, a dot, a time); and the busy markers: elements seen only while the agent
  worked (a stop button, typing dots, an "… is working" row), or the text box disabled meanwhile.
  Candidates rejected are said with why.
"""

from __future__ import annotations

TURN_JS = r"""
  // -- watching the exchange -----------------------------------------------------------------------
  // b comes after a for a reader: below it on screen; side by side (or not laid out), later in the DOM.
  function readsAfter(a, b) {
    const ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect();
    if (ra.height && rb.height) {
      if (rb.top >= ra.bottom - 1) return true;
      if (rb.bottom <= ra.top + 1) return false;
    }
    return Q.after(a, b);
  }
  const STOP = /^(stop|cancel|abort)\b|stop (generat|respond)/i;
  // A line that says the agent is busy (not what it does): "Memo is working…", "typing…", "Thinking…".
  const BUSY_TEXT = /^(.{0,40}\b(is|are) )?(typing|working|thinking|generating|responding|writing|processing|loading)\b\W{0,3}$/i;
  const inputBusy = (el) => (el.disabled ? "disabled" : el.readOnly ? "readonly" : el.getAttribute("aria-disabled") === "true" ? "aria-disabled" : null);

  function arm({tag, input}) {
    const everything = Q.all("*");
    const textBefore = new WeakMap();
    for (const el of everything) { const t = ownText(el); if (t) textBefore.set(el, t); }
    const w = {tag, before: new WeakSet(everything), shownBefore: new WeakSet(everything.filter(visible)), textBefore,
               input: input === null || input === undefined ? null : get(input), inputBusy: null,
               touched: new Set(), added: new WeakSet(), timeline: new Map(), where: new WeakMap(), samples: 0,
               sentAt: performance.now(), workSeen: false};
    w.mo = Q.observe((records) => {
      for (const r of records) {
        if (r.type === "childList") for (const n of r.addedNodes) {
          if (n.nodeType !== 1) continue;
          w.touched.add(n);
          w.added.add(n);
          placed(w, n);  // (it may be gone before a sample sees it)
          for (const d of Q.all("*", n)) if (w.touched.size < 4000) { w.touched.add(d); placed(w, d); }
        } else {
          const t = r.target && (r.target.nodeType === 1 ? r.target : r.target.parentElement);
          if (t && w.touched.size < 4000) w.touched.add(t);
        }
      }
    });
    D.watch = w;
    return true;
  }
  const tagShown = (el, tag) => !el.isContentEditable && !/^(TEXTAREA|INPUT|SCRIPT|STYLE|TITLE)$/.test(el.tagName) &&
                                ownText(el).includes(tag) && readable(el);
  // Our bubble: of the elements showing our tag when it first showed (a reply may quote it later), the
  // first a reader sees.
  function ours(w) {
    if (w.ours && w.ours.isConnected) return w.ours;
    const mines = Q.all("*").filter((el) => tagShown(el, w.tag)).sort((a, b) => (readsAfter(a, b) ? -1 : 1));
    if (!mines.length) return null;
    w.ours = mines[0];
    w.mines = mines;
    return w.ours;
  }
  // Text-holding elements new or changed since we sent, that a reader sees after our bubble: the reply so far.
  const fresh = (w, el, t) => !w.before.has(el) || w.textBefore.get(el) !== t;
  function replyHolders(w, mine) {
    const out = [];
    for (const el of Q.all("*")) {
      if (el === mine || Q.contains(mine, el) || Q.contains(el, mine)) continue;
      if (el.isContentEditable || /^(TEXTAREA|INPUT|SCRIPT|STYLE|BUTTON|SELECT|OPTION|svg)$/i.test(el.tagName)) continue;
      if (el.closest && el.closest("button, [role=button], form, textarea")) continue;
      const t = ownText(el);
      if (t && fresh(w, el, t) && readable(el) && readsAfter(mine, el)) out.push(el);
    }
    return out;
  }
  // Where an element stands (told while it is in the page: a status line is gone by the end): after our
  // bubble, and (a short one) its ancestors then, so that a "Sending…" in our own row is known for ours and
  // a part of the agent's work that flashed by is known for one.
  function placed(w, el) {
    const mine = w.ours && w.ours.isConnected ? w.ours : null;
    if (w.where.has(el) && (w.where.get(el).after !== null || !mine)) return;
    if (!el.isConnected || el === mine || (mine && (Q.contains(el, mine) || Q.contains(mine, el)))) return;
    const chain = [];
    if (el.textContent.length <= 100) for (let n = up(el); n && chain.length < 40; n = up(n)) chain.push(n);
    w.where.set(el, {after: mine ? readsAfter(mine, el) : null, chain});
  }
  function sample(w) {
    w.samples++;
    const t = performance.now() - w.sentAt;
    const mine = ours(w);
    for (const el of w.touched) {
      if (el.nodeType !== 1) continue;
      let line = w.timeline.get(el);
      if (!line) { line = {on: []}; w.timeline.set(el, line); }
      if (!visible(el)) continue;
      line.on.push(t);
      if (mine) placed(w, el);
    }
    const busy = w.input && inputBusy(w.input);
    if (busy) w.inputBusy = busy;
  }
  // A busy sign that came with our message (a Stop shown all along says nothing).
  function busyShown(w) {
    if (Q.all(CLICKABLE).some((el) => visible(el) && !w.shownBefore.has(el) && STOP.test(name(el)))) return "a stop control shows";
    if (w.input && inputBusy(w.input)) return "the text box is disabled";
    for (const el of w.touched) {
      if (el.nodeType === 1 && el.isConnected && el.textContent.length <= 60 && !w.shownBefore.has(el) &&
          BUSY_TEXT.test(norm(el.textContent)) && visible(el)) {
        return `${JSON.stringify(norm(el.textContent).slice(0, 40))} shown`;
      }
    }
    return null;
  }
  function state(w) {
    sample(w);
    const mine = ours(w);
    if (!mine) return {ours: false};
    const holders = replyHolders(w, mine);
    if (!w.workSeen) w.workSeen = workShownNow(w, mine);
    return {ours: true, reply: holders.map(ownText).join("\n").slice(0, 4000), holders: holders.length,
            busy: busyShown(w), work: w.workSeen || null};
  }

  // -- the agent's work ------------------------------------------------------------------------------
  // A block of the agent's work: collapsible (<details>, a toggle with aria-expanded at its head), or
  // named for a kind of work by its own classes or attributes (a tool card, a thinking block, a step),
  // and not for a message or an answer (Chainlit names both its tool steps and its answers "step").
  const WORK_NAME = /(^|[^a-z])(tools?|tool_?calls?|tool_?use|function_?calls?|thoughts?|thinking|reasoning|steps?|chain of thought)([^a-z]|$)/i;
  const ANSWER_NAME = /(^|[^a-z])(messages?|answers?|responses?|reply|replies|assistant|bot|markdown|content|text|bubble|prose)([^a-z]|$)/i;
  const THOUGHT = /thought|think|reason/i;
  const TOGGLE = "[aria-expanded]:not([aria-haspopup])";
  function namesOf(el) {  // its classes and attributes as words (camelCase split)
    const words = [];
    for (const a of el.attributes) {
      if (/^(style|id|href|src|d|on\w+)$/i.test(a.name) || (a.name === "aria-label" && a.value.length > 40)) continue;
      words.push(((a.name.startsWith("data-") ? a.name.slice(5) + " " : "") + a.value).replace(/([a-z])([A-Z])/g, "$1 $2"));
    }
    return words.join(" ");
  }
  const namedWork = (el) => { const words = namesOf(el); return WORK_NAME.test(words) && !ANSWER_NAME.test(words); };
  const toggleHead = (el) => [...el.children].find((c) => c.matches(TOGGLE)) || null;
  const collapsible = (el) => el.tagName === "DETAILS" || !!toggleHead(el);
  const workish = (el) => collapsible(el) || namedWork(el);
  const insideWorkish = (el, top) => { for (let n = el; n && n !== top; n = n.parentElement) if (workish(n)) return true; return false; };
  // A status line: shown a while, then gone (or marked as one: role=status, aria-live), a short line such as
  // "Searching memory…"; not a busy line ("… is working"), never a placeholder ("…").
  const statusText = (t) => !!t && t.length <= 100 && !BUSY_TEXT.test(t) && !/^(…|\.\.\.?)$/.test(t);
  const statusLike = (el, t) => /(…|\.\.\.)$/.test(t) || el.matches("[role=status], [aria-live]") || namedWork(el);
  function workShownNow(w, mine) {
    for (const el of w.touched) {
      if (el.nodeType !== 1 || !el.isConnected || w.before.has(el) || Q.contains(el, mine) || !visible(el) || !readsAfter(mine, el)) continue;
      if (workish(el) && deepText(el).length >= 3) return `a ${el.tagName === "DETAILS" ? "collapsible <details>" : collapsible(el) ? "block with a toggle" : "block named for its work"} (${JSON.stringify(deepText(el).slice(0, 40))})`;
      const t = norm(el.textContent);
      if (statusText(t) && el.matches("[role=status], [aria-live]") && !Q.all("*", el).some((c) => c.matches("[role=status], [aria-live]"))) return `a status line (${JSON.stringify(t.slice(0, 40))})`;
    }
    return null;
  }

  // The work this turn shows, told from the answer: blocks (tool or thought) in the page now, and status
  // lines seen during the turn (gone now, or marked as status). A block holding every word of the reply
  // is the answer's own bubble, not work.
  function findWork(w, mine, holders, list) {
    const after = (el) => Q.contains(list, el) && readsAfter(mine, el);
    let blocks = Q.all("*", list).filter((el) => !w.before.has(el) && workish(el) && !Q.contains(el, mine) && visible(el) &&
                                               deepText(el).length >= 3 && after(el));
    const outside = (bs) => holders.filter((h) => !bs.some((b) => b === h || Q.contains(b, h)));
    const size = (el) => Q.all("*", el).length;
    blocks.sort((a, b) => size(b) - size(a));
    while (blocks.length && !outside(blocks).length) blocks.shift();
    blocks = blocks.filter((b) => !blocks.some((o) => o !== b && Q.contains(o, b)));
    const answerText = outside(blocks).map(ownText).join(" ");
    let lines = [];
    const row = rowOf(list, mine);
    // A block of work gone from the page with none like it left (not redrawn: a "Searching memory…" card
    // removed once the answer began) was a status line too.
    const look = (el) => el.tagName + "." + [...el.classList].sort().join(".");
    for (const [el, line] of w.timeline) {
      const where = w.where.get(el);
      if (!line.on.length || !where || !where.after || !where.chain.includes(list) || where.chain.includes(row) ||
          blocks.some((b) => Q.contains(b, el))) continue;
      const gone = !(el.isConnected && visible(el));
      const passing = gone && workish(el) && !blocks.some((b) => look(b) === look(el)) && !insideWorkish(el.parentElement, list);
      if (!passing && insideWorkish(el, list)) continue;
      const t = deepText(el);
      if (!statusText(t) || !statusLike(el, t) || answerText.includes(t.replace(/(…|\.\.\.)$/, ""))) continue;
      if (!gone && (!el.matches("[role=status], [aria-live]") || holders.some((h) => Q.contains(el, h) && answerText.includes(ownText(h))))) continue;
      lines.push(el);
    }
    lines = lines.filter((l) => !lines.some((o) => o !== l && (o.contains(l) || Q.contains(o, l))));
    const heading = (b) => norm((b.tagName === "DETAILS" ? b.querySelector("summary") : toggleHead(b))?.textContent || deepText(b)).slice(0, 80);
    const pieces = blocks.map((el) => ({el, kind: THOUGHT.test(heading(el) + " " + namesOf(el)) ? "thought" : "tool", title: heading(el)}))
      .concat(lines.map((el) => ({el, kind: "status", title: deepText(el).slice(0, 80)})));
    return pieces;
  }

  // A selector for each kind of work: it matches every piece of that kind (a status line gone from the page
  // too), never our bubble or an element holding the answer's words, nothing outside the list; and, where
  // the markup allows, not the other kinds (else one selector keeps them all, as tool).
  function workSelectors(pieces, mine, answers, list) {
    const out = {}, rejected = [];
    for (const kind of ["tool", "thought", "status"]) {
      const els = pieces.filter((p) => p.kind === kind).map((p) => p.el);
      if (!els.length) continue;
      const others = pieces.filter((p) => p.kind !== kind).map((p) => p.el);
      const first = els[0], tag = first.tagName.toLowerCase();
      const fs = features(first, true).filter((f) => !f.tag);
      const cands = fs.map((f) => ({sel: compose(tag, f), rank: f.rank}));
      for (let i = 0; i < fs.length; i++) for (let j = i + 1; j < fs.length; j++) cands.push({sel: tag + fs[i].sel + fs[j].sel, rank: Math.max(fs[i].rank, fs[j].rank) + 0.3});
      if (tag === "details") cands.push({sel: "details", rank: 1});
      if (toggleHead(first)) cands.push({sel: `${tag}:has(> ${TOGGLE})`, rank: 3.5});
      let best = null, shared = null;
      for (const c of cands.sort((a, b) => a.rank - b.rank || a.sel.length - b.sel.length)) {
        let hits;
        try { hits = Q.all(c.sel); } catch (e) { continue; }
        const why = !els.every((e) => e.matches(c.sel)) ? `misses one of the ${els.length} ${kind} piece(s)`
          : hits.some((h) => h === mine || Q.contains(h, mine) || Q.contains(mine, h)) ? "matches our message"
          : hits.some((h) => answers.some((a) => h === a || Q.contains(h, a))) ? "holds the answer's words"
          : hits.some((h) => !Q.contains(list, h)) ? "matches elements outside the message list" : null;
        if (why) { if (rejected.length < 12) rejected.push([c.sel, why]); continue; }
        if (others.some((o) => o.matches(c.sel))) { shared = shared || c.sel; continue; }
        best = c.sel;
        break;
      }
      if (best) out[kind] = {sel: best, count: els.length, titles: els.map((e) => pieces.find((p) => p.el === e).title)};
      else if (shared && !Object.values(out).some((o) => o.sel === shared)) {
        out.tool = {sel: shared, count: pieces.filter((p) => p.el.matches(shared)).length, shared: true,
                    titles: pieces.filter((p) => p.el.matches(shared)).map((p) => p.title)};
      }
    }
    return {found: out, rejected};
  }

  // -- bubbles ---------------------------------------------------------------------------------------
  const lca = (a, b) => { const chain = new Set(); for (let n = a; n; n = up(n)) chain.add(n); for (let n = b; n; n = up(n)) if (chain.has(n)) return n; return null; };
  const rowOf = (list, el) => { let n = el; while (n && up(n) !== list) n = up(n); return n; };
  // The chain from a text holder up to (not beyond) the list, across shadow hosts (the run reads a bubble's
  // words in its open shadow roots too: a bubble may be a web component whose text is roots deep, as Panel's).
  function chainIn(el, list) {
    const out = [];
    for (let n = el; n && n !== list; n = up(n)) out.push(n);
    return out;
  }
  const byRank = (a, b) => a.rank - b.rank || a.sel.length - b.sel.length;

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
    // An ancestor's feature, then the element's own: "row-kind bubble" (in one tree: a selector never
    // crosses a shadow boundary).
    for (const a of comps) for (const b of comps) {
      if (a.depth <= b.depth || a.tag || a.el.getRootNode() !== b.el.getRootNode()) continue;
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

  // The rows of one side, checked: `others` are the other side's rows, `workRows` rows that hold only the
  // agent's work (a selector matching them too is kept, but after one that does not).
  function pick(side, others, list, workRows, skip, busyEls) {
    const [first] = side;
    const chain = chainIn(first.holder, list);
    const tried = [], ok = [], seen = new Set();
    const cands = candidatesFor(chain).concat(negated(chain, chainIn(others[0].holder, list)));
    for (const c of cands.sort(byRank)) {
      if (seen.has(c.sel) || ok.length >= 16) continue;
      seen.add(c.sel);
      let hits;
      try { hits = Q.all(c.sel); } catch (e) { continue; }
      const why = judgeBubbles(hits, side, others, list) || busyMatch(busyEls, c.sel);
      if (why) { if (tried.length < 40) tried.push([c.sel, why]); continue; }
      // A bubble that also holds an avatar's icon text, a name or a time reads worse than the message alone.
      const extra = Math.max(...side.map((s) => textBeside(hits.find((h) => h === s.row || Q.contains(s.row, h)), skip).length - s.message.length));
      const onWork = workRows.some((r) => hits.some((h) => h === r || Q.contains(r, h)));
      ok.push({sel: c.sel, rank: c.rank + (extra > 2 ? 1.5 : 0) + (onWork ? 2 : 0)});
    }
    ok.sort(byRank);
    return {ok: ok.slice(0, 5).map((c) => c.sel), rejected: tried.slice(0, 12)};
  }
  // A bubble selector must not match what showed only while the agent worked ("Memo is working…" as a row of
  // the list): the run would read it as a bubble.
  const busyMatch = (els, sel) => { try { return els.some((b) => b.matches(sel)) ? "also matches the busy marker" : null; } catch (e) { return null; } };
  // What a person reads as the message in an element: its text holders, icons and the agent's work left out.
  const textBeside = (el, skip) => norm([el, ...Q.all("*", el)].filter((x) => ownText(x) && readable(x) && !skip(x)).map(ownText).join(" "));
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

  // Where no selector tells the sides apart, who wrote each bubble may: a selector for every bubble (ours and
  // the reply's alike), and one for the element inside it that names its author (a name, an avatar's alt),
  // the first such in each bubble, naming us in ours and someone else in the reply's (in the reply's later
  // bubbles that name or none: messengers name the author once per group).
  const authorSaid = (a) => {  // as the run reads it (drivers/reply_watch.py: its words in open roots too)
    const img = a.matches("img, [role=img]") ? a : Q.all("img[alt], [role=img][aria-label]", a)[0];
    return norm(Q.text(a).trim() || (img && (img.getAttribute("alt") || img.getAttribute("aria-label"))) ||
                a.getAttribute("aria-label") || a.getAttribute("title") || "");
  };
  const nameLike = (t, tag) => !!t && t.length <= 40 && /[^\W\d_]/.test(t) && !t.includes(tag) && !/^\d{1,2}[:.]\d{2}/.test(t);
  function byAuthor(reply, me, list, tag, busyEls) {
    const rows = me.concat(reply), tried = [];
    for (const c of candidatesFor(chainIn(me[0].holder, list)).sort(byRank)) {
      let hits;
      try { hits = Q.all(c.sel); } catch (e) { continue; }
      const why = judgeBubbles(hits, rows, [], list) || busyMatch(busyEls, c.sel);
      if (why) { if (tried.length < 12) tried.push([c.sel, `as every bubble: ${why}`]); continue; }
      const bubbleOf = (s) => hits.find((h) => h === s.row || Q.contains(s.row, h));
      const ourBubble = bubbleOf(me[0]), theirs = bubbleOf(reply[0]);
      // What may name the author in our bubble, the shortest names first (a name, not its row with a dot).
      const named = Q.all("*", ourBubble).filter((el) => el !== me[0].holder && !Q.contains(el, me[0].holder))
        .map((el) => ({el, who: authorSaid(el)})).filter((x) => nameLike(x.who, tag)).sort((a, b) => a.who.length - b.who.length);
      for (const {el, who} of named) {
        const tagName = el.tagName.toLowerCase();
        for (const f of features(el, true).sort(byRank)) {
          const sel = compose(tagName, f);
          let ownFirst, theirFirst;
          try { ownFirst = Q.all(sel, ourBubble)[0]; theirFirst = Q.all(sel, theirs)[0]; } catch (e) { continue; }
          if (ownFirst !== el || !theirFirst) continue;
          const agent = authorSaid(theirFirst);
          if (!nameLike(agent, tag) || agent.toLowerCase() === who.toLowerCase()) {
            if (tried.length < 24) tried.push([`${c.sel} by ${sel}`, `names ${JSON.stringify(who)} in ours and ${JSON.stringify(agent)} in the reply's`]);
            continue;
          }
          const later = reply.slice(1).map((s) => { const b = bubbleOf(s); const a = b && Q.all(sel, b)[0]; return a ? authorSaid(a) : null; });
          if (later.some((n) => n !== null && n !== agent)) continue;
          return {found: {message: c.sel, author: sel, agent, user: who}, rejected: tried};
        }
      }
    }
    return {found: null, rejected: tried};
  }

  // Rows of one list are alike: the same tag, and a role or a class in common (two messages), or the same
  // custom element (a web component per message), unlike a sidebar entry and a chat pane that merely both
  // hold our words.
  const alike = (a, b) => a.tagName === b.tagName && (a.tagName.includes("-") ||
    (a.getAttribute("role") && a.getAttribute("role") === b.getAttribute("role")) || [...a.classList].some((c) => b.classList.contains(c)));
  const depth = (el) => { let d = 0; for (let n = el; n; n = up(n)) d++; return d; };

  // Our bubble and the list: of the elements showing our tag when it first showed (the chat's title and the
  // sidebar may show our words too), the one whose row and a row of new text after it are alike, in the
  // deepest list.
  function anchor(w) {
    let best = null;
    for (const mine of (w.mines || []).filter((el) => el.isConnected)) {
      // (a time or an avatar beside our words is no reply: it would make our own bubble the list)
      for (const h of replyHolders(w, mine).filter((x) => !METADATA(ownText(x))).slice(0, 60)) {
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

  // The whole turn, read once the reply is complete.
  function turn(w) {
    if (!ours(w)) return {error: "our message is not shown"};
    const found = anchor(w);
    if (!found) return {error: "no reply after our message"};
    const {mine, list} = found;
    const holders = replyHolders(w, mine);
    const pieces = findWork(w, mine, holders, list);
    const inWork = (el) => pieces.some((p) => p.el === el || Q.contains(p.el, el));
    const answers = holders.filter((h) => !inWork(h));
    const row = rowOf(list, mine);
    const byRow = new Map();
    for (const h of answers) {  // a row's main text (not the model's name or a time above it) leads its chain
      const r = rowOf(list, h);
      if (!r || r === row) continue;
      if (!byRow.has(r) || ownText(h).length > ownText(byRow.get(r)).length) byRow.set(r, h);
    }
    const reply = [...byRow.entries()].map(([r, h]) => ({row: r, holder: h, text: deepText(r), message: textBeside(r, inWork)}))
                     .filter((s) => s.text && !/^(…|\.\.\.|thinking|typing|loading)/i.test(s.text));
    if (!reply.length) return {error: "the reply has no text of its own" + (pieces.length ? ` (only the agent's work: ${pieces.map((p) => p.kind).join(", ")})` : "")};
    const workRows = [...new Set(pieces.map((p) => p.el.isConnected && rowOf(list, p.el)).filter((r) => r && r !== row && !byRow.has(r)))];
    const me = [{row, holder: mine, text: deepText(row), message: textBeside(row, inWork)}];
    const busy = markers(w, list, pieces, reply.map((s) => ownText(s.holder)));
    const busyEls = busy.els;
    delete busy.els;
    const assistant = pick(reply, me, list, workRows, inWork, busyEls);
    const user = pick(me, reply.concat(workRows.map((r) => ({row: r}))), list, [], inWork, busyEls);
    const authors = assistant.ok.length && user.ok.length ? null : byAuthor(reply, me, list, w.tag, busyEls);
    const work = workSelectors(pieces, mine, answers, list);
    const byName = authors && authors.found ? authors.found.message : null;
    const ourSel = byName || user.ok[0], theirSel = byName || assistant.ok[0];
    const strip = ourSel && theirSel ? stripParts(me.concat(reply), [ourSel].concat(reply.map(() => theirSel)), [mine, ...reply.map((r) => r.holder)]) : [];
    return {assistant, user, authors, work, strip, rows: reply.length, replyTexts: reply.map((s) => s.text.slice(0, 300)),
            ourText: me[0].text.slice(0, 300), list: ref(list), markers: busy};
  }

  // Parts of a bubble that are not its words (an avatar's emoji or icon, a dot, a time), as found in our bubble
  // and found the same way in the reply's: their selectors (selectors.strip), so that the run reads a bubble
  // as the message alone (and knows our message again when the chat shows it).
  const METADATA = (t) => !/[^\W\d_]/.test(t) ||
    /^(\d{1,2}[:.]\d{2}(:\d{2})?(\s?[ap]\.?m\.?)?|just now|now|\d+\s?(s|sec|secs|min|mins|m|h|hr|hrs|d)\s+ago)$/i.test(t);
  function stripParts(rows, sels, holders) {
    const bubbles = rows.map((s, i) => Q.all(sels[i]).find((h) => h === s.row || Q.contains(s.row, h))).filter(Boolean);
    if (!bubbles.length) return [];
    const words = (el) => holders.some((h) => h === el || Q.contains(el, h) || Q.contains(h, el));
    const extra = Q.all("*", bubbles[0]).filter((el) => !words(el) && (() => { const t = norm(Q.text(el)); return t && t.length <= 40 && METADATA(t); })());
    const parts = extra.filter((el) => !extra.some((o) => o !== el && Q.contains(o, el)));
    const out = [];
    for (const el of parts) {
      const tag = el.tagName.toLowerCase();
      for (const f of features(el, true).filter((f) => !f.tag).sort(byRank)) {
        const sel = compose(tag, f);
        let fits = true;
        try {
          fits = Q.all(sel, bubbles[0])[0] === el && bubbles.every((b) => {
            const hits = Q.all(sel, b);
            return hits.length <= 1 && hits.every((h) => !words(h) && METADATA(norm(Q.text(h))));
          });
        } catch (e) { fits = false; }
        if (fits) { out.push({sel, text: norm(Q.text(el)).slice(0, 20)}); break; }
      }
    }
    return out;
  }

  // -- busy markers ----------------------------------------------------------------------------------
  // Seen only while the agent worked: not visible before our message, visible at some sample after it,
  // not visible now; not a message (no reply text in it, not in a reply row unless it says the agent is
  // busy), not a piece of its work. Or the text box, disabled while the agent worked.
  function markers(w, list, pieces, replyText) {
    const out = [], tried = [], sending = new Set();
    const BUSY_NAME = /stop|typing|dots|loading|spinner|busy|thinking|working|generat/i;
    for (const el of w.touched) if (el.nodeType === 1 && !w.timeline.has(el)) w.timeline.set(el, {on: []});
    for (const [el, line] of w.timeline) {
      // Seen shown while the agent worked, or put in the page after our message and gone again (too quick to sample).
      const flashed = w.added.has(el) && !el.isConnected;
      if ((!line.on.length && !flashed) || w.shownBefore.has(el) || /^(STYLE|LINK|SCRIPT|TEMPLATE|META|SLOT)$/.test(el.tagName)) continue;
      if (el.isConnected && visible(el)) continue;
      if (replyText.some((t) => t && deepText(el).includes(t))) continue;
      // Not our own message in its sending state (Hydrogen's `li.unsent`, a clock in our bubble), gone once
      // the server took it: it says nothing of the agent's work.
      const where = w.where.get(el), was = where && where.chain.includes(list) ? where.chain.slice(0, where.chain.indexOf(list)) : [];
      if ([el, ...was].some((a) => deepText(a).includes(w.tag))) {
        const f = features(el)[0];
        sending.add(f ? compose(el.tagName.toLowerCase(), f) : el.tagName.toLowerCase());
        continue;
      }
      // Not a piece of the work, nor inside one (as it stood while shown: a step's body folded away is gone).
      if ((el.isConnected ? Q.contains(list, el) && insideWorkish(el, list) : insideWorkish(el, null)) ||
          was.some((a) => workish(a) || pieces.some((p) => p.el === a)) ||
          pieces.some((p) => p.el === el || Q.contains(p.el, el) || p.el.contains(el))) continue;
      const tag = el.tagName.toLowerCase();
      const says = BUSY_TEXT.test(deepText(el)) || BUSY_NAME.test(name(el));
      const sels = features(el).map((f) => ({sel: compose(tag, f), rank: f.rank})).filter((c) => !/^(div|span|p|li|svg|path)$/.test(c.sel));
      for (const c of sels.sort((a, b) => a.rank - b.rank)) {
        let now;
        try { now = Q.all(c.sel).filter(visible).length; } catch (e) { continue; }
        const inList = list && el.isConnected && Q.contains(list, el) && !BUSY_NAME.test(c.sel) && !says;
        if (now === 0 && !inList) {
          out.push({sel: c.sel, rank: c.rank - (BUSY_NAME.test(c.sel + " " + name(el)) || says ? 2 : 0) + (line.on.length ? 0 : 1),
                    name: name(el), seen: line.on.length, el});
          break;
        }
        if (tried.length < 20) tried.push([c.sel, now ? `${now} visible now the reply is over` : "inside the message list"]);
      }
    }
    // The text box disabled while the agent worked, and not now.
    if (w.input && w.inputBusy && !inputBusy(w.input)) {
      const own = controlSelectors(w.input).filter((s) => !s.startsWith("role="))[0];
      const state = {disabled: ":disabled", readonly: "[readonly]", "aria-disabled": "[aria-disabled='true']"}[w.inputBusy];
      if (own) out.push({sel: own + state, rank: 1.5, name: `the text box, ${w.inputBusy} while the agent worked`, seen: 1});
    }
    for (const sel of [...sending].slice(0, 2).reverse()) tried.unshift([sel, "part of our own message while it was sent, not the agent at work"]);
    out.sort((a, b) => a.rank - b.rank || b.seen - a.seen);
    const els = out.map((m) => m.el).filter(Boolean);
    for (const m of out) delete m.el;
    return {found: out.slice(0, 5), rejected: tried.slice(0, 8), els};
  }
"""
