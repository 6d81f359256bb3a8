"""The one timing helper the benchmark scripts share."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median(fn: Callable[[], object], repeat: int, warmup: int = 3) -> float:
    """Median seconds of ``repeat`` calls of ``fn`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)
