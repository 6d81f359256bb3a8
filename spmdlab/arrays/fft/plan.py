"""Pure index math of the distributed FFT (no MPI, no arrays): partitions, the four-step
factorization N = N1·N2 of a vector's length, Bluestein's padded length, and the pieces
an ``fftshift`` roll moves between labs. Used by ``fft_exchange`` and ``fft_bailey``.
"""
from __future__ import annotations

import math
from typing import Dict, List, Tuple

import numpy as np

__all__ = ["Partition", "Plan", "bluestein_length", "default_partition", "plan", "roll_pieces",
           "window_partition"]

Partition = List[int]


def default_partition(n: int, p: int) -> Partition:
    """MATLAB's default split: the first ``n % p`` labs get one more."""
    q, r = divmod(n, p)
    return [q + 1] * r + [q] * (p - r)


def _factor_near_sqrt(n: int) -> int:
    """The largest divisor of n not above √n."""
    for d in range(math.isqrt(n), 0, -1):
        if n % d == 0:
            return d
    return 1


def bluestein_length(n: int) -> int:
    """The padded length of Bluestein's convolution: the power of two ≥ 2n - 1."""
    return 1 << max(0, (2 * n - 2).bit_length())


class Plan(tuple):
    """``(kind, N, N1, N2, M)``: kind "local" (one lab), "fourstep" (N = N1·N2), or
    "bluestein" (the four-step at M = N1·N2, a power of two ≥ 2N - 1)."""

    __slots__ = ()

    kind = property(lambda self: self[0])
    N = property(lambda self: self[1])
    N1 = property(lambda self: self[2])
    N2 = property(lambda self: self[3])
    M = property(lambda self: self[4])

    def __repr__(self) -> str:
        return f"({self[0]}, {self[1]}, {self[2]}, {self[3]}, {self[4]})"


def plan(n: int, p: int) -> Plan:
    """How a vector of length n on p labs is transformed.

    The four-step needs both factors N1 ≤ N2 big enough for every lab to hold rows in
    both passes (N1 ≥ 4p, or N1 ≥ p for short vectors) so the work is shared fairly;
    otherwise Bluestein through M = 2^k ≥ 2n - 1, whose factors are as balanced as a
    power of two allows.

    >>> plan(2 ** 24, 2)
    (fourstep, 16777216, 4096, 4096, 16777216)
    >>> plan(999983, 2).kind, plan(999983, 2).M
    ('bluestein', 2097152)
    """
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    if p == 1:
        return Plan(("local", n, 1, n, n))
    n1 = _factor_near_sqrt(n)
    if n1 >= 4 * p or (n1 >= p and n < 64 * p * p):
        return Plan(("fourstep", n, n1, n // n1, n))
    m = bluestein_length(n)
    k = m.bit_length() - 1
    m1 = 1 << (k // 2)
    return Plan(("bluestein", n, m1, m // m1, m))


def window_partition(part_out: Partition, valid: int) -> Partition:
    """How many of the first ``valid`` global elements fall into each lab's block of a
    vector laid out by ``part_out`` (lab k holds [sum(part_out[:k]), ...)).

    >>> window_partition([4, 4, 4, 4], 9)
    [4, 4, 1, 0]
    """
    out, start = [], 0
    for c in part_out:
        out.append(max(0, min(start + c, valid) - start))
        start += c
    return out


def roll_pieces(part: Partition, n: int, shift: int) -> Dict[Tuple[int, int], List[Tuple[int, int, int]]]:
    """Where ``np.roll(x, shift)`` moves each lab's block of a vector of length n laid out
    by ``part``: ``{(src, dst): [(src_offset, dst_offset, count), ...]}`` (0-based labs,
    offsets inside the labs' local blocks, pieces in increasing destination order).

    >>> roll_pieces([2, 2], 4, 1)
    {(0, 0): [(0, 1, 1)], (0, 1): [(1, 0, 1)], (1, 1): [(0, 1, 1)], (1, 0): [(1, 0, 1)]}
    """
    starts = np.concatenate(([0], np.cumsum(part))).tolist()
    s = shift % n if n else 0
    out: Dict[Tuple[int, int], List[Tuple[int, int, int]]] = {}
    for src, (lo, hi) in enumerate(zip(starts[:-1], starts[1:])):
        # global source ranges and where they land: [lo, hi) -> [lo + s, hi + s) mod n
        segs = []
        cut = n - s
        if lo < min(hi, cut):
            segs.append((lo, lo + s, min(hi, cut) - lo))
        if max(lo, cut) < hi:
            a = max(lo, cut)
            segs.append((a, a + s - n, hi - a))
        for g_src, g_dst, cnt in segs:
            for dst, (dlo, dhi) in enumerate(zip(starts[:-1], starts[1:])):
                a, b = max(g_dst, dlo), min(g_dst + cnt, dhi)
                if a < b:
                    out.setdefault((src, dst), []).append((g_src + a - g_dst - lo, a - dlo, b - a))
    for pieces in out.values():
        pieces.sort(key=lambda t: t[1])
    return out
