"""A chat inside open shadow roots, nested ones included: the driver's page scripts see what
Playwright's locators see (drivers/deep_dom.py), in real Chromium against the chat lab."""

from __future__ import annotations

import json
import random

import pytest

from drivers.base import AgentErrorReply
from drivers.deep_dom import SHADOW_HOOK_JS, in_page
from tests.support.chat_lab import AGENT_ERROR, ChatLab, LabScenario
from tests.test_reply_detection import signal_is

SHADOWS = ["open", "nested"]


@pytest.mark.parametrize("shadow", SHADOWS)
def test_a_streamed_reply_in_shadow_roots_with_every_marker(harness, tmp_path, shadow):
    with ChatLab(LabScenario(shadow=shadow, done="attr", placeholder="Thinking…", chunk_ms=20)) as lab:
        replies = harness.chat(lab.profile(), tmp_path, ["hello shadow", "and again"])
        assert lab.received == ["hello shadow", "and again"]
    assert [r.bubbles for r in replies] == [["echo: hello shadow"], ["echo: and again"]]
    assert all(signal_is(r.signal, "busy-gone", "done", "placeholder-gone") for r in replies), replies


def test_several_bubbles_with_a_done_marker_after_each_in_nested_roots(harness, tmp_path):
    with ChatLab(LabScenario(shadow="nested", bubbles=3, done="after", bubble_gap_ms=100)) as lab:
        [reply] = harness.chat(lab.profile(), tmp_path, ["three things"])
    assert reply.bubbles == [f"part {i} of 3: three things" for i in (1, 2, 3)]


@pytest.mark.parametrize("shadow", SHADOWS)
def test_new_chat_and_its_reset_check_in_shadow_roots(harness, tmp_path, shadow):
    async def go(lab: ChatLab):
        driver = await harness.driver(lab.profile(), tmp_path)
        try:
            await driver.send("my cat is Tom")
            assert (await driver.chat_before()).users == 1
            info = await driver.new_session()
            return info, await driver.send("hello again"), (await driver.chat_before()).users
        finally:
            await driver.close()

    with ChatLab(LabScenario(shadow=shadow, done="attr", new_chat_navigates=False)) as lab:
        info, reply, users = harness.run(go(lab))
    assert info.reset_sign == "no messages left (1 before)"
    assert reply.bubbles == ["echo: hello again"] and users == 1


def test_a_new_chat_that_does_not_reset_is_seen_inside_nested_roots(harness, tmp_path):
    async def go(lab: ChatLab):
        driver = await harness.driver(lab.profile(reset_timeout_s=1), tmp_path)
        try:
            await driver.send("my cat is Tom")
            await driver.new_session()
        finally:
            await driver.close()

    with ChatLab(LabScenario(shadow="nested", done="attr", new_chat="noop")) as lab:
        with pytest.raises(Exception, match=r"did not reset after new session \(button\): 1 of 1 message\(s\)"):
            harness.run(go(lab))


def test_an_error_bubble_inside_nested_roots_ends_the_wait_at_once(harness, tmp_path):
    with ChatLab(LabScenario(shadow="nested", error_next=1)) as lab:
        with pytest.raises(AgentErrorReply) as caught:
            harness.chat(lab.profile(completion={"first_bubble_timeout_s": 20}), tmp_path, ["are you there?"])
    assert caught.value.text == AGENT_ERROR


# -- the query helper itself, on a static page ------------------------------------------------------

PAGE = """<!doctype html><body>
<p class="m" id="a">a</p>
<x-outer><template shadowrootmode="open"><p class="m" id="b">b</p><x-inner></x-inner><p class="m" id="d">d</p></template>
  <p class="m" id="e">e (light child of the host)</p></x-outer>
<p class="m" id="f">f</p>
<script>
  const inner = document.querySelector("x-outer").shadowRoot.querySelector("x-inner").attachShadow({mode: "open"});
  inner.innerHTML = '<div class="box"><p class="m" id="c">c</p></div>';
  document.body.appendChild(document.createElement("x-closed")).attachShadow({mode: "closed"}).innerHTML = '<p class="m">hidden</p>';
</script></body>"""

IDS = "(els) => els.map((e) => e.id)"


def run_in_page(harness, script: str, arg=None, *, hook: bool = True):
    async def go():
        page = await harness.browser.new_page()
        try:
            if hook:
                await page.add_init_script(SHADOW_HOOK_JS)
            # a page loaded, as a chat is (set_content would write into about:blank, where no init script runs)
            await page.route("http://shadow.test/", lambda route: route.fulfill(body=PAGE, content_type="text/html"))
            await page.goto("http://shadow.test/")
            assert await page.evaluate("!!window.__mmbShadowRoots") == hook
            return await page.evaluate(in_page(script), arg)
        finally:
            await page.close()

    return harness.run(go())


