"""Named crash points for the kill -9 tests: SIGKILL this process at an exact spot, on request.

`MMB_CRASH_AT=NAME#N` kills the process the N-th time (default 1st) it reaches `crash_point(NAME)`,
so a test can stop a run exactly mid-save, right after a message left, while a reply streams...
Several, comma-separated, arm several points: the first to come kills. `MMB_CRASH_LOG=FILE` gets the
name of the point appended first, so a test knows where each kill happened. Unset (always, outside
tests) each point costs one dict lookup. When the process leads its own
process group (tests start mmb with start_new_session), the whole group dies at once, like a machine
losing power: the in-process demo agent and Chromium go with it.
"""

from __future__ import annotations

import os
import signal

ENV = "MMB_CRASH_AT"
LOG_ENV = "MMB_CRASH_LOG"

# Every point, so tests can draw from them and a typo in a test fails loudly.
POINTS = (
    "model.answered",        # the persona model answered; nothing of it saved
    "tool.ran",              # a tool changed the state; its result not saved yet
    "send.typing",           # the message is journaled as typing; not typed yet
    "send.sent",             # the UI shows it sent (journaled); the agent is replying
    "reply.received",        # the whole reply is back; not recorded yet
    "transcript.appended",   # the exchange is in transcript.jsonl; the state that counts it is not saved
    "session.opened",        # a new chat was opened on the agent; not saved yet
    "save.written",          # mid-save: the new state is in its temp file, not yet renamed over state.json
    "save.renamed",          # the new state.json is in place; the directory not yet fsynced
)
# At a run's end, after the playing that the kill soak covers (tests/test_report_completion.py).
END_POINTS = (
    "run.ended",             # the run's end (finished, failed...) is saved; none of its reports written
    "report.appended",       # its report.md entry is written; report.html and the leaderboard not yet
)

_remaining: dict[str, int] | None = None


def _armed() -> dict[str, int]:
    global _remaining
    if _remaining is None:
        _remaining = {}
        for spec in filter(None, (s.strip() for s in os.environ.get(ENV, "").split(","))):
            name, _, count = spec.partition("#")
            if name not in POINTS + END_POINTS:
                raise ValueError(f"{ENV}: unknown crash point {name!r} (known: {', '.join(POINTS + END_POINTS)})")
            _remaining[name] = int(count or 1)
    return _remaining


def crash_point(name: str) -> None:
    armed = _armed()
    if name not in armed:
        return
    armed[name] -= 1
    if armed[name] > 0:
        return
    if log := os.environ.get(LOG_ENV):
        with open(log, "a", encoding="utf-8") as f:
            f.write(name + "\n")
            f.flush()
            os.fsync(f.fileno())
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
