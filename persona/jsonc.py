"""JSON-with-comments files: parse with json5, and find the line of any value for error messages."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import json5

from persona.errors import InputError, Problem
from persona.textfile import read_user_text

JsonPath = tuple[str | int, ...]

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<punct>[{}\[\]:,])
  | (?P<atom>[^\s{}\[\]:,"'/]+)
    """,
    re.VERBOSE | re.DOTALL,
)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, line, pos = [], 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:  # a stray character; json5 reports it properly, we just skip it
            pos += 1
            continue
        kind = m.lastgroup or ""
        if kind not in ("ws", "comment"):
            out.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    return out


def value_lines(text: str) -> dict[JsonPath, int]:
    """Map each JSON path, e.g. ("runs", 0, "agent"), to the line where its value starts."""
    toks = _tokens(text)
    lines: dict[JsonPath, int] = {}
    i = 0

    def value(path: JsonPath) -> None:
        nonlocal i
        if i >= len(toks):
            return
        kind, tok, line = toks[i]
        lines[path] = line
        i += 1
        if tok == "{":
            while i < len(toks) and toks[i][1] != "}":
                key = toks[i][1]
                key = key[1:-1] if toks[i][0] == "string" else key
                i += 1
                if i < len(toks) and toks[i][1] == ":":
                    i += 1
                value(path + (key,))
                if i < len(toks) and toks[i][1] == ",":
                    i += 1
            i += 1
        elif tok == "[":
            n = 0
            while i < len(toks) and toks[i][1] != "]":
                value(path + (n,))
                n += 1
                if i < len(toks) and toks[i][1] == ",":
                    i += 1
            i += 1

    value(())
    return lines


def line_of(lines: dict[JsonPath, int], path: JsonPath) -> int | None:
    """The line of `path`, or of its nearest existing parent (a missing key is reported at its object)."""
    while True:
        if path in lines:
            return lines[path]
        if not path:
            return None
        path = path[:-1]


def load_jsonc(path: Path) -> tuple[Any, dict[JsonPath, int]]:
    """Parse a JSONC/JSON5 file; syntax errors become an InputError naming file:line."""
    text = read_user_text(path, path)
    try:
        data = json5.loads(text, allow_duplicate_keys=False)
    except ValueError as e:
        m = re.search(r":(\d+) (.*)", str(e))
        line, message = (int(m.group(1)), m.group(2)) if m else (None, str(e))
        raise InputError.single(path, line, f"syntax error: {message}") from None
    return data, value_lines(text)


def pydantic_problems(error: Any, file: Path, lines: dict[JsonPath, int], prefix: JsonPath = ()):
    """Turn a pydantic ValidationError into Problems located by line."""
    out = []
    for err in error.errors():
        loc = prefix + tuple(err["loc"])
        dotted = ".".join(str(p) for p in loc) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        out.append(Problem(str(file), line_of(lines, loc), f"{dotted}: {msg}"))
    return out
