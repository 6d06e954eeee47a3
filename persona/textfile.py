"""Reading the text files a user wrote (config, benchmark files): every failure is a Problem with a line."""

from __future__ import annotations

from pathlib import Path

from persona.errors import InputError


def read_user_text(path: Path, display: str | Path) -> str:
    """The file's UTF-8 text; InputError names the file (and the line of a byte that is not UTF-8)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError.single(display, None, "file not found") from None
    except OSError as e:
        raise InputError.single(display, None, f"cannot read: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError.single(display, line, f"not UTF-8 text (byte 0x{data[e.start]:02x}); save it as UTF-8") from None
