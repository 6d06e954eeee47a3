"""JSON-with-comments files: parse with json5, and find the line of any value for error messages."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import json5

from persona.errors import InputError, Problem
from persona.textfile import read_user_text

JsonPath = tuple[str | int, ...]
Token = tuple[str, str, int]  # (kind, text, line)
MAX_DEPTH = 20  # json5 recurses ~20 frames a level; real configs nest 6 deep

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"[^"\\]*(?:\\.[^"\\]*)*"|'[^'\\]*(?:\\.[^'\\]*)*')  # unrolled: fast on long strings
  | (?P<punct>[{}\[\]:,])
  | (?P<atom>[^\s{}\[\]:,"'/]+)
    """,
    re.VERBOSE | re.DOTALL,
)


def _tokens(text: str) -> tuple[list[Token], bool]:
    """The tokens but whitespace and comments, and whether every character belonged to one."""
    out, line, pos, whole = [], 1, 0, True
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:  # a stray character; json5 reports it properly, we just skip it
            pos, whole = pos + 1, False
            continue
        kind = m.lastgroup or ""
        if kind not in ("ws", "comment"):
            out.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    return out, whole


def _too_deep(toks: list[Token]) -> int | None:
    """The line where objects and arrays first nest deeper than MAX_DEPTH, if they do."""
    depth = 0
    for _, tok, line in toks:
        if tok in ("{", "["):
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif tok in ("}", "]"):
            depth -= 1
    return None


def _extents(toks: list[Any]) -> dict[JsonPath, tuple[int, int]]:
    """Map each JSON path to the indexes of its value's first and last token (a token's text is its [1])."""
    found: dict[JsonPath, tuple[int, int]] = {}
    i = 0

    def value(path: JsonPath) -> None:
        nonlocal i
        if i >= len(toks):
            return
        first, tok = i, toks[i][1]
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
        found[path] = (first, min(i, len(toks)) - 1)

    value(())
    return found


def value_lines(toks: list[Token]) -> dict[JsonPath, int]:
    """Map each JSON path, e.g. ("runs", 0, "agent"), to the line where its value starts."""
    return {path: toks[first][2] for path, (first, _) in _extents(toks).items()}


def text_lines(text: str) -> dict[JsonPath, int]:
    """The line of each value of a JSON text (as `value_lines`), for problems found after parsing it."""
    return value_lines(_tokens(text)[0])


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
    toks, whole = _tokens(text)
    if (deep := _too_deep(toks)) is not None:
        raise InputError.single(path, deep, f"nested more than {MAX_DEPTH} levels deep")
    try:
        data = _parse(text, toks if whole else None)
    except ValueError as e:
        m = re.search(r":(\d+) (.*)", str(e))
        line, message = (int(m.group(1)), m.group(2)) if m else (None, str(e))
        raise InputError.single(path, line, f"syntax error: {message[:300]}") from None
    except RecursionError:  # _too_deep guards this; a deeper stack than usual may still meet the limit
        raise InputError.single(path, None, "nested too deeply to read") from None
    return data, value_lines(toks)


def _parse(text: str, toks: list[Token] | None) -> Any:
    """JSON with comments and trailing commas through the standard library (json5 is pure Python:
    30 s for 5 MB), anything else through json5, which also names the line of each mistake."""
    if toks is not None:
        try:
            return json.loads(_plain_json(toks), object_pairs_hook=_no_repeats)
        except ValueError:
            pass
    return json5.loads(text, allow_duplicate_keys=False)


def _plain_json(toks: list[Token]) -> str:
    """The tokens without comments (already gone) and without a trailing comma (`[1, 2,]`, `{"a": 1,}`)."""
    kept: list[str] = []
    for i, (_, tok, _) in enumerate(toks):
        after = toks[i + 1][1] if i + 1 < len(toks) else ""
        if tok == "," and after in ("}", "]") and kept and kept[-1] not in ("{", "[", ","):
            continue
        kept.append(tok)
    return " ".join(kept)


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise ValueError("a key repeats")  # json5 names it, with its line
    return data


def pydantic_problems(error: Any, file: Path, lines: dict[JsonPath, int], prefix: JsonPath = ()):
    """Turn a pydantic ValidationError into Problems located by line."""
    out = []
    for err in error.errors():
        loc = prefix + tuple(err["loc"])
        dotted = ".".join(_short(str(p)) for p in loc) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        out.append(Problem(str(file), line_of(lines, loc), f"{dotted}: {msg}"))
    return out


def _short(name: str, limit: int = 60) -> str:
    """A key as an error shows it: a 5 MB key must not make a 5 MB message."""
    return name if len(name) <= limit else name[:limit] + "…"


def _spans(text: str) -> list[tuple[str, str, int, int]]:
    """The tokens but whitespace and comments, with where each starts and ends in `text`."""
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            pos += 1
            continue
        if m.lastgroup not in ("ws", "comment"):
            out.append((m.lastgroup or "", m.group(), m.start(), m.end()))
        pos = m.end()
    return out


def set_value(text: str, path: JsonPath, value: Any) -> str:
    """`text` (JSONC) with the value at `path` replaced by `value`, or added as the last key of its object;
    everything else (comments, layout) kept as it was. KeyError when the path's parent is not there."""
    toks = _spans(text)
    found = _extents(toks)
    if path in found:
        start, end = toks[found[path][0]][2], toks[found[path][1]][3]
        indent = _indent_at(text, start)
        return text[:start] + _dumped(value, indent) + text[end:]
    parent = found.get(path[:-1])
    if parent is None or toks[parent[0]][1] != "{":
        raise KeyError(path[:-1])
    close = toks[parent[1]][2]
    indent = _indent_at(text, toks[parent[0]][2]) + "  "
    after = toks[parent[1] - 1][3]  # the last key's value (or the opening brace); a comma goes after a value
    comma = "," if toks[parent[1] - 1][1] not in (",", "{") else ""
    between = text[after:close]
    kept = between.rstrip()  # a comment after the last value stays where it was
    entry = f"\n{indent}{json.dumps(str(path[-1]))}: {_dumped(value, indent)}"
    return text[:after] + comma + kept + entry + (between[len(kept):] or "\n" + indent[:-2]) + text[close:]


def _indent_at(text: str, offset: int) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    line = text[line_start:offset]
    return line[: len(line) - len(line.lstrip())]


def _dumped(value: Any, indent: str) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)
