"""A real Matrix homeserver for the messenger tests: Synapse from PyPI, on 127.0.0.1, offline.

Synapse (`matrix-synapse`) goes into its own venv under `.frontends/synapse` like the Python
frontends (tests/support/frontends.py) and runs in its own process group, stopped with it. Its
configuration is the smallest that serves the client-server API: SQLite, one listener on
127.0.0.1 with the client resource only (no federation listener, no key servers, no URL previews,
no stats), rate limits raised for a scripted tester, registration closed except through the
shared secret (the admin API `register_new_matrix_user` uses), which is how the tester and the
bot get their accounts.

`Homeserver` also speaks the client-server API with urllib, for what a test sets up or checks
outside the web client: the DM room between the tester and the bot, and the room's events as
Synapse stored them (the ground truth a run's transcript is compared with).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.frontends import Frontend, Launch, install, start

SYNAPSE_VERSION = "1.163.2"
SERVER_NAME = "mmb.test"  # never resolved: no federation


@dataclass(frozen=True)
class Account:
    user_id: str
    access_token: str
    device_id: str
    password: str


class MatrixError(RuntimeError):
    pass


class Homeserver:
    """A running Synapse: its base URL, and the client-server calls the tests make."""

    def __init__(self, url: str, shared_secret: str, log: Path) -> None:
        self.url = url.rstrip("/")
        self._secret = shared_secret
        self.log = log

    # -- plain HTTP --------------------------------------------------------------------------

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, token: str | None = None,
             query: dict[str, str] | None = None) -> dict[str, Any]:
        url = self.url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json",
                                                  **({"Authorization": f"Bearer {token}"} if token else {})})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as e:
            raise MatrixError(f"{method} {path}: {e.code} {e.read()[:300]!r}") from None

    # -- accounts ----------------------------------------------------------------------------

    def register(self, localpart: str, *, admin: bool = False) -> Account:
        """A new user through the shared-secret registration (what register_new_matrix_user does)."""
        password = secrets.token_urlsafe(18)
        nonce = self.call("GET", "/_synapse/admin/v1/register")["nonce"]
        mac = hmac.new(self._secret.encode(), digestmod=hashlib.sha1)
        mac.update(b"\x00".join([nonce.encode(), localpart.encode(), password.encode(),
                                 b"admin" if admin else b"notadmin"]))
        done = self.call("POST", "/_synapse/admin/v1/register",
                         {"nonce": nonce, "username": localpart, "password": password, "admin": admin,
                          "mac": mac.hexdigest()})
        return Account(done["user_id"], done["access_token"], done["device_id"], password)

    def set_display_name(self, account: Account, name: str) -> None:
        self.call("PUT", f"/_matrix/client/v3/profile/{_q(account.user_id)}/displayname", {"displayname": name},
                  token=account.access_token)

    # -- rooms -------------------------------------------------------------------------------

    def create_dm(self, owner: Account, peer: Account, *, encrypted: bool) -> str:
        """A direct-message room of `owner` with `peer` invited, marked direct in owner's m.direct,
        as a client's "start a DM" makes it (trusted_private_chat; encrypted like Element's DMs when asked)."""
        state = [{"type": "m.room.encryption", "state_key": "",
                  "content": {"algorithm": "m.megolm.v1.aes-sha2"}}] if encrypted else []
        room = self.call("POST", "/_matrix/client/v3/createRoom",
                         {"preset": "trusted_private_chat", "is_direct": True, "invite": [peer.user_id],
                          "initial_state": state}, token=owner.access_token)["room_id"]
        direct = {peer.user_id: [room]}
        self.call("PUT", f"/_matrix/client/v3/user/{_q(owner.user_id)}/account_data/m.direct", direct,
                  token=owner.access_token)
        return room

    def joined_members(self, room: str, account: Account) -> list[str]:
        return list(self.call("GET", f"/_matrix/client/v3/rooms/{_q(room)}/joined_members",
                              token=account.access_token)["joined"])

    def events(self, room: str, account: Account) -> list[dict[str, Any]]:
        """Every timeline event of the room as Synapse stored it, oldest first (paged /messages)."""
        found: list[dict[str, Any]] = []
        query = {"dir": "f", "limit": "100"}
        while True:
            page = self.call("GET", f"/_matrix/client/v3/rooms/{_q(room)}/messages", token=account.access_token,
                             query=query)
            found += page.get("chunk", [])
            if not page.get("end") or not page.get("chunk"):
                return found
            query = {**query, "from": page["end"]}

    def is_encrypted(self, room: str, account: Account) -> bool:
        try:
            self.call("GET", f"/_matrix/client/v3/rooms/{_q(room)}/state/m.room.encryption/", token=account.access_token)
            return True
        except MatrixError as e:
            if " 404 " in str(e):
                return False
            raise


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


# -- install and start ----------------------------------------------------------------------------

def _config(launch: Launch, shared_secret: str) -> str:
    """homeserver.yaml (JSON is YAML): the smallest offline single-listener setup."""
    work = launch.workdir
    loose = {"per_second": 1000, "burst_count": 1000}
    return json.dumps({
        "server_name": SERVER_NAME,
        "public_baseurl": f"http://127.0.0.1:{launch.port}/",
        "pid_file": str(work / "homeserver.pid"),
        "listeners": [{"port": launch.port, "bind_addresses": ["127.0.0.1"], "type": "http", "tls": False,
                       "x_forwarded": False, "resources": [{"names": ["client"], "compress": False}]}],
        "database": {"name": "sqlite3", "args": {"database": str(work / "homeserver.db")}},
        "media_store_path": str(work / "media_store"),
        "signing_key_path": str(work / "signing.key"),
        "registration_shared_secret": shared_secret,
        "enable_registration": False,
        "macaroon_secret_key": secrets.token_hex(16),
        "form_secret": secrets.token_hex(16),
        "report_stats": False,
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "federation_domain_whitelist": [],
        "url_preview_enabled": False,
        "enable_metrics": False,
        "presence": {"enabled": False},
        "rc_message": loose, "rc_registration": loose, "rc_joins": {"local": loose, "remote": loose},
        "rc_invites": {"per_room": loose, "per_user": loose, "per_issuer": loose},
        "rc_login": {"address": loose, "account": loose, "failed_attempts": loose},
        "rc_key_requests": loose, "rc_3pid_validation": loose, "rc_admin_redaction": loose,
    }, indent=1)


def synapse_frontend(shared_secret: str) -> Frontend:
    def command(bin: Path, launch: Launch) -> list[str]:
        config = launch.workdir / "homeserver.yaml"
        config.write_text(_config(launch, shared_secret))
        # the server's signing key, made once by Synapse itself before it starts
        subprocess.run([str(bin / "python"), "-m", "synapse.app.homeserver", "-c", str(config), "--generate-keys"],
                       check=True, capture_output=True, timeout=300, cwd=launch.workdir)
        return [str(bin / "python"), "-m", "synapse.app.homeserver", "-c", str(config)]

    return Frontend(name="synapse", requirements=(f"matrix-synapse=={SYNAPSE_VERSION}",), command=command,
                    ready_path="/health", ready_timeout_s=300)


def install_synapse():
    return install(synapse_frontend(""))


@contextlib.contextmanager
def homeserver(workdir: Path) -> Iterator[Homeserver]:
    """Synapse on 127.0.0.1 until the block ends, its process group stopped then."""
    shared_secret = secrets.token_hex(24)
    frontend = synapse_frontend(shared_secret)
    install(frontend)
    with start(frontend, model_url="", model="", workdir=workdir) as running:
        yield Homeserver(running.url, shared_secret, running.log)
