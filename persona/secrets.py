"""Known secret values (the persona's API key, the agent's cookies), scrubbed from what a run writes.

The key is never stored on purpose; this is the second line: an endpoint that echoes the key in an
error, or a log line quoting a request, must not carry it into state.json, report.md or run.log.
"""

from __future__ import annotations

import logging

MASK = "***"
MIN_LENGTH = 6  # shorter values are too likely to be ordinary words or numbers

_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    if value and len(value) >= MIN_LENGTH:
        _secrets.add(value)


def known_secrets() -> list[str]:
    return list(_secrets)


def redact(text: str) -> str:
    for secret in sorted(_secrets, key=len, reverse=True):  # longest first: one may contain another
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class RedactingFilter(logging.Filter):
    """Scrubs a record's final message (arguments merged in); install on handlers that write files."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            message = record.getMessage()
            clean = redact(message)
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = redact(record.exc_text)
            if clean != message:
                record.msg, record.args = clean, None
        return True
