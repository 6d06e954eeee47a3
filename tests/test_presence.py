"""Where is a message we typed? The rule that decides whether typing it again is safe (drivers/base.py)."""

from __future__ import annotations

import pytest

from drivers.base import ChatBefore, presence

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
