"""Repeats of a run: the mean over them with its 95 % confidence interval, and whether two intervals overlap.

The interval is the mean of the repeats' scores ± t(0.975, n-1) · s / √n (Student's t, s the sample
standard deviation): with 3 repeats the half-width is 2.48 s, with 10 it is 0.72 s. One run has no
interval. When two agents' intervals overlap, their repeats do not tell them apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# t(0.975, df) for df = 1..30; beyond, the Cornish-Fisher expansion around the normal quantile.
T_975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
Z_975 = 1.959964


def t_975(df: int) -> float:
    if df <= len(T_975):
        return T_975[df - 1]
    z = Z_975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True)
class Interval:
    mean: float
    half: float | None  # None for a single run
    n: int

    @property
    def low(self) -> float:
        return self.mean - (self.half or 0)

    @property
    def high(self) -> float:
        return self.mean + (self.half or 0)

    def overlaps(self, other: Interval) -> bool | None:
        """None when either has no interval (one run)."""
        if self.half is None or other.half is None:
            return None
        return self.low <= other.high and other.low <= self.high

    def __str__(self) -> str:
        return f"{self.mean:.2f} ± {self.half:.2f}" if self.half is not None else f"{self.mean:.2f}"


def interval(values: list[float]) -> Interval | None:
    n = len(values)
    if n == 0:
        return None
    mean = sum(values) / n
    if n == 1:
        return Interval(mean, None, 1)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return Interval(mean, t_975(n - 1) * sd / math.sqrt(n), n)
