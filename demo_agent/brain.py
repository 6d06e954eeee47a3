"""DemoMind's mind: a deterministic chat agent with a session context and long-term notes.

The memory is deliberately imperfect so a benchmark run scores between 0 and 10, and so a memory
autopsy finds every kind of miss:
- statements that "look important" (a digit, or a name) become notes shared by all chats;
- every other statement lives only in the current chat's context and is lost in a new chat
  or when the context is compacted (never stored);
- a statement whose words (numbers aside) are all in a note already is taken as known and not
  noted, so "my best is now 52:30" after "my best is 54:10" leaves the old value (stale);
- recall needs two words in common with the question (one after "search your memory"), so a
  stored note can still be missed (stored, not retrieved).

Like the agents it stands for (OpenClaw, Hermes), it keeps its notes as a folder of Markdown
files, `memory/chat-N.md` under its data folder, one per chat; memory.json holds the chats.
"""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demo_agent.files import atomic_write
from demo_agent.text import (
    content_stems,
    is_cyrillic,
    is_question,
    is_search_request,
    looks_important,
    normalise,
)

NOTICE_TEXT = "Context compacted: older messages were summarised into notes"
STATE_FILE = "memory.json"
NOTES_DIR = "memory"
NOTE_PREFIX = "- "
MAX_RECALL = 3

ACKS_EN = (
    "Got it, I'll remember that.",
    "Thanks for telling me.",
    "Okay, noted.",
    "Interesting! Tell me more.",
)
ACKS_RU = (
    "Понял, запомню.",
    "Спасибо, что рассказал(а).",
    "Хорошо, записал.",
    "Интересно! Расскажи ещё.",
)
NOT_FOUND = {"en": "I don't think you told me that.", "ru": "Кажется, ты мне этого не говорил(а)."}
NOT_FOUND_AFTER_SEARCH = {
    "en": "I searched my memory, but I don't think you told me that.",
    "ru": "Я поискал в памяти, но, кажется, ты мне этого не говорил(а).",
}
NOTHING_TO_SEARCH = {
    "en": "What should I look for? Ask me the question first.",
    "ru": "Что мне поискать? Сначала задай вопрос.",
}
FIRST_PREFIX = {"en": "You told me: ", "ru": "Ты говорил(а): "}
NEXT_PREFIX = {"en": "Also: ", "ru": "Ещё: "}


@dataclass
class Reply:
    bubbles: list[str]
    compacted: bool = False


@dataclass
class _Conversation:
    messages: list[dict[str, Any]] = field(default_factory=list)
    # Index into messages where the session context starts; earlier ones were compacted away.
    context_start: int = 0
    last_question: str | None = None


