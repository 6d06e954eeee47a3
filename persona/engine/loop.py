"""The persona loop: ask the persona model for its next turn, run its tools or send its message, repeat.

Every change is saved before the next side effect, so a restart picks up exactly where the run
stopped: tool calls without results are run, a message on its way is finished, nothing is redone.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

from drivers.base import ChatDriver, Reply
from persona.benchmark.loader import Benchmark
from persona.config import CompactionConfig
from persona.crashpoints import crash_point
from persona.engine.channel import AgentChannel
from persona.engine.compaction import cut_index
from persona.engine.judge import Judge
from persona.engine.model import ModelTurn, PersonaModel
from persona.engine.replies import wrap_reply
from persona.engine.scenario import Scenario, compaction_note, opening_message, system_prompt
from persona.engine.tools import TOOL_SPECS, ToolBox, is_error
from persona.errors import RunError
from persona.state import PersonaCompaction, PersonaMessage, RunState, RunStore, ToolCall
from persona.tokens import MESSAGE_OVERHEAD, TokenCounter

log = logging.getLogger(__name__)

EMPTY_TURN_NUDGE = "(Your last turn was empty. Write your next message to the agent, or call a tool.)"
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def clean_outgoing(text: str) -> str:
    """What the persona wrote, minus leaked reasoning."""
    return _THINK.sub("", text).strip()


class PersonaLoop:
    def __init__(self, *, bench: Benchmark, state: RunState, store: RunStore, model: PersonaModel,
                 driver: ChatDriver, counter: TokenCounter, compaction: CompactionConfig, max_steps: int,
                 max_failed_turns: int = 8, on_change: Callable[[RunState], None] | None = None,
                 judge: Judge | None = None):
        self.bench = bench
        self.state = state
        self.store = store
        self.model = model
        self.channel = AgentChannel(driver, state, store, self.save)
        self.counter = counter
        self.compaction = compaction
        self.max_steps = max_steps
        self.max_failed_turns = max_failed_turns
        self.on_change = on_change
        self.scenario = Scenario(bench, state, self.channel.new_session, judged=judge is not None)
        self.tools = ToolBox(bench, state, self.scenario, judge=judge, exchanges=store.transcript)
        self.system = system_prompt(bench, judged=judge is not None)
        self.system_tokens = counter.count(self.system) + MESSAGE_OVERHEAD
        self._clock = time.monotonic()
        self._counted = (0, 0)  # (messages, their tokens) summed so far: between compactions the list only grows

    async def run(self) -> None:
        self.state.failed_turns = 0  # a rerun is someone's decision to give the model another go
        await self.channel.open()
        if not self.state.messages:
            await self._begin()
        await self._finish_interrupted_step()
        while not self.state.finished:
            if self.state.steps >= self.max_steps:
                raise RunError(f"stopped after {self.state.steps} persona steps (persona.max_steps); the persona "
                               f"seems stuck in phase {self.state.phase + 1}")
            if self.state.failed_turns >= self.max_failed_turns:
                raise RunError(f"the persona model made {self.state.failed_turns} turns in a row that did nothing "
                               f"(persona.max_failed_turns); last: {self._last_failure()}")
            await self._step()

    def save(self) -> None:
        now = time.monotonic()
        self.state.active_seconds += now - self._clock
        self._clock = now
        self.store.save(self.state)
        if self.on_change:
            self.on_change(self.state)

    # -- steps ----------------------------------------------------------------------------------

    async def _begin(self) -> None:
        brief = await self.scenario.enter(0)
        self._append(PersonaMessage(role="user", content=opening_message(self.bench, self.state, brief), starts_phase=True))
        self.save()

    async def _finish_interrupted_step(self) -> None:
        """After a restart: finish a message in flight, or run tool calls that have no result yet."""
        if self.state.pending is not None:
            text = self.state.pending.text
            self._record_reply(text, await self.channel.resume_pending())
            return
        last_turn = next((m for m in reversed(self.state.messages) if m.role == "assistant"), None)
        if last_turn is not None and last_turn.tool_calls:
            await self._run_tools(last_turn)  # runs only the calls that have no result yet

    async def _step(self) -> None:
        self._maybe_compact()
        messages = [{"role": "system", "content": self.system}] + [m.to_api() for m in self.state.messages]
        turn = await self.model.complete(messages, TOOL_SPECS)
        crash_point("model.answered")
        self.state.steps += 1
        self._account(turn)
        if turn.tool_calls:
            message = PersonaMessage(role="assistant", content=turn.content, tool_calls=self._unique_ids(turn.tool_calls))
            self._append(message)
            self.save()
            await self._run_tools(message)
            return
        text = clean_outgoing(turn.content or "")
        if not text:
            self.state.failed_turns += 1
            self._append(PersonaMessage(role="user", content=EMPTY_TURN_NUDGE))
            self.save()
            return
        self._append(PersonaMessage(role="assistant", content=text))
        reply = await self.channel.say(text)  # saves the message with its pending send first
        self._record_reply(text, reply)

    def _unique_ids(self, calls: list[ToolCall]) -> list[ToolCall]:
        """Results are matched to calls by id, so ids must be unique in the context; some servers repeat
        them (llama.cpp's "call_0" every turn) or send none, and our own may collide across restarts."""
        used = {c.id for m in self.state.messages for c in m.tool_calls}
        out = []
        for i, call in enumerate(calls):
            if not call.id or call.id in used:
                call = call.model_copy(update={"id": f"mmb_{self.state.steps}_{i}"})
            used.add(call.id)
            out.append(call)
        return out

    async def _run_tools(self, message: PersonaMessage) -> None:
        """Run the calls that have no result yet; each result is saved together with what its tool changed."""
        wanted = {c.id for c in message.tool_calls}
        results = {m.tool_call_id: m.content or "" for m in self.state.messages
                   if m.role == "tool" and m.tool_call_id in wanted}
        for call in message.tool_calls:
            if call.id in results:
                continue
            phase_before = self.state.phase
            result = await self.tools.call(call.name, call.arguments)
            crash_point("tool.ran")
            entered = self.state.phase != phase_before
            if entered:
                message.starts_phase = True  # compaction may cut right before the call that began the phase
            results[call.id] = result
            if call is message.tool_calls[-1]:
                self._count_failure(all(is_error(r) for r in results.values()))
            self._append(PersonaMessage(role="tool", content=result, tool_call_id=call.id))
            self.save()

    def _count_failure(self, failed: bool) -> None:
        self.state.failed_turns = self.state.failed_turns + 1 if failed else 0

    def _last_failure(self) -> str:
        last = self.state.messages[-1] if self.state.messages else None
        if last is None or last.role != "tool":
            return "an empty turn (no text, no tool call)"
        return (last.content or "")[:300]

    def _record_reply(self, text: str, reply: Reply) -> None:
        self.state.failed_turns = 0
        self.channel.record(text, reply)
        self._append(PersonaMessage(role="user", content=wrap_reply(reply.text)))
        self.save()

    # -- bookkeeping ------------------------------------------------------------------------------

    def _append(self, message: PersonaMessage) -> None:
        message.phase = self.state.phase
        message.tokens = MESSAGE_OVERHEAD + self.counter.count(message.content) + sum(
            self.counter.count(c.name) + self.counter.count(c.arguments) for c in message.tool_calls)
        self.state.messages.append(message)

    def _context_tokens(self) -> int:
        """Summed incrementally: a step costs the same at message 5000 as at message 50."""
        n, total = self._counted
        if n > len(self.state.messages):  # the list was cut by someone else: count afresh
            n, total = 0, 0
        total += sum(m.tokens for m in self.state.messages[n:])
        self._counted = (len(self.state.messages), total)
        return self.system_tokens + total

    def _account(self, turn: ModelTurn) -> None:
        prompt = turn.prompt_tokens if turn.prompt_tokens is not None else self._context_tokens()
        completion = turn.completion_tokens
        if completion is None:
            completion = self.counter.count(turn.content) + sum(self.counter.count(c.arguments) for c in turn.tool_calls)
        self.state.usage.add(self.state.phase, prompt, completion)

    def _maybe_compact(self) -> None:
        before = self._context_tokens()
        cut = cut_index(self.state.messages, before, self.compaction.max_tokens, self.compaction.trim_to_tokens)
        if cut is None:
            return
        kept = self.state.messages[cut:]
        self.state.messages = []
        self._counted = (0, 0)
        self._append(PersonaMessage(role="user", content=compaction_note(self.bench, self.state)))
        self.state.messages += kept
        after = self._context_tokens()
        self.state.persona_compactions.append(PersonaCompaction(
            at_message=self.state.steps, tokens_before=before, tokens_after=after, dropped_messages=cut,
            phase=self.state.phase))
        log.info("persona context compacted: %d -> %d tokens, %d messages dropped", before, after, cut)
        self.save()
