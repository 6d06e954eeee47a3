"""An agent at work through real chat frontends: reasoning and a memory search shown before every answer.

Behind each frontend is an agent: the local model in agent mode (tests/support/chat_model.AgentHabits:
it reasons, calls `memory_search`, answers once the result is back, all checked as strictly as
OpenAI checks a tool-call history) with the app's own tool loop (apps/agent_loop.py), Open WebUI's
native tool calling of a Tool registered through its API, or assistant-ui's data-stream runtime
reading the AI SDK's UI message stream of the widget backend. The search takes TOOL_PAUSE_S, in the
tool (the app's, Open WebUI's, the backend's) or in the model before its answer.

First one turn is read through the driver: the reply is the answer alone, the tool call and the
thought are its activity, and the wait outlasted the pause (the reply was not cut when the tool
card showed). Then the scripted persona plays tests/support/frontend_bench through the frontend:
every reply equals the agent's answer (no tool text, no thought text), each message was typed once,
every answer followed a memory search whose result came back, and the grades are a memoryless
agent's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from drivers.base import InputCleared, Reply
from drivers.generic import PlaywrightDriver
from drivers.registry import build_profile
from tests.conftest import mmb
from tests.frontends.test_real_frontends import BENCH, MODEL, _assert_played
from tests.frontends.test_widgets import _assert_played as _assert_played_widget
from tests.support.chat_model import REASONING, AgentHabits, ChatModel
from tests.support.frontend_specs import CHAINLIT, GRADIO, OPENWEBUI, STREAMLIT, as_agent
from tests.support.frontends import Frontend, install, start
from tests.support.openwebui_setup import give_memory_tool
from tests.support.quirk_server import QuirkServer
from tests.support.widgets.agent import SessionAgent
from tests.support.widgets.packages import assistant_ui_bundle
from tests.support.widgets.server import WidgetServer
from tests.support.widgets.specs import WIDGETS

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("chromium")]

TOOL_PAUSE_S = 2.5  # a memory search behind an embedding API
FIRST = "My dog is called Biscuit."


@dataclass(frozen=True)
class AgentCase:
    frontend: Frontend
    reasoning_as: str  # where the model streams its reasoning (QuirkServer.reasoning_as)
    pause_in: str  # "tool": the tool takes TOOL_PAUSE_S; "model": the model, before its answer to the result
    kinds: frozenset[str]  # the activity one turn shows (the profile's kinds)
    setup: Callable[[str, str], None] | None = None  # (frontend's base URL, model) once it runs

    @property
    def id(self) -> str:
        return f"{self.frontend.name}-{self.reasoning_as}-pause-in-{self.pause_in}"


CASES = [
    AgentCase(as_agent(GRADIO, TOOL_PAUSE_S), "reasoning", "tool", frozenset({"tool"})),  # thoughts look like tools
    AgentCase(as_agent(CHAINLIT, 0), "reasoning_content", "model", frozenset({"tool", "thought"})),
    AgentCase(as_agent(STREAMLIT, TOOL_PAUSE_S), "both", "tool", frozenset({"tool", "thought"})),
    # <think> in the text: "Thought for N seconds", then the call, "Explored memory_search"
    AgentCase(as_agent(OPENWEBUI, TOOL_PAUSE_S), "think", "tool", frozenset({"tool", "thought"}), give_memory_tool),
    # reasoning deltas: "Thinking..." shown alone, then folded with the call into one group, "Explored
    # memory_search": the thought was shown (and is kept as it last was), the group is the tool's
    AgentCase(as_agent(OPENWEBUI, 0), "reasoning", "model", frozenset({"tool", "thought"}), give_memory_tool),
]


async def _one_turn(harness, driver_name: str, url: str, artifacts: Path) -> Reply:
    driver = PlaywrightDriver(build_profile(driver_name, {}, {}), await harness.browser.new_context(),
                              base_url=url, artifacts=artifacts)
    try:
        await driver.open(None)
        for _ in range(2):
            try:
                return await driver.send(FIRST)
            except InputCleared:  # nothing was sent: Chainlit's start-up empties the input once (drivers/chainlit.py)
                continue
        return await driver.send(FIRST)
    finally:
        await driver.close()


def _assert_answer_apart_from_work(reply: Reply, answer: str, kinds: frozenset[str], tool_shown: bool = True) -> None:
    """The reply is the answer; the work is its activity, never in its text; the wait outlasted the tool."""
    shown = [(a.kind, a.title, a.text[:120]) for a in reply.activity]
    print(f"\n  reply {reply.text!r} after {reply.seconds:.1f} s ({reply.signal})\n  activity {shown}")
    assert " ".join(reply.text.split()) == answer, shown
    assert {a.kind for a in reply.activity} == kinds, shown
    assert tool_shown == any("memory_search" in a.title + a.text for a in reply.activity), shown
    assert not any(w in reply.text for w in ("memory_search", REASONING[:20], "Used tool", "Thinking", "Thought"))
    assert reply.seconds >= TOOL_PAUSE_S, "the reply came before the memory search could have ended"


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_an_agent_at_work_plays_through_the_real_frontend(case: AgentCase, tmp_path: Path, write_config,
                                                          harness) -> None:
    installed = install(case.frontend)
    habits = AgentHabits(tool="memory_search", answer_pause_s=TOOL_PAUSE_S if case.pause_in == "model" else 0.0)
    model = ChatModel(think_s=0.8, agent=habits)
    with QuirkServer(model, profile="vllm", model=MODEL, chunk_delay_s=0.08, reasoning_as=case.reasoning_as) as server, \
            start(case.frontend, model_url=server.base_url, model=MODEL, workdir=tmp_path / "frontend") as running:
        if case.setup:
            case.setup(running.url.rstrip("/"), MODEL)
        reply = harness.run(_one_turn(harness, case.frontend.name, running.url, tmp_path / "turn"))
        _assert_answer_apart_from_work(reply, model.answers[-1], case.kinds)
        model.forget()

        began = time.monotonic()
        done = mmb("run", "-c", str(write_config([{"id": case.frontend.name, "benchmark": str(BENCH),
                                                   "agent": {"driver": case.frontend.name, "url": running.url}}],
                                                 browser={"trace": "retain-on-failure"})), timeout=1800)
        played = time.monotonic() - began
        _assert_played(case.frontend.name, done, tmp_path / "results", model, done_marker=True)
    turns = len((tmp_path / "results" / case.frontend.name / "transcript.jsonl").read_text().splitlines())
    searched = [c for c in model.completions if c.tool_calls]
    answered = [c for c in model.completions if c.answer is not None]
    assert len(searched) == len(answered) == turns, "every answer after one memory search"
    assert all(c.tool_calls[0]["name"] == "memory_search" for c in searched)
    assert all(a.tool_results for a in answered), "each answer came after the search's result"
    assert server.rejections == [], "the frontend sent back a tool-call history a strict server refuses"
    print(f"  {case.frontend.name} {installed.versions}: {turns} turns with tool use in {played:.0f} s")


@dataclass(frozen=True)
class WidgetCase:
    name: str  # the driver profile
    page: str
    package: str
    fetch: Callable[[], object]
    kinds: frozenset[str]
    at_work: bool = False  # the backend's Flowise stream shows the work (assistant-ui's page asks /api/agent)


WIDGET_CASES = [
    # the data-stream runtime: the backend streams reasoning, a tool call and its result, then text
    WidgetCase("assistant_ui", "/assistant_ui.html?agent=1", "assistant-ui", assistant_ui_bundle,
               frozenset({"tool", "thought"})),
    # Flowise draws the reasoning, not the tools it used
    WidgetCase("flowise", "/flowise.html", "flowise-embed", next(w for w in WIDGETS if w.name == "flowise").fetch,
               frozenset({"thought"}), at_work=True),
]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", WIDGET_CASES, ids=lambda c: c.name)
def test_an_agent_at_work_plays_through_the_widget(case: WidgetCase, tmp_path: Path, write_config, harness) -> None:
    fetched = case.fetch()

    def fresh() -> SessionAgent:
        return SessionAgent(think_s=0.8, tool_pause_s=TOOL_PAUSE_S, at_work=case.at_work)

    agent = fresh()
    with WidgetServer(agent, {case.package: fetched.folder}) as server:
        url = server.url + case.page
        reply = harness.run(_one_turn(harness, case.name, url, tmp_path / "turn"))
        _assert_answer_apart_from_work(reply, agent.answers[-1], case.kinds, tool_shown="tool" in case.kinds)
        agent.__dict__.update({k: v for k, v in fresh().__dict__.items() if k != "_lock"})

        config = write_config([{"id": case.name, "benchmark": str(BENCH), "agent": {"driver": case.name, "url": url}}],
                              browser={"trace": "retain-on-failure"})
        done = mmb("run", "-c", str(config), timeout=900)
        _assert_played_widget(case.name, done, tmp_path / "results", agent)
    exchanges = (tmp_path / "results" / case.name / "transcript.jsonl").read_text().splitlines()
    assert len(agent.work) == len(exchanges), "a memory search before every answer"
    print(f"  {case.name} {fetched.versions}: {len(exchanges)} turns with tool use")
