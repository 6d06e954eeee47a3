"""What a turn costs in bookkeeping as a run grows: saving state.json, appending the transcript, counting tokens.

The real PersonaLoop does the work (its _append, _maybe_compact, _context_tokens and save), on a
state grown to N messages of history. A turn here is what the loop does for one message to the
agent: count the context, maybe compact, append our message, save it pending, save it submitted
(just before the send button is pressed), save it sent, append the exchange to transcript.jsonl, append the reply, save. Growing the history itself skips
the saves (they don't change what the state holds), so 5000 messages take seconds, not minutes.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from drivers.base import Reply
from persona.benchmark.loader import load_benchmark
from persona.config import CompactionConfig
from persona.engine.loop import PersonaLoop
from persona.engine.oracle import OracleDriver
from persona.engine.scripted import ScriptedPersona
from persona.state import PendingSend, PersonaMessage, RunState, RunStore
from persona.tokens import TokenCounter

REPO = Path(__file__).resolve().parent.parent
TURNS_PER_PHASE = 25  # compaction cuts only at phase starts
SAVES_PER_TURN = 4  # pending, submitted, sent, reply recorded
OUR_TEXT = ("Oh, and one more thing about my week: on Sunday I ran {n} km along the river, a bit slower than I "
            "hoped, and afterwards Jonas made pancakes. Do you remember what my 10 km personal best is?")
REPLY_TEXT = ("Thanks for telling me! Noted: on Sunday you ran {n} km along the river, and Jonas made pancakes "
              "afterwards. Your 10 km personal best, as you told me, is 52:30. Anything else about the week?")


@dataclass
class Cost:
    history: int  # messages the persona has had in all (what the run has grown to)
    kept: int  # messages in the state after compaction
    state_kb: float
    save_ms: float  # per turn: SAVES_PER_TURN saves, wall time (serializing, writing, two fsyncs each)
    serialize_ms: float  # per turn: the CPU part of those saves, state.json rendered as many times
    transcript_ms: float  # per turn: one appended, fsynced line
    tokens_ms: float  # per turn: counting the two new messages, the context total, the compaction check

    @property
    def total_ms(self) -> float:
        return self.save_ms + self.transcript_ms + self.tokens_ms


def make_loop(folder: Path, compaction: bool) -> PersonaLoop:
    bench = load_benchmark(REPO / "benchmarks" / "demo")
    state = RunState(run_id="bench", benchmark="demo", driver="oracle", persona_model="scripted",
                     facts={n: ff.model_copy(deep=True) for n, ff in bench.fact_files.items()})
    limits = CompactionConfig(max_tokens=30000, trim_to_tokens=10000) if compaction else \
        CompactionConfig(max_tokens=10**12, trim_to_tokens=10**12 - 1)
    return PersonaLoop(bench=bench, state=state, store=RunStore(folder), model=ScriptedPersona(),
                       driver=OracleDriver(bench), counter=TokenCounter(limits.encoding), compaction=limits)


class Turns:
    def __init__(self, loop: PersonaLoop):
        self.loop = loop
        self.n = 0
        self.history = 0

    def grow(self, timed: bool) -> tuple[float, float, float]:
        """One turn; with `timed`, its (save, transcript, token) milliseconds, saves included."""
        loop, state = self.loop, self.loop.state
        self.n += 1
        clock = time.perf_counter
        t0 = clock()
        loop._maybe_compact()
        loop._context_tokens()  # what _account reads when the endpoint reports no usage
        text = OUR_TEXT.format(n=self.n)
        message = PersonaMessage(role="assistant", content=text)
        loop._append(message)
        if self.n % TURNS_PER_PHASE == 0:
            message.starts_phase = True
            state.phase = (state.phase + 1) % len(loop.bench.phases)  # a boundary; the brief stays a real one
        tokens = clock() - t0
        save = transcript = 0.0
        if timed:
            t = clock()
            state.pending = PendingSend(text=text, turn=state.turn + 1, user_messages_before=state.turn)
            loop.save()
            state.pending.status, state.pending.typed = "submitted", 1
            loop.save()
            state.pending.status = "sent"
            loop.save()
            save += clock() - t
            t = clock()
            loop.channel.record(text, Reply(bubbles=[REPLY_TEXT.format(n=self.n)], signal="bench"))
            transcript += clock() - t
        else:
            state.turn += 1
        t = clock()
        loop._append(PersonaMessage(role="user", content=REPLY_TEXT.format(n=self.n)))
        tokens += clock() - t
        if timed:
            t = clock()
            loop.save()
            save += clock() - t
        self.history += 2
        return save * 1000, transcript * 1000, tokens * 1000


def measure(checkpoints: list[int], compaction: bool, window: int = 10) -> list[Cost]:
    """Per-turn costs, averaged over `window` turns at each history size in `checkpoints`."""
    out = []
    with tempfile.TemporaryDirectory(prefix="mmb-bench-state-") as tmp:
        loop = make_loop(Path(tmp), compaction)
        asyncio.run(loop._begin())  # the opening message, as a real run starts
        turns = Turns(loop)
        for target in checkpoints:
            while turns.history + 2 * window < target:
                turns.grow(timed=False)
            sums = [0.0, 0.0, 0.0]
            for _ in range(window):
                for i, v in enumerate(turns.grow(timed=True)):
                    sums[i] += v
            size = loop.store.path.stat().st_size / 1024
            t = time.perf_counter()
            for _ in range(SAVES_PER_TURN):
                loop.state.model_dump_json(indent=1)  # what RunStore.save renders
            serialize = (time.perf_counter() - t) * 1000
            out.append(Cost(history=turns.history, kept=len(loop.state.messages), state_kb=size,
                            save_ms=sums[0] / window, serialize_ms=serialize, transcript_ms=sums[1] / window,
                            tokens_ms=sums[2] / window))
    return out