@pytest.mark.parametrize("hook", [True, False], ids=["hooked", "walked"])
def test_all_finds_matches_in_nested_roots_in_composed_order(harness, hook):
    got = run_in_page(harness, f"() => ({IDS})(Q.all('.m'))", hook=hook)
    assert got == ["a", "b", "c", "d", "e", "f"]  # the closed root stays closed


def test_after_closest_and_contains_cross_shadow_boundaries(harness):
    script = """() => {
      const by = (id) => Q.all('.m').find((e) => e.id === id);
      const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
      const order = ids.map((x) => ids.map((y) => Q.after(by(x), by(y))));
      const host = document.querySelector('x-outer');
      return {order, closest: Q.closest(by('c'), 'x-outer') === host, box: Q.closest(by('c'), '.box') !== null,
              contains: [Q.contains(host, by('c')), Q.contains(by('c'), host)], scoped: Q.all('.m', host).map((e) => e.id)};
    }"""
    got = run_in_page(harness, script)
    assert got["order"] == [[j > i for j in range(6)] for i in range(6)]
    assert got["closest"] and got["box"] and got["contains"] == [True, False]
    assert got["scoped"] == ["b", "c", "d", "e"]


def test_kept_lists_follow_every_kind_of_change(harness):
    """Q.live keeps lists between checks, updated from mutation records, and Q.all keeps what it knows
    of the shadow roots: after each of many random changes (appends, inserts before others, prepends,
    moves, removals of wrappers and of shadow hosts, class and attribute flips on matches and on their
    ancestors, new shadow roots, hosts given their root before they are in the page) both must equal
    a walk of the composed tree, and Q.structure() must have changed with every element added,
    removed or moved (and with nothing else)."""
    script = """(seed) => {
      let s = seed;
      // (the high bits: the low ones of this generator repeat within a few steps)
      const rnd = (n) => { s = (s * 1103515245 + 12345) % 2147483648; return Math.floor(s / 65536) % n; };
      const sels = ['.m', '#log .m.bot', '[data-done="1"]', '.wrap .m'];
      const log = document.body.appendChild(Object.assign(document.createElement('div'), {id: 'log'}));
      // the reference: every match in composed order (a host's shadow content right after the host)
      const walk = (sel) => {
        const out = [];
        const visit = (parent) => { for (const c of parent.children) { if (c.matches(sel)) out.push(c); if (c.shadowRoot) visit(c.shadowRoot); visit(c); } };
        visit(document);
        return out;
      };
      const same = (a, b) => a.length === b.length && a.every((e, i) => e === b[i]);
      const mismatches = [];
      let structure = Q.structure(), changed = false;
      for (let step = 0; step < 300; step++) {
        const els = Q.all('.m, .wrap');
        const pick = els[rnd(els.length)] || log;
        const kind = rnd(12);
        const fresh = () => { const p = document.createElement('p'); p.className = 'm' + (rnd(2) ? ' bot' : ''); return p; };
        const hosts = [...document.querySelectorAll('x-part')];
        let placed = true;  // an element added, removed or moved
        if (kind === 0) log.appendChild(fresh());
        else if (kind === 1) pick.parentNode.insertBefore(fresh(), pick);
        else if (kind === 2) { const w = document.createElement('div'); w.className = 'wrap'; w.append(fresh(), fresh()); log.append(w); }
        else if (kind === 3 && pick !== log) pick.remove();
        else if (kind === 4) { pick.classList.toggle('bot'); placed = false; }
        else if (kind === 5) { pick.toggleAttribute('data-done') || pick.setAttribute('data-done', '1'); placed = false; }
        else if (kind === 6) { const h = document.createElement('x-part'); log.append(h); h.attachShadow({mode: 'open'}).append(fresh()); }
        else if (kind === 7) { pick.classList.toggle('wrap'); placed = false; }
        else if (kind === 8 && pick !== log) log.insertBefore(pick, log.firstChild);
        else if (kind === 9) { const h = document.createElement('x-part'); h.attachShadow({mode: 'open'}).append(fresh()); pick.parentNode.insertBefore(h, pick); }
        else if (kind === 10 && hosts.length) hosts[rnd(hosts.length)].remove();
        else if (kind === 11) { log.prepend(fresh()); }
        else placed = false;
        changed = changed || placed;
        if (rnd(3) === 0) continue;  // several changes between two looks, sometimes
        for (const sel of sels) {
          const want = walk(sel);
          if (!same(Q.live(sel), want)) mismatches.push([step, kind, sel, 'live']);
          if (!same(Q.all(sel), want)) mismatches.push([step, kind, sel, 'all']);
        }
        const now = Q.structure();
        if (changed !== (now !== structure)) mismatches.push([step, kind, 'structure ' + (changed ? 'unchanged' : 'changed')]);
        structure = now;
        changed = false;
      }
      return mismatches;
    }"""
    for seed in random.Random(13).sample(range(1, 10_000), 3):
        assert run_in_page(harness, script, seed) == [], f"seed {seed}"


