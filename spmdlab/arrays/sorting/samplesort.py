"""Parallel sorting by regular sampling (PSRS): Shi & Schaeffer, "Parallel sorting by
regular sampling", J. Parallel Distrib. Comput. 14 (1992) 361-372.

Each lab sorts its own elements with numpy's kernel, draws regularly spaced samples of
its sorted run, and every lab chooses the same ``n - 1`` pivots from all samples
(oversampled, and weighted by how many elements each sample stands for, so labs holding
more, or nothing, balance too). Each lab cuts its sorted run at the pivots (binary
searches), ONE all-to-all sends piece k to lab k, and each lab sorts the ``n`` sorted runs
it received (numpy's sort is fast on runs; PSRS merges them). Nothing is gathered: a lab
ends with about ``N / n`` elements. (Cutting unsorted parts into buckets first, the
classic sample sort, measured slower here: numpy's vectorized sort beats the bucket passes.)

Ties are broken by ``(value, lab, position in the lab's sorted run)``, a total order:
pivots split even a long run of equal values between labs, and with a stable local sort
and labs holding consecutive global ranges, a stable sort of the received runs (in lab
order) keeps ties in global order (numpy's ``kind='stable'``). ``by_value=True`` keeps
equal values on one lab (used by ``unique``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import here
from ..collectives import Exchange, allgather, allgatherv

__all__ = ["SortedParts", "sample_sort", "SAMPLES_PER_LAB"]

SAMPLES_PER_LAB = 1024  # regular samples of a lab's sorted run: pivots within ~1/1024 of the ideal ranks


class SortedParts:
    """This lab's part of a sample sort: its keys (and payloads) in sorted order, the
    number of elements every lab ends with (``counts``), and how to send values computed
    on the sorted elements back to where each came from (``send_back``)."""

    def __init__(self, keys: np.ndarray, payloads: list, counts: np.ndarray, route: Any) -> None:
        self.keys = keys
        self.payloads = payloads
        self.counts = counts
        self._route = route

    def send_back(self, values: np.ndarray, what: str) -> np.ndarray:
        """``values`` (one per sorted element here) returned to the labs the elements came
        from: the result has one value per element this lab passed, in its order."""
        merge, grouped, sent, received = self._route
        lab, n = here()
        back = np.empty_like(values)
        back[merge] = values  # in received order (concatenated by source lab)
        offsets = np.concatenate(([0], np.cumsum(received))).astype(np.int64)
        chunks = [back[offsets[k]:offsets[k + 1]] for k in range(n)]
        if n > 1:
            sends: list = [c if k != lab - 1 else None for k, c in enumerate(chunks)]
            rcounts = [int(sent[k]) * values.dtype.itemsize if k != lab - 1 else 0 for k in range(n)]
            got = Exchange(sends, rcounts, what).finish()
            chunks = [chunks[k] if k == lab - 1 else got[k].view(values.dtype) for k in range(n)]
        out = np.empty_like(values, shape=int(np.sum(sent)))
        out[grouped] = np.concatenate(chunks) if chunks else values[:0]
        return out


def _pivots(keys: np.ndarray, n: int, what: str) -> tuple:
    """The ``n - 1`` pivots ``(values, labs, positions)`` every lab agrees on, from
    regular samples of every lab's sorted run."""
    m = keys.size
    s = min(m, SAMPLES_PER_LAB)
    pos = (np.arange(s, dtype=np.int64) * m) // max(s, 1)
    sizes = allgather(np.array([m, s], dtype=np.int64), what)
    scount = sizes[:, 1]
    vals = allgatherv(np.ascontiguousarray(keys[pos]), scount, what)
    poss = allgatherv(pos, scount, what)
    labs = np.repeat(np.arange(1, n + 1, dtype=np.int64), scount)
    if vals.size == 0:
        return vals, labs, poss
    weight = np.repeat(sizes[:, 0] / np.maximum(scount, 1), scount)
    order = np.lexsort((poss, labs, vals))
    cum = np.cumsum(weight[order])
    at = np.searchsorted(cum, float(sizes[:, 0].sum()) * np.arange(1, n) / n, side="left")
    pick = order[np.minimum(at, order.size - 1)]
    return vals[pick], labs[pick], poss[pick]


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise equality in sort order (NaN equals NaN)."""
    eq = a == b
    if a.dtype.kind in "fc":
        eq |= np.isnan(a) & np.isnan(b)
    return eq


def _cuts(keys: np.ndarray, lab: int, n: int, pivots: tuple, by_value: bool) -> np.ndarray:
    """Where this lab's sorted run is cut: ``cuts[k]:cuts[k+1]`` goes to lab k+1 (the
    elements between pivot k and pivot k+1 in the order ``(value, lab, position)``)."""
    vals, labs, poss = pivots
    if vals.size == 0:  # no lab holds anything
        return np.zeros(n + 1, dtype=np.int64)
    left = np.searchsorted(keys, vals, side="left")
    if by_value:
        inner = left
    else:
        right = np.searchsorted(keys, vals, side="right")
        inner = np.where(labs > lab, right, np.where(labs < lab, left, poss))
    inner = np.maximum.accumulate(inner)
    return np.concatenate(([0], inner, [keys.size])).astype(np.int64)


def _exchange(arrays: list, cuts: np.ndarray, received: np.ndarray, lab: int, n: int, what: str) -> list:
    """Each of ``arrays`` (``cuts[k]:cuts[k+1]`` to lab k+1) moved in one all-to-all; what
    arrives, concatenated in lab order."""
    exchanges = []
    for a in arrays:
        sends = [a[cuts[k]:cuts[k + 1]] if k != lab - 1 else None for k in range(n)]
        rcounts = [int(received[k]) * a.dtype.itemsize if k != lab - 1 else 0 for k in range(n)]
        exchanges.append(Exchange(sends, rcounts, what))
    out = []
    for a, ex in zip(arrays, exchanges):
        got = ex.finish()
        parts = [a[cuts[k]:cuts[k + 1]] if k == lab - 1 else got[k].view(a.dtype) for k in range(n)]
        whole = np.empty(int(received.sum()), dtype=a.dtype)  # the dtype as it is ('>f8' stays)
        out.append(np.concatenate(parts, out=whole))
    return out


def sample_sort(x: np.ndarray, what: str, payloads: tuple = (), stable: bool = False,
                by_value: bool = False) -> SortedParts:
    """Sort the elements held by all labs (this lab holds the 1-D ``x``, with one entry
    of each 1-D array in ``payloads`` per element, carried along). With ``stable``, ties
    keep their order (labs in order, then position in ``x``)."""
    lab, n = here()
    x = np.asarray(x)
    if payloads or stable:
        perm: Any = np.argsort(x, kind="stable")
        arrays = [x[perm], *[np.asarray(p)[perm] for p in payloads]]
    else:
        perm, arrays = None, [np.sort(x)]
    if n == 1:
        sent = received = counts = np.array([x.size], dtype=np.int64)
        return SortedParts(arrays[0], arrays[1:], counts, (np.arange(x.size), perm, sent, received))
    cuts = _cuts(arrays[0], lab, n, _pivots(arrays[0], n, what), by_value)
    sent = np.diff(cuts)
    matrix = allgather(sent, what)  # matrix[q, k]: elements lab q+1 sends to lab k+1
    received, counts = matrix[:, lab - 1], matrix.sum(axis=0)
    arrived = _exchange(arrays, cuts, received, lab, n, what)
    del arrays
    if payloads or stable:
        merge = np.argsort(arrived[0], kind="stable")  # runs in lab order: ties keep the total order
        keys, pays = arrived[0][merge], [p[merge] for p in arrived[1:]]
    else:
        merge, keys, pays = None, arrived[0], []
        keys.sort()  # in place: the received buffer is ours
    return SortedParts(keys, pays, counts, (merge, perm, sent, received))
