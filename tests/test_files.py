"""drivers.files: the one atomic write, its permissions and what a failed write leaves behind."""

from __future__ import annotations

import os
import stat

import pytest

from drivers.files import atomic_write


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_file_follows_the_umask(tmp_path, umask_022):
    atomic_write(tmp_path / "report.md", "hello")
    assert mode(tmp_path / "report.md") == 0o644  # mkstemp alone would make it 0600


def test_a_secret_is_owner_only_whatever_the_umask(tmp_path, umask_022):
    atomic_write(tmp_path / "login.json", b"{}", mode=0o600)
    assert mode(tmp_path / "login.json") == 0o600


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "state.json"
    atomic_write(target, "old")

    def crash() -> None:
        raise RuntimeError("killed between write and rename")

    with pytest.raises(RuntimeError):
        atomic_write(target, "new", before_rename=crash)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
