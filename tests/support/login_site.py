"""A site that logs you in the way chat UIs do: an HttpOnly cookie, localStorage and IndexedDB.

GET /login sets all three (the secrets passed in) and then shows `#ready`; GET /check shows what
the browser brought back: `#cookie` (from the request), `#local` and `#idb` (read in the page).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.http_reply import respond

_LOGIN = """<!doctype html><title>login</title><p>logging in…</p><script>
localStorage.setItem("token", %(local)s);
const open = indexedDB.open("app", 1);
open.onupgradeneeded = () => open.result.createObjectStore("session", {keyPath: "id"});
open.onsuccess = () => {
  const tx = open.result.transaction("session", "readwrite");
  tx.objectStore("session").put({id: "auth", key: %(idb)s});
  tx.oncomplete = () => { const d = document.createElement("div"); d.id = "ready"; d.textContent = "logged in";
                          document.body.append(d); };
};
</script>"""

_CHECK = """<!doctype html><title>check</title><div id="cookie">%(cookie)s</div><div id="local"></div>
<div id="idb"></div><textarea id="box"></textarea><script>
document.getElementById("local").textContent = localStorage.getItem("token") || "";
const open = indexedDB.open("app", 1);
open.onupgradeneeded = () => open.result.createObjectStore("session", {keyPath: "id"});
open.onsuccess = () => {
  const get = open.result.transaction("session").objectStore("session").get("auth");
  get.onsuccess = () => { const el = document.getElementById("idb"); el.textContent = get.result ? get.result.key : "";
                          el.dataset.read = "1"; };
};
</script>"""


class LoginSite:
    def __init__(self, *, cookie: str, local: str, idb: str):
        self.secrets = {"cookie": cookie, "local": local, "idb": idb}
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> LoginSite:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                headers = {}
                if self.path == "/login":
                    body = _LOGIN % {k: json.dumps(v) for k, v in site.secrets.items()}
                    headers["Set-Cookie"] = f"sid={site.secrets['cookie']}; HttpOnly; Path=/; Max-Age=3600"
                elif self.path == "/check":
                    cookies = dict(c.strip().split("=", 1) for c in (self.headers.get("Cookie") or "").split(";") if "=" in c)
                    body = _CHECK % {"cookie": cookies.get("sid", "")}
                else:
                    self.send_error(404)
                    return
                respond(self, 200, body.encode(), "text/html; charset=utf-8", headers)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
