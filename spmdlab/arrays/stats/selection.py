"""Distributed selection: the elements of given ranks in the sorted order of the elements
all labs hold, without sorting them.

Sample-based narrowing, as in Floyd & Rivest's SELECT ("Expected time bounds for
selection", CACM 18, 1975) run in parallel (the scheme of parallel quickselect with
sampling, e.g. Saukas & Song, "A note on parallel selection on coarse-grained
multicomputers", Algorithmica 24, 1999): every lab draws a small random sample of its
candidates, all labs agree on two sample values that bracket the wanted ranks with a
safety margin, and one pass over the candidates counts what lies below and keeps what
lies between. A few rounds leave a band of at most ``GATHER_AT_MOST`` candidates, which
every lab gathers and selects from exactly with numpy's ``partition``. If a band misses a
rank (an unlucky sample) a three-way split at a sample value is used instead, which
always makes progress (equal values are resolved at once).

The elements must not be NaN (callers drop NaNs, or answer NaN, first).
"""
from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np

from ..base import here
from ..collectives import allgather, allgatherv, allreduce

__all__ = ["select_ranks", "finish_quantile", "GATHER_AT_MOST", "SAMPLE"]

_fb: Any = importlib.import_module("numpy.lib._function_base_impl")  # numpy's quantile internals

GATHER_AT_MOST = 1 << 18  # candidates gathered for the exact, local selection
SAMPLE = 1 << 14  # total sample size a round draws over all labs


def _gathered(x: np.ndarray, what: str) -> np.ndarray:
    sizes = allgather(np.array(x.size, dtype=np.int64), what)
    return allgatherv(np.ascontiguousarray(x), sizes, what)


def _sample(x: np.ndarray, total: int, round_: int, what: str) -> tuple:
    """The sorted sample all labs drew, and the number of candidates each value stands for."""
    lab, _ = here()
    s = min(x.size, max(1, math.ceil(SAMPLE * x.size / max(total, 1))))
    picks = np.random.default_rng((lab, round_, x.size)).integers(0, x.size, s) if x.size else np.zeros(0, np.int64)
    sizes = allgather(np.array([x.size, picks.size], dtype=np.int64), what)
    vals = allgatherv(np.ascontiguousarray(x[picks]), sizes[:, 1], what)
    weight = np.repeat(sizes[:, 0] / np.maximum(sizes[:, 1], 1), sizes[:, 1])
    order = np.argsort(vals, kind="stable")
    return vals[order], np.cumsum(weight[order])


def _at(vals: np.ndarray, cum: np.ndarray, rank: float) -> np.generic:
    return vals[min(int(np.searchsorted(cum, rank, side="right")), vals.size - 1)]


def _counts(x: np.ndarray, parts: list, what: str) -> np.ndarray:
    return allreduce(np.array(parts, dtype=np.int64), "sum", what)


def _three_way(x: np.ndarray, lo: int, hi: int, total: int, round_: int, what: str) -> tuple:
    """One guaranteed step: split at a sample value p near the wanted ranks."""
    vals, cum = _sample(x, total, round_, what)
    p = _at(vals, cum, (lo + hi) / 2)
    less, equal = _counts(x, [np.count_nonzero(x < p), np.count_nonzero(x == p)], what)
    return p, int(less), int(equal)


def _select_group(x: np.ndarray, ranks: np.ndarray, what: str) -> np.ndarray:
    """Values of ``ranks`` (sorted, close together) among the candidates ``x``."""
    base, total = 0, int(_counts(x, [x.size], what)[0])
    for round_ in range(200):
        lo, hi = int(ranks[0]) - base, int(ranks[-1]) - base
        if total <= GATHER_AT_MOST:
            allx = _gathered(x, what)
            return np.partition(allx, np.unique(ranks - base))[ranks - base]
        vals, cum = _sample(x, total, round_, what)
        margin = 3.0 * total / math.sqrt(vals.size)
        has_lo, has_hi = lo - margin > 0, hi + margin < total
        a = _at(vals, cum, lo - margin) if has_lo else None
        b = _at(vals, cum, hi + margin) if has_hi else None
        below = x < a if has_lo else None
        keep = np.ones(x.size, dtype=bool) if below is None else ~below
        if has_hi:
            keep &= x <= b
        nb, nk = (int(v) for v in _counts(x, [0 if below is None else np.count_nonzero(below),
                                                   np.count_nonzero(keep)], what))
        if nb <= lo and hi < nb + nk and nk < total:
            x, base, total = x[keep], base + nb, nk
            if has_lo and has_hi and a == b:
                return np.full(ranks.size, a, dtype=x.dtype)
            continue
        p, less, equal = _three_way(x, lo, hi, total, round_, what)
        if hi < less:
            x, total = x[x < p], less
        elif lo >= less + equal:
            x, base, total = x[x > p], base + less + equal, total - less - equal
        elif lo >= less and hi < less + equal:
            return np.full(ranks.size, p, dtype=x.dtype)
        else:  # the ranks straddle p: one at a time
            return np.concatenate([_select_group(x, np.array([r - base]), what) for r in ranks])
    raise RuntimeError(f"{what}: the distributed selection did not converge")  # pragma: no cover


def select_ranks(x: np.ndarray, ranks: np.ndarray, what: str) -> np.ndarray:
    """The values of 0-based ``ranks`` in the sorted order of the elements all labs hold
    (this lab holds the 1-D ``x``, no NaNs); the same array on every lab."""
    ranks = np.asarray(ranks, dtype=np.int64).reshape(-1)
    out = np.empty(ranks.size, dtype=x.dtype)
    if ranks.size == 0:
        return out
    order = np.argsort(ranks, kind="stable")
    sr = ranks[order]
    splits = np.flatnonzero(np.diff(sr) > 1) + 1  # neighbours (floor and ceil) share a band
    values = np.concatenate([_select_group(x, g, what) for g in np.split(sr, splits)])
    out[order] = values
    return out


def finish_quantile(values_of: Any, n: int, q: np.ndarray, method: str, dtype: np.dtype, weak_q: bool) -> Any:
    """numpy's ``_quantile`` after its partition: ``values_of(ranks)`` gives the order
    statistics (0-based ranks among the ``n`` values) it reads."""
    props = _fb._QuantileMethods[method]
    vi = np.asanyarray(props["get_virtual_index"](n, q))
    integers = props["fix_gamma"] is None or (method == "linear" and np.issubdtype(vi.dtype, np.integer))
    if integers:
        return values_of(vi.astype(np.intp) % n).reshape(vi.shape)[()]
    prev, nxt = _fb._get_indexes(np.empty(0, dtype), vi, n)
    both = values_of(np.concatenate([prev.ravel(), nxt.ravel()]) % n)
    pv, nv = both[:prev.size].reshape(vi.shape)[()], both[prev.size:].reshape(vi.shape)[()]
    gamma = _fb._get_gamma(vi, prev, props)
    gamma = float(gamma) if weak_q else gamma.reshape(vi.shape)
    return _fb._lerp(pv, nv, gamma)
