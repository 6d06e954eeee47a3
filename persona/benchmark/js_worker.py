"""The child process one JS block runs in (see persona/benchmark/js_sandbox.py), spoken to in JSON lines.

In: `{"code", "vars", "limits"}`, then `{"settle": [[id, ok, payload], ...]}` after each step that
made calls. Out: each step of the block, or `{"error", "line", "approximate"}` when it fails.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from persona.benchmark.js_sandbox import JsBlock, Limits, ScriptError


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    start = json.loads(sys.stdin.readline())
    try:
        block = JsBlock(start["code"], start["vars"], Limits(**start["limits"]))
        while "done" not in (step := block.step()):
            _send(step)
            block.settle(json.loads(sys.stdin.readline())["settle"])
        _send(step)
    except ScriptError as e:
        _send({"error": e.message, "line": e.line, "approximate": e.approximate})


if __name__ == "__main__":
    main()
