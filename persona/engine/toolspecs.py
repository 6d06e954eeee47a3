"""How a tool is described to a model: function schemas valid under OpenAI's `strict: true`, and the
same schemas without what Gemini's endpoint refuses.

Shared by the persona's tools (tools.py), the judge's `grade` tool (judge.py) and the client that
sends them (llm.py); it imports none of them, so none of them imports another for it.
"""

from __future__ import annotations

import copy
from typing import Any


def function_spec(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """A function valid under OpenAI's `strict: true`: closed object, every property required."""
    return {"type": "function", "function": {
        "name": name, "description": description, "strict": True,
        "parameters": {"type": "object", "properties": properties, "required": list(properties),
                       "additionalProperties": False},
    }}


def spec_names(specs: list[dict[str, Any]]) -> list[str]:
    return [spec["function"]["name"] for spec in specs]


def plain_specs(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same tools without what Gemini's endpoint refuses: `strict`, `additionalProperties` (at any
    depth: the judge's `grade` nests objects), and an empty parameter object (a tool without parameters
    has none)."""
    out = copy.deepcopy(specs)
    for spec in out:
        fn = spec["function"]
        fn.pop("strict", None)
        params = fn["parameters"]
        _open_objects(params)
        if not params["properties"]:
            del fn["parameters"]
    return out


def _open_objects(schema: Any) -> None:
    if isinstance(schema, dict):
        schema.pop("additionalProperties", None)
        for sub in (*(schema.get("properties") or {}).values(), schema.get("items")):
            _open_objects(sub)
