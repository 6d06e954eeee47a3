"""The widgets' npm packages, fetched and bundled once per machine for the slow tests.

Everything lands under `.frontends/widgets/` (git-ignored, or $MMB_FRONTENDS_DIR/widgets), with a
stamp of what it was made from, and is reused while the pins (and, for a bundle, its entry file)
are unchanged; a lock keeps two test runs from writing one folder at once.

- A widget that ships a browser bundle (n8n's chat.bundle.es.js, Flowise's web.js, Web Chat's
  webchat.js) is fetched with `npm pack` and unpacked: the published tarball itself, without the
  dependencies its bundle already holds. (npm install would also pull them, and @n8n/chat 1.37.0
  names a @n8n/design-system release some registries lack.)
- A React library (assistant-ui) is installed with npm beside React and esbuild, and the page's
  entry (pages/assistant_ui.jsx) is bundled with esbuild into one script, as a site's build does.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.frontends import _tail, frontends_dir
from tests.support.node_frontends import esbuild_bundle, npm_install

N8N_CHAT = "@n8n/chat@1.37.0"
FLOWISE_EMBED = "flowise-embed@3.1.6"
BOTFRAMEWORK_WEBCHAT = "botframework-webchat@4.18.1"
ASSISTANT_UI = ("@assistant-ui/react@0.15.22", "@assistant-ui/react-data-stream@0.12.32", "react@19.3.1", "react-dom@19.3.1",
                "esbuild@0.28.2")
ASSISTANT_UI_ENTRY = Path(__file__).resolve().parent / "pages" / "assistant_ui.jsx"


@dataclass
class Fetched:
    folder: Path  # served as /pkg/<name>/
    seconds: float  # 0 when reused
    versions: dict[str, str]


def widgets_dir() -> Path:
    return frontends_dir() / "widgets"


def _npm() -> str:
    found = shutil.which("npm")
    if found is None:
        raise RuntimeError("npm is not installed (Debian: apt-get install npm); the widget tests need it")
    return found


def _locked_stamp(home: Path, wanted: dict) -> tuple[Path, dict | None]:
    stamp = home / "installed.json"
    if stamp.exists():
        saved = json.loads(stamp.read_text())
        if saved.get("wanted") == wanted:
            return stamp, saved
    return stamp, None


def npm_pack(name: str, spec: str, *, timeout_s: float = 600) -> Fetched:
    """The published tarball of `spec`, unpacked into .frontends/widgets/<name>/package/."""
    home = widgets_dir() / name
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp, saved = _locked_stamp(home, {"pack": spec})
        if saved is not None and (home / "package" / "package.json").exists():
            return Fetched(home, 0.0, saved["versions"])
        stamp.unlink(missing_ok=True)
        started = time.monotonic()
        shutil.rmtree(home / "package", ignore_errors=True)
        log = home / "install.log"
        with open(log, "w") as out:
            done = subprocess.run([_npm(), "pack", spec, "--json", "--loglevel=error", "--pack-destination", str(home)],
                                  stdout=subprocess.PIPE, stderr=out, text=True, timeout=timeout_s, cwd=home)
        if done.returncode != 0:
            raise RuntimeError(f"npm pack {spec} failed; see {log}:\n{_tail(log)}")
        tarball = home / json.loads(done.stdout)[0]["filename"].replace("@", "").replace("/", "-")
        with tarfile.open(tarball) as archive:
            archive.extractall(home, filter="data")  # no links or paths out of the folder
        tarball.unlink()
        package = json.loads((home / "package" / "package.json").read_text())
        versions = {package["name"]: package["version"]}
        seconds = time.monotonic() - started
        stamp.write_text(json.dumps({"wanted": {"pack": spec}, "versions": versions, "seconds": round(seconds)}))
        return Fetched(home, seconds, versions)


def assistant_ui_bundle(*, timeout_s: float = 900) -> Fetched:
    """pages/assistant_ui.jsx bundled with esbuild against the pinned npm packages; its folder."""
    installed = npm_install("widgets/assistant-ui", ASSISTANT_UI, timeout_s=timeout_s)
    out, seconds = esbuild_bundle(installed, ASSISTANT_UI_ENTRY, "assistant_ui.js",
                                  ("--minify", "--format=iife", "--jsx=automatic",
                                   "--define:process.env.NODE_ENV=\"production\""), timeout_s=timeout_s)
    return Fetched(out.parent, installed.seconds + seconds, installed.versions)
