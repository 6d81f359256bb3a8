"""The timing helpers the benchmark scripts share: at the client (``median``) and on the
labs (``between_barriers``, ``barrier_median``, ``in_turns``; this module travels to the labs by value with the functions using it)."""
from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import cloudpickle

cloudpickle.register_pickle_by_value(sys.modules[__name__])


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


def between_barriers(barrier: Callable[[], object], f: Callable[[], object]) -> float:
    """On a lab: seconds of ``f()`` from a barrier to a barrier (the slowest lab's time)."""
    barrier()
    t = time.perf_counter()
    f()
    barrier()
    return time.perf_counter() - t


def barrier_median(barrier: Callable[[], object], f: Callable[[], object], repeat: int, warmup: int = 0) -> float:
    """On a lab: median of ``repeat`` ``between_barriers`` times of ``f`` after ``warmup``
    untimed calls."""
    times = [between_barriers(barrier, f) for _ in range(warmup + repeat)]
    return statistics.median(times[warmup:])


def in_turns(ours: Callable[[], object], raw: Callable[[], object], repeat: int, barrier: Callable[[], object],
             warmup: int = 2) -> tuple[float, float]:
    """On a lab: median seconds of ``ours`` and of its baseline ``raw``, called in turns
    (so both see the same machine), each timed from a barrier to a barrier (the slowest
    lab's time), after ``warmup`` untimed turns."""
    mine, base = [], []
    for i in range(repeat + warmup):
        a, b = between_barriers(barrier, ours), between_barriers(barrier, raw)
        if i >= warmup:
            mine.append(a)
            base.append(b)
    return statistics.median(mine), statistics.median(base)
