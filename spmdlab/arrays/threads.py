"""Threads inside each lab, by size threshold: PDL::ParallelCPU's auto-threading.

An elementwise operation, ufunc or reduction whose local part has at least ``size``
mega-elements (``SPMDLAB_AUTOTHREAD_SIZE``, default 1) is split over ``targ`` threads
(``SPMDLAB_AUTOTHREAD_TARG``, default ``max(1, cores // labs on this machine)``, so labs
× threads never oversubscribe the cores); below it one thread does the work.

The split is PDL's pthreading rule (``PDL::ParallelCPU``, ``set_autopthread_targ``):
cut along one dimension that is not a reduction's core dimension, so each thread computes
whole results; only when every large dimension is reduced is the reduced dimension cut
and the partials combined in order. Unlike PDL, any length splits (``numpy.array_split``'s
uneven bounds, rounded to 64 elements). numpy releases the GIL in its loops, so a small
thread pool, made once per lab, runs the pieces; the calling thread computes the first.
Elementwise results are bitwise those of the unsplit call; reductions agree to rounding.
BLAS (threadpoolctl) and the local FFTs (scipy.fft ``workers=``) use the same count.

The settings are read once, when a lab first uses them (its start); ``set_targ`` and
``set_size`` change them for this lab, ``actual()`` tells what the last operation used.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .. import settings
from ..lab import lazy_comm as comm
from ..runtime import state as _runtime

__all__ = ["set_targ", "set_size", "targ", "size", "actual", "threads_for", "apply", "reduce",
           "fft_workers"]

_ALIGN = 64  # chunk bounds fall on multiples of this many elements (whole cache lines)


class _State:
    """This lab's thread settings and its pool (made on first use)."""

    def __init__(self) -> None:
        s = settings.load()
        here = settings.labs_here(comm.world_size() if _runtime.on_lab else 1)
        self.targ = s.lab_threads(here)
        self.size = s.autothread_size
        self.actual = 1
        self.pool: ThreadPoolExecutor | None = None
        self.blas_done = settings.blas_threads_started()  # the lab's environment set BLAS's count
        # SPMDLAB_BLAS_THREADS given: BLAS keeps it; the client's BLAS is the user's
        self.blas_fixed = s.blas_threads is not None or not _runtime.on_lab


_the: _State | None = None


def _state() -> _State:
    global _the
    if _the is None:
        _the = _State()
        _limit_blas(_the)
    return _the


def set_targ(n: int) -> None:
    """Split large operations over ``n`` threads on this lab (PDL's ``set_autopthread_targ``)."""
    n = settings.check_threads(n, "set_autothread_targ(n)")
    st = _state()
    if n != st.targ and st.pool is not None:
        st.pool.shutdown(wait=True)
        st.pool = None
    st.targ = n
    _limit_blas(st)


def set_size(mega_elements: float) -> None:
    """Local parts of fewer than ``mega_elements`` × 10⁶ elements use one thread."""
    _state().size = settings.check_size(mega_elements, "set_autothread_size(mega_elements)")


def targ() -> int:
    return _state().targ


def size() -> float:
    return _state().size


def actual() -> int:
    """The threads the last elementwise operation, reduction or FFT on this lab used."""
    return _state().actual


def threads_for(elements: int, extent: int | None = None) -> int:
    """The threads an operation on ``elements`` elements uses (at most ``extent``, the
    length it is cut along); recorded as the actual count."""
    st = _state()
    n = st.targ if elements >= st.size * 1e6 and elements > 0 else 1
    n = max(1, min(n, extent if extent is not None else n))
    st.actual = n
    return n


def _limit_blas(st: _State) -> None:
    """BLAS uses this lab's thread count (threadpoolctl; nothing when it is missing), unless
    ``SPMDLAB_BLAS_THREADS`` fixed it."""
    if st.blas_fixed or st.blas_done == st.targ:
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return
    threadpool_limits(limits=st.targ, user_api="blas")
    st.blas_done = st.targ


def fft_workers(elements: int) -> int:
    """scipy.fft's ``workers=`` for a local transform of ``elements`` elements."""
    return threads_for(elements)


# --------------------------------------------------------------------------- the split
def _axis(shape: tuple, n: int, avoid: Sequence[int] = ()) -> int | None:
    """The dimension to cut: the outermost one not in ``avoid`` long enough for n pieces
    (contiguous pieces of C-ordered parts), else the longest not in ``avoid``."""
    free = [e for e in range(len(shape)) if e not in avoid]
    for e in free:
        if shape[e] >= n:
            return e
    return max(free, key=lambda e: shape[e]) if free else None


