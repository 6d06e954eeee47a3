"""
title: Memory
description: Search the notes kept about the user.
version: 1.0
"""

# An Open WebUI Tool (its workspace "Tools"), registered through Open WebUI's API by the tests
# (tests/support/openwebui_setup.py): the memory search an agent runs before it answers. It waits
# MMB_TOOL_PAUSE_S seconds (from the Open WebUI process's environment) as a search behind an
# embedding API does, then returns the user's earlier messages that share a word with the query.

import asyncio
import json
import os
import re


class Tools:
    async def memory_search(self, query: str, __messages__: list | None = None) -> str:
        """
        Search the notes kept about the user for what the question needs.
        :param query: What to look for
        """
        await asyncio.sleep(float(os.environ.get("MMB_TOOL_PAUSE_S") or 0))
        words = set(re.findall(r"\w{4,}", query.lower()))
        said = [m.get("content") for m in __messages__ or [] if m.get("role") == "user" and isinstance(m.get("content"), str)]
        notes = [s for s in said if s != query and words & set(re.findall(r"\w{4,}", s.lower()))]
        return json.dumps({"query": query, "notes": notes[-3:]})
