"""The agent under test as the persona loop sees it: messages out, replies in, sessions, all recorded.

Sending is journaled so that a message reaches the agent once, and the report counts exactly what
the chat was given. The state records the message as `typing` before it is typed, `submitted` just
before the send button is pressed (from then on the agent may have it; each typing is counted) and
`sent` once the chat shows it. A restart finds it pending: never submitted, it is typed; submitted,
the driver looks for it in the chat and waits for its reply, and types it again only when the chat
shows it never arrived (drivers/resilient.py says exactly when).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from drivers.base import ChatBefore, ChatDriver, Reply, SendJournal
from persona.crashpoints import crash_point
from persona.state import AgentActivity, AgentNotice, AgentSession, Exchange, PendingSend, RunState, RunStore

log = logging.getLogger(__name__)
Save = Callable[[], None]


class AgentChannel(SendJournal):
    def __init__(self, driver: ChatDriver, state: RunState, store: RunStore, save: Save):
        self.driver = driver
        self.state = state
        self.store = store
        self.save = save
        self._resend_why: str | None = None
        self._commands_seen = 0  # the driver's count of commands typed, as last added to the state

    @property
    def turn(self) -> int | None:  # type: ignore[override]
        """The pending message's turn: each typing of it (a retry, a resend) is that turn."""
        return self.state.pending.turn if self.state.pending is not None else None

    async def open(self) -> None:
        """Open the current session's chat, or a first one."""
        current = self.state.sessions[-1] if self.state.sessions else None
        info = await self.driver.open(current.url if current else None, session_index=max(self.state.session, 0))
        self._count_commands()
        if current is None:
            self.state.sessions.append(AgentSession(index=0, url=info.url, started_turn=0, reason="start"))
            self.save()

    async def say(self, text: str) -> Reply:
        """Send a message and return the reply; the caller records it (see `record`) and saves."""
        before = await self.driver.chat_before()
        self.state.pending = PendingSend(text=text, turn=self.state.turn + 1,
                                         user_messages_before=before.users if before else None,
                                         last_user_before=before.last_user if before else None)
        self.save()
        reply = await self.driver.deliver(text, self, before=before)
        crash_point("reply.received")
        return reply

    async def resume_pending(self) -> Reply:
        """Finish the message a restart interrupted: its reply if the chat shows it, else send it."""
        pending = self.state.pending
        assert pending is not None
        before = ChatBefore(pending.user_messages_before, pending.last_user_before) \
            if pending.user_messages_before is not None else None
        submitted = pending.status != "typing"
        if not submitted and before is not None:  # a state from before `submitted` existed: look anyway
            submitted = (await self.driver.find_sent(pending.text, before)).state == "shown"
        reply = await self.driver.deliver(pending.text, self, before=before, submitted=submitted)
        crash_point("reply.received")
        return reply

    def record(self, text: str, reply: Reply) -> None:
        """Account for a reply in the state (no save: the caller saves it together with its message).
        The transcript line comes first: if it cannot be written, the state still has the message pending
        (a restart takes its reply from the chat) and counts no turn that the transcript lacks."""
        pending = self.state.pending
        self.store.append_exchange(self.state, Exchange(
            turn=self.state.turn + 1, session=self.state.session, phase=self.state.phase, sent=text,
            reply=reply.bubbles, signal=reply.signal, reply_seconds=round(reply.seconds, 3),
            typed=pending.typed if pending is not None else 1,
            activity=[AgentActivity(kind=a.kind, title=a.title, text=a.text) for a in reply.activity]))
        self.state.turn += 1
        self.state.agent_notices += [AgentNotice(turn=self.state.turn, session=self.state.session, text=n)
                                     for n in reply.notices]
        self.state.repaired_chars += reply.repaired
        if self.state.sessions:
            self.state.sessions[-1].url = self.driver.session_url
        self.state.pending = None

    async def new_session(self, phase: int) -> None:
        """bench.newSession(): once per phase entry, even when a restart re-runs the phase's JS block."""
        last = self.state.sessions[-1] if self.state.sessions else None
        if last is not None and last.reason == "newSession" and last.started_turn == self.state.turn \
                and last.opened_in_phase == phase:
            return
        try:
            info = await self.driver.new_session()
        finally:
            self._count_commands()
        crash_point("session.opened")
        self.state.sessions.append(AgentSession(index=len(self.state.sessions), url=info.url,
                                                started_turn=self.state.turn, reason="newSession",
                                                reset_sign=info.reset_sign, opened_in_phase=phase))
        self.save()

    def _count_commands(self) -> None:
        """Commands the driver typed ('/new', START) go into the state's count (saved with the next save)."""
        typed = self.driver.commands_typed
        self.state.sends.commands += max(typed - self._commands_seen, 0)
        self._commands_seen = typed

    # -- the journal: each step of the pending message, saved before the next one -------------------

    async def resending(self, why: str) -> None:
        self._resend_why = why

    async def submitting(self) -> None:
        crash_point("send.typing")
        pending = self.state.pending
        if pending is not None:
            pending.status = "submitted"
            pending.typed += 1
            self.state.sends.typed += 1
            if self._resend_why is not None:
                self.state.sends.resent.append(f"turn {pending.turn}: {self._resend_why}"[:300])
                self._resend_why = None
            self.save()

    async def shown(self) -> None:
        if self.state.pending is not None:
            self.state.pending.status = "sent"
            self.save()
            crash_point("send.sent")

    async def not_taken(self, why: str) -> None:
        pending = self.state.pending
        if pending is not None and pending.not_taken < pending.typed:
            pending.not_taken += 1
            self.state.sends.not_taken += 1
            log.info("turn %d: %s", pending.turn, why)
            self.save()
