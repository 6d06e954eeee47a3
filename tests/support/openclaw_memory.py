"""A deterministic agent LLM that keeps what it is told in OpenClaw's memory files, through OpenClaw's tools.

Behind OpenClaw's gateway (or any OpenClaw channel: the web chat, Matrix...) this responder plays the
model of a memory-keeping agent with the tools OpenClaw itself offers it:

- a statement: `read` the day's memory note (memory/YYYY-MM-DD.md in the workspace, the date the
  system prompt gives), `write` it back with the statement appended as one line, then acknowledge;
- a question: `memory_search` (a deferred tool, so through OpenClaw's `tool_call` wrapper), then
  answer from the search result alone: the chat history is never read for an answer, so a new
  session answers from the memory files and a fact that was never written is never found;
- the person's message is the last one with a sender ("Conversation info: … sender"; the web chat's
  sender is "gateway-owner", a Matrix DM's the Matrix user with its name): the gateway's own user
  messages ("(session bootstrap)", "Continue the current task…" after a compaction) are not, nor
  the runtime context OpenClaw appends as the last user message of every request
  ("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"), which from a Matrix DM holds the conversation info with
  the sender too (person_said leaves it out);
- OpenClaw's own requests: a compaction gets a summary in the sections it asks for (the history's,
  or a split turn's prefix), the person's words kept; after a turn compacted midway the person's
  request is the summary's pending ask; a new session's title is its first words; a request with no
  message of the person (housekeeping such as the pre-compaction memory flush, not seen here) is
  answered `NO_REPLY`.

`context_tokens` plays a model server with a small context: a longer request is refused with vLLM's
error, which OpenClaw takes for an overflow and answers by compacting (OpenClaw 2026.9.6, given only a
small `contextWindow`, left older turns out of its prompt in our runs and never summarized).

`unwritten` makes it forget on purpose: a statement matching one of these regexes is acknowledged
and not written, so a test knows which checks the memory cannot hold (a fact never stored, or a
correction lost, leaving the old value: stale).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from demo_agent.text import is_question, is_search_request
from persona.tokens import TokenCounter
from tests.support.chat_model import ACK, PREFIX, SEARCHED_UNKNOWN, UNKNOWN, recall, text_of
from tests.support.node_frontends import person_said
from tests.support.quirk_server import Refused

# OpenClaw's memory offline and of the files alone (gateway_config's `extra`): memory_search by keywords
# (FTS5, no embedding provider), no recall from other conversations' transcripts, no dreaming sweep
# (a scheduled model call that would rewrite MEMORY.md behind the test's back).
MEMORY_SETTINGS: dict[str, Any] = {
    "memory": {"search": {"provider": "none", "rememberAcrossConversations": False}},
    "plugins": {"entries": {"memory-core": {"config": {"dreaming": {"enabled": False}}}}},
}
SEARCH_TOOL = "memory_search"
NOT_FOUND = "Optional file not found"  # what `read` with optional=true says of a missing file
_COUNTER = TokenCounter("o200k_base")
# The shape of OpenClaw's summarization request (2026.9.6)
_CONVERSATION = "<conversation>"
_SUMMARY = "<summary>"  # how the compacted history comes back
_SUMMARY_USER = re.compile(r"^- User: (.+)$", re.M)  # its "Recent turns preserved verbatim"
_TITLE = "session title"  # the request that names a new session
_USER_LINE = re.compile(r"^\[User[^\]]*\]: (.+)$", re.M)
_PENDING = re.compile(r"Latest unresolved user request[^<]*<untrusted-text>\s*(.+?)\s*</untrusted-text>", re.S)
_HEADING = re.compile(r"^## (.+)$", re.M)
_PATH = re.compile(r"\bmemory/[\w.-]+\.md\b")
_SENDER = "Conversation info:"
_DATE = re.compile(r"Current date: (\d{4}-\d{2}-\d{2})")


@dataclass
class ToolUse:
    """One tool call the model made, as OpenClaw ran it."""

    name: str
    arguments: dict[str, Any]


@dataclass
class OpenClawMemoryModel:
    """The responder for QuirkServer (see the module's docstring)."""

    unwritten: tuple[str, ...] = ()
    context_tokens: int | None = None  # a request longer than this is refused as vLLM refuses it
    think_s: float = 0.0
    answers: list[str] = field(default_factory=list, repr=False)  # every final answer, in order
    tool_uses: list[ToolUse] = field(default_factory=list, repr=False)  # every tool call, in order
    requests: list[list[dict[str, Any]]] = field(default_factory=list, repr=False)
    overflows: int = 0  # requests refused for their length
    summaries: int = 0  # compaction summaries written
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if self.context_tokens is not None:
            used = _COUNTER.count(json.dumps(messages, ensure_ascii=False) + json.dumps(tools, ensure_ascii=False))
            if used > self.context_tokens:
                with self._lock:
                    self.overflows += 1
                raise Refused(400, f"This model's maximum context length is {self.context_tokens} tokens. However, your "
                                   f"request has {used} input tokens. Please reduce the length of the input messages.")
        answer = self.respond(messages, tools)
        with self._lock:
            self.requests.append(messages)
            if answer.get("tool_calls"):
                self.tool_uses += [ToolUse(c["name"], json.loads(c["arguments"])) for c in answer["tool_calls"]]
            elif answer.get("content"):
                self.answers.append(answer["content"])
        if self.think_s:
            time.sleep(self.think_s)
        return answer

    def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        asked = text_of(messages[-1].get("content")) if messages else ""
        system = text_of(messages[0].get("content")) if messages and messages[0].get("role") == "system" else ""
        if _TITLE in system:  # OpenClaw names a new session after its first message
            return {"content": " ".join(asked.split()[:6]).rstrip("?.!") or "New chat"}
        if _CONVERSATION in asked:  # OpenClaw's compaction: summarize, in the sections it asks for
            with self._lock:
                self.summaries += 1
            return {"content": summary(asked)}
        said_at = _last_said(messages)
        if said_at is not None:
            said = person_said(messages[said_at]["content"]) or ""
        else:  # compacted in the middle of a turn: the person's message is in the summary's pending asks
            said_at, said = _pending_ask(messages)
            if said_at is None:
                return {"content": "NO_REPLY"}
        done = _tool_steps(messages[said_at + 1:])
        if is_question(said) or is_search_request(said):
            return self._recall(said, messages[:said_at + 1], done)  # with a summary that holds the ask
        return self._remember(said, memory_path(messages), done)

    def _remember(self, said: str, path: str, done: list[tuple[str, str]]) -> dict[str, Any]:
        if any(re.search(p, said, re.IGNORECASE) for p in self.unwritten):
            return {"content": ACK}
        names = [name for name, _ in done]
        if "read" not in names:
            return _call("read", {"path": path, "optional": True})
        if "write" not in names:
            old = _file_text(done[names.index("read")][1])
            line = "- " + " ".join(said.split())
            return _call("write", {"path": path, "content": (old.rstrip("\n") + "\n" if old.strip() else "") + line + "\n"})
        return {"content": ACK}

    def _recall(self, said: str, before: list[dict[str, Any]], done: list[tuple[str, str]]) -> dict[str, Any]:
        searched = is_search_request(said)
        question = said
        if searched:
            asked = _earlier_questions(before)
            if not asked:
                return {"content": "What should I look for? Ask me the question first."}
            question = asked[-1]
        results = [result for name, result in done if name == "tool_call"]
        if not results:
            return _call("tool_call", {"id": SEARCH_TOOL, "args": {"query": question}})
        found = recall(question, [line for line in _result_lines(results[-1]) if not is_question(line)])
        if not found:
            return {"content": SEARCHED_UNKNOWN if searched else UNKNOWN}
        return {"content": PREFIX + " ".join(found)}


def summary(request: str) -> str:
    """A compaction summary as OpenClaw's summarizer prompt asks for it: its headings, in its order, the
    person's statements as what was decided, the request still open first among the pending asks, and
    every file path of the conversation kept exactly."""
    conversation = request.split(_CONVERSATION, 1)[1].split("</conversation>", 1)[0]
    told = [m.group(1).strip() for m in _USER_LINE.finditer(conversation)]
    statements = [t for t in told if not is_question(t)]
    pending = _PENDING.search(request)
    sections = {
        "Decisions": [f"The user said: {t}" for t in statements] + ["Each fact is written to the day's memory note."],
        "Pending user asks": [pending.group(1).strip()] if pending else [],
        "Exact identifiers": sorted(set(_PATH.findall(conversation))),
        # the format of a turn split by the compaction: what its retained end needs to go on
        "Original Request": told[-1:],
        "Early Progress": [f"The user said: {t}" for t in statements],
    }
    headings = _HEADING.findall(request.split(_CONVERSATION, 1)[0] + request.split("</conversation>", 1)[-1])
    return "\n\n".join(f"## {h}\n" + "\n".join(f"- {item}" for item in sections.get(h) or ["None."]) for h in headings)


def memory_path(messages: list[dict[str, Any]]) -> str:
    """The day's memory note, relative to the workspace, for the date OpenClaw's system prompt gives."""
    system = " ".join(text_of(m.get("content")) for m in messages if m.get("role") == "system")
    match = _DATE.search(system)
    return f"memory/{match.group(1) if match else datetime.now(UTC).date().isoformat()}.md"


def _last_said(messages: list[dict[str, Any]]) -> int | None:
    """The person's last message. What they typed comes with its sender ("Conversation info: … sender");
    the gateway's own user messages do not: "(session bootstrap)", and after a compaction "Continue the
    current task from the existing transcript…", which must not be taken for a statement. OpenClaw's
    runtime context, the request's last user message, names the sender in a Matrix DM (not in the web
    chat) and is not the person's either: person_said gives None for it."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "user" and _SENDER in text_of(m.get("content")) and person_said(m.get("content")):
            return i
    return None


def _pending_ask(messages: list[dict[str, Any]]) -> tuple[int | None, str]:
    """The person's open request as a compaction summary in the request keeps it (its pending asks, or
    the original request of a split turn), and where the summary is."""
    for i in range(len(messages) - 1, -1, -1):
        text = text_of(messages[i].get("content"))
        if messages[i].get("role") != "user" or _SUMMARY not in text:
            continue
        for heading in ("Pending user asks", "Original Request"):
            section = text.split(f" {heading}\n", 1)[1].split("\n#", 1)[0] if f" {heading}\n" in text else ""
            first = next((line.strip().lstrip("-* ").strip() for line in section.splitlines() if line.strip()), "")
            quoted = re.search(r'"(.+)"', first)
            ask = quoted.group(1) if quoted else first
            if ask and ask.rstrip(".") not in ("None", "No prior history"):
                return i, ask
        return None, ""
    return None, ""


def _earlier_questions(before: list[dict[str, Any]]) -> list[str]:
    """The person's questions before the turn, oldest first: their messages, and the user lines a
    compaction summary kept."""
    out = []
    for m in before:
        if m.get("role") != "user":
            continue
        text = text_of(m.get("content"))
        if _SUMMARY in text:
            out += [q.strip() for q in _SUMMARY_USER.findall(text)]
        elif _SENDER in text:
            out.append(person_said(m.get("content")) or "")
    return [q for q in out if q and is_question(q)]


def _tool_steps(after: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(tool name, result text) of each call made since the person spoke, in order."""
    names = {c["id"]: c["function"]["name"] for m in after if m.get("role") == "assistant"
             for c in m.get("tool_calls") or []}
    return [(names.get(m.get("tool_call_id"), "?"), text_of(m.get("content"))) for m in after if m.get("role") == "tool"]


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"content": None, "tool_calls": [{"name": name, "arguments": json.dumps(arguments)}]}


def _file_text(result: str) -> str:
    """The file's text from a `read` result; empty when the file does not exist yet."""
    return "" if result.startswith(NOT_FOUND) else result


def _result_lines(result: str) -> list[str]:
    """The lines of the memory snippets in a memory_search result (the search's JSON sits as text inside
    tool_call's JSON), without bullet marks and the "Source: path#L1-L3" citations."""
    snippets = [text for key, text in _strings(result) if key == "snippet"]
    lines = (line.strip().lstrip("-*• ").strip() for text in snippets for line in text.splitlines())
    return list(dict.fromkeys(line for line in lines if line and not line.startswith("Source: ")))  # chunks overlap


def _strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, text) of every string in a JSON value, strings that hold JSON themselves walked too."""
    if isinstance(value, str):
        try:
            inner = json.loads(value) if value.lstrip()[:1] in ("{", "[") else None
        except ValueError:
            inner = None
        if inner is None:
            yield key, value
        else:
            yield from _strings(inner, key)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key)
