"""The bench, one command: python -m bench.run [--quick] [--no-promptfoo] [--out bench/RESULTS.md]

Measures, in one run and as ratios so a loaded machine hurts every contender alike:
1. per-turn overhead of our driver over the agent's own reply time, against a hand-written
   Playwright loop (the floor) and promptfoo's browser provider, on the same instrumented page;
2. how late the driver notices that a streamed reply is complete, with and without UI markers, and
   whether a turn costs more in a chat of 2,000 bubbles than in one of 10; what the reply watch's
   features (the agent's work, sides told by authors, shadow roots, newest-first lists) cost per turn
   at 2,000 bubbles against 10 (bench/watch_cost.py);
3. what saving state and counting tokens cost per turn as a run grows to 5,000 messages;
4. memory (PSS of the process tree) and throughput of N parallel runs;
5. the persona model's calls per agent message, input tokens and their cacheable share on marathon-en,
   from the requests a local OpenAI-compatible server received (bench/persona_calls.py).
Prints the tables and writes them, with the machine and the command, to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from playwright.async_api import async_playwright

from bench import long_chat, parallel, persona_calls, promptfoo, state_cost, watch_cost
from bench.chat_page import ChatPage
from bench.overhead import Floor, OurDriver, Promptfoo, Results, detection_profiles, play_rounds
from bench.stats import median, p90, ratio, table
from drivers import generic, reply_watch
from drivers.browser import find_system_chromium, launch_chromium
from drivers.demo import PROFILE as DEMO_PROFILE

HERE = Path(__file__).resolve().parent
OVERHEAD_TARGET = 1.5  # ours / floor
DELAY_TARGET_MS = 300  # where the UI has a busy marker
OURS = "ours (demo profile, trace off)"
OURS_TUNED = "ours, no quiet window after done (quiet_ms_with_done 0)"
# In the order of a turn: mark the chat, type, send, see our bubble, wait for the whole reply.
DRIVER_STEPS = [(reply_watch.ReplyWatch, "arm"), *((generic.PlaywrightDriver, n) for n in ("_type", "_submit", "_wait_sent", "_collect"))]


@contextlib.contextmanager
def step_timer() -> Iterator[dict[str, list[float]]]:
    """Times the driver's steps (those this version of the driver has) while inside."""
    times: dict[str, list[float]] = {}
    saved = {(cls, n): getattr(cls, n) for cls, n in DRIVER_STEPS if hasattr(cls, n)}

    def wrap(name, fn):
        @functools.wraps(fn)
        async def timed(*a, **k):
            t = time.perf_counter()
            try:
                return await fn(*a, **k)
            finally:
                times.setdefault(name, []).append((time.perf_counter() - t) * 1000)
        return timed

    for (cls, n), fn in saved.items():
        setattr(cls, n, wrap(n, fn))
    try:
        yield times
    finally:
        for (cls, n), fn in saved.items():
            setattr(cls, n, fn)


