"""Phase JS blocks in a QuickJS sandbox: `vars`, `bench.*`, time and memory limits, no I/O.

Each block runs in a child process of its own (persona/benchmark/js_worker.py): after hitting its
memory limit QuickJS may lose jobs or crash its process a few blocks later, and neither may happen
to the run. QuickJS refuses calls into Python while a time limit is set, so `bench.*` calls are
queued in an outbox inside JS; the child passes them here, where the (async) handlers run, and
their results go back to settle the promises. A slow handler (a new chat in the browser) therefore
never counts against the JS time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import quickjs

from persona.errors import RunError

# The public API: keep it small and in step with benchmarks/AUTHORING.md.
BENCH_METHODS = ("newSession", "log")

_PRELUDE = r"""
globalThis.__outbox = []; globalThis.__pending = new Map(); globalThis.__done = null; let __next = 1;
function __call(name, args) {
  const id = __next++;
  const err = new Error("");  // made here, where the block called, so a failure names the block's line
  return new Promise((resolve, reject) => { __pending.set(id, {resolve, reject, err}); __outbox.push([id, name, args]); });
}
function __settle(id, ok, payload) {
  const p = __pending.get(id); __pending.delete(id);
  const v = JSON.parse(payload);
  if (ok) { p.resolve(v); } else { p.err.message = String(v); p.reject(p.err); }
}
globalThis.bench = Object.freeze({
  newSession: () => __call("newSession", []),
  log: (...a) => { __outbox.push([0, "log", a.map(String)]); },
});
globalThis.console = Object.freeze({ log: (...a) => { __outbox.push([0, "log", a.map(String)]); } });
"""
_WRAP_HEAD = "(async () => {\n"
_WRAP_TAIL = "\n})().then(() => { __done = {ok: true}; }, e => { __done = {ok: false, error: String(e && e.stack ? e + '\\n' + e.stack : e)}; });"
_LINE = re.compile(r"<input>:(\d+)")
_FRAME = re.compile(r"at (\S+) \(<input>:(\d+)\)")
_PRELUDE_FRAMES = {"__call", "__settle", *BENCH_METHODS}


class ScriptError(Exception):
    """A JS block failed; `line` is the line in the block (1-based) when known.

    `approximate`: QuickJS stopped the block for a limit, and places such a stop only roughly."""

    def __init__(self, message: str, line: int | None = None, approximate: bool = False):
        self.message = message
        self.line = line
        self.approximate = approximate
        super().__init__(message)


@dataclass(frozen=True)
class Limits:
    step_time_s: float = 1.0  # one JS step (between bench calls)
    total_time_s: float = 30.0  # JS time in all, handlers excluded
    memory_bytes: int = 32 << 20
    stack_bytes: int = 512 << 10


@dataclass
class ScriptResult:
    vars: dict[str, Any]
    logs: list[str] = field(default_factory=list)


Handler = Callable[..., Awaitable[Any]]


def _line_in_block(message: str) -> int | None:
    """Line of the error inside the user's block: the innermost frame of the block's own code (a failed
    bench call carries the prelude's frames first), less the wrapper's first line."""
    for name, line in _FRAME.findall(message):
        if name not in _PRELUDE_FRAMES:
            return int(line) - 1
    m = _LINE.search(message)
    return int(m.group(1)) - 1 if m else None


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else "error"


def compile_check(code: str) -> ScriptError | None:
    """Compile without running: a SyntaxError comes back with its line."""
    if "\0" in code:  # QuickJS takes C strings: it would refuse the whole block with a Python error
        return ScriptError("a NUL character is not allowed in a JS block", code[: code.index("\0")].count("\n") + 1)
    ctx = quickjs.Context()
    try:
        ctx.eval("(function () { return " + _WRAP_HEAD.rstrip("\n") + "\n" + code + "\n}); })")
    except quickjs.JSException as e:
        return ScriptError(_first_line(str(e)), _line_in_block(str(e)))
    return None


def _new_context(vars_: dict[str, Any], limits: Limits) -> quickjs.Context:
    ctx = quickjs.Context()
    ctx.set_memory_limit(limits.memory_bytes)
    ctx.set_max_stack_size(limits.stack_bytes)
    ctx.eval(_PRELUDE)
    ctx.eval("globalThis.vars = " + json.dumps(vars_) + ";")
    ctx.set_time_limit(limits.step_time_s)
    return ctx


def _script_error(message: str) -> ScriptError:
    """Name the limit that stopped the block; QuickJS words these oddly, or not at all under OOM."""
    line = _line_in_block(message)
    if "interrupted" in message or "Failed obtaining QuickJS error" in message:
        return ScriptError("time limit exceeded (a loop that never ends?)", line, approximate=True)
    if "out of memory" in message or message.strip() in ("", "null"):
        return ScriptError("memory limit exceeded (data that grows without end?)", line, approximate=True)
    if "stack overflow" in message:
        return ScriptError("stack overflow (unbounded recursion?)", line)
    return ScriptError(_first_line(message), line)


def _js_call(ctx: quickjs.Context, code: str) -> Any:
    try:
        return ctx.eval(code)
    except quickjs.JSException as e:
        raise _script_error(str(e)) from None
    except quickjs.StackOverflow:
        raise ScriptError("stack overflow (unbounded recursion?)") from None


def _drain_one(ctx: quickjs.Context) -> bool:
    try:
        return ctx.execute_pending_job()
    except quickjs.JSException as e:
        raise _script_error(str(e)) from None


class JsBlock:
    """One block in its own QuickJS context, stepped from outside (by the worker process): each step
    runs JS until the block is done or waits on `bench.*` calls."""

    def __init__(self, code: str, vars_: dict[str, Any], limits: Limits):
        self._ctx = _new_context(vars_, limits)
        self._total_time_s = limits.total_time_s
        self._js_time = 0.0  # handler time (a new chat in the browser) is not JS time
        started = time.monotonic()
        _js_call(self._ctx, _WRAP_HEAD + code + _WRAP_TAIL)
        self._js_time += time.monotonic() - started

    def step(self) -> dict[str, Any]:
        """`{"calls": [[id, name, args], ...], "logs": [...]}` while the block waits on bench calls,
        then `{"done": vars, "logs": [...]}`; a failure raises ScriptError."""
        started = time.monotonic()
        while _drain_one(self._ctx):
            if self._js_time + time.monotonic() - started > self._total_time_s:
                raise ScriptError("time limit exceeded")
        requests = json.loads(_js_call(self._ctx, "JSON.stringify(__outbox.splice(0))"))
        self._js_time += time.monotonic() - started
        logs = [" ".join(r[2]) for r in requests if r[0] == 0]
        calls = [r for r in requests if r[0] != 0]
        if calls:
            return {"calls": calls, "logs": logs}
        done = json.loads(_js_call(self._ctx, "JSON.stringify(__done)"))
        if done is None:
            raise ScriptError("the block awaits something that never resolves")
        if not done["ok"]:
            raise _script_error(done["error"] or "")
        out = json.loads(_js_call(self._ctx, "JSON.stringify(vars === undefined ? {} : vars)"))
        if not isinstance(out, dict):
            raise ScriptError("`vars` must stay an object")
        return {"done": out, "logs": logs}

    def settle(self, results: list[list[Any]]) -> None:
        """Resolve (or reject) the promises of the calls of the last step: `[[id, ok, payload], ...]`."""
        for call_id, ok, payload in results:
            _js_call(self._ctx, f"__settle({call_id}, {'true' if ok else 'false'}, {json.dumps(json.dumps(payload))})")


class _Worker:
    """The child process a block runs in, spoken to in JSON lines; killed on the way out. Spoken to
    asynchronously: other runs' browsers go on while a block starts or thinks."""

    def __init__(self, proc: asyncio.subprocess.Process, limits: Limits):
        self._proc = proc
        self._timeout_s = limits.total_time_s + 10  # the child's own limits fire first: this is for a hung child

    @classmethod
    async def start(cls, limits: Limits) -> _Worker:
        root = str(Path(__file__).resolve().parents[2])  # the folder holding persona/
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "persona.benchmark.js_worker", env=env,
                                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                    limit=_LINE_LIMIT,
                                                    # a Ctrl-C in the terminal is for mmb, which ends the block
                                                    # (and reads its own end from stdin closing, if killed)
                                                    start_new_session=True)
        return cls(proc, limits)

    async def send(self, message: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(message).encode() + b"\n")
            await self._proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise await self._died() from None

    async def receive(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        try:
            line = await asyncio.wait_for(self._proc.stdout.readline(), self._timeout_s)
        except TimeoutError:
            raise ScriptError("time limit exceeded (the JS sandbox stopped answering)") from None
        if not line:
            raise await self._died()
        return json.loads(line)

    async def _died(self) -> ScriptError:
        code = await self._proc.wait()
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        return ScriptError(f"memory limit exceeded, most likely: the JS sandbox crashed ({how})", approximate=True)

    async def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        await self._proc.wait()


_LINE_LIMIT = 64 * 1024 * 1024  # one JSON line carries a block's vars: far above asyncio's 64 KiB default


async def run_block(code: str, vars_: dict[str, Any], handlers: dict[str, Handler], limits: Limits = Limits()) -> ScriptResult:
    """Run one phase block; returns the new `vars` (JSON values only) and bench.log lines."""
    worker = await _Worker.start(limits)
    try:
        await worker.send({"code": code, "vars": vars_, "limits": asdict(limits)})
        logs: list[str] = []
        while True:
            step = await worker.receive()
            logs += step.get("logs", [])
            if "error" in step:
                raise ScriptError(step["error"], step["line"], step["approximate"])
            if "done" in step:
                return ScriptResult(vars=step["done"], logs=logs)
            await worker.send({"settle": [await _call(handlers, *call) for call in step["calls"]]})
    finally:
        await worker.close()


async def _call(handlers: dict[str, Handler], call_id: int, name: str, args: list[Any]) -> list[Any]:
    try:
        return [call_id, True, await handlers[name](*args)]
    except (ScriptError, OSError, RunError):  # the run's own failures (a full disk...): never the block's to catch
        raise
    except Exception as e:  # reaches JS as a rejected promise, catchable there
        return [call_id, False, f"{type(e).__name__}: {e}"]
