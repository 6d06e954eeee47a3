"""`mmb run --shard i/n`: this machine plays a stable share of the runs; other machines play the rest.

The runs (every run of the config, each repeat its own run with its own id) are sorted by id and
dealt round-robin: shard i of n plays the i-th, (i+n)-th, ... of them. Every machine with the same
config computes the same split, shares differ in size by one at most, and `mmb report --merge`
joins the shards' results folders into one report.
"""

from __future__ import annotations

import re
from typing import TypeVar

from persona.engine.runner import RunPlan

T = TypeVar("T", bound=RunPlan)
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """`2/3` -> (2, 3); ValueError with the rule otherwise."""
    m = _SHARD.match(text)
    if not m or not 1 <= int(m[1]) <= int(m[2]):
        raise ValueError(f"--shard {text!r}: write it as i/n with 1 <= i <= n, e.g. --shard 2/3")
    return int(m[1]), int(m[2])


def select_shard(plans: list[T], index: int, total: int) -> list[T]:
    ordered = sorted(plans, key=lambda p: p.run.id)
    return ordered[index - 1::total]