class Brain:
    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        context_messages: int = 40,
        language: str = "auto",
    ) -> None:
        if context_messages < 2:
            raise ValueError("context_messages must be at least 2")
        if language not in ("auto", "en", "ru"):
            raise ValueError(f"language must be auto, en or ru, not {language!r}")
        self.context_messages = context_messages
        self.language = language
        self._lock = threading.RLock()  # the web layer calls in from many threads
        self._seq = 0  # global message counter: recency across conversations and notes
        self._notes: list[dict[str, Any]] = []
        self._convs: dict[str, _Conversation] = {}
        self._path: Path | None = None
        if data_dir is not None:
            data_dir = Path(data_dir)
            data_dir.mkdir(parents=True, exist_ok=True)
            self._path = data_dir / STATE_FILE
            self._load()

    # ---- conversations -------------------------------------------------------------------

    def new_conversation(self) -> str:
        with self._lock:
            conv_id = secrets.token_hex(4)
            while conv_id in self._convs:
                conv_id = secrets.token_hex(4)
            self._convs[conv_id] = _Conversation()
            self._save()
            return conv_id

    def has_conversation(self, conv_id: str) -> bool:
        with self._lock:
            return conv_id in self._convs

    def conversation_ids(self) -> list[str]:
        with self._lock:
            return list(self._convs)

    def history(self, conv_id: str) -> list[dict[str, str]]:
        """Everything shown in the chat, compacted messages included. Unknown id: empty."""
        with self._lock:
            conv = self._convs.get(conv_id)
            if conv is None:
                return []
            return [{"role": m["role"], "text": m["text"], "kind": m["kind"]} for m in conv.messages]

    def context(self, conv_id: str) -> list[dict[str, str]]:
        """The messages the brain still "sees" in this conversation (after compaction)."""
        with self._lock:
            conv = self._convs.get(conv_id)
            if conv is None:
                return []
            return [
                {"role": m["role"], "text": m["text"], "kind": m["kind"]}
                for m in self._context(conv)
            ]

    def notes(self) -> list[str]:
        with self._lock:
            return [n["text"] for n in self._notes]

    # ---- replying ------------------------------------------------------------------------

    def reply(self, conv_id: str, text: str) -> Reply:
        """Answer one user message. History and notes are saved before this returns."""
        if not text.strip():
            raise ValueError("empty message")
        with self._lock:
            conv = self._convs.setdefault(conv_id, _Conversation())
            if is_search_request(text):
                kind = "search"
            elif is_question(text):
                kind = "question"
            else:
                kind = "statement"
            seq = self._append(conv, "user", text, kind)
            if kind == "statement" and looks_important(text):
                self._add_note(text, seq, conv_id)
            compacted = self._maybe_compact(conv)

            lang = self._lang(text)
            if kind == "question":
                conv.last_question = text
                bubbles = self._answer(conv, text, lang, relaxed=False)
            elif kind == "search":
                if conv.last_question is None:
                    bubbles = [NOTHING_TO_SEARCH[lang]]
                else:
                    bubbles = self._answer(conv, conv.last_question, lang, relaxed=True)
            else:
                n_user = sum(1 for m in conv.messages if m["role"] == "user")
                acks = ACKS_RU if lang == "ru" else ACKS_EN
                bubbles = [acks[(n_user - 1) % len(acks)]]

            for bubble in bubbles:
                self._append(conv, "assistant", bubble, "answer" if kind != "statement" else "ack")
            self._save()
            return Reply(bubbles=bubbles, compacted=compacted)

    def _lang(self, text: str) -> str:
        if self.language != "auto":
            return self.language
        return "ru" if is_cyrillic(text) else "en"

    def _answer(self, conv: _Conversation, question: str, lang: str, *, relaxed: bool) -> list[str]:
        found = self._recall(conv, question, relaxed=relaxed)
        if not found:
            return [(NOT_FOUND_AFTER_SEARCH if relaxed else NOT_FOUND)[lang]]
        return [
            (FIRST_PREFIX if i == 0 else NEXT_PREFIX)[lang] + statement
            for i, statement in enumerate(found)
        ]

    def recall(self, conv_id: str, question: str, *, relaxed: bool = False) -> list[str]:
        """What the brain would quote for this question in this conversation (no side effects)."""
        with self._lock:
            return self._recall(self._convs.get(conv_id) or _Conversation(), question, relaxed=relaxed)

    def _recall(self, conv: _Conversation, question: str, *, relaxed: bool) -> list[str]:
        """Statements matching the question, best overlap first, newer first on ties."""
        q = content_stems(question)
        if not q:
            return []
        threshold = 1 if relaxed or len(q) == 1 else 2
        # Context statements and notes overlap; keep each text once, at its newest position.
        candidates: dict[str, tuple[int, str]] = {}
        sources = [m for m in self._context(conv) if m["role"] == "user" and m["kind"] == "statement"]
        for item in sources + self._notes:
            key = normalise(item["text"].strip())
            if key not in candidates or candidates[key][0] < item["seq"]:
                candidates[key] = (item["seq"], item["text"].strip())
        scored = []
        for seq, statement in candidates.values():
            score = len(q & content_stems(statement))
            if score >= threshold:
                scored.append((score, seq, statement))
        scored.sort(key=lambda s: (-s[0], -s[1]))
        return [statement for _, _, statement in scored[:MAX_RECALL]]

    # ---- memory internals ----------------------------------------------------------------

    def _append(self, conv: _Conversation, role: str, text: str, kind: str) -> int:
        self._seq += 1
        conv.messages.append({"role": role, "text": text, "kind": kind, "seq": self._seq})
        return self._seq

    def _add_note(self, text: str, seq: int, conv_id: str) -> None:
        key = normalise(text.strip())
        if self._known(text, key):
            return
        self._notes = [n for n in self._notes if normalise(n["text"].strip()) != key]
        self._notes.append({"text": text.strip(), "seq": seq, "conv": conv_id})

    def _known(self, text: str, key: str) -> bool:
        """Another note has every word of this one, numbers aside: DemoMind thinks it knows it already."""
        words = {w for w in content_stems(text) if not w.isdigit()}
        return bool(words) and any(words <= content_stems(n["text"]) and normalise(n["text"].strip()) != key
                                   for n in self._notes)

    def _context(self, conv: _Conversation) -> list[dict[str, Any]]:
        return [m for m in conv.messages[conv.context_start :] if m["kind"] != "notice"]

    def _maybe_compact(self, conv: _Conversation) -> bool:
        """Drop the oldest half of the context once it holds more than context_messages."""
        indexes = [
            i
            for i in range(conv.context_start, len(conv.messages))
            if conv.messages[i]["kind"] != "notice"
        ]
        if len(indexes) <= self.context_messages:
            return False
        conv.context_start = indexes[len(indexes) // 2]
        self._append(conv, "system", NOTICE_TEXT, "notice")
        return True

    # ---- persistence ---------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        return {
            "version": 2,
            "seq": self._seq,
            "conversations": {
                cid: {
                    "messages": c.messages,
                    "context_start": c.context_start,
                    "last_question": c.last_question,
                }
                for cid, c in self._convs.items()
            },
        }

    def _save(self) -> None:
        if self._path is None:
            return
        # a process killed mid-write leaves the previous memory intact
        self._save_notes()
        atomic_write(self._path, json.dumps(self._state(), ensure_ascii=False))

    def _notes_dir(self) -> Path:
        assert self._path is not None
        return self._path.parent / NOTES_DIR

    def _save_notes(self) -> None:
        """memory/chat-N.md per chat that has notes, oldest note first; only changed files are written."""
        chats = list(self._convs)
        pages: dict[str, list[str]] = {}
        for note in self._notes:
            n = chats.index(note["conv"]) + 1 if note["conv"] in chats else 0
            pages.setdefault(f"chat-{n}.md", [f"# Notes from chat {n}", ""]).append(NOTE_PREFIX + note["text"])
        folder = self._notes_dir()
        folder.mkdir(parents=True, exist_ok=True)
        for name, lines in pages.items():
            text = "\n".join(lines) + "\n"
            path = folder / name
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                atomic_write(path, text)
        for stale in folder.glob("chat-*.md"):
            if stale.name not in pages:
                stale.unlink()

    def _load_notes(self) -> list[dict[str, Any]]:
        """Notes from memory/chat-N.md; each one's place in time is the newest message that said it."""
        chats = list(self._convs)
        said = {normalise(m["text"].strip()): (m["seq"], cid) for cid, c in self._convs.items()
                for m in c.messages if m["role"] == "user"}
        notes = []
        for path in sorted(self._notes_dir().glob("chat-*.md")):
            n = int(path.stem.split("-", 1)[1]) if path.stem.split("-", 1)[1].isdigit() else 0
            fallback = chats[n - 1] if 0 < n <= len(chats) else ""
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.startswith(NOTE_PREFIX):
                    text = line[len(NOTE_PREFIX):].strip()
                    seq, conv = said.get(normalise(text), (0, fallback))
                    notes.append({"text": text, "seq": seq, "conv": conv})
        return sorted(notes, key=lambda n: n["seq"])

    def _load(self) -> None:
        assert self._path is not None
        if not self._path.exists():
            return
        try:
            state = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise RuntimeError(f"DemoMind memory file {self._path} is unreadable: {e}") from e
        self._seq = int(state.get("seq", 0))
        for cid, c in state.get("conversations", {}).items():
            self._convs[cid] = _Conversation(
                messages=list(c.get("messages", [])),
                context_start=int(c.get("context_start", 0)),
                last_question=c.get("last_question"),
            )
        # version 1 kept the notes in memory.json; from version 2 they are Markdown files
        self._notes = list(state["notes"]) if "notes" in state else self._load_notes()
