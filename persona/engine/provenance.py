"""Where a run's grades come from: tool version and commit, the benchmark's files, models and hosts,
prompts, driver and browser, recorded in state.json and shown in every report entry."""

from __future__ import annotations

from urllib.parse import urlparse


def endpoint_host(url: str | None) -> str | None:
    """The host (and port) of an endpoint; never its user, password, path or query, where keys may hide."""
    if not url:
        return None
    parsed = urlparse(url)
    if not parsed.hostname:
        return None
    return f"{parsed.hostname}:{parsed.port}" if parsed.port else parsed.hostname