async def bench_driver(args, out: list[str]) -> None:
    chromium = find_system_chromium(headless=True)
    reply_s = args.reply_ms / 1000
    tuned = DEMO_PROFILE.with_overrides({}, {"completion": {"quiet_ms_with_done": 0}})
    ours = OurDriver(OURS, DEMO_PROFILE)
    with ChatPage(reply_s=reply_s, chunks=10) as page:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            contenders = [
                await ours.start(browser, page.url),
                await OurDriver("ours, trace retain-on-failure (the config default)", DEMO_PROFILE,
                                trace="retain-on-failure").start(browser, page.url),
                await OurDriver(OURS_TUNED, tuned,
                                note="completion options from config.jsonc, not defaults").start(browser, page.url),
                await Floor(tight=True).start(browser, page.url),
                await Floor(tight=False).start(browser, page.url),
            ]
            pf_note = ""
            if args.promptfoo:
                why = promptfoo.ensure_installed()
                if why is None and chromium:
                    wait_ms = int(args.reply_ms * 1.25)
                    contenders.append(await Promptfoo(wait_ms, chromium).start(page.url))
                else:
                    pf_note = f"promptfoo skipped: {why or 'no system Chromium'}"
            try:
                with step_timer() as steps:
                    results = await play_rounds(contenders, args.rounds, args.turns)
                steps_ours = {k: v for k, v in steps.items()}
            finally:
                for c in contenders:
                    await c.close()
            variants = []
            for name, profile in detection_profiles():
                variants.append(await OurDriver(name, profile).start(browser, page.url))
            try:
                detection = await play_rounds(variants, max(1, args.rounds // 2), args.turns)
            finally:
                for v in variants:
                    await v.close()
            await browser.close()
    _overhead_section(results, steps_ours, pf_note, args, out)
    _detection_section(detection, {n for n, p in detection_profiles() if p.selectors.busy}, args, out)


def _overhead_section(results: list[Results], steps: dict[str, list[float]], pf_note: str, args, out: list[str]) -> None:
    by = {r.name: r for r in results}
    floor = by["floor, tight (wait_for_function, raf)"]
    floor_ovh = median([s.overhead_ms for s in floor.samples])
    rows = []
    for r in results:
        s = r.samples
        ovh = median([x.overhead_ms for x in s])
        delays = [x.delay_ms for x in s if x.delay_ms is not None]
        rows.append([r.name, len(s), f"{median([x.agent_ms for x in s]):.0f}", f"{median([x.wall_ms for x in s]):.0f}",
                     f"{ovh:.0f}", f"{p90([x.overhead_ms for x in s]):.0f}", f"{median(delays):.0f}" if delays else "n/a",
                     f"{sum(x.complete for x in s)}/{len(s)}", f"{ratio(ovh, floor_ovh):.2f}x"])
    pf = by.get("promptfoo browser provider")
    pf_ovh = median([x.overhead_ms for x in pf.samples]) if pf else None
    verdicts = []
    for name in (OURS,):  # the driver as shipped; the other rows show what its choices cost
        ours = median([x.overhead_ms for x in by[name].samples])
        verdicts.append(f"- {name}: overhead / tight floor = **{ratio(ours, floor_ovh):.2f}x** (target ≤ "
                        f"{OVERHEAD_TARGET}x): " + ("met" if ratio(ours, floor_ovh) <= OVERHEAD_TARGET else "**not met**"))
        if pf_ovh is not None:
            verdicts.append(f"- {name}: overhead / promptfoo = **{ratio(ours, pf_ovh):.2f}x** (target < 1): "
                            + ("met" if ours < pf_ovh else "**not met**"))
    args.summary += verdicts
    out += ["## 1. Per-turn overhead of the driver", "",
            f"A reply takes {args.reply_ms} ms (10 chunks) on the instrumented page; {args.rounds} rounds of "
            f"{args.turns} turns per contender, interleaved, after one warm-up turn. Times in ms, medians unless "
            "marked; overhead = wall time of the turn − the agent's own time (our bubble → last chunk, page clock); "
            "delay = turn returned − last chunk.", "",
            table(["contender", "turns", "agent", "wall", "overhead", "overhead p90", "delay", "complete", "vs floor"], rows),
            "", *verdicts, ""]
    if pf:
        out += [f"promptfoo: {pf.note}. It cannot see when a reply ends, so the wait is fixed at the known reply "
                "time + 25 %; its overhead is mostly that slack, and a slower reply would be cut short "
                "(the 'complete' column).", ""]
    if pf_note:
        out += [pf_note, ""]
    out += ["Where our driver's time goes (median ms per call, same turns):", "",
            table(["step", "calls", "median", "p90"], [[k, len(v), f"{median(v):.0f}", f"{p90(v):.0f}"] for k, v in steps.items()]),
            ""]


def _detection_section(results: list[Results], with_busy: set[str], args, out: list[str]) -> None:
    rows = []
    verdict = []
    for r in results:
        d = [x.delay_ms for x in r.samples if x.delay_ms is not None]
        rows.append([r.name, len(d), f"{median(d):.0f}", f"{p90(d):.0f}", f"{max(d):.0f}",
                     f"{sum(x.complete for x in r.samples)}/{len(r.samples)}"])
        if r.name in with_busy:
            ok = p90(d) <= DELAY_TARGET_MS
            verdict.append(f"- detection delay, {r.name}: p90 {p90(d):.0f} ms (target ≤ {DELAY_TARGET_MS} ms): "
                           + ("met" if ok else "**not met**"))
    args.summary += verdict
    out += ["## 2. Last chunk → reply detected", "",
            "Our driver on the same page with the demo profile, and with its markers taken away; delay = the moment "
            "send() returned − the last chunk in the DOM (page clock mapped onto ours by the fastest of 7 round trips).",
            "", table(["profile", "turns", "median", "p90", "max", "complete"], rows), "", *verdict,
            "- without markers the driver must wait for the text to stay unchanged (`quiet_ms`, 1500 ms by default): "
            "that wait is the price of a UI that does not say when it is done.", ""]


async def bench_long_chat(args, out: list[str]) -> None:
    with ChatPage(reply_s=args.reply_ms / 1000, chunks=10) as page:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            try:
                found = await long_chat.measure(browser, page.url, args.rounds, args.turns)
            finally:
                await browser.close()
    small, big = (long_chat.name("ours", n, True) for n in long_chat.SIZES)
    floor_small, floor_big = (long_chat.name("floor", n, True) for n in long_chat.SIZES)
    plain = long_chat.name("ours", long_chat.SIZES[-1], False)
    rows = []
    for r in found.results:
        c, ours = found.costs[r.name], r.name.startswith("ours")
        rows.append([r.name, len(r.samples), f"{long_chat.overhead(found, r.name):.0f}",
                     f"{p90([x.overhead_ms for x in r.samples]):.0f}",
                     f"{long_chat.watch(found, r.name):.1f}" if ours else "—",
                     f"{c.layout_ms:.1f}", f"{c.style_ms:.1f}", f"{c.script_ms:.1f}",
                     f"{sum(x.complete for x in r.samples)}/{len(r.samples)}"])
    got = ratio(long_chat.overhead(found, plain), long_chat.overhead(found, small))
    flat = ratio(long_chat.overhead(found, big), long_chat.overhead(found, small))
    floor = ratio(long_chat.overhead(found, floor_big), long_chat.overhead(found, floor_small))
    verdict = (f"- long chat: our overhead with {long_chat.SIZES[-1]} bubbles / with {long_chat.SIZES[0]} = **{got:.2f}x** "
               f"(target ≤ {long_chat.TARGET}x): " + ("met" if got <= long_chat.TARGET else "**not met**")
               + f"; {flat:.2f}x where the page's own layout stays flat (the floor there: {floor:.2f}x)")
    args.summary.append(verdict)
    layout = found.costs[plain].layout_ms - found.costs[big].layout_ms
    out += ["## 2b. Long chats: per-turn overhead with 10 and 2,000 bubbles", "",
            f"The instrumented page opened with {long_chat.SIZES[0]} and with {long_chat.SIZES[-1]} earlier bubbles "
            "(half ours, half finished replies); our driver (demo profile, trace off) and the tight floor, "
            f"{args.rounds} rounds of {args.turns} turns each, interleaved. 'watch' = what the reply watch took inside the "
            "page per turn (arming it and its checks); layout, style and script = Chromium's main-thread time per turn on that page "
            "(CDP Performance.getMetrics). The target compares the first row with the last (a page that lays out "
            "all 2,000 bubbles on every frame); on the other pages the earlier bubbles sit in a block the browser "
            "may skip laying out, so the page's own layout stays flat and what grows is the driver's.", "",
            table(["contender", "turns", "overhead", "overhead p90", "watch ms", "layout ms", "style ms", "script ms",
                   "complete"], rows), "", verdict, "",
            "What remains: the watch's checks cost the same at both sizes (they read the lists of bubbles kept up to "
            "date from the DOM's change records and look only at what follows our message). The rest of the growth "
            "is Playwright's own: each locator action (fill the input, find the send button) resolves its selector "
            "with a walk of the whole DOM, as it must to pierce shadow roots, which the floor pays too. On the plain "
            f"page every frame lays out the whole chat: {layout:.0f} ms more layout per turn, mostly while the agent "
            "streams (inside the agent's own time), the same for any driver.", ""]


async def bench_watch(args, out: list[str]) -> None:
    turns = max(2, args.turns // 2)  # 20 contenders: half the turns of the other parts
    async with async_playwright() as pw:
        browser = await launch_chromium(pw)
        try:
            found = await watch_cost.measure(browser, args.rounds, turns)
        finally:
            await browser.close()
    out += watch_cost.section(found, args.rounds, turns, args.summary)


def bench_state(args, out: list[str]) -> None:
    checkpoints = [100, 1000, 5000]
    out += ["## 3. Bookkeeping per turn as the run grows", "",
            "The real PersonaLoop (_append, _maybe_compact, _context_tokens, save) and AgentChannel.record on a state "
            f"grown to N messages of history; per-turn means over {args.window} turns at each size. One turn = count the "
            "context, maybe compact, our message, 4 saves of state.json (pending, submitted, sent, reply), one transcript line. "
            "'save' is wall time (two fsyncs per save), 'serialize' its CPU part.", ""]
    for compaction in (True, False):
        costs = state_cost.measure(checkpoints, compaction, window=args.window)
        rows = [[c.history, c.kept, f"{c.state_kb:.0f}", f"{c.save_ms:.1f}", f"{c.serialize_ms:.1f}",
                 f"{c.transcript_ms:.1f}", f"{c.tokens_ms:.2f}", f"{c.total_ms:.1f}"] for c in costs]
        first, last = costs[0], costs[-1]
        args.summary.append(f"- bookkeeping per turn {'with' if compaction else 'without'} compaction, {last.history} / "
                            f"{first.history} messages: total **{ratio(last.total_ms, first.total_ms):.1f}x**, token "
                            f"counting {ratio(last.tokens_ms, first.tokens_ms):.1f}x, state save {ratio(last.save_ms, first.save_ms):.1f}x"
                            + (" (target: flat)" if compaction else " (no target: the state holds every message by design)"))
        rows.append([f"**{last.history} / {first.history}**", "", f"{ratio(last.state_kb, first.state_kb):.1f}x",
                     f"{ratio(last.save_ms, first.save_ms):.1f}x", f"{ratio(last.serialize_ms, first.serialize_ms):.1f}x",
                     f"{ratio(last.transcript_ms, first.transcript_ms):.1f}x", f"{ratio(last.tokens_ms, first.tokens_ms):.1f}x",
                     f"{ratio(last.total_ms, first.total_ms):.1f}x"])
        title = "with compaction (max_tokens 30000, trim_to_tokens 10000, the defaults)" if compaction else \
            "without compaction (the persona's context never trimmed)"
        out += [f"### {title}", "", table(["history", "kept", "state KB", "save ms", "serialize ms", "transcript ms",
                                          "tokens ms", "total ms"], rows), ""]


def bench_parallel(args, out: list[str]) -> None:
    rows = []
    base = None
    for n in args.parallel:
        p = parallel.measure(n)
        base = base or p
        per_run = (p.peak_pss_mb - base.peak_pss_mb) / (n - 1) if n > 1 else None
        rows.append([n, p.turns, f"{p.seconds:.0f}", f"{p.turns_per_s:.2f}", f"{ratio(p.turns_per_s, base.turns_per_s):.2f}x",
                     f"{p.peak_pss_mb:.0f}", f"{p.mean_pss_mb:.0f}", f"{per_run:.0f}" if per_run is not None else "—",
                     p.processes, ", ".join(sorted(set(p.statuses)))])
    last = rows[-1] if rows else None
    if last:
        args.summary.append(f"- {last[0]} parallel runs: {last[3]} turns/s ({last[4]} of one run), peak PSS {last[5]} MB, "
                            f"~{last[7]} MB per extra run (no target)")
    out += ["## 4. Parallel runs", "",
            "N copies of the demo benchmark through the real Runner (scripted persona, demo chat, one Chromium, one "
            "context per run, trace retain-on-failure) in a child process; PSS summed over its whole process tree, "
            "sampled every 0.5 s. Throughput counts agent turns over the wall time of Runner.run_all (browser start "
            "included).", "",
            table(["N", "turns", "seconds", "turns/s", "speed-up", "peak PSS MB", "mean PSS MB", "MB per extra run",
                   "processes", "status"], rows), ""]


def machine() -> list[str]:
    def run(*cmd: str) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return "?"
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    mem = next((line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")), "0")
    from importlib.metadata import version
    chromium = find_system_chromium(headless=True)
    return [f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            f"- machine: {platform.platform()}, {cpu}, {os.cpu_count()} cores, {int(mem) // 1024 // 1024} GiB; "
            f"load average at start {os.getloadavg()[0]:.1f} (the cores are shared with other work: read ratios, not absolutes)",
            f"- python {platform.python_version()}, playwright {version('playwright')}, "
            f"{run(chromium, '--version') if chromium else 'no system chromium'}, promptfoo "
            f"{promptfoo.PACKAGES[0].split('@')[1]} on node {run(promptfoo.node(), '--version')}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer turns, N = 1 and 2 only: a smoke test")
    ap.add_argument("--no-promptfoo", dest="promptfoo", action="store_false", help="skip the promptfoo contender")
    ap.add_argument("--only", choices=["driver", "long", "watch", "state", "parallel", "persona"], action="append",
                    help="run only these parts")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = ap.parse_args(argv)
    args.reply_ms = 400
    args.rounds, args.turns, args.window = (1, 4, 3) if args.quick else (4, 10, 10)
    args.parallel = [1, 2] if args.quick else [1, 2, 4, 8]
    parts = args.only or ["driver", "long", "watch", "state", "parallel", "persona"]
    args.summary = []
    started = time.monotonic()
    head = ["# Bench results", "", *machine(),
            f"- command: `{' '.join(['python -m bench.run', *(argv if argv is not None else sys.argv[1:])])}`", ""]
    out: list[str] = []
    if "driver" in parts:
        asyncio.run(bench_driver(args, out))
    if "long" in parts:
        asyncio.run(bench_long_chat(args, out))
    if "watch" in parts:
        asyncio.run(bench_watch(args, out))
    if "state" in parts:
        bench_state(args, out)
    if "parallel" in parts:
        bench_parallel(args, out)
    if "persona" in parts:
        out += persona_calls.section([persona_calls.measure()], args.summary)
    out += [f"Bench time {time.monotonic() - started:.0f} s; load average at the end {os.getloadavg()[0]:.1f}.", ""]
    text = "\n".join([*head, "## Targets", "", *args.summary, "", *out])
    print(text)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
