"""The ASGI app of `mmb view` (Starlette): the results folder's pages at the addresses they have as
files, rendered live, and a stream of server-sent events per open page.

    /, /index.html          every run (index.html)
    /leaderboard.html       the leaderboard
    /<run>/report.html      a run's page (report.html), for a run that is still going too
    /<run>/<file>           the run's traces, screenshots and videos, as its page links them
    /compare.html?a=&b=     two runs compared check by check
    /_live/events?...       the page's updates

Relative links between the pages work as they do on disk. One task polls the folder (watch.py) while
anyone watches, every `poll_s`, and wakes each stream when something changed; a stream sends its
page only the fragments that changed since its last event (or since the page was served: the page
leaves the hashes of what it holds under a token). At most `max_clients` streams at once; a page
beyond that is told so and stays as it was served.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from persona.report.live.pages import Built, Pages
from persona.report.live.watch import Watcher
from persona.state import STATE_FILE

log = logging.getLogger(__name__)

POLL_S = 0.5  # a change on disk shows within about this, plus the time to render it
KEEPALIVE_S = 15  # a comment line this often on an idle stream, so a closed tab is noticed
MAX_CLIENTS = 32
TOKENS = 256  # what the last pages served hold (by token), so a stream that reconnects sends only what changed


class Hub:
    """The one poll loop, and the streams that wait on it."""

    def __init__(self, watcher: Watcher, poll_s: float = POLL_S, max_clients: int = MAX_CLIENTS):
        self.watcher, self.poll_s, self.max_clients = watcher, poll_s, max_clients
        self.clients = 0
        self.refused = 0
        self.stopping = False
        self._changed = asyncio.Event()  # set and replaced at each change: everyone waiting wakes
        self._poll_lock = asyncio.Lock()
        self._task: asyncio.Task | None = None

    async def refresh(self) -> None:
        """Look at the folder now (a page being served shows what is on disk)."""
        async with self._poll_lock:
            changed = await asyncio.to_thread(self.watcher.poll)
        if changed:
            self._changed.set()
            self._changed = asyncio.Event()

    async def _loop(self) -> None:
        while self.clients and not self.stopping:
            try:
                await self.refresh()
            except Exception:  # a folder that vanished, a disk error: said, and tried again next time
                log.exception("mmb view: reading %s failed", self.watcher.results_dir)
            await asyncio.sleep(self.poll_s)
        self._task = None

    def join(self) -> bool:
        """A stream starts; False when there are too many."""
        if self.clients >= self.max_clients:
            self.refused += 1
            log.warning("mmb view: a page was refused live updates: %d streams open already (the most)", self.clients)
            return False
        self.clients += 1
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())
        return True

    def leave(self) -> None:
        self.clients -= 1

    async def wait(self, seen: int, timeout: float) -> bool:
        """Until the folder's version is past `seen`, the server stops, or `timeout`; True when it changed."""
        if self.watcher.version != seen:
            return True
        changed = self._changed
        try:
            await asyncio.wait_for(changed.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def stop(self) -> None:
        """The server is stopping: every stream ends."""
        self.stopping = True
        self._changed.set()


class Sent(OrderedDict[str, dict[str, int]]):
    """What each served page holds, by token: fragment id -> hash of its HTML. The oldest go first."""

    def keep(self, token: str, hashes: dict[str, int]) -> None:
        self[token] = hashes
        self.move_to_end(token)
        while len(self) > TOKENS:
            self.popitem(last=False)


def hashes(built: Built) -> dict[str, int]:
    return {f.id: hash(f.html) for f in built.fragments}


def event(name: str, data: object) -> str:
    """One server-sent event; json.dumps writes no raw line break, so the data is one line."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def safe_file(folder: Path, rel: str) -> Path | None:
    """`rel` inside the run folder, a file, not hidden, not reached through a link out of it; else None."""
    parts = Path(rel).parts
    if "\0" in rel or not parts or Path(rel).is_absolute() or any(p.startswith(".") for p in parts):
        return None
    try:
        path = (folder / rel).resolve()
        return path if path.is_relative_to(folder.resolve()) and path.is_file() else None
    except (OSError, ValueError):  # a name too long, a loop of links
        return None


def create_app(pages: Pages, hub: Hub) -> Starlette:
    sent = Sent()

    def page_key(params: dict[str, str]) -> tuple[str, ...]:
        kind = params.get("page", "")
        if kind == "run":
            return ("run", params.get("run", ""))
        if kind == "compare":
            return ("compare", params.get("a", ""), params.get("b", ""))
        return (kind,)

    async def build(key: tuple[str, ...]) -> Built | None:
        if key[0] == "index":
            return await asyncio.to_thread(pages.index)
        if key[0] == "leaderboard":
            return await asyncio.to_thread(pages.leaderboard)
        if key[0] == "run":
            return await asyncio.to_thread(pages.run, key[1])
        if key[0] == "compare":
            return await asyncio.to_thread(pages.compare, key[1], key[2])
        return None

    async def serve(key: tuple[str, ...], **params: str) -> Response:
        await hub.refresh()
        built = await build(key)
        if built is None:
            return PlainTextResponse(f"no run {key[1]!r} in {pages.watcher.results_dir}", status_code=404)
        token = secrets.token_urlsafe(9)
        sent.keep(token, hashes(built))
        live = {"events": "/_live/events?" + urlencode({"page": key[0], **params, "token": token})}
        return HTMLResponse(await asyncio.to_thread(built.page, live), headers={"Cache-Control": "no-store"})

    async def index(request: Request) -> Response:
        return await serve(("index",))

    async def leaderboard(request: Request) -> Response:
        return await serve(("leaderboard",))

    async def compare(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        return await serve(("compare", a, b), a=a, b=b)

    async def run_page(request: Request) -> Response:
        run = request.path_params["run"]
        return await serve(("run", run), run=run)

    async def run_file(request: Request) -> Response:
        run, rel = request.path_params["run"], request.path_params["path"]
        folder = pages.watcher.results_dir / run
        is_run = not run.startswith(".") and "/" not in run and (folder / STATE_FILE).is_file()
        path = safe_file(folder, rel) if is_run else None
        if path is None:
            return PlainTextResponse("not found", status_code=404)
        return FileResponse(path)

    async def events(request: Request) -> Response:
        key = page_key(dict(request.query_params))
        token = request.query_params.get("token", "")
        if key[0] not in ("index", "leaderboard", "run", "compare"):
            return PlainTextResponse("unknown page", status_code=400)

        async def stream() -> AsyncIterator[str]:
            if not hub.join():
                yield event("refused", {"reason": f"{hub.max_clients} pages are being followed already (the most)"})
                return
            try:
                held = sent.get(token, {})
                seen = -1
                yield "retry: 1000\n\n"
                while not hub.stopping:
                    if hub.watcher.version != seen:
                        seen = hub.watcher.version
                        built = await build(key)
                        if built is not None:
                            now = hashes(built)
                            fragments = [{"id": f.id, "html": f.html, "parent": f.parent} for f in built.fragments
                                         if held.get(f.id) != now[f.id]]
                            drop = [i for i in held if i not in now]
                            if fragments or drop:
                                yield event("update", {"fragments": fragments, "drop": drop})
                            held = now
                            sent.keep(token, held)
                    elif not await hub.wait(seen, KEEPALIVE_S):
                        yield ": still here\n\n"
                yield event("bye", {})
            finally:
                hub.leave()

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    routes = [
        Route("/", index), Route("/index.html", index), Route("/leaderboard.html", leaderboard),
        Route("/compare.html", compare), Route("/_live/events", events),
        Route("/{run}/report.html", run_page), Route("/{run}/{path:path}", run_file),
    ]
    return Starlette(routes=routes)
