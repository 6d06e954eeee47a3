"""The frame that holds the chat: the page itself, or an iframe (nested ones too, cross-origin included).

Help-desk widgets and agent-builder embeds run their chat inside an iframe that only works in its
host page (it waits for the host's init message, a site token, a parent origin), so the driver opens
the host page and works inside the frame. A profile names the frame as a chain of steps, outermost
first; each step is either

* a selector of the `<iframe>` element within the frame found so far (`"iframe.chat"`,
  `"#outer"`; Playwright's syntax allowed, shadow roots pierced), or
* `url=<glob>`: the first frame inside the one found so far whose address matches the glob
  (`"url=*://widget.example.com/*"`), for a frame with no stable element to point at.

Every operation of the driver asks `ChatScope.frame()` for the frame and gets it found again when the
old one was detached (a widget that re-creates its iframe on New chat, a reloaded host page). A frame
that navigates within itself stays the same Frame object (Playwright follows it).
"""

from __future__ import annotations

import asyncio
import fnmatch
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, FrameLocator, Page

URL_STEP = "url="
_POLL_S = 0.1


class FrameNotFound(Exception):
    """A step of the frame chain found no frame (yet): which step, and what the page had instead."""


def frame_steps(spec: str | list[str] | None) -> list[str]:
    """The profile's `frame` as a list of steps (a single selector is a chain of one)."""
    if spec is None:
        return []
    return [spec] if isinstance(spec, str) else list(spec)


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else url


def is_inside(frame: Frame, ancestor: Frame) -> bool:
    node: Frame | None = frame.parent_frame
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent_frame
    return False


async def _step(current: Frame, step: str) -> Frame:
    if step.startswith(URL_STEP):
        pattern = step[len(URL_STEP):]
        for frame in current.page.frames:
            if is_inside(frame, current) and not frame.is_detached() and fnmatch.fnmatchcase(frame.url, pattern):
                return frame
        raise FrameNotFound(f"no frame inside {_name(current)} has an address matching {pattern!r}")
    try:
        handles = await current.locator(step).element_handles()
    except PlaywrightError as e:
        raise FrameNotFound(f"frame selector {step!r}: {str(e).splitlines()[0]}") from None
    if not handles:
        raise FrameNotFound(f"frame selector {step!r} matches nothing in {_name(current)}")
    for handle in handles:
        frame = await handle.content_frame()
        if frame is not None and not frame.is_detached():
            return frame
    raise FrameNotFound(f"frame selector {step!r} matches {len(handles)} element(s) in {_name(current)}, none of them "
                        "an iframe with a document")


def _name(frame: Frame) -> str:
    return "the page" if frame.parent_frame is None else f"the frame at {origin(frame.url)}"


class ChatScope:
    """Where the chat lives in a page: the frame the steps lead to, found again when it was replaced."""

    def __init__(self, page: Page, steps: list[str]):
        self.page = page
        self.steps = steps
        self._frame: Frame | None = None if steps else page.main_frame

    @property
    def framed(self) -> bool:
        return bool(self.steps)

    def current(self) -> Frame | None:
        """The frame found last, if it is still attached (no waiting)."""
        if self._frame is not None and self._frame.is_detached():
            self._frame = None
        return self._frame

    async def find(self) -> Frame:
        """The chat's frame now; FrameNotFound when a step finds nothing at this moment."""
        frame = self.current()
        if frame is not None:
            return frame
        frame = self.page.main_frame
        for step in self.steps:
            frame = await _step(frame, step)
        self._frame = frame
        return frame

    async def frame(self, timeout_s: float = 0.0) -> Frame:
        """The chat's frame, waited for up to `timeout_s` (a widget may add its iframe a moment after the page loads)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return await self.find()
            except FrameNotFound:
                if time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(_POLL_S)

    def frame_locator(self) -> FrameLocator | None:
        """The frame as a FrameLocator (for page-wide handlers); None when a step is a URL pattern or there is none."""
        if not self.steps or any(s.startswith(URL_STEP) for s in self.steps):
            return None
        located: Page | FrameLocator = self.page
        for step in self.steps:
            located = located.frame_locator(step)
        return located  # type: ignore[return-value]


@dataclass
class FrameInfo:
    """One frame of a page, as `mmb probe` and `mmb discover` list them."""

    url: str
    depth: int  # 0: the page itself
    cross_origin: bool  # another origin than the page's: out-of-process, and what a widget often is
    name: str = ""
    chat: bool = False  # the frame the profile drives

    def describe(self) -> str:
        where = "the page" if self.depth == 0 else ("  " * (self.depth - 1)) + "frame"
        tags = [t for t in ("cross-origin" if self.cross_origin else "", f"name {self.name!r}" if self.name else "",
                            "HOLDS THE CHAT" if self.chat else "") if t]
        return f"{where} {self.url}" + (f" ({', '.join(tags)})" if tags else "")


def list_frames(page: Page, chat: Frame | None = None) -> list[FrameInfo]:
    """Every attached frame of the page, in tree order, the chat's marked."""
    top = origin(page.main_frame.url)
    out: list[FrameInfo] = []

    def visit(frame: Frame, depth: int) -> None:
        if frame.is_detached():
            return
        out.append(FrameInfo(url=frame.url, depth=depth, cross_origin=origin(frame.url) != top, name=frame.name,
                             chat=frame is chat))
        for child in frame.child_frames:
            visit(child, depth + 1)

    visit(page.main_frame, 0)
    return out
