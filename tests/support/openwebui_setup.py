"""Giving a running Open WebUI an agent's memory tool, through its own API, as an admin would.

Open WebUI (0.12.4) calls tools natively (function calling "native" is its default; set here on the
model all the same): it sends the model the tools of the chat, runs the one the model calls, and
shows it in the reply as a tool-call block. A tool reaches a chat when the model's settings name it
(`meta.toolIds`), which the chat page takes as its default tools. So: sign in (with WEBUI_AUTH off,
the sign-in makes and returns the one admin), create the Tool from apps/openwebui_memory_tool.py,
and save the model's settings with the tool and native calling.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

TOOL_SOURCE = Path(__file__).resolve().parent / "apps" / "openwebui_memory_tool.py"
TOOL_ID = "memory"


def _call(base: str, path: str, body: dict[str, Any], token: str | None = None) -> Any:
    request = urllib.request.Request(base.rstrip("/") + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"null")


def give_memory_tool(base: str, model: str) -> None:
    """Register the memory tool in the Open WebUI at `base` and make it `model`'s default, natively called."""
    token = _call(base, "/api/v1/auths/signin", {"email": "", "password": ""})["token"]
    _call(base, "/api/v1/tools/create", {
        "id": TOOL_ID, "name": "Memory", "content": TOOL_SOURCE.read_text(),
        "meta": {"description": "Search the notes kept about the user."}}, token)
    _call(base, "/api/v1/models/create", {
        "id": model, "base_model_id": None, "name": model,
        "meta": {"toolIds": [TOOL_ID]}, "params": {"function_calling": "native"}}, token)