def _bounds(extent: int, n: int, inner: int) -> list[tuple[int, int]]:
    """n pieces of ``range(extent)`` (uneven lengths allowed), cut at whole cache lines."""
    step = max(1, -(-_ALIGN // max(1, inner)))
    cuts = [0] + [min(extent, round(extent * i / n / step) * step) for i in range(1, n)] + [extent]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _piece(x: Any, shape: tuple, axis: int, lo: int, hi: int) -> Any:
    """Operand ``x`` (broadcasting to ``shape``) for rows lo:hi along ``axis``."""
    if not isinstance(x, np.ndarray) or x.ndim == 0:
        return x
    e = axis - (len(shape) - x.ndim)  # numpy aligns shapes on the right
    if e < 0 or x.shape[e] == 1 and shape[axis] != 1:
        return x
    return x[(slice(None),) * e + (slice(lo, hi),)]


def _run(tasks: Sequence[Callable[[], Any]]) -> list[Any]:
    """Run the tasks, the first on this thread, under the caller's numpy error settings."""
    st = _state()
    if st.pool is None:
        st.pool = ThreadPoolExecutor(max_workers=max(1, st.targ - 1), thread_name_prefix="spmdlab-autothread")
    err = np.geterr()

    def guarded(task: Callable[[], Any]) -> Any:
        with np.errstate(**err):  # np.errstate is per thread
            return task()

    futures = [st.pool.submit(guarded, t) for t in tasks[1:]]
    first = [tasks[0]()]
    return first + [f.result() for f in futures]


def _overlaps(locs: Sequence[Any], outs: Sequence[np.ndarray]) -> bool:
    """An input sharing memory with an output other than as the very same view: pieces
    computed at once could read what another piece already wrote."""
    for x in locs:
        if not isinstance(x, np.ndarray):
            continue
        for o in outs:
            same = (x.__array_interface__["data"][0] == o.__array_interface__["data"][0]
                    and x.shape == o.shape and x.strides == o.strides)
            if not same and np.may_share_memory(x, o):
                return True
    return False


def _takes_out(fn: Callable) -> bool:
    if isinstance(fn, np.ufunc):
        return True
    code = getattr(fn, "__code__", None)
    return code is not None and "out" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def apply(fn: Callable, locs: Sequence[Any], out: tuple | None = None) -> Any:
    """``fn(*locs)`` (into ``out``, local arrays, when given), split over the threads
    when the result is large enough."""
    shape = tuple(np.broadcast_shapes(*(np.shape(x) for x in locs)))
    axis = _axis(shape, _state().targ)
    n = threads_for(math.prod(shape), shape[axis] if axis is not None else 1)
    if n > 1 and out is not None and _overlaps(locs, out):
        n = _state().actual = 1
    if n == 1 or axis is None:
        return fn(*locs) if out is None else fn(*locs, out=out)
    pieces = _bounds(shape[axis], n, math.prod(shape[axis + 1:]))
    sel = [(slice(None),) * axis + (slice(lo, hi),) for lo, hi in pieces]
    single = False
    if out is None:
        probe = fn(*[_piece(x, shape, axis, 0, 0) for x in locs])
        single = not isinstance(probe, tuple)
        out = tuple(np.empty(shape, dtype=np.asarray(p).dtype) for p in ((probe,) if single else probe))
    target = out

    def into(lo: int, hi: int, s: tuple) -> None:  # a piece written into the outputs by fn
        fn(*[_piece(x, shape, axis, lo, hi) for x in locs], out=tuple(o[s] for o in target))

    def copy(lo: int, hi: int, s: tuple) -> None:  # fn takes no out=: its result copied there
        r = fn(*[_piece(x, shape, axis, lo, hi) for x in locs])
        for o, v in zip(target, r if isinstance(r, tuple) else (r,)):
            o[s] = v

    each = into if _takes_out(fn) else copy
    tasks = [functools.partial(each, lo, hi, s) for (lo, hi), s in zip(pieces, sel)]
    _run(tasks)
    return out[0] if single else out


def reduce(fn: Callable, L: np.ndarray, axes: tuple | None, kw: dict, combine: np.ufunc) -> Any:
    """``fn(L, **kw)`` (``axes`` None: the whole part) or ``fn(L, axis=axes,
    keepdims=True, **kw)``, split over the threads: along a kept dimension when one is
    long enough (results concatenated), else along a reduced one (partials combined by
    ``combine`` in order)."""
    whole = axes is None
    reduced: tuple = tuple(range(L.ndim)) if axes is None else axes
    n0 = _state().targ
    axis = _axis(L.shape, n0, reduced)
    kept = axis is not None and L.shape[axis] >= n0
    if not kept:
        axis = _axis(L.shape, n0)
    n = threads_for(L.size, L.shape[axis] if axis is not None else 1)
    extra = {} if whole else {"axis": axes, "keepdims": True}
    if n == 1 or axis is None:
        return fn(L, **extra, **kw)
    pieces = _bounds(L.shape[axis], n, math.prod(L.shape[axis + 1:]))
    cut = axis

    def part(lo: int, hi: int) -> Any:
        return fn(L[(slice(None),) * cut + (slice(lo, hi),)], **extra, **kw)

    parts = _run([functools.partial(part, lo, hi) for lo, hi in pieces])
    if kept:
        return np.concatenate(parts, axis=axis)
    stack = np.stack([np.asarray(p) for p in parts])
    r = combine.reduce(stack, axis=0, dtype=stack.dtype)
    return r if not whole else stack.dtype.type(r)
