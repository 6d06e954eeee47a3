"""What reaches a real chat from a real LLM persona (issue 12): the persona behind the quirk server and
the real `openai` client, the bundled demo chat in real Chromium, and DemoMind's own memory as the
judge of what the agent received. Text beside tool calls is typed once; reasoning, in fields or in
think tags closed, opened by the template or left open, never is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from persona.state import RunStore
from tests.support.play import play
from tests.support.quirk_server import QuirkServer, rewriting, scripted_responder, thinking_aloud
from tests.support.tiny import TINY
from tests.test_persona_protocol import TINY_SCORES, persona

pytestmark = pytest.mark.usefixtures("chromium")


def agent_received(run_folder: Path) -> list[str]:
    """The user messages DemoMind took in, in order, from its own memory file."""
    memory = json.loads((run_folder / "agent-data" / "memory.json").read_text())
    messages = [m for c in memory["conversations"].values() for m in c["messages"] if m["role"] == "user"]
    return [m["text"] for m in sorted(messages, key=lambda m: m["seq"])]


def test_the_agent_gets_the_text_beside_tool_calls_once_and_no_reasoning(tmp_path, write_bench):
    bench = write_bench(TINY)
    with QuirkServer(rewriting(scripted_responder(), thinking_aloud), profile="llamacpp") as server:
        outcome, state = play(tmp_path, benchmark=bench, agent={"driver": "demo"}, persona=persona(server))
    assert outcome.status == "finished", state.error
    assert not server.rejections and [e.check_id for e in state.evaluations] == [c for c, _, _ in TINY_SCORES]
    folder = tmp_path / "results" / "r"
    received = agent_received(folder)
    typed = [e.sent for e in RunStore(folder).transcript()]
    assert received == typed, "what the report says was typed is what the agent received, once"
    assert "My cat Pixel is 3 years old." in received and "I am Tom, 41 today." in received
    assert not any(word in text for text in received for word in ("think", "template", "wonder", "chain of thought"))
    beside = [m.content for m in state.messages if m.role == "assistant" and m.content and m.tool_calls]
    assert beside and all(text in received for text in beside)


def test_a_model_whose_words_never_reach_the_chat_gets_no_grade(tmp_path, write_bench):
    """The issue's run that 'finished 10.00 over 10 checks' with nothing ever sent: every claim refused."""
    def calls_only(answer: dict[str, Any], n: int) -> dict[str, Any]:
        calls = answer.get("tool_calls") or [
            {"name": "log_evaluation", "arguments": json.dumps({"check_id": "q1", "score": 10, "answer": "3",
                                                                "comment": "right", "second_attempt": False})}]
        return {"content": None, "tool_calls": calls}

    bench = write_bench(TINY)
    with QuirkServer(rewriting(scripted_responder(), calls_only)) as server:
        outcome, state = play(tmp_path, benchmark=bench, agent={"driver": "demo"}, persona=persona(server, stall_calls=10))
    assert outcome.status in ("stalled", "failed") and not state.evaluations and state.turn == 0
    memory = tmp_path / "results" / "r" / "agent-data" / "memory.json"
    assert not memory.exists() or agent_received(memory.parent.parent) == []
