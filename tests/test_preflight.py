"""Before a long run, a few cheap calls show the persona model can play it, and the judge model grade;
one that can't is refused in seconds with what failed, before the agent sees anything. `mmb check`
runs the same checks alone, and probes each run's chat page beside them."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from persona.cli.app import app
from persona.config import PersonaConfig
from persona.engine.preflight import preflight
from persona.state import RunStore
from tests.conftest import DEMO_BENCH, demo_run
from tests.support.judge import with_judge
from tests.support.play import play
from tests.support.quirk_server import QuirkServer, instructed

PLAYS = with_judge(lambda m, t: instructed(m))  # a model that plays the protocol and grades as the rule judge does


def config_for(server: QuirkServer, **more: Any) -> PersonaConfig:
    return PersonaConfig(kind="openai", base_url=server.base_url, model="m", api_key_env="MMB_TEST_UNSET_KEY", **more)


def only_text(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"content": "Sure! I would call facts_read now."}


def test_a_model_that_plays_the_protocol_passes_in_three_calls():
    with QuirkServer(lambda m, t: instructed(m)) as server:
        report = asyncio.run(preflight(config_for(server)))
    assert report.ok, report.render()
    assert [c.name for c in report.checks] == ["answers", "calls a tool", "takes the call and its result back",
                                               "reports usage"]
    assert report.calls == 3 == len(server.requests) and not server.rejections
    assert "cached tokens reported" in report.render()


def rambles(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"content": "Hello! " + "And another thing. " * 400}


@pytest.mark.parametrize("responder, server_args, config, failed", [
    (only_text, {}, {}, "calls a tool: asked to call facts_read, it wrote text instead"),
    (rambles, {}, {"max_tokens": 32}, "answers: it did not end a one-sentence answer within max_tokens (32)"),
    (PLAYS, {"usage": False}, {}, "reports usage: 3 of 3 responses without usage"),
    (PLAYS, {"profile": "gemini"}, {"tool_schema": "strict"},
     "answers: persona model refused the request: HTTP 400: Invalid JSON payload received"),
], ids=["no tool calls", "never stops", "no usage", "strict schemas to gemini"])
def test_a_model_or_endpoint_that_cannot_play_is_refused_in_seconds(tmp_path, responder, server_args, config, failed):
    with QuirkServer(responder, **server_args) as server:
        persona = config_for(server, **config).model_dump(exclude_none=True)
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=persona)
    assert outcome.status == "failed" and "persona preflight failed, nothing was sent to the agent" in state.error
    assert failed in state.error
    assert len(server.requests) <= 3 and state.turn == 0
    assert state.usage.calls + state.usage.failed == len(server.requests), "the preflight's calls count, failed ones too"
    assert state.provenance and state.provenance[0].persona_model == "m", "recorded from the first save"
    assert not RunStore(tmp_path / "results" / "r").transcript()


def blind(check, turns) -> dict[str, Any]:
    return {"items": [{"item": i, "correct": False, "evidence": ""} for i in check.items],
            "after_memory_search": False, "comment": "not said"}


@pytest.mark.parametrize("judge, failed", [
    (blind, "grades a plain answer right: it marked 'You told me you are 30 years old.' wrong"),
    (None, "gives a verdict: the judge (m) gave no valid verdict on check preflight in 3 attempts"),
], ids=["grades wrong", "no verdict"])
def test_a_judge_model_that_cannot_grade_is_refused_after_the_persona_passed(tmp_path, judge, failed):
    persona = lambda m, t: instructed(m)  # noqa: E731 - answers a judge request with text, no verdict
    with QuirkServer(with_judge(persona, judge) if judge else persona) as server:
        outcome, state = play(tmp_path, benchmark=DEMO_BENCH, persona=config_for(server).model_dump(exclude_none=True))
    assert outcome.status == "failed" and "judge preflight failed, nothing was sent to the agent" in state.error
    assert failed in state.error and state.turn == 0
    assert "persona model m: answers: ok" in state.log[0] and state.log[1].startswith("preflight: judge model m:")
    assert f"— {len(server.requests) - 3} calls" in state.log[1], "the judge's calls counted, failed ones too"


def test_mmb_check_runs_the_preflight_and_probes_the_chat_page(tmp_path, write_config, chromium):
    def check(responder) -> Any:
        with QuirkServer(responder) as server:
            persona = {"kind": "openai", "base_url": server.base_url, "model": "m", "api_key_env": "MMB_TEST_UNSET_KEY"}
            oracle = {"id": "two", "benchmark": str(DEMO_BENCH), "agent": {"driver": "oracle"}}
            config = write_config([demo_run("one"), oracle], persona=persona)
            before = Path.cwd()
            os.chdir(tmp_path)
            try:
                return CliRunner().invoke(app, ["check", "-c", str(config)]), len(server.requests)
            finally:
                os.chdir(before)

    done, calls = check(PLAYS)
    assert done.exit_code == 0, done.output
    assert calls == 3 + 1, "one model, checked once for both runs, as persona and as judge"
    assert done.output.count("persona model m: answers: ok") == 2
    assert done.output.count("judge model m: gives a verdict: ok; grades a plain answer right: ok") == 2
    assert "[one] chat page http://127.0.0.1:" in done.output and "input" in done.output
    assert "[two] agent: oracle, in process (no chat page)" in done.output
    refused, _ = check(only_text)
    assert refused.exit_code == 1 and "calls a tool: FAILED" in refused.output
