"""The figures every timing bench reports for one way of running: median, fastest,
slowest, and the median's ratio to a baseline's median (seconds, rounded to the
millisecond). Shared by ``plugin_overhead.py`` and ``recorder_cost.py``."""

from __future__ import annotations

import statistics


def spread(values: list[float], base: float) -> dict[str, float]:
    """``{"median_s", "min_s", "max_s", "ratio"}`` of ``values`` (seconds; at least one),
    ``ratio`` the median over ``base`` (the baseline's median, > 0)."""
    median = statistics.median(values)
    return {
        "median_s": round(median, 3),
        "min_s": round(min(values), 3),
        "max_s": round(max(values), 3),
        "ratio": round(median / base, 3),
    }
