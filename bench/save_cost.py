"""What saving costs per turn with 10 or 2,000 graded checks and 20 or 20,000 facts: flat, since what only
grows is appended to files of its own (persona/state_parts.py) instead of rewritten at every save.

A turn here is what the persona loop saves for one message and the tools beside it: the message
journaled pending, submitted and sent, the reply recorded (one transcript line), a fact marked told
and a check graded, each saved (6 saves), through the real RunStore. The state's persona history
stays at the size compaction keeps it (200 messages). For contrast, 'whole' is what one save cost
before: the whole state rendered and written at once (the same bytes, fsynced, renamed).

    python -m bench.save_cost [--turns 100]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.big_benchmark import write_benchmark
from bench.stats import median, ratio, table
from drivers.base import Reply
from drivers.files import atomic_write
from persona.benchmark.facts import Fact
from persona.benchmark.loader import load_benchmark
from persona.benchmark.phases import Category
from persona.state import (
    Evaluation,
    Exchange,
    PendingSend,
    PersonaMessage,
    QuotedTurn,
    RunState,
    RunStore,
)

SAVES_PER_TURN = 6
WARM_UP = 5  # turns not counted: the first writes of each file
HISTORY = 200  # persona messages kept, as compaction keeps them
ANSWER = ("Noted! On Sunday you ran {n} km along the river, a bit slower than you hoped, and Jonas made pancakes "
          "afterwards. Your 10 km personal best, as you told me, is 52:30.")


@dataclass
class SaveCost:
    checks: int
    facts: int
    state_kb: float  # state.json alone
    total_kb: float  # state.json and its parts
    turn_ms: float  # median per turn: SAVES_PER_TURN saves and a transcript line
    whole_ms: float  # median: one save of the whole state as one file (how every save was before)


def evaluation(n: int, turn: int) -> Evaluation:
    """A graded check as a judged run records it: about 1.1 KB, with the exchanges it quotes."""
    return Evaluation(check_id=f"c{n}", category=Category.single, question=f"How many teapots does friend {n} keep?",
                      expected=str(n % 90 + 2), answer=f"{n % 90 + 2} teapots", raw_score=10, score=10,
                      comment="matches the expected answer", grader="rules", phase=n // 25, turn=turn, session=0,
                      agent_turns=[QuotedTurn(turn=turn, sent=f"How many teapots does friend {n} keep?",
                                              reply=[ANSWER.format(n=n)])])


def grown_state(facts_from: Path, checks: int, history: int = HISTORY) -> RunState:
    bench = load_benchmark(facts_from)
    state = RunState(run_id="bench", benchmark=str(facts_from), driver="oracle", persona_model="scripted",
                     facts={n: ff.model_copy(deep=True) for n, ff in bench.fact_files.items()})
    state.messages = [PersonaMessage(role="user" if i % 2 else "assistant", content=ANSWER.format(n=i), phase=0)
                      for i in range(history)]
    state.evaluations = [evaluation(i, i) for i in range(checks)]
    state.log = [f"turn {i}: phase {i // 25} bench.log: a line" for i in range(checks)]
    return state


def one_turn(store: RunStore, state: RunState, n: int, untold: Iterator[Fact]) -> None:
    """What the loop saves for one message and its tools."""
    text = f"Message {n}: how many teapots does my friend keep?"
    state.pending = PendingSend(text=text, turn=state.turn + 1, user_messages_before=state.turn)
    store.save(state)
    state.pending.status, state.pending.typed = "submitted", 1
    store.save(state)
    state.pending.status = "sent"
    store.save(state)
    store.append_exchange(state, Exchange(turn=state.turn + 1, session=0, phase=0, sent=text,
                                          reply=Reply(bubbles=[ANSWER.format(n=n)]).bubbles))
    state.turn += 1
    state.pending = None
    state.messages = state.messages[2:] + [PersonaMessage(role="assistant", content=text),
                                           PersonaMessage(role="user", content=ANSWER.format(n=n))]
    store.save(state)
    fact = next(untold, None)
    if fact is not None:
        fact.mark_told(state.turn)
    state.log.append(f"turn {state.turn}: a fact told")
    store.save(state)
    state.evaluations.append(evaluation(len(state.evaluations), state.turn))
    store.save(state)


def measure(sizes: list[tuple[int, int]], turns: int, folder: Path) -> list[SaveCost]:
    """Per-turn save cost at each (checks, facts); the sizes take turns, so a loaded machine hurts all alike."""
    benches = {facts: write_benchmark(folder / f"bench-{facts}", facts, 0) for facts in {f for _, f in sizes}}
    runs = []
    for i, (checks, facts) in enumerate(sizes):
        state = grown_state(benches[facts], checks)
        store = RunStore(folder / f"run-{i}")
        store.lock()
        store.save(state)  # the first save writes every part whole
        untold = iter([f for ff in state.facts.values() for f in ff.all_facts()])
        runs.append((checks, facts, store, state, untold, [], []))
    for n in range(WARM_UP + turns):
        for k in range(len(runs)):  # each size first in turn: none always meets the disk just after another
            _, _, store, state, untold, times, whole = runs[(n + k) % len(runs)]
            t = time.perf_counter()
            one_turn(store, state, n, untold)
            spent = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            atomic_write(store.folder / "whole.json", state.model_dump_json(indent=1))
            if n >= WARM_UP:
                times.append(spent)
                whole.append((time.perf_counter() - t) * 1000)
    out = []
    for checks, facts, store, _state, _, times, whole in runs:
        sizes_kb = sum(p.stat().st_size for p in store.folder.glob("state*")) / 1024
        out.append(SaveCost(checks, facts, store.path.stat().st_size / 1024, sizes_kb, median(times), median(whole)))
        store.unlock()
    return out


def section(costs: list[SaveCost], summary: list[str]) -> list[str]:
    first, last = costs[0], costs[-1]
    rows = [[c.checks, f"{c.facts:,}", f"{c.state_kb:.0f}", f"{c.total_kb:,.0f}", f"{c.turn_ms:.1f}",
             f"{c.turn_ms / SAVES_PER_TURN:.2f}", f"{c.whole_ms:.1f}", f"{c.whole_ms * SAVES_PER_TURN:.0f}"] for c in costs]
    rows.append([f"**{last.checks} / {first.checks}**", f"{last.facts:,} / {first.facts:,}",
                 f"{ratio(last.state_kb, first.state_kb):.1f}x", f"{ratio(last.total_kb, first.total_kb):.0f}x",
                 f"**{ratio(last.turn_ms, first.turn_ms):.2f}x**", "", f"{ratio(last.whole_ms, first.whole_ms):.0f}x", ""])
    summary.append(f"- per-turn save cost, {last.checks} graded checks and {last.facts:,} facts / {first.checks} and "
                   f"{first.facts:,}: **{ratio(last.turn_ms, first.turn_ms):.2f}x** (target ≤ 1.2x): "
                   f"{'met' if ratio(last.turn_ms, first.turn_ms) <= 1.2 else 'NOT met'}; the whole state rewritten at "
                   f"every save, as before, would be {ratio(last.whole_ms, first.whole_ms):.0f}x")
    return ["## 7. Saving per turn as evaluations and facts grow", "",
            f"`python -m bench.save_cost`: the real RunStore on a state with N graded checks (about 1.1 KB each, with "
            f"the exchanges they quote), as many log lines, and the live copies of M facts; one turn = {SAVES_PER_TURN} "
            "saves (the message pending, submitted, sent, its reply with one transcript line, a fact told, a check "
            "graded). Medians over the turns; the sizes take turns. 'whole' is one save of the whole state as one "
            "file, fsynced and renamed, as every save was before the parts were appended.", "",
            table(["checks", "facts", "state.json KB", "all parts KB", "turn ms", "per save ms", "whole ms",
                   "whole x 6 ms"], rows), ""]


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.save_cost", description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=100)
    args = ap.parse_args()
    sizes = [(10, 20), (2000, 20), (10, 20000), (2000, 20000)]
    with tempfile.TemporaryDirectory(prefix="mmb-bench-saves-") as tmp:
        costs = measure(sizes, args.turns, Path(tmp))
    summary: list[str] = []
    print("\n".join([*section(costs, summary), *summary]))


if __name__ == "__main__":
    main()
