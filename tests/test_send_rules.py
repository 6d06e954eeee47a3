"""The rules of sending, without a browser: where a message we typed is (which decides whether typing
it again is safe, drivers/base.py), and how the report counts what was typed."""

from __future__ import annotations

import pytest

from drivers.base import ChatBefore, presence
from persona.report.markdown import typed_into_chat
from persona.state import PendingSend, RunState, SendCount

B = ChatBefore


@pytest.mark.parametrize("before, now, keeps, state", [
    (B(2, "I run."), B(3, "My cat is Tom."), True, "shown"),  # one more of ours, and it is this one
    (B(2, "I run."), B(2, "My cat is  Tom.\n"), True, "shown"),  # a virtualized list: the count stays, the last is ours
    (B(2, "I run."), B(2, "I run."), True, "absent"),  # our earlier messages as before, not this one
    (B(2, "I run."), B(1, "I run."), True, "absent"),  # a virtualized list shows fewer, the last still the earlier one
    (B(2, "I run."), B(0, None), True, "unknown"),  # the history is gone: cannot tell
    (B(2, "I run."), B(3, "Something else."), True, "unknown"),
    (B(0, None), B(0, None), True, "absent"),  # a chat that keeps its messages still shows none of ours
    (B(0, None), B(0, None), False, "unknown"),  # one that forgets them on reload proves nothing
    (B(0, None), B(1, "My cat is Tom."), False, "shown"),
    (B(1, "My cat is Tom."), B(1, "My cat is Tom."), True, "absent"),  # the same text again: the count decides
    (B(1, "My cat is Tom."), B(2, "My cat is Tom."), True, "shown"),
    (None, None, True, "unknown"),  # no user selector: no messages of ours to count
])
def test_presence(before, now, keeps, state):
    assert presence("My cat is Tom.", before, now, keeps_history=keeps).state == state


def state(turn: int, sends: SendCount, pending: PendingSend | None = None) -> RunState:
    return RunState(run_id="r", benchmark="b", driver="generic", persona_model="m", turn=turn, sends=sends, pending=pending)


def test_the_report_line_counts_every_typing_with_its_reasons():
    sends = SendCount(typed=7, not_taken=1, resent=["turn 2: the chat showed an error for it: 'Error'",
                                                    "turn 5: the chat shows our earlier messages ... it never arrived"],
                      commands=2)
    line = typed_into_chat(state(5, sends, PendingSend(text="x", turn=6, user_messages_before=5, typed=1)))
    assert line == ("7 persona message(s) typed, 1 of them shown by the chat never to have arrived, so 6 reached it; "
                    "5 answered, turn 6 awaiting its reply; typed again 2 time(s): turn 2: the chat showed an error "
                    "for it: 'Error'; turn 5: the chat shows our earlier messages ... it never arrived; "
                    "2 command(s) typed for new sessions")


def test_a_run_begun_before_typing_was_counted_says_so():
    assert typed_into_chat(state(12, SendCount(typed=3))) == "3 persona message(s) typed since mmb began counting them; 12 answered"
