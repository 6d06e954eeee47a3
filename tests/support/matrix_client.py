"""The Matrix web client of the messenger tests: Hydrogen, from the npm package hydrogen-view-sdk.

Why Hydrogen (the lead's order was Element Web, then Cinny, then another real client, each from a
package registry): Element Web is published on no registry this machine reaches (npm has no
element-web under any of its names; `riot-web` 1.7.14 is Element's 2020 source, whose dependencies
name a tarball on packages.matrix.org and a GitHub commit, and which needs webpack 4); the npm
package `cinny` 4.5.1 holds Cinny's build files but none of its source (no src/), so it cannot be
built; Debian and PyPI ship no Matrix web client. hydrogen-view-sdk ships Hydrogen's built client
library, which exports the whole application (RootViewModel, RootView: login, session, room list,
room view, composer), and its assets (the olm worker, the theme).

`hydrogen_client()` installs the pinned packages with npm once per machine (under `.frontends/
hydrogen`, or $MMB_FRONTENDS_DIR), bundles pages/hydrogen_main.js (Hydrogen's own start-up, a dozen
lines) with esbuild against them, and lays out a folder to serve: the page, the bundle, the SDK's
assets, its service worker, olm, and a config.json naming the homeserver.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.node_frontends import esbuild_bundle, npm_install
from tests.support.static_site import serve

HYDROGEN = ("hydrogen-view-sdk@0.3.1", "@matrix-org/olm@3.2.15", "esbuild@0.28.2")
HERE = Path(__file__).resolve().parent / "matrix"
ENTRY = HERE / "hydrogen_main.js"
PAGE = HERE / "hydrogen.html"


@dataclass
class HydrogenBuild:
    home: Path  # node_modules and the bundle
    bundle: Path
    seconds: float  # install and bundle; 0 when both were reused
    versions: dict[str, str]


def hydrogen_client(*, timeout_s: float = 900) -> HydrogenBuild:
    """The pinned packages installed and the start-up bundled, or both reused."""
    installed = npm_install("hydrogen", HYDROGEN, timeout_s=timeout_s)
    # olm's emscripten loader names node's modules on a branch a browser never takes
    bundle, seconds = esbuild_bundle(installed, ENTRY, "hydrogen-app.js",
                                     ("--format=iife", "--platform=browser", "--external:fs", "--external:path",
                                      "--external:crypto"), timeout_s=timeout_s)
    return HydrogenBuild(installed.home, bundle, installed.seconds + seconds, installed.versions)


def lay_out(build: HydrogenBuild, folder: Path, homeserver_url: str) -> Path:
    """A folder serving Hydrogen for one homeserver: index.html, the bundle, assets, olm, config.json."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(PAGE, folder / "index.html")
    shutil.copy(build.bundle, folder / "hydrogen-app.js")
    modules = build.home / "node_modules"
    for name, target in (("hydrogen", modules / "hydrogen-view-sdk"), ("olm", modules / "@matrix-org" / "olm")):
        link = folder / name
        if not link.exists():
            os.symlink(target, link)
    shutil.copy(modules / "hydrogen-view-sdk" / "lib-build" / "sw.js", folder / "sw.js")  # its scope: the page
    (folder / "config.json").write_text(json.dumps({"defaultHomeServer": homeserver_url}))
    return folder


@contextlib.contextmanager
def served_hydrogen(build: HydrogenBuild, folder: Path, homeserver_url: str) -> Iterator[str]:
    """Hydrogen's base URL on 127.0.0.1 (ends with '/') while the block runs."""
    with serve(lay_out(build, folder, homeserver_url)) as url:
        yield url