def test_the_page_html_keeps_open_shadow_roots_inline(harness):
    html = run_in_page(harness, "() => Q.html()")
    assert html.count('shadowrootmode="open"') == 2 and 'id="c"' in html and "hidden" not in html.split("<script")[0]
    assert json.dumps(html)  # plain text, for the failure files


def matches_around(harness, tmp_path, page_html: str, change: str, setup: str = "") -> tuple[int, int]:
    """The matches of `.m` on a page opened as every driver page is (the hook first), after `setup` and
    then after `change` (scripts run in the page)."""
    count = in_page("(s) => Q.all(s).length")

    async def go():
        page = await harness.browser.new_page()
        try:
            await page.add_init_script(SHADOW_HOOK_JS)
            (tmp_path / "page.html").write_text(page_html)
            await page.goto((tmp_path / "page.html").as_uri())
            assert await page.evaluate("!!window.__mmbShadowRoots")  # the hook, as every driver page has it
            if setup:
                await page.evaluate(setup)
            before = await page.evaluate(count, ".m")
            await page.evaluate(change)
            return before, await page.evaluate(count, ".m")
        finally:
            await page.close()

    return harness.run(go())


def test_a_root_given_to_its_host_before_the_host_is_in_the_page_is_seen_once_it_is(harness, tmp_path):
    """Web components attach their root in the constructor, before the element is put in the page: the
    query helper must see into it once it is there (a discovered profile was marked SPLIT without this)."""
    page_html = """<!doctype html><body><script>
      window.later = () => { const h = document.createElement("x-m"); h.attachShadow({mode: "open"}).innerHTML =
        "<p class='m'>in the root</p>"; window.pending = h; };
      window.place = () => document.body.append(window.pending);
    </script></body>"""
    # the root exists, its host is not in the page; then it is
    assert matches_around(harness, tmp_path, page_html, "place()", setup="later()") == (0, 1)


def test_a_root_whose_host_left_the_page_is_searched_no_more(harness, tmp_path):
    """A new chat that empties the list in place (no new page, no new root) removes every message whose
    text lived in its own shadow root: the reset check must see them gone (a discovered profile on such a
    page failed its reset check with the old messages "still shown" for 15 s)."""
    page_html = """<!doctype html><body><div id="log"></div><script>
      for (const t of ["one", "two"]) document.getElementById("log").appendChild(document.createElement("x-m"))
        .attachShadow({mode: "open"}).innerHTML = `<p class='m'>${t}</p>`;
    </script></body>"""
    assert matches_around(harness, tmp_path, page_html, "document.getElementById('log').replaceChildren()") == (2, 0)


def test_text_reads_words_in_nested_roots_and_slots_and_leaves_out_what_is_skipped(harness):
    """Q.text: a host's words are in its root (innerText and textContent give ""), a slot shows the host's
    light children, hidden parts are not shown, and what `skip` matches is left out where it stands."""
    page_html = """<!doctype html><body><div id="msg"></div><script>
      const part = (cls, html) => { const h = document.createElement("div"); h.className = cls;
        h.attachShadow({mode: "open"}).innerHTML = html; return h; };
      const root = document.getElementById("msg").attachShadow({mode: "open"});
      root.append(part("name", "<div>Memo</div>"), part("text", "<p>Memo said   <b>hi</b></p><p>at 12:00</p>"),
                  part("gone", "<div style='display:none'>hidden words</div><div style='visibility:hidden'>unseen</div>"),
                  part("slotted", "<span>[<slot></slot>]</span>"), part("time", "<div>12:00</div>"));
      root.querySelector(".slotted").append("light child");
    </script></body>"""
    script = """() => { const m = document.getElementById("msg");
      return [m.innerText, Q.text(m, true, ".name, .time"), Q.text(m, false, ".name, .time").replace(/\\s+/g, " ").trim(),
              Q.text(m, true).trim(), Q.hasRoot(m), Q.hasRoot(document.createElement("p"))]; }"""

    async def go():
        page = await harness.browser.new_page()
        try:
            await page.add_init_script(SHADOW_HOOK_JS)
            await page.set_content(page_html)
            return await page.evaluate(in_page(script))
        finally:
            await page.close()

    inner, shown, quick, whole, has_root, plain = harness.run(go())
    assert inner == ""  # what the browser gives: nothing
    assert shown.strip() == "Memo said hi\n\nat 12:00\n\n[light child]"
    assert quick == "Memo said hi at 12:00 hidden words unseen [light child]"  # as the DOM holds it: no layout
    assert whole.startswith("Memo\n") and whole.endswith("12:00")
    assert has_root and not plain
