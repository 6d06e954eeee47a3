"""Installing and starting real Node chat frontends (OpenClaw) for the integration tests.

Like tests/support/frontends.py does for Python frontends: each package goes into its own folder
under `.frontends/` (git-ignored, or $MMB_FRONTENDS_DIR), installed from the npm registry with
pinned versions and reused while the pins are unchanged. OpenClaw needs Node 24, which the npm
package `node` ships, so Node itself is installed the same way and put first on PATH.

The gateway runs with the process-group starter of frontends.py, in a throwaway HOME holding a
config written here, on 127.0.0.1, offline, against a local OpenAI-compatible model server.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.chat_model import ChatModel, text_of
from tests.support.frontends import Frontend, Launch, Running, _tail, frontends_dir, start

NODE = ("node@24.21.0",)  # OpenClaw 2026.9.6 requires >=24.16 <25 (or >=26.1); the npm `node` package ships it
OPENCLAW = ("openclaw@2026.9.6",)
MATRIX_PLUGIN = "npm:@openclaw/matrix@2026.9.6"  # OpenClaw's Matrix channel: a plugin of the same release
MODEL_PROVIDER = "mmb"


@dataclass
class NpmInstalled:
    home: Path
    seconds: float  # 0 when reused
    versions: dict[str, str]

    @property
    def bin(self) -> Path:
        return self.home / "node_modules" / ".bin"


def npm_install(name: str, packages: tuple[str, ...], *, path_first: Path | None = None,
                timeout_s: float = 1800) -> NpmInstalled:
    """`npm install` the pinned packages into .frontends/<name>/, or reuse what is there."""
    if shutil.which("npm") is None:
        raise RuntimeError("npm is not installed (Debian: apt-get install npm); the Node frontends need it")
    home = frontends_dir() / name
    home.mkdir(parents=True, exist_ok=True)
    stamp = home / "installed.json"
    with open(home / ".lock", "w") as lock:  # two test runs must not install into one folder at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and json.loads(stamp.read_text()).get("packages") == list(packages):
            return NpmInstalled(home, 0.0, json.loads(stamp.read_text())["versions"])
        stamp.unlink(missing_ok=True)
        started = time.monotonic()
        env = dict(os.environ)
        if path_first is not None:  # install scripts check the Node they run under
            env["PATH"] = f"{path_first}{os.pathsep}{env.get('PATH', '')}"
        log = home / "install.log"
        with open(log, "w") as out:
            done = subprocess.run(["npm", "install", "--prefix", str(home), "--no-audit", "--no-fund",
                                   "--loglevel=error", *packages], stdout=out, stderr=subprocess.STDOUT,
                                  env=env, timeout=timeout_s, cwd=home)
        if done.returncode != 0:
            raise RuntimeError(f"npm install {' '.join(packages)} failed; see {log}:\n{_tail(log)}")
        versions = {p.rsplit("@", 1)[0]: json.loads((home / "node_modules" / p.rsplit("@", 1)[0] / "package.json")
                                                    .read_text())["version"] for p in packages}
        seconds = time.monotonic() - started
        stamp.write_text(json.dumps({"packages": list(packages), "versions": versions, "seconds": round(seconds)}))
        return NpmInstalled(home, seconds, versions)


def esbuild_bundle(installed: NpmInstalled, entry: Path, out_name: str, args: tuple[str, ...], *,
                   timeout_s: float = 900) -> tuple[Path, float]:
    """`entry` bundled into one script by the esbuild installed in `installed`, as a site's build does:
    <home>/dist/<out_name> and the seconds it took (0 when reused: same packages, entry and args)."""
    home = installed.home
    source = entry.read_bytes()
    wanted = {"packages": installed.versions, "entry": hashlib.sha256(source).hexdigest(),
              "args": list(args)}
    out = home / "dist" / out_name
    with open(home / ".bundle.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = home / "bundled.json"
        if stamp.exists() and json.loads(stamp.read_text()).get("wanted") == wanted and out.exists():
            return out, 0.0
        started = time.monotonic()
        copy = f"entry{entry.suffix}"
        (home / copy).write_bytes(source)  # beside node_modules, where esbuild resolves imports from
        log = home / "bundle.log"
        with open(log, "w") as sink:
            done = subprocess.run([str(installed.bin / "esbuild"), copy, "--bundle", *args, f"--outfile={out}",
                                   "--log-level=warning"], stdout=sink, stderr=subprocess.STDOUT, timeout=timeout_s,
                                  cwd=home)
        if done.returncode != 0:
            raise RuntimeError(f"esbuild failed on {entry.name}; see {log}:\n{_tail(log)}")
        stamp.write_text(json.dumps({"wanted": wanted}))
        return out, time.monotonic() - started


@dataclass
class OpenClawInstall:
    node: NpmInstalled
    openclaw: NpmInstalled

    @property
    def seconds(self) -> float:
        return self.node.seconds + self.openclaw.seconds

    @property
    def versions(self) -> dict[str, str]:
        return {**self.node.versions, **self.openclaw.versions}


def install_openclaw() -> OpenClawInstall:
    node = npm_install("node24", NODE)
    return OpenClawInstall(node, npm_install("openclaw", OPENCLAW, path_first=node.bin))


@dataclass(frozen=True)
class MatrixChannel:
    """OpenClaw's Matrix channel: the bot's account on a homeserver, who may DM it, which rooms it joins."""

    homeserver: str
    user_id: str
    access_token: str  # given to the gateway in its environment, never written into its config
    device_id: str  # the token's device: the channel's Rust crypto needs it to set up E2EE
    allow_from: tuple[str, ...]
    rooms: tuple[str, ...]  # the invites it accepts
    encryption: bool
    chunk_chars: int = 4000  # an answer longer than this goes out as several messages (OpenClaw's textChunkLimit)

    def config(self) -> dict[str, Any]:
        return {
            "plugins": {"entries": {"matrix": {"enabled": True}}},
            "channels": {"matrix": {
                "enabled": True, "homeserver": self.homeserver, "userId": self.user_id, "deviceId": self.device_id,
                "network": {"dangerouslyAllowPrivateNetwork": True},  # the homeserver is on 127.0.0.1
                "encryption": self.encryption, "startupVerification": "off",
                # per-room: each DM its own session (shared, OpenClaw notices so in a second DM first)
                "dm": {"policy": "allowlist", "allowFrom": list(self.allow_from), "threadReplies": "off",
                       "sessionScope": "per-room"},
                "autoJoin": "allowlist", "autoJoinAllowlist": list(self.rooms),
                "textChunkLimit": self.chunk_chars,
            }},
        }


def install_matrix_plugin(installed: OpenClawInstall, home: Path, timeout_s: float = 900) -> float:
    """`openclaw plugins install` of the Matrix plugin into the gateway's home; its seconds.

    Only a plugin installed this way, from its npm package, is trusted with the gateway's keyed
    store, which the channel needs (loaded from a path, it exits at once). npm runs with
    ignore-scripts: the plugin's native crypto binding (@matrix-org/matrix-sdk-crypto-nodejs)
    downloads itself from a GitHub release on install, which cannot work here; the plugin needs it
    only to encrypt media, while messages use matrix-js-sdk's Rust crypto in WebAssembly, an npm
    package like any other.
    """
    started = time.monotonic()
    env = {**os.environ, "PATH": f"{installed.node.bin}{os.pathsep}{os.environ.get('PATH', '')}",
           "OPENCLAW_HOME": str(home), "OPENCLAW_NO_AUTO_UPDATE": "1", "npm_config_ignore_scripts": "true"}
    log = home / "plugin-install.log"
    with open(log, "w") as out:
        done = subprocess.run([str(installed.openclaw.bin / "openclaw"), "plugins", "install", MATRIX_PLUGIN, "--pin",
                               "--accept-capabilities"], stdout=out, stderr=subprocess.STDOUT, env=env,
                              timeout=timeout_s, cwd=home, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"openclaw plugins install {MATRIX_PLUGIN} failed; see {log}:\n{_tail(log)}")
    return time.monotonic() - started


def gateway_config(workdir: Path, model_url: str, model: str, *, context_window: int = 128000,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What `openclaw onboard --non-interactive --auth-choice custom-api-key` writes, plus the
    offline settings; written directly because onboarding takes a minute and needs the same inputs.
    `extra` is merged in, key by key (e.g. openclaw_memory.MEMORY_SETTINGS)."""
    ref = f"{MODEL_PROVIDER}/{model}"
    return _merged({
        "agents": {"defaults": {"workspace": str(workdir / "workspace"), "skipBootstrap": True,
                                "model": {"primary": ref}, "models": {ref: {}}}},
        "gateway": {"mode": "local", "bind": "loopback", "auth": {"mode": "token"},  # the token comes from env
                    "tailscale": {"mode": "off"}},
        "update": {"checkOnStart": False},
        "logging": {"file": str(workdir / "openclaw-file.log")},  # not the shared /tmp/openclaw
        "discovery": {"mdns": {"mode": "off"}},
        "models": {"mode": "merge", "providers": {MODEL_PROVIDER: {
            "baseUrl": model_url, "api": "openai-completions", "apiKey": "sk-local-test",
            "models": [{"id": model, "name": model, "contextWindow": context_window, "maxTokens": 4096, "input": ["text"],
                        "reasoning": False, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
        }}},
    }, extra or {})


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        base[key] = _merged(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return base


def _openclaw_frontend(installed: OpenClawInstall, token: str, matrix: MatrixChannel | None = None) -> Frontend:
    openclaw = installed.openclaw.bin / "openclaw"

    def env(launch: Launch) -> dict[str, str]:
        channels = {"MATRIX_ACCESS_TOKEN": matrix.access_token} if matrix else {"OPENCLAW_SKIP_CHANNELS": "1"}
        return {"PATH": f"{installed.node.bin}{os.pathsep}{os.environ.get('PATH', '')}",
                "OPENCLAW_HOME": str(launch.workdir), "OPENCLAW_GATEWAY_TOKEN": token,
                "OPENCLAW_NO_AUTO_UPDATE": "1", "OPENCLAW_DISABLE_BONJOUR": "1", **channels,
                "OPENCLAW_OFFLINE": "1", "OPENCLAW_NO_RESPAWN": "1"}

    return Frontend(name="openclaw", requirements=(), env=env, ready_timeout_s=900,
                    command=lambda bin, launch: [str(openclaw), "gateway", "run", "--port", str(launch.port),
                                                 "--bind", "loopback"])


@contextlib.contextmanager
def openclaw_gateway(installed: OpenClawInstall, *, model_url: str, model: str, workdir: Path,
                     token: str, matrix: MatrixChannel | None = None, context_window: int = 128000,
                     extra: dict[str, Any] | None = None) -> Iterator[Running]:
    """The gateway, serving its Control UI (with `matrix`, also a bot in that channel), until the
    block ends (stopped with its process group). `context_window` and `extra` go to gateway_config.

    On a loaded two-core machine the first start takes minutes (SQLite state, plugin scan); the
    gateway also refuses to report ready when a worker misses its 5 s start-up deadline, so one
    failed start is retried.
    """
    config = workdir / ".openclaw" / "openclaw.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    if matrix:
        install_matrix_plugin(installed, workdir)
    settings = gateway_config(workdir, model_url, model, context_window=context_window, extra=extra)
    config.write_text(json.dumps(_merged(settings, matrix.config() if matrix else {}), indent=1))
    frontend = _openclaw_frontend(installed, token, matrix)
    for attempt in (1, 2):
        stack = contextlib.ExitStack()
        try:
            running = stack.enter_context(start(frontend, model_url=model_url, model=model, workdir=workdir))
            break
        except RuntimeError:
            stack.close()
            if attempt == 2:
                raise
    with stack:
        yield running


# -- the model behind the gateway ----------------------------------------------------------------

_ENVELOPE_HEAD = re.compile(r"^\[[^\]\n]*\]\s*(Conversation info:[^`]*```.*?```\s*)?", re.S)
_ENVELOPE_TAIL = re.compile(r"\n\s*Runtime: [^\n]*\s*$")
_INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"


def person_said(content: Any) -> str | None:
    """What the person typed, from an OpenClaw user message; None for the gateway's own context."""
    text = text_of(content).strip()
    if not text or text.startswith(_INTERNAL):
        return None
    return _ENVELOPE_TAIL.sub("", _ENVELOPE_HEAD.sub("", text)).strip()


class OpenClawChatModel(ChatModel):
    """ChatModel that reads OpenClaw's requests as a model would: the person's words, not the wrapping.

    OpenClaw prefixes each user message with a timestamp and sender info, appends a runtime line,
    and adds a context-only user message; left in, they would look like statements and questions.
    """

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        plain = []
        for m in messages:
            if m.get("role") == "user":
                said = person_said(m.get("content"))
                if said:
                    plain.append({"role": "user", "content": said})
            elif m.get("role") == "assistant":
                plain.append({"role": "assistant", "content": text_of(m.get("content"))})
        return super().__call__(plain, tools)
