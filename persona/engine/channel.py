"""The agent under test as the persona loop sees it: messages out, replies in, sessions, all recorded.

Sending is journaled so a restart never sends a message twice: the state records the message as
`typing` before it is typed and as `sent` once the UI shows it; on restart the driver looks for it
in the chat and, if it is there, waits for its reply instead of sending it again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from drivers.base import ChatDriver, Reply
from persona.crashpoints import crash_point
from persona.state import AgentNotice, AgentSession, Exchange, PendingSend, RunState, RunStore

log = logging.getLogger(__name__)
Save = Callable[[], None]


class AgentChannel:
    def __init__(self, driver: ChatDriver, state: RunState, store: RunStore, save: Save):
        self.driver = driver
        self.state = state
        self.store = store
        self.save = save

    async def open(self) -> None:
        """Open the current session's chat, or a first one."""
        current = self.state.sessions[-1] if self.state.sessions else None
        info = await self.driver.open(current.url if current else None, session_index=max(self.state.session, 0))
        if current is None:
            self.state.sessions.append(AgentSession(index=0, url=info.url, started_turn=0, reason="start"))
            self.save()

    async def say(self, text: str) -> Reply:
        """Send a message and return the reply; the caller records it (see `record`) and saves."""
        self.state.pending = PendingSend(text=text, turn=self.state.turn + 1,
                                         user_messages_before=await self.driver.user_message_count())
        self.save()
        crash_point("send.typing")
        reply = await self.driver.send(text, on_sent=self._mark_sent)
        crash_point("reply.received")
        return reply

    async def resume_pending(self) -> Reply:
        """Finish the message a restart interrupted: collect its reply, or send it if it never left."""
        pending = self.state.pending
        assert pending is not None
        reply = await self.driver.recover(pending.text, pending.user_messages_before)
        if reply is not None:
            crash_point("reply.received")
            return reply
        if pending.status == "sent":
            log.warning("resume: the chat does not show the message sent before the restart; sending it again")
        self.state.pending = None
        return await self.say(pending.text)

    def record(self, text: str, reply: Reply) -> None:
        """Account for a reply in the state (no save: the caller saves it together with its message).
        The transcript line comes first: if it cannot be written, the state still has the message pending
        (a restart takes its reply from the chat) and counts no turn that the transcript lacks."""
        self.store.append_exchange(self.state, Exchange(
            turn=self.state.turn + 1, session=self.state.session, phase=self.state.phase, sent=text,
            reply=reply.bubbles, signal=reply.signal, reply_seconds=round(reply.seconds, 3)))
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
        info = await self.driver.new_session()
        crash_point("session.opened")
        self.state.sessions.append(AgentSession(index=len(self.state.sessions), url=info.url,
                                                started_turn=self.state.turn, reason="newSession",
                                                reset_sign=info.reset_sign, opened_in_phase=phase))
        self.save()

    async def _mark_sent(self) -> None:
        if self.state.pending is not None:
            self.state.pending.status = "sent"
            self.save()
            crash_point("send.sent")

