"""Phase JS blocks in QuickJS: the bench/vars API, and a sandbox that stops loops, bombs and I/O."""

from __future__ import annotations

import asyncio

import pytest

from persona.benchmark.js_sandbox import Limits, ScriptError, compile_check, run_block

FAST = Limits(step_time_s=0.3, total_time_s=2.0, memory_bytes=8 << 20)


def run(code: str, vars_=None, handlers=None, limits=FAST):
    return asyncio.run(run_block(code, vars_ or {}, handlers or {}, limits))


def test_vars_flow_out_and_persist():
    result = run('vars.require_all_facts = "family"; vars.count = (vars.count || 0) + 1;', {"count": 2})
    assert result.vars == {"count": 3, "require_all_facts": "family"}


def test_new_session_is_awaited_through_the_bridge():
    calls = []

    async def new_session():
        await asyncio.sleep(0.01)  # a slow handler: not counted against the JS time limit
        calls.append("new")
        return {"session": 1}

    result = run("const r = await bench.newSession(); vars.s = r.session; bench.log('done', 1);",
                 handlers={"newSession": new_session})
    assert calls == ["new"] and result.vars["s"] == 1 and result.logs == ["done 1"]


def test_handler_time_does_not_count_against_the_js_limit():
    async def slow_new_chat():
        await asyncio.sleep(0.6)

    limits = Limits(step_time_s=0.3, total_time_s=0.5)
    result = run("await bench.newSession(); await bench.newSession(); vars.ok = true;",
                 handlers={"newSession": slow_new_chat}, limits=limits)
    assert result.vars["ok"] is True


def test_a_failing_handler_rejects_in_js():
    async def boom():
        raise RuntimeError("chat gone")

    result = run("try { await bench.newSession(); } catch (e) { vars.err = String(e.message); }", handlers={"newSession": boom})
    assert "chat gone" in result.vars["err"]


@pytest.mark.parametrize("code, message, line", [
    ("let i = 0;\nwhile (true) { i++; }", "time limit exceeded", None),
    ("let a = [];\nfor (;;) a.push('x'.repeat(1000));", "memory limit exceeded", None),
    ("function f() { return f(); }\nf();", "stack overflow", None),
    ("\n\nnull.x;", "TypeError", 3),
    ("throw new Error('bad phase');", "Error: bad phase", 1),
    ("await new Promise(() => {});", "never resolves", None),
    ("vars = 3;", "`vars` must stay an object", None),
])
def test_limits_and_errors(code, message, line):
    with pytest.raises(ScriptError) as err:
        run(code)
    assert message in err.value.message
    if line is not None:
        assert err.value.line == line


@pytest.mark.parametrize("name", ["fetch", "require", "process", "std", "os", "XMLHttpRequest", "setTimeout"])
def test_no_io_in_the_sandbox(name):
    assert run(f"vars.t = typeof {name};").vars["t"] == "undefined"


def test_bench_api_is_frozen():
    result = run("try { bench.newSession = 1; } catch (e) {} vars.t = typeof bench.newSession;")
    assert result.vars["t"] == "function"


def test_compile_check_reports_the_line():
    err = compile_check("vars.a = 1;\nvars.b = ;")
    assert err is not None and err.line == 2 and "SyntaxError" in err.message
    assert compile_check("await bench.newSession();") is None


def test_a_crashed_sandbox_is_a_script_error_not_a_crash_of_the_run(tmp_path, monkeypatch):
    # QuickJS may crash its process some blocks after running out of memory; here the worker dies at once.
    crashing_python = tmp_path / "python"
    crashing_python.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crashing_python.chmod(0o755)
    monkeypatch.setattr("sys.executable", str(crashing_python))
    with pytest.raises(ScriptError) as err:
        run("vars.a = 1;")
    assert "crashed (signal SIGSEGV)" in err.value.message and err.value.approximate


def test_each_block_gets_a_fresh_sandbox():
    # Globals a block leaves behind must not leak into the next one (each runs in its own process).
    run("globalThis.leftover = 1;")
    assert run("vars.t = typeof leftover;").vars["t"] == "undefined"


def test_other_runs_go_on_while_a_block_runs():
    """Parallel runs share one event loop: a block that thinks for 0.6 s must not stall the others."""
    ticks = []

    async def main() -> None:
        async def other_run() -> None:
            while True:
                ticks.append(asyncio.get_running_loop().time())
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(other_run())
        await asyncio.sleep(0)
        began = asyncio.get_running_loop().time()
        await run_block("const t = Date.now(); while (Date.now() - t < 600) {}", {}, {})
        ended = asyncio.get_running_loop().time()
        ticker.cancel()
        during = [t for t in ticks if began < t < ended]
        assert ended - began >= 0.6 and len(during) >= 20, (ended - began, len(during))

    asyncio.run(main())
