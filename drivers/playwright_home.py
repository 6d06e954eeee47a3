"""Where Playwright looks for its own browsers and ffmpeg, and a local stand-in made of symlinks.

Playwright finds its builds under $PLAYWRIGHT_BROWSERS_PATH (default ~/.cache/ms-playwright), as
`chromium-<rev>/chrome-linux64/chrome`, `ffmpeg-<rev>/ffmpeg-linux` and so on. Machines without
network cannot `playwright install`, but have a system Chromium and ffmpeg: a folder of symlinks
to those, at the names Playwright expects, lets video recording (which needs Playwright's ffmpeg)
and `playwright run-server` (which launches by name) work there too. Linux only; elsewhere the
normal path is left alone.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from pathlib import Path

import playwright

_LINUX_DIRS = {  # Playwright's layout for each build, below <name>-<revision>/
    "chromium": ("chrome-linux64", "chrome"),
    "chromium-headless-shell": ("chrome-headless-shell-linux64", "chrome-headless-shell"),
    "ffmpeg": ("ffmpeg-linux",),
}
_ARM_DIRS = {"chromium": ("chrome-linux-arm64", "chrome"),
             "chromium-headless-shell": ("chrome-headless-shell-linux-arm64", "chrome-headless-shell")}


def revisions() -> dict[str, str]:
    """Build name -> revision this Playwright expects, from its browsers.json."""
    path = Path(playwright.__file__).parent / "driver" / "package" / "browsers.json"
    return {b["name"]: b["revision"] for b in json.loads(path.read_text())["browsers"]}


def default_browsers_path() -> Path:
    env = os.environ.get("PLAYWRIGHT_BROWSERS_PATH")
    if env and env != "0":
        return Path(env)
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "ms-playwright"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home())) / "ms-playwright"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ms-playwright"


def _build_dir(root: Path, name: str) -> Path:
    folder = "chromium_headless_shell" if name == "chromium-headless-shell" else name
    return root / f"{folder}-{revisions()[name]}"


def _executable(root: Path, name: str) -> Path:
    dirs = _ARM_DIRS.get(name, _LINUX_DIRS[name]) if platform.machine() in ("aarch64", "arm64") else _LINUX_DIRS[name]
    return _build_dir(root, name).joinpath(*dirs)


def has_playwright_chromium(root: Path | None = None) -> bool:
    """Whether Playwright can launch (or show-trace can find) a Chromium of its own."""
    return sys.platform.startswith("linux") and _executable(root or default_browsers_path(), "chromium").exists()


def has_playwright_ffmpeg(root: Path | None = None) -> bool:
    return sys.platform.startswith("linux") and _executable(root or default_browsers_path(), "ffmpeg").exists()


def find_ffmpeg() -> str | None:
    """A system ffmpeg, else the static one of the imageio-ffmpeg wheel when installed."""
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg  # type: ignore[import-not-found]
    except ImportError:
        return None
    return imageio_ffmpeg.get_ffmpeg_exe()


def _link(target: str, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        if link.is_symlink() and os.readlink(link) == target:
            return
        link.unlink()
    link.symlink_to(target)


def linked_browsers_path(root: Path, *, chromium: str | None, ffmpeg: str | None,
                         headless_shell: str | None = None) -> Path:
    """Make `root` a PLAYWRIGHT_BROWSERS_PATH whose builds are symlinks to the given executables (the
    headless shell's build to `headless_shell`, else to `chromium`).

    Builds already installed in the normal path are linked too, so they stay usable.
    """
    if not sys.platform.startswith("linux"):
        raise RuntimeError("a symlinked Playwright browsers folder is only made on Linux")
    root.mkdir(parents=True, exist_ok=True)
    normal = default_browsers_path()
    if normal.is_dir() and normal.resolve() != root.resolve():
        for entry in normal.iterdir():
            if not (root / entry.name).exists():
                (root / entry.name).symlink_to(entry)
    wanted = {"chromium": chromium, "chromium-headless-shell": headless_shell or chromium, "ffmpeg": ffmpeg}
    for name, target in wanted.items():
        # A real build linked in from the normal path wins, and is never written into.
        if target and not _build_dir(root, name).is_symlink():
            _link(target, _executable(root, name))
    return root
