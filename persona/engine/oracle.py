"""An in-process agent that remembers everything: it answers each check with its expected answer.

No browser, no network. `mmb run --dry` plays a benchmark against it, so an author sees that every
check is reachable and gradable (coverage 100 %, score 10) and how long the scenario is, before
paying for an LLM persona. Tests use it where the browser is not the point.
"""

from __future__ import annotations

import asyncio

from drivers.base import ChatBefore, ChatDriver, Presence, Reply, SendJournal, SessionInfo
from persona.benchmark.loader import Benchmark
from persona.benchmark.phases import Category

ACK = {"en": "Noted, I'll remember that.", "ru": "Запомнил."}
UNKNOWN = {"en": "You didn't tell me that.", "ru": "Ты мне этого не говорил."}


class OracleDriver(ChatDriver):
    name = "oracle"

    def __init__(self, bench: Benchmark, *, reply_delay_s: float = 0.0):
        lang = bench.manifest.language if bench.manifest.language in ACK else "en"
        self._ack, self._unknown = ACK[lang], UNKNOWN[lang]
        self._answers = {" ".join(c.question.split()): c for c in bench.checks}
        self._delay = reply_delay_s
        self._sessions: list[list[str]] = [[]]

    async def open(self, session_url: str | None, session_index: int = 0) -> SessionInfo:
        while len(self._sessions) <= session_index:
            self._sessions.append([])
        return SessionInfo(url=session_url or f"oracle:{session_index}")

    async def send(self, text: str, journal: SendJournal | None = None) -> Reply:
        if journal:
            await journal.submitting()
        self._sessions[-1].append(text)
        if journal:
            await journal.shown()
        # Always a real pause, however short: an in-process loop that never yields would not see a Ctrl-C
        # (or SIGTERM) until the whole dry run was over.
        await asyncio.sleep(self._delay)
        return Reply(bubbles=[self._answer(text)], signal="in-process")

    def _answer(self, text: str) -> str:
        check = self._answers.get(" ".join(text.split()))
        if check is None:
            return self._ack
        if check.category is Category.absent:  # an answer that merely sounds unknowing ("they don't have fur") is given as it is
            return self._unknown
        return check.answer.replace(";", ",")

    async def find_sent(self, text: str, before: ChatBefore | None) -> Presence:
        return Presence("absent", "the in-process oracle starts empty after a restart: it never got the message")

    async def new_session(self) -> SessionInfo:
        self._sessions.append([])
        index = len(self._sessions) - 1
        return SessionInfo(url=f"oracle:{index}", reset_sign="in-process: a fresh message list")

    @property
    def session_url(self) -> str | None:
        return f"oracle:{len(self._sessions) - 1}"
