"""Playwright traces: one trace.zip per chat session, a group per turn, kept on failure or always.

Each finished trace is scrubbed (trace_scrub): cookies, credential headers and the login's secret
values never stay in a trace.zip. A trace that cannot be written (a full disk) is a warning, never a
fault of the chat: its partial file is removed and tracing stops for the rest of the run.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Literal

from playwright.async_api import BrowserContext
from playwright.async_api import Error as PlaywrightError

from .trace_scrub import scrub_trace, storage_secrets

log = logging.getLogger(__name__)

TraceMode = Literal["off", "on", "retain-on-failure"]


class SessionTracer:
    def __init__(self, context: BrowserContext, folder: Path, mode: TraceMode, *, secrets: tuple[str, ...] = ()):
        self.context = context
        self.secrets = secrets
        self.folder = folder
        self.mode = mode
        self.files: list[Path] = []
        self._chunk: Path | None = None
        self._in_group = False
        self._started = False
        self.failed: str | None = None  # why tracing stopped early: a trace could not be written

    @property
    def active(self) -> bool:
        return self.mode != "off"

    async def start(self, session_index: int) -> None:
        """Tracing on, and this session's chunk begun; again after a failed first open, it keeps what
        is running (Playwright refuses a second start, which hid the error that made us retry)."""
        if not self.active:
            return
        if not self._started:
            self.folder.mkdir(parents=True, exist_ok=True)
            await self.context.tracing.start(screenshots=True, snapshots=True, sources=False,
                                             title=f"session {session_index}")
            self._started = True
        if self._chunk is None:
            await self.context.tracing.start_chunk(title=f"session {session_index}")
            self._chunk = self._free_name(session_index)

    async def next_session(self, session_index: int) -> None:
        """Close this session's trace and begin the next one's."""
        if not self.active:
            return
        await self._stop_chunk()
        if not self.active:  # its trace could not be written: tracing stopped
            return
        await self.context.tracing.start_chunk(title=f"session {session_index}")
        self._chunk = self._free_name(session_index)

    async def group(self, name: str) -> None:
        if self.active:
            await self.end_group()
            await self.context.tracing.group(name)
            self._in_group = True

    async def end_group(self) -> None:
        if self.active and self._in_group:
            await self.context.tracing.group_end()
            self._in_group = False

    async def finish(self, failed: bool) -> list[Path]:
        """Stop tracing; in retain-on-failure mode a run that went well keeps no traces."""
        if not self._started:
            return []
        await self._stop_chunk()
        await self.context.tracing.stop()
        self._started = False
        if self.mode == "retain-on-failure" and not failed:
            for f in self.files:
                f.unlink(missing_ok=True)
            self.files = []
        for f in self.files:
            log.info("trace: %s", show_trace_command(f))
        return self.files

    async def _stop_chunk(self) -> None:
        await self.end_group()
        if self._chunk is None:
            return
        chunk, self._chunk = self._chunk, None
        try:
            stored = await storage_secrets(self.context)  # read while the context still holds them
            await self.context.tracing.stop_chunk(path=str(chunk))
            scrub_trace(chunk, (*self.secrets, *stored))
        except (PlaywrightError, OSError) as e:
            with contextlib.suppress(OSError):
                chunk.unlink(missing_ok=True)  # a partial zip, or one not scrubbed of secrets yet
            await self._stop_early(chunk, e)
            return
        self.files.append(chunk)

    async def _stop_early(self, chunk: Path, error: BaseException) -> None:
        """A trace that could not be written: said once, and no more tracing in this chat (each later one
        would meet the same disk)."""
        self.failed = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
        log.warning("trace %s not written (%s); tracing stops for the rest of this run", chunk.name, self.failed)
        self.mode = "off"
        self._in_group = False
        if self._started:
            self._started = False
            try:
                await self.context.tracing.stop()
            except PlaywrightError as e:
                log.debug("stopping the trace: %s", e)

    def _free_name(self, session_index: int) -> Path:
        """session-2.trace.zip, or session-2.part2.trace.zip when a restart resumes session 2."""
        path, part = self.folder / f"session-{session_index}.trace.zip", 1
        while path.exists():
            part += 1
            path = self.folder / f"session-{session_index}.part{part}.trace.zip"
        return path


def show_trace_command(path: Path) -> str:
    """The command that opens a trace; without a browser of Playwright's own, as a local web viewer."""
    from .playwright_home import has_playwright_chromium

    if has_playwright_chromium():
        return f"playwright show-trace {path}"
    return f"playwright show-trace --host 127.0.0.1 --port 9323 {path}  (then open http://127.0.0.1:9323)"
