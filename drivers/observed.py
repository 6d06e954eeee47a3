"""What a run learns about the chat page while it plays: facts a profile can only claim.

One `Observed` per run, shared by every driver built for it (a crashed browser's new context
included), so what was seen once holds for the rest of the run:

* whether the chat keeps its messages when reopened, seen on the first reload after a confirmed
  exchange (our message shown, its reply complete). Until then a reopened chat that shows none of
  ours proves nothing, and a message is not typed again on that alone;
* whether the profile's busy marker ever showed: one that shows on none of the first replies no
  longer matches the page (a class name a build tool made, changed by a redeploy), and the replies
  were judged by their text staying still alone. That is said once, not dropped silently.

Each finding is said once through `on_event` (the run's log and report) and the driver's logger.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

MARKER_REPLIES = 3  # a busy marker unseen on this many first replies is said


@dataclass
class Observed:
    keeps_history: bool | None = None  # None: no reload after a confirmed exchange yet
    history_why: str = ""
    replies: int = 0  # replies complete so far, and of them how many showed the busy marker
    busy_seen: int = 0
    on_event: Callable[[str], None] | None = None
    _said: set[str] = field(default_factory=set)

    def say(self, key: str, message: str) -> None:
        """A finding, said once per run."""
        if key in self._said:
            return
        self._said.add(key)
        log.warning("%s", message)
        if self.on_event is not None:
            self.on_event(message)

    def history(self, kept: bool, why: str, claimed: bool | None) -> None:
        """The first reload after a confirmed exchange showed whether the chat keeps its messages."""
        if self.keeps_history is not None:
            return
        self.keeps_history, self.history_why = kept, why
        contradicts = claimed is not None and claimed != kept
        self.say("history", f"the chat {'keeps' if kept else 'does not keep'} its messages when reopened: {why}"
                            + (f" (the profile said keeps_history {str(claimed).lower()}: the page wins)"
                               if contradicts else ""))

    def reply(self, busy_selector: str | None, busy_seen: bool) -> None:
        """A reply complete; a busy marker unseen on each of the first ones is said."""
        self.replies += 1
        self.busy_seen += busy_seen
        if busy_selector and self.replies == MARKER_REPLIES and not self.busy_seen:
            self.say("busy", f"the busy marker {busy_selector!r} (selectors.busy) showed on none of the first "
                             f"{MARKER_REPLIES} replies: each was judged complete by its text staying still alone. If "
                             "the page shows a marker while the agent works, the selector no longer matches it (class "
                             "names a build tool made change with each deploy: use a stable attribute or a prefix, "
                             "e.g. [class*=\"stopButton-\"])")
