"""Phase JS blocks in a QuickJS sandbox: `vars`, `bench.*`, time and memory limits, no I/O.

QuickJS refuses calls into Python while a time limit is set, so `bench.*` calls are queued in an
outbox inside JS; Python runs the (async) handlers between JS steps and settles the promises.
A slow handler (a new chat in the browser) therefore never counts against the JS time limit.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import quickjs

# The public API: keep it small and in step with benchmarks/AUTHORING.md.
BENCH_METHODS = ("newSession", "log")

_PRELUDE = r"""
globalThis.__outbox = []; globalThis.__pending = new Map(); globalThis.__done = null; let __next = 1;
function __call(name, args) {
  const id = __next++;
  return new Promise((resolve, reject) => { __pending.set(id, {resolve, reject}); __outbox.push([id, name, args]); });
}
function __settle(id, ok, payload) {
  const p = __pending.get(id); __pending.delete(id);
  const v = JSON.parse(payload); ok ? p.resolve(v) : p.reject(new Error(String(v)));
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


class ScriptError(Exception):
    """A JS block failed; `line` is the line in the block (1-based) when known."""

    def __init__(self, message: str, line: int | None = None):
        self.message = message
        self.line = line
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
    """Line of the error inside the user's block: the innermost frame, less the wrapper's first line."""
    m = _LINE.search(message)
    return int(m.group(1)) - 1 if m else None


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else "error"


def compile_check(code: str) -> ScriptError | None:
    """Compile without running: a SyntaxError comes back with its line."""
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
        return ScriptError("time limit exceeded (a loop that never ends?)", line)
    if "out of memory" in message or message.strip() in ("", "null"):
        return ScriptError("memory limit exceeded", line)
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


async def run_block(code: str, vars_: dict[str, Any], handlers: dict[str, Handler], limits: Limits = Limits()) -> ScriptResult:
    """Run one phase block; returns the new `vars` (JSON values only) and bench.log lines."""
    ctx = _new_context(vars_, limits)
    logs: list[str] = []
    started = time.monotonic()
    _js_call(ctx, _WRAP_HEAD + code + _WRAP_TAIL)
    in_handlers = 0.0  # handler time (a new chat in the browser) is not JS time
    while True:
        while _drain_one(ctx):
            if time.monotonic() - started - in_handlers > limits.total_time_s:
                raise ScriptError("time limit exceeded")
        requests = json.loads(_js_call(ctx, "JSON.stringify(__outbox.splice(0))"))
        logs += [" ".join(r[2]) for r in requests if r[0] == 0]
        calls = [r for r in requests if r[0] != 0]
        for call_id, name, args in calls:
            ok, payload = True, None
            handler_started = time.monotonic()
            try:
                payload = await handlers[name](*args)
            except ScriptError:
                raise
            except Exception as e:  # reaches JS as a rejected promise, catchable there
                ok, payload = False, f"{type(e).__name__}: {e}"
            finally:
                in_handlers += time.monotonic() - handler_started
            _js_call(ctx, f"__settle({call_id}, {'true' if ok else 'false'}, {json.dumps(json.dumps(payload))})")
        if calls:
            continue
        done = json.loads(_js_call(ctx, "JSON.stringify(__done)"))
        if done is None:
            raise ScriptError("the block awaits something that never resolves")
        if not done["ok"]:
            raise _script_error(done["error"] or "")
        out = json.loads(_js_call(ctx, "JSON.stringify(vars === undefined ? {} : vars)"))
        if not isinstance(out, dict):
            raise ScriptError("`vars` must stay an object")
        return ScriptResult(vars=out, logs=logs)
