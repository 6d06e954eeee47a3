"""The persona loop: ask the persona model for its next turn, send its text, run its tools, repeat.

A turn may hold text for the agent and tool calls together. The text (reasoning taken out) is sent
first and the calls run after it, so a call that marks facts told sees them told; the agent's reply
joins the history after the calls' results. Nothing counts as said that the agent did not receive,
and nothing the model meant to say is dropped.

Every change is saved before the next side effect, so a restart picks up exactly where the run
stopped: a message on its way is finished, tool calls without results are run, a reply held for
after them is delivered, nothing is redone.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from drivers.base import ChatDriver, Reply
from persona.benchmark.loader import Benchmark
from persona.config import CompactionConfig, PersonaConfig
from persona.crashpoints import crash_point
from persona.engine.channel import AgentChannel
from persona.engine.compaction import CompactionError, Limits, plan_cut
from persona.engine.guard import REFUSAL_START, Guarded, PromptEcho, guard_message, refusal_note
from persona.engine.intake import read_turn, repair_history, take_calls
from persona.engine.judge import Judge
from persona.engine.llm import ModelCallFailed
from persona.engine.model import ModelTurn, PersonaModel
from persona.engine.replies import wrap_reply
from persona.engine.scenario import Scenario, compaction_note, opening_message, system_prompt
from persona.engine.tools import ERROR_PREFIX, TOOL_NAMES, TOOL_SPECS, ToolBox, is_error
from persona.errors import BudgetError, RunError, StalledError
from persona.report.cost import PriceTable
from persona.secrets import redact
from persona.state import PersonaCompaction, PersonaMessage, RunState, RunStore
from persona.tokens import MESSAGE_OVERHEAD, TokenCounter

log = logging.getLogger(__name__)

EMPTY_TURN_NUDGE = "(Your last turn was empty. Write your next message to the agent, or call a tool.)"


def message_tokens(counter: TokenCounter, message: PersonaMessage) -> int:
    """What the message adds to a request, every string sent counted (ids too: they are many)."""
    texts = [message.role, message.content, message.tool_call_id]
    texts += [t for c in message.tool_calls for t in (c.id, c.name, c.arguments)]
    return MESSAGE_OVERHEAD + sum(counter.count(t) for t in texts)


class PersonaLoop:
    def __init__(self, *, bench: Benchmark, state: RunState, store: RunStore, model: PersonaModel,
                 driver: ChatDriver, counter: TokenCounter, compaction: CompactionConfig,
                 persona: PersonaConfig | None = None, prices: PriceTable | None = None,
                 on_change: Callable[[RunState], None] | None = None, judge: Judge | None = None):
        self.bench = bench
        self.state = state
        self.store = store
        self.model = model
        self.channel = AgentChannel(driver, state, store, self.save)
        self.counter = counter
        self.compaction = compaction
        self.persona = persona or PersonaConfig()
        self.prices = prices or PriceTable()  # budget_usd: the persona model's price, shipped or configured
        self.on_change = on_change
        self.judged = judge is not None  # a judge grades: the persona never sees an expected answer
        self.scenario = Scenario(bench, state, self.channel.new_session, judged=self.judged)
        self.tools = ToolBox(bench, state, self.scenario, judge=judge, exchanges=store.transcript)
        self.system = system_prompt(bench, judged=self.judged)
        self.prompt = PromptEcho(self.system, (m.content for m in state.messages if m.role == "tool"),
                                 notes=(m.content for m in state.messages if m.role == "user"),
                                 typed=(m.content for m in state.messages if m.role == "assistant"))
        self.fixed_tokens = counter.count(self.system) + MESSAGE_OVERHEAD + counter.count(json.dumps(TOOL_SPECS))
        self._clock = time.monotonic()
        self._counted = (0, 0)  # (messages, their tokens) summed so far: between compactions the list only grows
        self._scale = 1.0  # the endpoint's prompt tokens per token we count (its tokenizer may count more)

    async def run(self) -> None:
        self._check_room()
        self.state.failed_turns = 0  # a rerun is someone's decision to give the model another go
        for change in repair_history(self.state):
            self.state.log.append(f"resume: {change}"[:500])
        await self.channel.open()
        if not self.state.messages:
            await self._begin()
        await self._finish_interrupted_step()
        while not self.state.finished:
            self._check_bounds()
            await self._step()

    def save(self) -> None:
        now = time.monotonic()
        self.state.active_seconds += now - self._clock
        self._clock = now
        self.store.save(self.state)
        if self.on_change:
            self.on_change(self.state)

    # -- bounds ---------------------------------------------------------------------------------

    def _check_room(self) -> None:
        """max_tokens bounds the whole request: after a cut, trim_to_tokens of history and the fixed part
        must fit under it, or every step would compact again."""
        c = self.compaction
        if self.fixed_tokens + c.trim_to_tokens >= c.max_tokens:
            raise RunError(f"compaction.max_tokens ({c.max_tokens:,}) bounds the whole request: the system prompt and "
                           f"tools take {self.fixed_tokens:,} tokens here, so with trim_to_tokens {c.trim_to_tokens:,} a "
                           f"compacted history would still not fit; raise max_tokens above "
                           f"{self.fixed_tokens + c.trim_to_tokens:,} (or lower trim_to_tokens)")

    def _check_bounds(self) -> None:
        """Stop before a call the run may not make; each limit, raised, lets a rerun go on."""
        state, cfg = self.state, self.persona
        if state.steps >= cfg.max_steps:
            raise RunError(f"stopped after {state.steps} persona steps (persona.max_steps); the persona "
                           f"seems stuck in phase {state.phase + 1}")
        if state.failed_turns >= cfg.max_failed_turns:
            raise RunError(f"the persona model made {state.failed_turns} turns in a row that did nothing "
                           f"(persona.max_failed_turns); last: {self._last_failure()}")
        if state.calls_since_progress >= cfg.stall_calls:
            raise StalledError(
                f"no progress in {state.calls_since_progress} persona calls (no fact told or changed, no check graded, "
                f"no phase entered; persona.stall_calls is {cfg.stall_calls}) in phase {state.phase + 1}: "
                f"{self.scenario.phase.title}. Raise persona.stall_calls and run again to go on")
        used = state.usage.total_tokens
        if cfg.budget_tokens is not None and used >= cfg.budget_tokens:
            raise BudgetError(f"persona budget spent: {used:,} tokens of persona.budget_tokens {cfg.budget_tokens:,}. "
                              f"Raise it and run again to go on")
        cost = self.prices.run_cost(state) if cfg.budget_usd is not None else None
        if cost is not None and cost.usd is not None and cost.usd >= cfg.budget_usd:  # a model without a price: no limit
            raise BudgetError(f"persona budget spent: ${cost.usd:.2f} of persona.budget_usd ${cfg.budget_usd:.2f} at "
                              f"{cost.rates()}. Raise it and run again to go on")

    # -- steps ----------------------------------------------------------------------------------

    async def _begin(self) -> None:
        brief = await self.scenario.enter(0)
        self._append(PersonaMessage(role="user", content=opening_message(self.bench, self.state, brief), starts_phase=True))
        self.save()

    async def _finish_interrupted_step(self) -> None:
        """After a restart: finish a message in flight, run tool calls that have no result yet, deliver
        a reply held for after them."""
        last_turn = next((m for m in reversed(self.state.messages) if m.role == "assistant"), None)
        if self.state.pending is not None and last_turn is not None:
            text = self.state.pending.text
            self._take_reply(last_turn, text, await self.channel.resume_pending())
        if last_turn is not None and last_turn.tool_calls:
            await self._run_tools(last_turn)  # runs only the calls that have no result yet

    async def _step(self) -> None:
        self._maybe_compact()
        counted = self._context_tokens()
        try:
            turn = await self.model.complete(self._request(), TOOL_SPECS)
        except ModelCallFailed as e:  # the run stops; the call and the client's retries still count
            self.state.usage.record_failed(e.retries)
            raise
        crash_point("model.answered")
        self.state.steps += 1
        self.state.calls_since_progress += 1
        self._account(turn, counted)
        read = read_turn(turn, TOOL_NAMES)
        for quirk in read.quirks:
            self.state.note_quirk(quirk)
        guarded = guard_message(read.text, self.prompt) if read.text else Guarded("")
        for quirk, n in guarded.quirks().items():
            self.state.note_quirk(quirk, n)
        text = guarded.text
        calls = take_calls(self.state, read.calls, self.state.steps)
        note = refusal_note(guarded) if guarded.refused else None
        if note is not None:  # what was not typed stays findable: the run log keeps its start
            self.state.log.append(redact(f"turn {self.state.turn}: a message not typed ({guarded.refused}): "
                                         f"{read.text[:160]!r}")[:500])
        if not text and not calls:
            self.state.failed_turns += 1
            self._append(PersonaMessage(role="user", content=note or EMPTY_TURN_NUDGE))
            self.save()
            return
        message = PersonaMessage(role="assistant", content=text or None, tool_calls=calls, step=self.state.steps,
                                 raw_content=turn.content if text != (turn.content or "").strip() else None)
        self._append(message)
        if note is not None:  # shown after the calls' results, as a reply held for after them is
            self.state.held_reply = note
        if text:
            self.prompt.typed(text)
            self._take_reply(message, text, await self.channel.say(text))  # say() saves the message, pending, first
        else:
            self.save()
        if calls:
            await self._run_tools(message)

    def _request(self) -> list[dict]:
        return [{"role": "system", "content": self.system}] + [m.to_api() for m in self.state.messages]

    def _take_reply(self, message: PersonaMessage, text: str, reply: Reply) -> None:
        """Record the agent's reply; beside tool calls it waits until their results are in."""
        self.state.failed_turns = 0
        self.channel.record(text, reply)
        if message.tool_calls:
            self.state.held_reply = wrap_reply(reply.text)
        else:
            self._append(PersonaMessage(role="user", content=wrap_reply(reply.text)))
        self.save()

    async def _run_tools(self, message: PersonaMessage) -> None:
        """Run the calls that have no result yet (results follow their call message, in order), each
        saved with what its tool changed; then hand over a reply held for after them."""
        at = next(i for i in range(len(self.state.messages) - 1, -1, -1) if self.state.messages[i] is message)
        results = {m.tool_call_id: m.content or "" for m in self.state.messages[at + 1:] if m.role == "tool"}
        for call in message.tool_calls:
            if call.id in results:
                continue
            phase_before, progress_before = self.state.phase, self.state.progress_mark()
            if call.problem:
                result = ERROR_PREFIX + call.problem
            else:
                result = await self.tools.call(call.name, call.arguments, step=-1 if message.step is None else message.step,
                                               decided_at=self.state.turn - (1 if message.content else 0))
            crash_point("tool.ran")
            if self.state.phase != phase_before:
                message.starts_phase = True  # compaction may cut right before the call that began the phase
            if self.state.progress_mark() != progress_before:
                self.state.calls_since_progress = 0
            results[call.id] = result
            if call is message.tool_calls[-1] and not message.content:
                self._count_failure(all(is_error(r) for r in results.values()))
            self._append(PersonaMessage(role="tool", content=result, tool_call_id=call.id))
            self.save()
        if self.state.held_reply is not None:
            self._append(PersonaMessage(role="user", content=self.state.held_reply))
            self.state.held_reply = None
            self.save()

    def _count_failure(self, failed: bool) -> None:
        self.state.failed_turns = self.state.failed_turns + 1 if failed else 0

    def _last_failure(self) -> str:
        last = self.state.messages[-1] if self.state.messages else None
        if last is not None and (last.role == "tool" or (last.content or "").startswith(REFUSAL_START)):
            return (last.content or "")[:300]
        return "an empty turn (no text, no tool call)"

    # -- bookkeeping ------------------------------------------------------------------------------

    def _append(self, message: PersonaMessage) -> None:
        message.phase = self.state.phase
        message.tokens = message_tokens(self.counter, message)
        self.state.messages.append(message)
        if message.role != "assistant":
            self.prompt.add(message.content, note=message.role == "user")

    def _context_tokens(self) -> int:
        """The whole request: summed incrementally, a step costs the same at message 5000 as at message 50."""
        n, total = self._counted
        if n > len(self.state.messages):  # the list was cut by someone else: count afresh
            n, total = 0, 0
        total += sum(m.tokens for m in self.state.messages[n:])
        self._counted = (len(self.state.messages), total)
        return self.fixed_tokens + total

    def _account(self, turn: ModelTurn, counted: int) -> None:
        """Add the turn's usage (ours where it reported none); `counted` is our count of its request."""
        usage, phase = self.state.usage, self.state.phase
        prompt, completion = turn.prompt_tokens, turn.completion_tokens
        ours = prompt is None or completion is None
        if prompt is None:
            prompt = counted
        elif counted:
            self._scale = max(1.0, prompt / counted)
        if completion is None:
            completion = self.counter.count(turn.content) + sum(self.counter.count(c.arguments) for c in turn.tool_calls)
        usage.record(phase, prompt, completion, cached=turn.cached_tokens, counted=ours, retries=turn.retries)
        for quirk in turn.quirks:
            self.state.note_quirk(quirk)

    def _maybe_compact(self) -> None:
        """Cut the history when the request reaches max_tokens, as the endpoint counts it: our tiktoken count,
        scaled by how much more its last reported prompt was."""
        before = self._context_tokens()
        ceiling = int(self.compaction.max_tokens / self._scale)
        if before < ceiling:
            return
        limits = Limits(ceiling, int(self.compaction.trim_to_tokens / self._scale), self.fixed_tokens,
                        self._note_tokens(False), self._note_tokens(True))
        try:
            cut = plan_cut(self.state.messages, limits)
        except CompactionError as e:
            scaled = f" (counted as the endpoint counts: {self._scale:.2f}x our tiktoken count)" if self._scale > 1 else ""
            raise RunError(f"{e}{scaled}") from None
        if cut is None:
            return
        kept = self.state.messages[cut.index:]
        self.state.messages = []
        self._counted = (0, 0)
        self._append(PersonaMessage(role="user", content=compaction_note(self.bench, self.state, cut.in_phase, self.judged,
                                                                         kept=len(kept))))
        self.state.messages += kept
        after = self._context_tokens()
        self.state.persona_compactions.append(PersonaCompaction(
            at_message=self.state.steps, tokens_before=round(before * self._scale), tokens_after=round(after * self._scale),
            dropped_messages=cut.index, phase=self.state.phase, in_phase=cut.in_phase))
        log.info("persona context compacted%s: %d -> %d tokens, %d messages dropped",
                 " inside the phase" if cut.in_phase else "", before, after, cut.index)
        self.save()

    def _note_tokens(self, in_phase: bool) -> int:
        return MESSAGE_OVERHEAD + self.counter.count(compaction_note(self.bench, self.state, in_phase, self.judged,
                                                                     kept=len(self.state.messages)))
