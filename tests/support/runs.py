"""A small finished run of the demo benchmark, written by hand: facts told and changed, a new chat,
a check answered after a memory search, a wrong one (that the persona itself thought right), an
absent one; graded by the rule judge with the persona's own grades beside. For report tests."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from persona.benchmark.loader import Benchmark, load_benchmark
from persona.benchmark.phases import Category
from persona.state import AgentSession, Evaluation, Exchange, Grade, ItemMark, QuotedTurn, RunState, RunStore, Usage
from tests.conftest import DEMO_BENCH

EVIL = "<script>alert(1)</script>"
CHAT = [  # (turn, session, phase, sent, reply)
    (1, 0, 0, "My partner Jonas is a carpenter.", "Got it."),
    (2, 0, 1, "My 10 km personal best is 54:10.", "Nice!"),
    (3, 0, 1, "Klara visits us every summer.", "Lovely."),
    (4, 0, 2, "Nothing much today, it rained all morning.", "Sorry to hear."),
    (5, 0, 2, "My 10 km personal best is now 52:30.", "Congratulations!"),
    (6, 0, 2, "Klara won't visit this summer after all.", "Noted."),
    (7, 1, 3, "What does my partner do for a living?", "I don't think you told me that."),
    (8, 1, 3, "Please search your memory or notes, I'm sure I told you.", "He is a carpenter."),
    (9, 1, 3, "What is my 10 km personal best?", f"{EVIL} It is 54:10."),
    (10, 1, 4, "What is my blood type?", "You never told me."),
]


@cache
def demo_bench() -> Benchmark:
    """Loaded once per process (a load plays the JS blocks, about a second); tests only read it."""
    return load_benchmark(DEMO_BENCH)


def demo_run(run_id: str = "r1") -> tuple[RunState, list[Exchange], Benchmark]:
    bench = demo_bench()
    facts = {n: ff.model_copy(deep=True) for n, ff in bench.fact_files.items()}
    facts["family"].get("1.1").told_turn = 1
    pb = facts["running"].get("1.2")
    pb.told_turn, pb.changed_turn, pb.text = 2, 5, "My 10 km personal best is now 52:30"
    klara = facts["family"].get("3.2")
    klara.told_turn, klara.changed_turn, klara.text = 3, 6, "—"
    exchanges = [Exchange(turn=t, session=s, phase=p, sent=sent, reply=[reply], signal="busy-gone+done+stable(120ms)",
                          reply_seconds=1.5) for t, s, p, sent, reply in CHAT]

    def ev(check_id: str, cat: Category, question: str, expected: str, answer: str, score: float, turn: int,
           second: bool = False, persona: float | None = None, asked: int | None = None) -> Evaluation:
        raw = score * (2 if second else 1)
        own = persona if persona is not None else score
        return Evaluation(check_id=check_id, category=cat, question=question, expected=expected, answer=answer,
                          raw_score=raw, score=score, second_attempt=second, comment="graded", grader="rules",
                          items=[ItemMark(item=expected, correct=raw == 10)],
                          persona_grade=Grade(grader="persona", raw_score=own, score=own, comment="looks right"),
                          agent_turns=[QuotedTurn(turn=t, sent=sent, reply=[reply]) for t, _, _, sent, reply in CHAT
                                       if (asked or turn) <= t <= turn],
                          phase=3 if turn < 10 else 4, turn=turn, session=1)

    state = RunState(
        run_id=run_id, benchmark=str(DEMO_BENCH), benchmark_title=bench.title, driver="demo", persona_model="scripted",
        judge="rules",
        status="finished", finished=True, phase=4, facts=facts, turn=10, transcript_len=10, active_seconds=75,
        sessions=[AgentSession(index=0, started_turn=0), AgentSession(index=1, started_turn=6, reason="newSession",
                                                                      reset_sign="url changed")],
        evaluations=[
            ev("d1", Category.single, "What does my partner do for a living?", "carpenter", "He is a carpenter.", 5, 8, True,
               asked=7),
            ev("d2", Category.updated, "What is my 10 km personal best?", "52:30", f"{EVIL} It is 54:10.", 0, 9, persona=10),
            ev("d9", Category.absent, "What is my blood type?", "you didn't tell me", "You never told me.", 10, 10),
        ],
        usage=Usage(calls=12, prompt_tokens=4000, completion_tokens=300, by_phase={0: [1000, 100], 3: [3000, 200]}),
    )
    return state, exchanges, bench


def write_run(results: Path, state: RunState, exchanges: list[Exchange]) -> Path:
    store = RunStore(results / state.run_id)
    for ex in exchanges:
        store.append_exchange(state.model_copy(), ex)
    store.save(state)
    return store.folder


# A benchmark that plays in well under a second against the oracle (no JS block, one fact, two checks): for
# tests that need many whole runs through the real runner, e.g. shards and merges.
MICRO = {
    "benchmark.json": {"title": "Micro", "language": "en", "chapters": ["chapter1.md"], "fact_files": ["family.md"]},
    "chapter1.md": "# Chapter 1\n\n## Tell\nTell the facts from family.\n\n## Ask\nAsk the questions.\n"
                   "❓ m1 [single] Who is my wife? Correct answer: Ana\n"
                   "❓ m2 [absent] What is my blood type? Correct answer: you didn't tell me\n",
    "family.md": "# Family\n\n## 1. Wife\n1.1 My wife is Ana\n",
    "profile.md": "# Bo\n\n## 1. About me\n1.1 I am Bo, 40 years old\n",
    "instructions.md": "You are Bo. Write short messages.\n",
}
