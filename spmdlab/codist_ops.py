"""numpy semantics for codistributed arrays: arithmetic, ufuncs, reductions, ``@``, indexing.

``CodistOps`` is the mixin of ``codistributed`` (``spmdlab/codistributed.py``). Every
operation gives what numpy gives on the gathered arrays; results are codistributed
arrays (or replicated numpy scalars for whole reductions and scalar indexing).

Layout rules (the decisions, in one place):

- **Elementwise** (operators, ufuncs, ``np.where``, ``clip``, ...): the result has the
  layout of the first codistributed operand whose shape is the result's shape (of
  ``out=`` when given). Other codistributed operands of that shape are redistributed to
  it; smaller codistributed operands that broadcast (``D - D.mean(axis=0)``) are gathered
  (every lab gets them whole) and treated as replicated; replicated numpy arrays and
  scalars broadcast, each lab slicing the part matching its local part. When no
  codistributed operand has the result's shape, ``NotImplementedError``.
- **Reductions** whole: a replicated numpy scalar on every lab (partials combined in
  lab order, so it is bitwise the same everywhere). Along axes: a codistributed array;
  along non-distributed dimensions of a 1-D layout it is local and keeps the layout
  (same partition); otherwise the partials are combined with one allreduce and the
  result gets the default ``codistributor1d`` of the reduced shape.
  ``mean/var/std`` follow numpy's algorithm (sum, divide; two-pass variance).
  ``argmax/argmin`` return global 0-based indices, the first occurrence as numpy.
- **Transpose** is local and, as in numpy, a view (it shares the local parts): 1-D
  layouts move the distribution dimension with the axes, 2dbc layouts get the
  transposed lab grid with the other orientation (the same lab keeps the same blocks).
- **reshape/ravel/flatten/squeeze** (C order) give a copy in the layout where each lab
  holds a contiguous range of flat indices (1-D along the first dimension longer than
  1): at most one redistribution of the source, then one all-to-all. ``cumsum/cumprod``
  scan locally and add (multiply) the totals of the labs before; ``nonzero`` gives
  codistributed index arrays partitioned by what each lab found.
- **``@``**: 1-D layouts use a ring (A's rows stay, B's row panels travel around the
  labs); 2dbc layouts use SUMMA (panels of A broadcast along grid rows, of B along grid
  columns, one panel ahead). Replicated operands need no communication (the other is
  redistributed by rows or columns as needed). Matrix-vector products gather the
  vector (rows and 2dbc layouts) and/or sum partial vectors with one allreduce.
- **Conversions**: ``np.asarray(D)`` raises TypeError (use ``gather(D)`` or
  ``getLocalPart(D)``); ``bool/float/int(D)`` and ``D.item()`` work for one element.
- **Indexing**: ints give a replicated scalar (the owner broadcasts); ints and slices
  give a codistributed *copy* (not a view): a slice with a positive step along the
  distributed dimension of a 1-D layout keeps each lab's part where it is (partition =
  what each lab holds), everything else moves to the default layout of the result in
  one all-to-all. ``D[mask]`` (codistributed or replicated boolean array of D's shape)
  gives a 1-D array partitioned by what each lab selected. Assignments write on the
  owning labs.

All communication is nonblocking collectives on the block's communicator waited with
``comm.wait`` (interruptible, no clash with user messages); every lab calls them in the
same order, and every check that can fail depends only on global metadata, so all labs
raise the same error (numpy errors that depend on the data itself, such as an integer
to a negative power, come from the labs holding such data; the block's error handling
aborts the others). Nothing here imports MPI at import time (the module is imported
at the client, where arrays behave as on a pool of one lab).
"""
from __future__ import annotations

import functools
import math
import numbers
import operator
import sys
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import elision, runtime
from .codistributor import codistributor1d, codistributor2dbc, sel_len
from .elision import is_temporary, note_result

__all__ = ["CodistOps"]


class _LazyComm:
    """``comm`` imported on first use: importing this module must not load MPI."""

    def __getattr__(self, name: str):
        from . import comm as real

        return getattr(real, name)


comm = _LazyComm()
_NOVALUE = np._NoValue  # numpy's "argument not given" marker
_EMPTY_BYTES = np.empty(0, dtype=np.uint8)
_MPI_CODES = frozenset("bhilqBHILQfdgFDG")  # dtypes MPI reduces natively (not float16, bool)
_BIG = np.iinfo(np.int64).max
_SUMMA_PANEL = 256  # k-columns per SUMMA step (rounded to whole blocks)


def _cls():
    from .codistributed import codistributed

    return codistributed


def _redistribute(D, codist):
    from .codistributed import redistribute

    return redistribute(D, codist)


def _gather(D):
    from .codistributed import gather

    return gather(D)


# --------------------------------------------------------------------------- layout facts
def _here() -> tuple:
    return runtime.state.index, runtime.state.size


def _nlabs(codist) -> int:
    if isinstance(codist, codistributor1d):
        return len(codist.Partition)
    grid = codist.LabGrid
    return grid[0] * grid[1]


def _is1d(codist) -> bool:
    return isinstance(codist, codistributor1d)


def _layout(codist) -> str:
    if _is1d(codist):
        return f"1d layout (Dimension={codist.Dimension}, Partition={codist.Partition})"
    return (f"2dbc layout (LabGrid={codist.LabGrid}, BlockSize={codist.BlockSize}, "
            f"Orientation={codist.Orientation!r})")


def _describe(x: Any) -> str:
    if isinstance(x, _cls()):
        return f"codistributed {x.shape} {x.dtype} with {_layout(x._codist)}"
    if isinstance(x, np.ndarray):
        return f"replicated array {x.shape} {x.dtype}"
    return f"{type(x).__name__}"


def _labs_of(D, what: str) -> tuple:
    """``(labindex, numlabs)``, checking the array is laid out for this block's labs."""
    lab, n = _here()
    m = _nlabs(D._codist)
    if m != n:
        raise ValueError(f"{what}: the array is distributed over {m} labs but this block runs on {n}")
    return lab, n


@functools.lru_cache(maxsize=256)
def _local_sel(codist, lab: int, n: int) -> tuple:
    """Per-dimension global indices of ``lab``'s part: slices where contiguous (always for
    1-D layouts), increasing read-only index arrays otherwise (cached)."""
    sel = codist.localSelection(lab, n)
    for a in sel:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)
    return sel


def _sel_global(s, pos) -> np.ndarray:
    """Global indices of the local positions ``pos`` along a dimension selected by ``s``."""
    if isinstance(s, slice):
        return np.asarray(pos, dtype=np.int64) + s.start
    return np.asarray(s)[pos]


@functools.lru_cache(maxsize=256)
def _default(shape: tuple, n: int):
    """The default (complete) codistributor1d of ``shape`` on n labs."""
    return codistributor1d().complete(shape, n)


def _region(sel: Sequence) -> tuple:
    """An index tuple selecting the Cartesian product of per-dimension slices/arrays."""
    arrays = [k for k, s in enumerate(sel) if not isinstance(s, slice)]
    if len(arrays) <= 1:
        return tuple(sel)
    return np.ix_(*[np.asarray(s) if not isinstance(s, slice) else np.arange(s.start, s.stop)
                    for s in sel])


def _take_sel(a: np.ndarray, sel: Sequence) -> np.ndarray:
    """``a`` restricted to the Cartesian product ``sel`` (slices or increasing arrays)."""
    arrays = [k for k, s in enumerate(sel) if not isinstance(s, slice)]
    if len(arrays) <= 1:
        return a[tuple(sel)]
    out = a[tuple(s if isinstance(s, slice) else slice(None) for s in sel)]
    for k in arrays:
        out = np.take(out, sel[k], axis=k)
    return out


def _ix(arrays: Sequence[np.ndarray]) -> tuple:
    """``np.ix_`` that also accepts a single dimension and keeps empty arrays integer."""
    return np.ix_(*[np.asarray(a, dtype=np.intp) for a in arrays])


# --------------------------------------------------------------------------- communication
def _contig(x: Any) -> np.ndarray:
    """``x`` as a C-contiguous array, keeping 0-d arrays 0-d (unlike ascontiguousarray)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy(order="C")


def _bytes(a: np.ndarray) -> np.ndarray:
    a = _contig(a)
    if a.size == 0 or a.dtype.itemsize == 0:
        return _EMPTY_BYTES
    return a.reshape(-1).view(np.uint8)


def _allreduce(x: np.ndarray, how: str, what: str) -> np.ndarray:
    MPI = comm.MPI
    op = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}[how]
    send = _contig(x)
    recv = np.empty_like(send)
    if send.size == 0:
        return recv
    comm.wait(comm.block().Iallreduce(send, recv, op), what, keep=(send, recv))
    return recv


def _allgather(x: np.ndarray, what: str) -> np.ndarray:
    """``(numlabs,) + x.shape``: every lab's ``x`` (same shape and dtype on every lab)."""
    _, n = _here()
    x = _contig(x)
    out = np.empty((n,) + x.shape, dtype=x.dtype)
    if n == 1:
        out[0] = x
        return out
    if x.nbytes == 0:
        return out
    send = _bytes(x)
    recv = out.reshape(-1).view(np.uint8)
    MPI = comm.MPI
    comm.wait(comm.block().Iallgather([send, MPI.BYTE], [recv, MPI.BYTE]), what, keep=(send, out))
    return out


def _allgatherv(x: np.ndarray, counts: np.ndarray, what: str) -> np.ndarray:
    """Concatenation, in lab order, of every lab's 1-D ``x`` (lab k has ``counts[k-1]``)."""
    _, n = _here()
    x = np.ascontiguousarray(x)
    if n == 1:
        return x.copy()
    item = x.dtype.itemsize
    out = np.empty(int(np.sum(counts)), dtype=x.dtype)
    if out.nbytes == 0:
        return out
    c = np.asarray(counts, dtype=np.int64) * item
    d = np.concatenate(([0], np.cumsum(c)[:-1])).astype(np.int64)
    send = _bytes(x)
    recv = out.view(np.uint8)
    MPI = comm.MPI
    comm.wait(comm.block().Iallgatherv([send, MPI.BYTE], [recv, (c, d), MPI.BYTE]), what,
              keep=(send, out, c, d))
    return out


def _bcast(x: np.ndarray, root: int, what: str) -> np.ndarray:
    """Lab ``root``'s ``x`` on every lab (``x`` has the same shape/dtype everywhere)."""
    _, n = _here()
    x = np.array(x, copy=True, order="C")
    if n == 1 or x.nbytes == 0:
        return x
    MPI = comm.MPI
    buf = x.reshape(-1).view(np.uint8)
    comm.wait(comm.block().Ibcast([buf, MPI.BYTE], root - 1), what, keep=(x,))
    return x


_IN_FLIGHT: set = set()  # started exchanges; one abandoned by an abort stays here forever


class _Exchange:
    """One nonblocking all-to-all of byte chunks: ``sends[k]`` goes to lab k+1, and
    ``rcounts[k]`` bytes come from lab k+1 (both sides know the sizes from metadata).

    Until ``finish`` the exchange (request and buffers) is referenced from ``_IN_FLIGHT``,
    so if the block is aborted while it is pending (SUMMA keeps one exchange ahead), MPI
    never writes into freed memory."""

    def __init__(self, sends: list, rcounts: Sequence[int], what: str):
        chunks = [_EMPTY_BYTES if s is None else _bytes(s) for s in sends]
        self.scounts = np.array([c.size for c in chunks], dtype=np.int64)
        self.sdispl = np.concatenate(([0], np.cumsum(self.scounts)[:-1])).astype(np.int64)
        self.sendbuf = np.concatenate(chunks) if self.scounts.sum() else _EMPTY_BYTES
        self.rcounts = np.asarray(rcounts, dtype=np.int64)
        self.rdispl = np.concatenate(([0], np.cumsum(self.rcounts)[:-1])).astype(np.int64)
        self.recvbuf = np.empty(int(self.rcounts.sum()), dtype=np.uint8)
        self.what = what
        MPI = comm.MPI
        _IN_FLIGHT.add(self)
        self.request = comm.block().Ialltoallv(
            [self.sendbuf, (self.scounts, self.sdispl), MPI.BYTE],
            [self.recvbuf, (self.rcounts, self.rdispl), MPI.BYTE])

    def finish(self) -> list:
        comm.wait(self.request, self.what, keep=(self.sendbuf, self.recvbuf, self.scounts,
                                                 self.sdispl, self.rcounts, self.rdispl))
        _IN_FLIGHT.discard(self)
        self.sendbuf = None
        return [self.recvbuf[o:o + c] for o, c in zip(self.rdispl, self.rcounts)]


def _match(want: np.ndarray, have) -> tuple:
    """Positions in ``want`` whose global index is in ``have`` (a slice or an increasing
    array), and where in ``have``."""
    want = np.asarray(want)
    if isinstance(have, slice):
        found = np.flatnonzero((want >= have.start) & (want < have.stop))
        return found, (want[found] - have.start).astype(np.intp)
    if have.size == 0 or want.size == 0:
        e = np.empty(0, dtype=np.intp)
        return e, e
    pos = np.searchsorted(have, want)
    ok = pos < have.size
    ok[ok] = have[pos[ok]] == want[ok]
    return np.flatnonzero(ok), pos[ok]


def _fetch(src_local: np.ndarray, src, want: Callable[[int], tuple], what: str) -> np.ndarray:
    """This lab's block ``S[np.ix_(*want(me))]`` of the array S laid out by ``src``
    (this lab holding ``src_local``). ``want(q)`` gives, for every lab q, per-dimension
    global indices into S (any order, no repeats needed); one all-to-all."""
    lab, n = _here()
    mine = want(lab)
    dtype = src_local.dtype
    out = np.empty(tuple(len(w) for w in mine), dtype=dtype)
    sends: list = [None] * n
    rcounts = [0] * n
    mine_ix = _local_sel(src, lab, n)
    for q in range(1, n + 1):
        wq = mine if q == lab else want(q)
        pairs = [_match(np.asarray(w), h) for w, h in zip(wq, mine_ix)]
        block = src_local[_ix([p[1] for p in pairs])] if all(p[1].size for p in pairs) else None
        if q == lab:
            if block is not None:
                out[_ix([p[0] for p in pairs])] = block
        else:
            sends[q - 1] = block
    recv_pairs = {}
    for p in range(1, n + 1):
        if p == lab:
            continue
        pairs = [_match(np.asarray(w), h) for w, h in zip(mine, _local_sel(src, p, n))]
        shape = tuple(len(x[0]) for x in pairs)
        recv_pairs[p] = (pairs, shape)
        rcounts[p - 1] = math.prod(shape) * dtype.itemsize
    if n > 1:
        chunks = _Exchange(sends, rcounts, what).finish()
        for p, (pairs, shape) in recv_pairs.items():
            if rcounts[p - 1]:
                out[_ix([x[0] for x in pairs])] = chunks[p - 1].view(dtype).reshape(shape)
    return out


def _from_local(local: np.ndarray, codist):
    return _cls()._from_local(local, codist)


def _replicated_result(full: Any):
    """A replicated result as the caller expects: 0-d → numpy scalar, else a
    codistributed array with the default layout (each lab keeps its slice)."""
    full = np.asarray(full)
    if full.ndim == 0:
        return full[()]
    lab, n = _here()
    codist = _default(full.shape, n)
    return _from_local(np.array(_take_sel(full, _local_sel(codist, lab, n)), copy=True), codist)


# --------------------------------------------------------------------------- elementwise
def _is_operand(x: Any) -> bool:
    return isinstance(x, (_cls(), np.ndarray, numbers.Number, np.generic, list, tuple))


def _prep(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    return x


def _local_operand(x: Any, codist, G: tuple, lab: int, n: int, what: str) -> Any:
    """The part of operand ``x`` matching this lab's part of the result (layout codist)."""
    CD = _cls()
    if isinstance(x, CD):
        _labs_of(x, what)
        if tuple(x.shape) == G:
            return x._local if x._codist == codist else _redistribute(x, codist)._local
        x = _gather(x)  # a smaller operand that broadcasts: every lab takes it whole
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            return x
        a = x.reshape((1,) * (len(G) - x.ndim) + x.shape) if x.ndim < len(G) else x
        sel = _local_sel(codist, lab, n)
        sel = tuple(slice(None) if a.shape[e] == 1 and G[e] != 1 else s for e, s in enumerate(sel))
        return _take_sel(a, sel)
    return x


def _elementwise(what: str, fn: Callable, operands: Sequence, out: Optional[tuple] = None):
    """Apply ``fn`` (a numpy function of the local parts) to aligned operands."""
    CD = _cls()
    operands = [_prep(x) for x in operands]
    shapes = [tuple(x.shape) if isinstance(x, CD) else np.shape(x) for x in operands]
    try:
        G = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{what}: operands could not be broadcast together with shapes "
                         + " ".join(str(s) for s in shapes)) from None
    if out is not None:
        for o in out:
            if tuple(o.shape) != G:
                raise ValueError(f"{what}: the output has shape {o.shape} but the result has "
                                 f"shape {G}")
        base = out[0]
        for o in out[1:]:
            if o._codist != base._codist:
                raise NotImplementedError(f"{what}: outputs with different layouts "
                                          f"({_layout(base._codist)} and {_layout(o._codist)}) "
                                          "are not supported")
    else:
        base = next((x for x in operands if isinstance(x, CD) and tuple(x.shape) == G), None)
        if base is None:
            raise NotImplementedError(
                f"{what}: broadcasting {', '.join(_describe(x) for x in operands)} to the "
                f"shape {G} is not supported for codistributed arrays: one codistributed "
                "operand must have the result's shape")
    lab, n = _labs_of(base, what)
    codist = base._codist
    locs = [_local_operand(x, codist, G, lab, n, what) for x in operands]
    if out is not None:
        fn(*locs, out=tuple(o._local for o in out))
        return out[0] if len(out) == 1 else tuple(out)
    res = fn(*locs)
    if isinstance(res, tuple):
        return tuple(_from_local(np.asarray(r), codist) for r in res)
    return _from_local(np.asarray(res), codist)


def _ufunc_call(ufunc: np.ufunc, inputs: tuple, kwargs: dict):
    CD = _cls()
    what = f"numpy.{ufunc.__name__}"
    out = kwargs.pop("out", None)
    if out is not None:
        out = out if isinstance(out, tuple) else (out,)
        if any(o is None for o in out):
            if all(o is None for o in out):
                out = None
            else:
                raise NotImplementedError(f"{what}: out= must give every output as a codistributed "
                                          "array, not None")
        elif not all(isinstance(o, CD) for o in out):
            raise NotImplementedError(f"{what}: out= must be codistributed arrays, got "
                                      + ", ".join(_describe(o) for o in out) + " for inputs "
                                      + ", ".join(_describe(x) for x in inputs))
    where = kwargs.pop("where", True)
    operands = list(inputs)
    has_where = where is not True
    if has_where:
        operands.append(where)
    nin = len(inputs)

    def fn(*locs, out=None):
        extra = dict(kwargs)
        if has_where:
            extra["where"] = locs[nin]
        if out is not None:
            extra["out"] = out
        return ufunc(*locs[:nin], **extra)

    return _elementwise(what, fn, operands, out)


# --------------------------------------------------------------------------- reductions
_LOCAL_FN = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "any": np.any, "all": np.all}
_COMBINE_UFUNC = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
                  "any": np.logical_or, "all": np.logical_and}


def _identity(how: str, dtype: np.dtype):
    if how in ("sum", "any"):
        return dtype.type(0) if how == "sum" else False
    if how in ("prod", "all"):
        return dtype.type(1) if how == "prod" else True
    kind = dtype.kind
    big = how == "min"
    if kind == "f":
        return np.inf if big else -np.inf
    if kind == "c":
        return complex(np.inf, np.inf) if big else complex(-np.inf, -np.inf)
    if kind in "iu":
        info = np.iinfo(dtype)
        return info.max if big else info.min
    if kind == "b":
        return big
    raise NotImplementedError(f"{how} of a codistributed array of dtype {dtype}")


def _axes(ndim: int, axis: Any, dim: Any, what: str) -> Optional[tuple]:
    """Sorted 0-based axes from ``axis=`` (numpy) or ``dim=`` (1-based, MATLAB); None = all."""
    if dim is not None:
        if axis is not None:
            raise TypeError(f"{what}: give the dimension as dim (1-based, MATLAB) or axis= "
                            "(0-based), not both")
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        out = []
        for d in dims:
            if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Integral) or not 1 <= d <= ndim:
                raise ValueError(f"{what}: dimension {d!r} is invalid for a {ndim}-D array: "
                                 f"dimensions are numbered 1..{ndim} as in MATLAB (or pass "
                                 "axis=, 0-based)")
            out.append(int(d) - 1)
    elif axis is None:
        return None
    else:
        ax = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        out = []
        for a in ax:
            if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Integral):
                raise TypeError(f"{what}: '{type(a).__name__}' object cannot be interpreted "
                                "as an integer axis")
            if not -ndim <= a < ndim:
                raise np.exceptions.AxisError(int(a), ndim)
            out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: duplicate value in 'axis'")
    return tuple(sorted(out))


def _check_numeric(D, what: str) -> None:
    if D.dtype.kind not in "biufc":
        raise NotImplementedError(f"{what} of a codistributed array of dtype {D.dtype} is not "
                                  f"supported ({_layout(D._codist)})")


def _no_extras(what: str, initial=_NOVALUE, where=True, layout=None, **others) -> None:
    if others:
        raise TypeError(f"{what}() got an unexpected keyword argument {next(iter(others))!r}")
    on = f" ({_layout(layout)})" if layout is not None else ""
    if initial is not _NOVALUE:
        raise NotImplementedError(f"{what}: initial= is not supported for codistributed arrays{on}")
    if where is not True:
        raise NotImplementedError(f"{what}: where= is not supported for codistributed arrays{on}")


def _combine_plain(p: np.ndarray, how: str, what: str) -> np.ndarray:
    """Elementwise combination over the labs of same-shaped partials (replicated result)."""
    dt = p.dtype
    if dt.kind == "b":
        u = _contig(p).view(np.uint8)
        op = "max" if how in ("any", "max", "sum") else "min"
        return _allreduce(u, op, what).view(np.bool_)
    if dt.char in _MPI_CODES and not (dt.kind == "c" and how in ("min", "max")):
        return _allreduce(p, how, what)
    stack = _allgather(p, what)
    return _COMBINE_UFUNC[how].reduce(stack, axis=0, dtype=dt)


def _combine(p: np.ndarray, how: str, what: str) -> np.ndarray:
    _, n = _here()
    if n == 1:
        return p
    if how in ("min", "max") and p.dtype.kind in "fc":
        nan = np.isnan(p)
        anynan = _combine_plain(nan, "any", what)
        r = _combine_plain(np.where(nan, p.dtype.type(_identity(how, p.dtype)), p), how, what)
        return np.where(anynan, p.dtype.type(np.nan), r)
    return _combine_plain(p, how, what)


def _embed(part: np.ndarray, F: tuple, c, lab: int, n: int, axes: tuple, fill) -> np.ndarray:
    """A lab's keepdims partial placed into the full keepdims shape ``F`` (``fill`` elsewhere)."""
    ix = _local_sel(c, lab, n)
    if all(e in axes or sel_len(ix[e]) == F[e] for e in range(len(F))):
        return _contig(part)
    full = np.full(F, fill, dtype=part.dtype)
    sel = [slice(None) if e in axes else ix[e] for e in range(len(F))]
    full[_region(sel)] = part
    return full


def _squeeze_shape(G: tuple, axes: tuple) -> tuple:
    return tuple(s for e, s in enumerate(G) if e not in axes)


def _wrap_local(r: np.ndarray, c, G: tuple, axes: tuple, keepdims: bool):
    """A local keepdims result of a reduction along non-distributed axes of a 1-D layout."""
    k = c.Dimension - 1
    if keepdims:
        F = tuple(1 if e in axes else s for e, s in enumerate(G))
        return _from_local(r, codistributor1d(k + 1, c.Partition, F))
    R = _squeeze_shape(G, axes)
    newk = k - sum(1 for a in axes if a < k)
    return _from_local(np.squeeze(r, axis=axes), codistributor1d(newk + 1, c.Partition, R))


def _whole(D, how: str, kw: dict, what: str):
    """Whole-array reduction: a numpy scalar, bitwise the same on every lab."""
    lab, n = _labs_of(D, what)
    L = D._local
    fn = _LOCAL_FN[how]
    if L.size:
        part = np.asarray(fn(L, **kw))
    else:
        part = np.zeros((), dtype=np.asarray(fn(np.zeros(1, L.dtype), **kw)).dtype)
    vals = _allgather(part, what)
    valid = [math.prod(D._codist.localShape(k, n)) > 0 for k in range(1, n + 1)]
    return _COMBINE_UFUNC[how].reduce(vals[np.array(valid)], dtype=vals.dtype)


def _reduce(D, how: str, axis=None, dim=None, kw: Optional[dict] = None, keepdims=False,
            what: Optional[str] = None):
    what = what or how
    kw = kw or {}
    G = tuple(D.shape)
    ndim = len(G)
    axes = _axes(ndim, axis, dim, what)
    if math.prod(G) == 0:  # every lab sees the same empty array: numpy decides
        return _replicated_result(_LOCAL_FN[how](np.empty(G, D.dtype), axis=axes,
                                                 keepdims=bool(keepdims), **kw))
    _check_numeric(D, what)
    if axes is None or len(axes) == ndim:
        r = _whole(D, how, kw, what)
        return _replicated_result(np.reshape(r, (1,) * ndim)) if keepdims else r
    lab, n = _labs_of(D, what)
    c = D._codist
    L = D._local
    fn = _LOCAL_FN[how]
    if _is1d(c) and c.Dimension - 1 not in axes:
        return _wrap_local(fn(L, axis=axes, keepdims=True, **kw), c, G, axes, bool(keepdims))
    F = tuple(1 if e in axes else s for e, s in enumerate(G))
    if any(L.shape[e] == 0 for e in axes):
        rdt = np.asarray(fn(np.zeros((1,) * ndim, L.dtype), **kw)).dtype
        local_F = tuple(1 if e in axes else s for e, s in enumerate(L.shape))
        part = np.full(local_F, _identity(how, rdt), dtype=rdt)
    else:
        part = fn(L, axis=axes, keepdims=True, **kw)
    full = _combine(_embed(part, F, c, lab, n, axes, _identity(how, part.dtype)), how, what)
    return _replicated_result(full if keepdims else full.reshape(_squeeze_shape(G, axes)))


def _divide(r, count, what: str):
    """numpy's ``ret / rcount`` step of mean/var (keeping the sum's dtype)."""
    if isinstance(r, _cls()):
        np.true_divide(r._local, count, out=r._local, casting="unsafe")
        return r
    return r.dtype.type(r / count)


def _mean(D, axis=None, dtype=None, out=None, keepdims=False, *, dim=None, where=True):
    what = "mean"
    if out is not None:
        raise NotImplementedError(f"{what}: out= is not supported for codistributed arrays "
                                  f"({_layout(D._codist)})")
    _no_extras(what, where=where, layout=D._codist)
    G = tuple(D.shape)
    axes = _axes(len(G), axis, dim, what)
    if math.prod(G) == 0:
        return _replicated_result(np.mean(np.empty(G, D.dtype), axis=axes, dtype=dtype,
                                          keepdims=bool(keepdims)))
    _check_numeric(D, what)
    acc, f16 = dtype, False
    if dtype is None:
        if D.dtype.kind in "biu":
            acc = np.dtype(np.float64)
        elif D.dtype == np.float16:
            acc, f16 = np.dtype(np.float32), True
    count = math.prod(G) if axes is None else math.prod(G[a] for a in axes)
    s = _reduce(D, "sum", axes, None, {"dtype": acc} if acc is not None else {}, keepdims, what)
    r = _divide(s, count, what)
    if f16:
        return r.astype(np.float16) if isinstance(r, _cls()) else np.float16(r)
    return r


def _var(D, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, dim=None, where=True,
         mean=_NOVALUE, correction=_NOVALUE, what="var", root=False):
    if out is not None:
        raise NotImplementedError(f"{what}: out= is not supported for codistributed arrays "
                                  f"({_layout(D._codist)})")
    _no_extras(what, where=where, layout=D._codist)
    if mean is not _NOVALUE:
        raise NotImplementedError(f"{what}: mean= is not supported for codistributed arrays "
                                  f"({_layout(D._codist)})")
    if correction is not _NOVALUE:
        if ddof != 0:
            raise ValueError(f"{what}: ddof and correction can't be provided simultaneously.")
        ddof = correction
    CD = _cls()
    G = tuple(D.shape)
    ndim = len(G)
    axes = _axes(ndim, axis, dim, what)
    if math.prod(G) == 0:
        f = np.std if root else np.var
        return _replicated_result(f(np.empty(G, D.dtype), axis=axes, dtype=dtype, ddof=ddof,
                                    keepdims=bool(keepdims)))
    _check_numeric(D, what)
    lab, n = _labs_of(D, what)
    acc = dtype
    if dtype is None and D.dtype.kind in "biu":
        acc = np.dtype(np.float64)
    kw = {"dtype": acc} if acc is not None else {}
    full_axes = axes is None or len(axes) == ndim
    count = math.prod(G) if full_axes else math.prod(G[a] for a in axes)
    c, L = D._codist, D._local
    # the mean, shaped to broadcast against this lab's local part
    if full_axes:
        m = _divide(_whole(D, "sum", kw, what), count, what)
    elif _is1d(c) and c.Dimension - 1 not in axes:
        m = np.sum(L, axis=axes, keepdims=True, **kw)
        m = np.true_divide(m, count, out=m, casting="unsafe")
    else:
        F = tuple(1 if e in axes else s for e, s in enumerate(G))
        if any(L.shape[e] == 0 for e in axes):
            rdt = np.sum(np.zeros(1, L.dtype), **kw).dtype
            part = np.zeros(tuple(1 if e in axes else s for e, s in enumerate(L.shape)), dtype=rdt)
        else:
            part = np.sum(L, axis=axes, keepdims=True, **kw)
        full = _combine(_embed(part, F, c, lab, n, axes, 0), "sum", what)
        full = np.true_divide(full, count, out=full, casting="unsafe")
        sel = _local_sel(c, lab, n)
        m = _take_sel(full, [slice(None) if e in axes else s for e, s in enumerate(sel)])
    x = np.asarray(L - m)
    if D.dtype.kind in "iuf":
        x = np.multiply(x, x, out=x)
    elif D.dtype.kind == "c":
        x = x.real * x.real + x.imag * x.imag
    else:
        x = np.multiply(x, np.conjugate(x), out=x).real
    r = _reduce(CD._from_local(x, c), "sum", axes, None, kw, keepdims, what)
    r = _divide(r, max(count - ddof, 0), what)
    if root:
        if isinstance(r, CD):
            np.sqrt(r._local, out=r._local)
            return r
        return r.dtype.type(np.sqrt(r))
    return r


def _argreduce(D, how: str, axis=None, out=None, *, keepdims=False, dim=None):
    what = f"arg{how}"
    if out is not None:
        raise NotImplementedError(f"{what}: out= is not supported for codistributed arrays "
                                  f"({_layout(D._codist)})")
    G = tuple(D.shape)
    ndim = len(G)
    if dim is not None or axis is not None:
        if isinstance(axis, (tuple, list)) or isinstance(dim, (tuple, list)):
            raise TypeError(f"{what}: axis must be an integer")
        axis = _axes(ndim, axis, dim, what)[0]
    if math.prod(G) == 0:
        f = np.argmax if how == "max" else np.argmin
        return _replicated_result(f(np.empty(G, D.dtype), axis=axis, keepdims=bool(keepdims)))
    _check_numeric(D, what)
    lab, n = _labs_of(D, what)
    c, L = D._codist, D._local
    ix = _local_sel(c, lab, n)
    larg = np.argmax if how == "max" else np.argmin
    fc = D.dtype.kind in "fc"
    if axis is None or ndim == 1:
        if L.size:
            i = int(larg(L))
            v = L.reshape(-1)[i]
            gi = int(np.ravel_multi_index(tuple(int(_sel_global(ix[e], j)) for e, j in enumerate(np.unravel_index(i, L.shape))), G))
        else:
            v, gi = np.zeros((), L.dtype), -1
        rec = np.zeros((), dtype=[("v", L.dtype), ("i", np.int64)])
        rec["v"], rec["i"] = v, gi
        allr = _allgather(rec, what)
        valid = np.array([math.prod(c.localShape(k, n)) > 0 for k in range(1, n + 1)])
        vals, idx = allr["v"][valid], allr["i"][valid]
        if fc and np.isnan(vals).any():
            cand = np.isnan(vals)
        else:
            cand = vals == (vals.max() if how == "max" else vals.min())
        r = np.intp(idx[cand].min())
        return _replicated_result(np.reshape(r, (1,) * ndim)) if keepdims else r
    if _is1d(c) and c.Dimension - 1 != axis:
        return _wrap_local(larg(L, axis=axis, keepdims=True), c, G, (axis,), bool(keepdims))
    axes = (axis,)
    F = tuple(1 if e == axis else s for e, s in enumerate(G))
    ident = _identity(how, D.dtype)
    if L.shape[axis] == 0:
        local_F = tuple(1 if e == axis else s for e, s in enumerate(L.shape))
        v = np.full(local_F, ident, dtype=L.dtype)
        gi = np.full(local_F, _BIG, dtype=np.int64)
        valid = np.zeros(local_F, dtype=bool)
    else:
        li = larg(L, axis=axis, keepdims=True)
        v = np.take_along_axis(L, li, axis=axis)
        gi = _sel_global(ix[axis], li).astype(np.int64)
        valid = np.ones(v.shape, dtype=bool)
    v = _embed(v, F, c, lab, n, axes, ident)
    gi = _embed(gi, F, c, lab, n, axes, _BIG)
    valid = _embed(valid, F, c, lab, n, axes, False)
    if fc:
        isn = np.isnan(v) & valid
        anynan = _combine_plain(isn, "any", what)
        vv = np.where(valid & ~isn, v, D.dtype.type(ident))
    else:
        vv = np.where(valid, v, D.dtype.type(ident))
    M = _combine_plain(vv, how, what) if n > 1 else vv
    cand = valid & (v == M)
    if fc:
        cand = np.where(anynan, isn, cand)
    best = np.where(cand, gi, _BIG)
    best = _combine_plain(best, "min", what) if n > 1 else best
    best = best.astype(np.intp)
    return _replicated_result(best if keepdims else best.reshape(_squeeze_shape(G, axes)))


# --------------------------------------------------------------------------- transpose
def _transpose(D, axes: Optional[tuple]):
    G = tuple(D.shape)
    ndim = len(G)
    if axes is None or axes == (None,) or len(axes) == 0:
        axes = tuple(range(ndim))[::-1]
    elif len(axes) == 1 and isinstance(axes[0], (tuple, list, np.ndarray)):
        axes = tuple(axes[0])
    try:
        axes = tuple(operator.index(a) for a in axes)
    except TypeError:
        raise TypeError(f"transpose: axes must be integers, got {axes!r}") from None
    if len(axes) != ndim:
        raise ValueError("transpose: axes don't match array")
    axes = tuple(a % ndim if -ndim <= a < ndim else a for a in axes)
    if sorted(axes) != list(range(ndim)):
        raise ValueError(f"transpose: axes {axes} are not a permutation of 0..{ndim - 1}")
    c = D._codist
    newG = tuple(G[a] for a in axes)
    local = D._local.transpose(axes)
    if _is1d(c):
        k = c.Dimension - 1
        return _from_local(local, codistributor1d(axes.index(k) + 1, c.Partition, newG))
    if axes == (0, 1):
        return _from_local(local, c)
    r, q = c.LabGrid
    orient = "col" if c.Orientation == "row" else "row"
    return _from_local(local, codistributor2dbc([q, r], c.BlockSize, orient, newG))


# --------------------------------------------------------------------------- matmul
def _rows(D, what: str):
    """D laid out by rows (a 1-D layout along dimension 1; kept if it already is)."""
    c = D._codist
    if _is1d(c) and c.Dimension == 1:
        return D
    return _redistribute(D, codistributor1d(1))


def _cols(D, what: str):
    c = D._codist
    if _is1d(c) and c.Dimension == 2:
        return D
    return _redistribute(D, codistributor1d(2))


def _matmul(a: Any, b: Any, what: str = "matmul"):
    CD = _cls()
    if not isinstance(a, CD):
        a = np.asarray(a)
    if not isinstance(b, CD):
        b = np.asarray(b)
    sa, sb = tuple(a.shape), tuple(b.shape)
    if not sa or not sb:
        raise ValueError(f"{what}: Input operand {0 if not sa else 1} does not have enough "
                         "dimensions (scalars are not allowed for @, use *)")
    if len(sa) > 2 or len(sb) > 2:
        raise NotImplementedError(f"{what}: stacks of matrices (operands of more than 2 "
                                  f"dimensions) are not supported: {_describe(a)} @ {_describe(b)}")
    ka = sa[-1]
    kb = sb[0] if len(sb) == 1 else sb[-2]
    if ka != kb:
        raise ValueError(f"{what}: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (n?,k),(k,m?)->(n?,m?) (size {kb} is "
                         f"different from {ka})")
    rdt = np.result_type(a.dtype, b.dtype)
    if rdt.kind not in "biufc":
        raise NotImplementedError(f"{what}: dtype {rdt} is not supported: {_describe(a)} @ {_describe(b)}")
    for x in (a, b):
        if isinstance(x, CD):
            lab, n = _labs_of(x, what)
    if len(sa) == 1 and len(sb) == 2:
        return _matmul(b.T, a, what)  # x @ B == B.T @ x for a vector x
    if len(sa) == 1:
        return _dot(a, b, rdt, what)
    if len(sb) == 1:
        return _matvec(a, b, rdt, what)
    return _matmat(a, b, rdt, what)


def _dot(a, b, rdt, what: str):
    CD = _cls()
    base = a if isinstance(a, CD) else b
    lab, n = _labs_of(base, what)
    G = tuple(base.shape)
    la = _local_operand(a, base._codist, G, lab, n, what)
    lb = _local_operand(b, base._codist, G, lab, n, what)
    part = np.asarray(np.matmul(la, lb), dtype=rdt)
    vals = _allgather(part, what)
    return np.add.reduce(vals, dtype=rdt)


def _matvec(A, x, rdt, what: str):
    """Matrix (n, k) times vector (k,)."""
    CD = _cls()
    nrows = A.shape[0]
    if not isinstance(A, CD):  # replicated matrix, codistributed vector
        lab, n = _labs_of(x, what)
        cols = _local_sel(x._codist, lab, n)[0]
        part = np.asarray(A[:, cols] @ x._local, dtype=rdt)
        return _replicated_result(_combine(part, "sum", what))
    lab, n = _labs_of(A, what)
    c = A._codist
    if _is1d(c) and c.Dimension == 1:
        xf = _gather(x) if isinstance(x, CD) else x
        return _from_local(np.asarray(A._local @ xf, dtype=rdt),
                           codistributor1d(1, c.Partition, (nrows,)))
    if _is1d(c):  # by columns: partial products of each lab's column panel
        xl = _local_operand(x, codistributor1d(1, c.Partition, (x.shape[0],)), tuple(x.shape),
                            lab, n, what)
        part = np.asarray(A._local @ xl, dtype=rdt)
        return _replicated_result(_combine(part, "sum", what))
    xf = _gather(x) if isinstance(x, CD) else x
    rows, cols = _local_sel(c, lab, n)
    part = np.asarray(A._local @ xf[cols], dtype=rdt)
    full = np.zeros(nrows, dtype=rdt)
    full[rows] = part
    return _replicated_result(_combine(full, "sum", what))


def _matmat(A, B, rdt, what: str):
    CD = _cls()
    n_, m_ = A.shape[0], B.shape[1]
    if not isinstance(A, CD):
        Bc = _cols(B, what)
        c = Bc._codist
        return _from_local(np.asarray(A @ Bc._local, dtype=rdt),
                           codistributor1d(2, c.Partition, (n_, m_)))
    if not isinstance(B, CD):
        Ar = _rows(A, what)
        c = Ar._codist
        return _from_local(np.asarray(Ar._local @ B, dtype=rdt),
                           codistributor1d(1, c.Partition, (n_, m_)))
    ca = A._codist
    if not _is1d(ca):
        target = codistributor2dbc(ca.LabGrid, ca.BlockSize, ca.Orientation, tuple(B.shape))
        Bb = B if B._codist == target else _redistribute(B, target)
        return _summa(A, Bb, rdt, what)
    return _ring(_rows(A, what), _rows(B, what), rdt, what)


def _ring(A, B, rdt, what: str):
    """Rows-distributed A (n, k) @ rows-distributed B (k, m): B's row panels travel
    around the labs (each step overlaps the next exchange with the local product)."""
    lab, n = _here()
    m_ = B.shape[1]
    pB = B._codist.Partition
    starts = np.concatenate(([0], np.cumsum(pB))).astype(np.int64)
    Al = A._local
    C = np.zeros((Al.shape[0], m_), dtype=rdt)
    cur = np.ascontiguousarray(B._local)
    bdt = cur.dtype
    for step in range(n):
        q = (lab - 1 + step) % n  # the lab (0-based) whose panel this lab holds now
        ex = None
        if step < n - 1:
            nxt = (q + 1) % n
            sends: list = [None] * n
            sends[(lab - 2) % n] = cur
            rcounts = [0] * n
            rcounts[lab % n] = int(pB[nxt]) * m_ * bdt.itemsize
            ex = _Exchange(sends, rcounts, what)
        if pB[q] and Al.shape[0]:
            C += Al[:, starts[q]:starts[q + 1]] @ cur
        if ex is not None:
            chunk = ex.finish()[lab % n]
            cur = chunk.view(bdt).reshape(int(pB[nxt]), m_) if chunk.size else np.empty((int(pB[nxt]), m_), bdt)
    return _from_local(C, codistributor1d(1, A._codist.Partition, (A.shape[0], m_)))


def _summa(A, B, rdt, what: str):
    """SUMMA for A (n, k) and B (k, m) on the same 2dbc lab grid and block size."""
    lab, n = _here()
    ca, cb = A._codist, B._codist
    r, q = ca.LabGrid
    pr, pc = ca.gridCoords(lab, n)
    coords = {L: ca.gridCoords(L, n) for L in range(1, n + 1)}
    at = {v: L for L, v in coords.items()}
    row_peers = [at[(pr, j)] for j in range(q)]  # labs in my grid row, by grid column
    col_peers = [at[(i, pc)] for i in range(r)]  # labs in my grid column, by grid row
    kA = [ca.globalIndices(2, at[(0, j)], n) for j in range(q)]  # k's held per grid column
    kB = [cb.globalIndices(1, at[(i, 0)], n) for i in range(r)]  # k's held per grid row
    Al, Bl = A._local, B._local
    adt, bdt = Al.dtype, Bl.dtype
    nl, ml = Al.shape[0], Bl.shape[1]
    k = A.shape[1]
    C = np.zeros((nl, ml), dtype=rdt)
    b = ca.BlockSize
    width = b * max(1, _SUMMA_PANEL // b)
    panels = list(range(0, k, width))

    def bounds(ks: np.ndarray, K0: int, K1: int) -> tuple:
        return int(np.searchsorted(ks, K0)), int(np.searchsorted(ks, K1))

    def start(K0: int):
        K1 = min(K0 + width, k)
        a0, a1 = bounds(kA[pc], K0, K1)
        b0, b1 = bounds(kB[pr], K0, K1)
        a_send = np.ascontiguousarray(Al[:, a0:a1])
        b_send = np.ascontiguousarray(Bl[b0:b1, :])
        ex = None
        if n > 1:
            sends: list = [None] * n
            rcounts = [0] * n
            for j, peer in enumerate(row_peers):
                if peer != lab:
                    sends[peer - 1] = a_send
                    lo, hi = bounds(kA[j], K0, K1)
                    rcounts[peer - 1] += nl * (hi - lo) * adt.itemsize
            for i, peer in enumerate(col_peers):
                if peer != lab:
                    sends[peer - 1] = b_send
                    lo, hi = bounds(kB[i], K0, K1)
                    rcounts[peer - 1] += (hi - lo) * ml * bdt.itemsize
            ex = _Exchange(sends, rcounts, what)
        return K0, K1, a_send, b_send, ex

    def finish(h):
        K0, K1, a_send, b_send, ex = h
        chunks = ex.finish() if ex is not None else None
        w = K1 - K0
        Ap = np.empty((nl, w), dtype=adt)
        Bp = np.empty((w, ml), dtype=bdt)
        for j, peer in enumerate(row_peers):
            lo, hi = bounds(kA[j], K0, K1)
            if hi == lo:
                continue
            ks = kA[j][lo:hi] - K0
            part = a_send if peer == lab else chunks[peer - 1].view(adt).reshape(nl, hi - lo)
            Ap[:, ks] = part
        for i, peer in enumerate(col_peers):
            lo, hi = bounds(kB[i], K0, K1)
            if hi == lo:
                continue
            ks = kB[i][lo:hi] - K0
            part = b_send if peer == lab else chunks[peer - 1].view(bdt).reshape(hi - lo, ml)
            Bp[ks, :] = part
        return Ap, Bp

    pending = start(panels[0]) if panels else None
    for t in range(len(panels)):
        current = pending
        pending = start(panels[t + 1]) if t + 1 < len(panels) else None
        Ap, Bp = finish(current)
        if nl and ml:
            C += Ap @ Bp
    gsize = (A.shape[0], B.shape[1])
    return _from_local(C, codistributor2dbc(ca.LabGrid, b, ca.Orientation, gsize))


# --------------------------------------------------------------------------- indexing
def _index_kind(k: Any) -> str:
    if k is None:
        return "None (np.newaxis)"
    if isinstance(k, _cls()):
        return f"a codistributed {k.dtype} array"
    if isinstance(k, (bool, np.bool_)):
        return "a boolean scalar"
    if isinstance(k, np.ndarray):
        return f"a {k.dtype} array of shape {k.shape}"
    if isinstance(k, (list, tuple)):
        return "a list (fancy indexing)"
    return f"a {type(k).__name__}"


def _parse_key(key: Any, G: tuple, what: str, codist=None) -> list:
    """Per dimension ``('i', index)`` or ``('s', range)`` for a key of ints and slices."""
    if not isinstance(key, tuple):
        key = (key,)
    ndim = len(G)
    for k in key:
        if k is Ellipsis or isinstance(k, slice):
            continue
        if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
            continue
        if isinstance(k, numbers.Integral) and not isinstance(k, (bool, np.bool_)):
            continue
        if k is None or isinstance(k, (_cls(), np.ndarray, list, tuple, bool, np.bool_)):
            where = f" ({_layout(codist)})" if codist is not None else ""
            raise NotImplementedError(f"{what}: indexing with {_index_kind(k)} is not supported "
                                      f"for codistributed arrays{where}; use ints, slices, or a "
                                      "boolean mask of the array's shape")
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
                         "and integer or boolean arrays are valid indices")
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in [k for k in key if not isinstance(k, np.ndarray)]:
        pos = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = ndim - (len(key) - 1)
        key = key[:pos] + (slice(None),) * max(fill, 0) + key[pos + 1:]
    if len(key) > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{len(key)} were indexed")
    key = key + (slice(None),) * (ndim - len(key))
    out = []
    for e, k in enumerate(key):
        if isinstance(k, slice):
            out.append(("s", range(*k.indices(G[e]))))
        else:
            i = operator.index(k)
            if not -G[e] <= i < G[e]:
                raise IndexError(f"index {i} is out of bounds for axis {e} with size {G[e]}")
            out.append(("i", i % G[e]))
    return out


def _sel_arrays(parsed: list) -> list:
    return [np.array([v], dtype=np.int64) if kind == "i" else np.arange(v.start, v.stop, v.step, dtype=np.int64)
            for kind, v in parsed]


def _scalar_get(D, idx: tuple, what: str):
    lab, n = _labs_of(D, what)
    owner, local = D._codist.globalToLocal(tuple(idx), n)
    buf = np.empty((), dtype=D.dtype)
    if owner == lab:
        buf[()] = D._local[tuple(local)]
    if n > 1:
        buf = _bcast(buf, int(owner), what)
    return buf[()]


def _slice_get(D, parsed: list, what: str):
    lab, n = _labs_of(D, what)
    G = tuple(D.shape)
    c = D._codist
    ints = [e for e, (kind, _) in enumerate(parsed) if kind == "i"]
    keep = [e for e in range(len(G)) if e not in ints]
    R = tuple(len(parsed[e][1]) for e in keep)
    if _is1d(c) and c.Dimension - 1 in keep and parsed[c.Dimension - 1][1].step > 0:
        # a forward slice along the distributed dimension: each lab keeps what it has
        k = c.Dimension - 1
        rng = parsed[k][1]
        sel_k = np.arange(rng.start, rng.stop, rng.step, dtype=np.int64)
        bounds = np.concatenate(([0], np.cumsum(c.Partition))).astype(np.int64)
        cuts = np.searchsorted(sel_k, bounds)
        counts = [int(x) for x in np.diff(cuts)]
        a, b = int(cuts[lab - 1]), int(cuts[lab])
        lo = int(bounds[lab - 1])
        local_k = slice(int(sel_k[a]) - lo, int(sel_k[b - 1]) - lo + 1, rng.step) if b > a else slice(0, 0)
        index = []
        for e, (kind, v) in enumerate(parsed):
            if e == k:
                index.append(local_k)
            elif kind == "i":
                index.append(v)
            else:
                index.append(slice(v.start, v.stop if v.stop >= 0 else None, v.step))
        local = np.array(D._local[tuple(index)], copy=True)
        newk = keep.index(k)
        return _from_local(local, codistributor1d(newk + 1, counts, R))
    sel = _sel_arrays(parsed)
    dR = _default(R, n)
    dk = keep[dR.Dimension - 1]
    K = tuple(len(s) for s in sel)
    dest = codistributor1d(dk + 1, dR.Partition, K)

    def want(q: int) -> tuple:
        return tuple(s[i] for s, i in zip(sel, _local_sel(dest, q, n)))

    block = _fetch(D._local, c, want, what)
    return _from_local(block.reshape(dR.localShape(lab, n)), dR)


def _mask_local(D, M, what: str):
    """M (codistributed or replicated boolean array of D's shape) as D's local layout."""
    CD = _cls()
    lab, n = _labs_of(D, what)
    if isinstance(M, CD):
        _labs_of(M, what)
        return M._local if M._codist == D._codist else _redistribute(M, D._codist)._local
    return _take_sel(M, _local_sel(D._codist, lab, n))


def _is_mask(key: Any, D) -> bool:
    CD = _cls()
    if isinstance(key, CD) or (isinstance(key, np.ndarray) and key.dtype == bool and key.ndim > 0):
        if key.dtype != bool:
            raise NotImplementedError(f"indexing with {_index_kind(key)} is not supported for "
                                      f"codistributed arrays ({_layout(D._codist)}); use ints, "
                                      "slices, or a boolean mask")
        if tuple(key.shape) != tuple(D.shape):
            raise NotImplementedError(f"indexing with a boolean mask of shape {tuple(key.shape)} "
                                      f"is not supported for a codistributed array of shape "
                                      f"{tuple(D.shape)} ({_layout(D._codist)}): the mask must "
                                      "have the array's shape")
        return True
    return False


def _concatenates(codist, G: tuple) -> bool:
    """True when the local parts, in lab order, are the array's elements in C order."""
    return _is1d(codist) and math.prod(G[:codist.Dimension - 1]) == 1


def _mask_get(D, M, what: str):
    G = tuple(D.shape)
    lab, n = _labs_of(D, what)
    if not _concatenates(D._codist, G):
        D = _redistribute(D, _flat_layout(G, n))
        if isinstance(M, _cls()):
            M = _redistribute(M, D._codist) if M._codist != D._codist else M
    Ml = _mask_local(D, M, what)
    vals = np.ascontiguousarray(D._local[Ml])
    counts = _allgather(np.array(vals.size, dtype=np.int64), what)
    total = int(counts.sum())
    return _from_local(vals, codistributor1d(1, [int(x) for x in counts], (total,)))


def _mask_ranks(D, Ml: np.ndarray, counts: np.ndarray, what: str) -> np.ndarray:
    """C-order positions, among all selected elements, of this lab's selected elements."""
    lab, n = _here()
    G = tuple(D.shape)
    if _concatenates(D._codist, G):
        off = int(counts[:lab - 1].sum())
        return np.arange(off, off + int(counts[lab - 1]), dtype=np.int64)
    ix = _local_sel(D._codist, lab, n)
    nz = np.nonzero(Ml)
    f = np.ravel_multi_index(tuple(_sel_global(ix[e], nz[e]) for e in range(len(G))), G).astype(np.int64)
    allf = np.sort(_allgatherv(f, counts, what))
    return np.searchsorted(allf, f).astype(np.int64)


def _mask_set(D, M, value: Any, what: str) -> None:
    CD = _cls()
    Ml = _mask_local(D, M, what)
    if isinstance(value, CD):
        value = _gather(value)
    v = np.asarray(value)
    while v.ndim > 1 and v.shape[0] == 1:
        v = v[0]
    if v.size == 1:
        D._local[Ml] = v.reshape(())
        return
    counts = _allgather(np.array(np.count_nonzero(Ml), dtype=np.int64), what)
    total = int(counts.sum())
    if v.ndim != 1 or v.size != total:
        raise ValueError(f"NumPy boolean array indexing assignment cannot assign {v.size} input "
                         f"values to the {total} output values where the mask is true")
    D._local[Ml] = v[_mask_ranks(D, Ml, counts, what)]


def _setitem(D, key: Any, value: Any) -> None:
    CD = _cls()
    what = "indexed assignment D[...] = value"
    if _is_mask(key, D):
        _mask_set(D, key, value, what)
        return
    lab, n = _labs_of(D, what)
    G = tuple(D.shape)
    parsed = _parse_key(key, G, what, D._codist)
    sel = _sel_arrays(parsed)
    ints = [e for e, (kind, _) in enumerate(parsed) if kind == "i"]
    keep = [e for e in range(len(G)) if e not in ints]
    R = tuple(len(sel[e]) for e in keep)
    c = D._codist
    pairs = [_match(s, h) for s, h in zip(sel, _local_sel(c, lab, n))]
    region = _ix([p[1] for p in pairs])
    mine_shape = tuple(len(p[0]) for p in pairs)
    if isinstance(value, CD) and tuple(value.shape) == R and R:
        _labs_of(value, what)

        def want(q: int) -> tuple:
            pq = [_match(s, h) for s, h in zip(sel, _local_sel(c, q, n))]
            if any(len(pq[e][0]) == 0 for e in ints):
                return tuple(np.empty(0, dtype=np.int64) for _ in keep)
            return tuple(pq[e][0] for e in keep)

        block = _fetch(value._local, value._codist, want, what)
        if all(mine_shape):
            D._local[region] = block.reshape(mine_shape)
        return
    if isinstance(value, CD):
        value = _gather(value)
    if isinstance(value, (numbers.Number, np.generic)) or (isinstance(value, np.ndarray) and value.ndim == 0):
        D._local[region] = value
        return
    v = np.asarray(value)
    while v.ndim > len(R) and v.shape[0] == 1:
        v = v[0]
    try:
        vb = np.broadcast_to(v, R)
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {np.shape(value)} into "
                         f"shape {R}") from None
    if not all(mine_shape):
        return  # this lab holds none of the selected elements
    sub = vb[_ix([pairs[e][0] for e in keep])] if keep else vb
    D._local[region] = np.reshape(sub, mine_shape)


# --------------------------------------------------------------------------- reshape, scans
def _flat_layout(shape: tuple, n: int):
    """A 1-D layout of ``shape`` in which every lab holds a contiguous range of C-order
    flat indices: along the first dimension longer than 1, default partition."""
    k = next((e for e, s in enumerate(shape) if s > 1), len(shape) - 1)
    return codistributor1d(k + 1).complete(shape, n)


def _flat_ranges(codist, shape: tuple) -> np.ndarray:
    """``[start, end)`` flat ranges of every lab for a layout where ``_concatenates``."""
    k = codist.Dimension - 1
    inner = math.prod(shape[k + 1:])
    bounds = np.concatenate(([0], np.cumsum(codist.Partition))).astype(np.int64) * inner
    return np.stack([bounds[:-1], bounds[1:]], axis=1)


def _new_shape(size: int, shape: Any, what: str) -> tuple:
    if isinstance(shape, (numbers.Integral, np.integer)):
        shape = (shape,)
    shape = tuple(operator.index(s) for s in shape)
    unknown = [e for e, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ValueError(f"{what}: can only specify one unknown dimension")
    if any(s < -1 for s in shape):
        raise ValueError(f"{what}: negative dimensions not allowed")
    if unknown:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"{what}: cannot reshape array of size {size} into shape "
                             f"{tuple(s if s != -1 else -1 for s in shape)}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if math.prod(shape) != size:
        raise ValueError(f"{what}: cannot reshape array of size {size} into shape {shape}")
    if not shape:
        raise NotImplementedError(f"{what}: a codistributed array cannot be reshaped to 0-d; "
                                  "use D.item() for its single element")
    return shape


def _reshape(D, shape: Any, order: str = "C", what: str = "reshape"):
    """C-order reshape: at most one redistribution to a flat-range layout, then one
    all-to-all of contiguous ranges into the flat-range layout of the new shape."""
    if order not in ("C", None):
        raise NotImplementedError(f"{what}: only order='C' is supported for codistributed "
                                  f"arrays ({_layout(D._codist)})")
    G = tuple(D.shape)
    S = _new_shape(math.prod(G), shape, what)
    lab, n = _labs_of(D, what)
    if S == G:
        return _from_local(np.array(D._local, copy=True), D._codist)
    src = D if _concatenates(D._codist, G) else _redistribute(D, _flat_layout(G, n))
    dst = _flat_layout(S, n)
    sr, dr = _flat_ranges(src._codist, G), _flat_ranges(dst, S)
    flat = np.ascontiguousarray(src._local).reshape(-1)
    out = np.empty(dst.localShape(lab, n), dtype=D.dtype)
    out_flat = out.reshape(-1)
    a, b = sr[lab - 1]
    sends: list = [None] * n
    for q in range(1, n + 1):
        lo, hi = max(a, dr[q - 1][0]), min(b, dr[q - 1][1])
        if hi > lo:
            chunk = flat[lo - a:hi - a]
            if q == lab:
                out_flat[lo - dr[lab - 1][0]:hi - dr[lab - 1][0]] = chunk
            else:
                sends[q - 1] = chunk
    c0, c1 = dr[lab - 1]
    spans = [(max(sr[p][0], c0), min(sr[p][1], c1)) for p in range(n)]
    rcounts = [max(0, int(hi - lo)) * D.dtype.itemsize if p != lab - 1 else 0
               for p, (lo, hi) in enumerate(spans)]
    if n > 1:
        chunks = _Exchange(sends, rcounts, what).finish()
        for p, (lo, hi) in enumerate(spans):
            if rcounts[p]:
                out_flat[lo - c0:hi - c0] = chunks[p].view(D.dtype)
    return _from_local(out, dst)


def _squeeze(D, axis=None):
    what = "squeeze"
    G = tuple(D.shape)
    if axis is None:
        axes = tuple(e for e, s in enumerate(G) if s == 1)
    else:
        axes = _axes(len(G), axis, None, what)
        if any(G[a] != 1 for a in axes):
            raise ValueError(f"{what}: cannot select an axis to squeeze out which has size not "
                             "equal to one")
    if not axes:
        return _from_local(np.array(D._local, copy=True), D._codist)
    R = _squeeze_shape(G, axes)
    c = D._codist
    if R and _is1d(c) and c.Dimension - 1 not in axes:
        return _wrap_local(np.array(D._local, copy=True), c, G, axes, False)
    return _reshape(D, R if R else (1,), what=what)


def _scan(D, how: str, axis=None, dtype=None, out=None):
    what = "cumsum" if how == "sum" else "cumprod"
    fn = np.cumsum if how == "sum" else np.cumprod
    if out is not None:
        raise NotImplementedError(f"{what}: out= is not supported for codistributed arrays "
                                  f"({_layout(D._codist)})")
    if axis is None:
        D = _reshape(D, (-1,), what=what) if D.ndim != 1 else D
        axis = 0
    G = tuple(D.shape)
    axis = _axes(len(G), axis, None, what)[0]
    if math.prod(G) == 0:
        return _replicated_result(fn(np.empty(G, D.dtype), axis=axis, dtype=dtype))
    _check_numeric(D, what)
    lab, n = _labs_of(D, what)
    c = D._codist
    if not _is1d(c):  # 2dbc: make the scanned dimension local
        D = _redistribute(D, codistributor1d(2 - axis))
        c = D._codist
    r = fn(D._local, axis=axis, dtype=dtype)
    if c.Dimension - 1 != axis:
        return _from_local(r, c)
    F = tuple(1 if e == axis else s for e, s in enumerate(r.shape))
    last = np.take(r, [-1], axis=axis) if r.shape[axis] else np.full(F, 0 if how == "sum" else 1, r.dtype)
    totals = _allgather(last, what)
    if lab > 1:
        offset = _COMBINE_UFUNC[how].reduce(totals[:lab - 1], axis=0, dtype=r.dtype)
        if how == "sum":
            r += offset
        else:
            r *= offset
    return _from_local(r, c)


def _nonzero(D):
    what = "nonzero"
    G = tuple(D.shape)
    lab, n = _labs_of(D, what)
    src = D if _concatenates(D._codist, G) else _redistribute(D, _flat_layout(G, n))
    ix = _local_sel(src._codist, lab, n)
    nz = np.nonzero(src._local)
    counts = _allgather(np.array(nz[0].size if nz else 0, dtype=np.int64), what)
    total = int(counts.sum())
    codist = codistributor1d(1, [int(x) for x in counts], (total,))
    return tuple(_from_local(_sel_global(ix[e], nz[e]).astype(np.intp), codist) for e in range(len(G)))


# --------------------------------------------------------------------------- __array_function__
def _np_where(condition, x=_NOVALUE, y=_NOVALUE):
    if x is _NOVALUE or y is _NOVALUE:
        raise NotImplementedError("numpy.where with one argument (indices of nonzero elements) "
                                  "is not supported for codistributed arrays; use where(c, x, y)")
    return _elementwise("numpy.where", np.where, [condition, x, y])


def _np_clip(a, a_min=_NOVALUE, a_max=_NOVALUE, out=None, *, min=_NOVALUE, max=_NOVALUE, **kwargs):
    lo = a_min if a_min is not _NOVALUE else (min if min is not _NOVALUE else None)
    hi = a_max if a_max is not _NOVALUE else (max if max is not _NOVALUE else None)
    ops = [a]
    if lo is not None:
        ops.append(lo)
    if hi is not None:
        ops.append(hi)
    has_lo, has_hi = lo is not None, hi is not None

    def fn(x, *bounds, out=None):
        it = iter(bounds)
        l = next(it) if has_lo else None
        h = next(it) if has_hi else None
        if out is not None:
            return np.clip(x, l, h, out=out[0], **kwargs)
        return np.clip(x, l, h, **kwargs)

    if out is not None:
        if not isinstance(out, _cls()):
            raise NotImplementedError("numpy.clip: out= must be a codistributed array")
        return _elementwise("numpy.clip", fn, ops, (out,))
    return _elementwise("numpy.clip", fn, ops)


def _np_round(a, decimals=0, out=None):
    if out is not None:
        raise NotImplementedError("numpy.round: out= is not supported for codistributed arrays")
    return _elementwise("numpy.round", lambda x: np.round(x, decimals), [a])


def _np_isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _elementwise("numpy.isclose",
                        lambda x, y: np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan), [a, b])


def _np_allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(_np_isclose(a, b, rtol, atol, equal_nan).all())


def _np_array_equal(a1, a2, equal_nan=False):
    if tuple(np.shape(a1) if not isinstance(a1, _cls()) else a1.shape) != \
            tuple(np.shape(a2) if not isinstance(a2, _cls()) else a2.shape):
        return False
    if equal_nan:
        eq = _elementwise("numpy.array_equal",
                          lambda x, y: (x == y) | (np.isnan(x) & np.isnan(y)), [a1, a2])
    else:
        eq = _elementwise("numpy.array_equal", np.equal, [a1, a2])
    return bool(eq.all())


def _np_dot(a, b, out=None):
    if out is not None:
        raise NotImplementedError("numpy.dot: out= is not supported for codistributed arrays")
    CD = _cls()
    if np.ndim(a) == 0 and not isinstance(a, CD) or np.ndim(b) == 0 and not isinstance(b, CD):
        return _elementwise("numpy.dot", np.multiply, [a, b])
    return _matmul(a, b, "numpy.dot")


def _np_reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    return _reshape(a, shape, order)


def _np_size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


@functools.lru_cache(maxsize=1)
def _handlers() -> dict:
    def method(name):
        return lambda a, *args, **kwargs: getattr(a, name)(*args, **kwargs)

    table = {
        np.sum: method("sum"), np.prod: method("prod"), np.min: method("min"),
        np.max: method("max"), np.amin: method("min"), np.amax: method("max"),
        np.mean: method("mean"), np.std: method("std"), np.var: method("var"),
        np.any: method("any"), np.all: method("all"), np.argmax: method("argmax"),
        np.argmin: method("argmin"),
        np.transpose: lambda a, axes=None: a.transpose(axes),
        np.copy: lambda a, order="K", subok=False: a.copy(),
        np.shape: lambda a: tuple(a.shape), np.ndim: lambda a: a.ndim, np.size: _np_size,
        np.where: _np_where, np.clip: _np_clip, np.round: _np_round, np.around: _np_round,
        np.isclose: _np_isclose, np.allclose: _np_allclose, np.array_equal: _np_array_equal,
        np.dot: _np_dot, np.real: lambda a: a.real, np.imag: lambda a: a.imag,
        np.reshape: _np_reshape, np.ravel: lambda a, order="C": _reshape(a, (-1,), order, "ravel"),
        np.squeeze: lambda a, axis=None: _squeeze(a, axis),
        np.cumsum: lambda a, axis=None, dtype=None, out=None: _scan(a, "sum", axis, dtype, out),
        np.cumprod: lambda a, axis=None, dtype=None, out=None: _scan(a, "prod", axis, dtype, out),
        np.nonzero: lambda a: _nonzero(a),
    }
    return table


# --------------------------------------------------------------------------- the mixin
_ELIDE_BYTES = 256 * 1024  # as numpy: below this an allocation is cheap
_CAN_ELIDE = elision.enabled() and np.lib.NumpyVersion(np.__version__) >= "2.0.0"
elided = 0  # how many operator results were written into a temporary operand (tests read it)


def _big(x: Any) -> bool:
    return _CAN_ELIDE and isinstance(x, _cls()) and x._local.nbytes >= _ELIDE_BYTES


def _dtype_arg(x: Any):
    """What ``ufunc.resolve_dtypes`` needs for an operand (NEP 50: Python scalars weak)."""
    if isinstance(x, (_cls(), np.ndarray, np.generic)):
        return x.dtype
    if type(x) in (int, float, complex):
        return type(x)
    if type(x) is bool:
        return np.dtype(bool)
    return None


def _reusable(target, ufunc: np.ufunc, operands: tuple) -> bool:
    """Can ``target`` (an unnamed temporary operand) take the result of ``ufunc`` on
    ``operands``? Only if it owns its buffer, nothing else refers to that buffer, and
    the result would have its dtype and layout anyway."""
    if ufunc.nout != 1:
        return False
    L = target.__dict__.get("_local")
    if type(L) is not np.ndarray or L.base is not None or not L.flags.writeable \
            or not L.flags.owndata or sys.getrefcount(L) != 3:  # dict, L, getrefcount's argument
        return False
    del L
    dts = [_dtype_arg(x) for x in operands]
    if any(d is None for d in dts):
        return False
    try:
        if ufunc.resolve_dtypes(tuple(dts) + (None,))[-1] != target.dtype:
            return False
    except (TypeError, ValueError):
        return False
    shapes = [tuple(x.shape) if isinstance(x, _cls()) else np.shape(x) for x in operands]
    try:
        G = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return False
    base = next(x for x in operands if isinstance(x, _cls()) and tuple(x.shape) == G) \
        if tuple(target.shape) == G else None
    return base is not None and base._codist == target._codist


def _into(ufunc: np.ufunc, operands: tuple, target):
    global elided
    elided += 1
    return _ufunc_call(ufunc, operands, {"out": (target,)})


def _binary(ufunc: np.ufunc, reflected: bool = False):
    # is_temporary must be called from `op` itself, before anything else refers to
    # the operand (it counts references and reads the caller's frame).
    def op(self, other, modulo=None):
        if modulo is not None:
            raise NotImplementedError("pow(D, e, modulo) is not supported for codistributed arrays")
        if not _is_operand(other):
            return NotImplemented
        if _big(self) and is_temporary(self, "right" if reflected else "left"):
            operands = (other, self) if reflected else (self, other)
            if _reusable(self, ufunc, operands):
                result = _into(ufunc, operands, self)
                note_result(result)
                return result
        elif _big(other) and is_temporary(other, "left" if reflected else "right"):
            operands = (other, self) if reflected else (self, other)
            if _reusable(other, ufunc, operands):
                result = _into(ufunc, operands, other)
                note_result(result)
                return result
        result = _ufunc_call(ufunc, (other, self) if reflected else (self, other), {})
        if ufunc.nout == 1:
            note_result(result)
        return result

    op.__name__ = f"__{'r' if reflected else ''}{ufunc.__name__}__"
    return op


def _unary(ufunc: np.ufunc):
    def op(self):
        if _big(self) and is_temporary(self, "unary") and _reusable(self, ufunc, (self,)):
            result = _into(ufunc, (self,), self)
        else:
            result = _ufunc_call(ufunc, (self,), {})
        note_result(result)
        return result

    op.__name__ = f"__{ufunc.__name__}__"
    return op


def _inplace(ufunc: np.ufunc):
    def op(self, other):
        if not _is_operand(other):
            return NotImplemented
        _ufunc_call(ufunc, (self, other), {"out": (self,)})
        return self

    return op


class CodistOps:
    """numpy operations of ``codistributed`` arrays (arithmetic, ufuncs, reductions, ``@``,
    transpose, global indexing). See the module docstring for the layout rules."""

    __slots__ = ()

    # ---- numpy protocols ---------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs, **kwargs):
        what = f"numpy.{ufunc.__name__}"
        if method == "__call__":
            if not all(_is_operand(x) for x in inputs):
                return NotImplemented
            if ufunc is np.matmul:
                if kwargs:
                    raise NotImplementedError(f"{what}: keyword arguments "
                                              f"{sorted(kwargs)} are not supported for "
                                              f"codistributed arrays ({_layout(self._codist)})")
                return _matmul(inputs[0], inputs[1])
            out = kwargs.get("out")
            if out is not None and any(x is not None and not _is_operand(x)
                                       for x in (out if isinstance(out, tuple) else (out,))):
                return NotImplemented
            return _ufunc_call(ufunc, inputs, dict(kwargs))
        if method == "reduce":
            how = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
                   np.logical_or: "any", np.logical_and: "all"}.get(ufunc)
            D = inputs[0]
            if how is None or len(inputs) != 1 or not isinstance(D, _cls()):
                raise NotImplementedError(f"{what}.reduce is not supported for codistributed arrays "
                                          f"({_layout(self._codist)})")
            kw = dict(kwargs)
            axis = kw.pop("axis", 0)
            dtype = kw.pop("dtype", None)
            keepdims = kw.pop("keepdims", False)
            if kw.pop("out", None) is not None:
                raise NotImplementedError(f"{what}.reduce: out= is not supported for codistributed "
                                          f"arrays ({_layout(self._codist)})")
            _no_extras(f"{what}.reduce", layout=self._codist, **kw)
            extra = {"dtype": dtype} if dtype is not None and how not in ("any", "all") else {}
            return _reduce(D, how, axis, None, extra, keepdims, f"{what}.reduce")
        raise NotImplementedError(f"{what}.{method} is not supported for codistributed arrays "
                                  f"({_layout(self._codist)}); gather(D) for a numpy array")

    def __array_function__(self, func, types, args, kwargs):
        handler = _handlers().get(func)
        if handler is None:
            raise NotImplementedError(
                f"numpy.{getattr(func, '__name__', func)} is not supported for codistributed "
                f"arrays ({_layout(self._codist)}); use gather(D) for a numpy array, or "
                "getLocalPart(D) for this lab's part")
        return handler(*args, **kwargs)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a codistributed array does not convert to a numpy array implicitly: "
                        "use gather(D) (the whole array on every lab) or getLocalPart(D)")

    # ---- arithmetic ---------------------------------------------------------------------
    __add__ = _binary(np.add)
    __radd__ = _binary(np.add, True)
    __sub__ = _binary(np.subtract)
    __rsub__ = _binary(np.subtract, True)
    __mul__ = _binary(np.multiply)
    __rmul__ = _binary(np.multiply, True)
    __truediv__ = _binary(np.true_divide)
    __rtruediv__ = _binary(np.true_divide, True)
    __floordiv__ = _binary(np.floor_divide)
    __rfloordiv__ = _binary(np.floor_divide, True)
    __mod__ = _binary(np.remainder)
    __rmod__ = _binary(np.remainder, True)
    __divmod__ = _binary(np.divmod)
    __rdivmod__ = _binary(np.divmod, True)
    __and__ = _binary(np.bitwise_and)
    __rand__ = _binary(np.bitwise_and, True)
    __or__ = _binary(np.bitwise_or)
    __ror__ = _binary(np.bitwise_or, True)
    __xor__ = _binary(np.bitwise_xor)
    __rxor__ = _binary(np.bitwise_xor, True)
    __lshift__ = _binary(np.left_shift)
    __rlshift__ = _binary(np.left_shift, True)
    __rshift__ = _binary(np.right_shift)
    __rrshift__ = _binary(np.right_shift, True)
    __eq__ = _binary(np.equal)
    __ne__ = _binary(np.not_equal)
    __lt__ = _binary(np.less)
    __le__ = _binary(np.less_equal)
    __gt__ = _binary(np.greater)
    __ge__ = _binary(np.greater_equal)
    __iadd__ = _inplace(np.add)
    __isub__ = _inplace(np.subtract)
    __imul__ = _inplace(np.multiply)
    __itruediv__ = _inplace(np.true_divide)
    __ifloordiv__ = _inplace(np.floor_divide)
    __imod__ = _inplace(np.remainder)
    __ipow__ = _inplace(np.power)
    __iand__ = _inplace(np.bitwise_and)
    __ior__ = _inplace(np.bitwise_or)
    __ixor__ = _inplace(np.bitwise_xor)
    __ilshift__ = _inplace(np.left_shift)
    __irshift__ = _inplace(np.right_shift)
    __hash__ = None  # mutable, and == is elementwise

    __pow__ = _binary(np.power)
    __rpow__ = _binary(np.power, True)

    def __matmul__(self, other):
        if not _is_operand(other):
            return NotImplemented
        return _matmul(self, other)

    def __rmatmul__(self, other):
        if not _is_operand(other):
            return NotImplemented
        return _matmul(other, self)

    def __imatmul__(self, other):
        r = _matmul(self, other)
        if tuple(r.shape) != tuple(self.shape):
            raise ValueError(f"matmul: in-place @= would change the shape {self.shape} to {r.shape}")
        if r._codist != self._codist:
            r = _redistribute(r, self._codist)
        np.copyto(self._local, r._local, casting="same_kind")
        return self

    __neg__ = _unary(np.negative)
    __pos__ = _unary(np.positive)
    __invert__ = _unary(np.invert)

    def __abs__(self):
        return _ufunc_call(np.absolute, (self,), {})

    # ---- conversions --------------------------------------------------------------------
    def item(self, *args):
        """The single element as a Python scalar (replicated), as ``ndarray.item``."""
        if args:
            if len(args) == 1 and isinstance(args[0], numbers.Integral):
                idx = np.unravel_index(operator.index(args[0]), self.shape)
            else:
                idx = tuple(args[0]) if len(args) == 1 else args
            return self[tuple(int(i) for i in idx)].item()
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self[(0,) * self.ndim].item()

    def __bool__(self) -> bool:
        if self.size != 1:
            if self.size == 0:
                raise ValueError("The truth value of an empty array is ambiguous. Use "
                                 "`array.size > 0` to check that an array is not empty.")
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self._scalar_only("float"))

    def __int__(self) -> int:
        return int(self._scalar_only("int"))

    def __complex__(self) -> complex:
        return complex(self._scalar_only("complex"))

    def _scalar_only(self, what: str):
        if self.size != 1:
            raise TypeError(f"only arrays of size 1 can be converted to Python scalars ({what})")
        return self.item()

    @property
    def real(self):
        return _elementwise("real", np.real, [self])

    @property
    def imag(self):
        return _elementwise("imag", np.imag, [self])

    def conj(self):
        return _ufunc_call(np.conjugate, (self,), {})

    conjugate = conj

    def clip(self, min=None, max=None, out=None, **kwargs):
        return _np_clip(self, min, max, out, **kwargs)

    def round(self, decimals=0, out=None):
        return _np_round(self, decimals, out)

    # ---- reductions ---------------------------------------------------------------------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, *, dim=None, **extra):
        """Sum, whole (a replicated scalar) or along ``axis`` (0-based) / ``dim`` (1-based)."""
        return self._red("sum", axis, dim, dtype, out, keepdims, extra)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, *, dim=None, **extra):
        return self._red("prod", axis, dim, dtype, out, keepdims, extra)

    def min(self, axis=None, out=None, keepdims=False, *, dim=None, **extra):
        return self._red("min", axis, dim, None, out, keepdims, extra)

    def max(self, axis=None, out=None, keepdims=False, *, dim=None, **extra):
        return self._red("max", axis, dim, None, out, keepdims, extra)

    def any(self, axis=None, out=None, keepdims=False, *, dim=None, **extra):
        return self._red("any", axis, dim, None, out, keepdims, extra)

    def all(self, axis=None, out=None, keepdims=False, *, dim=None, **extra):
        return self._red("all", axis, dim, None, out, keepdims, extra)

    def _red(self, how, axis, dim, dtype, out, keepdims, extra):
        if out is not None:
            raise NotImplementedError(f"{how}: out= is not supported for codistributed arrays "
                                      f"({_layout(self._codist)})")
        _no_extras(how, layout=self._codist, **extra)
        keepdims = bool(keepdims) if keepdims is not _NOVALUE else False
        return _reduce(self, how, axis, dim, {"dtype": dtype} if dtype is not None else {},
                       keepdims, how)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, dim=None, where=True):
        """Mean (numpy's dtype rules: float64 for integers)."""
        keepdims = bool(keepdims) if keepdims is not _NOVALUE else False
        return _mean(self, axis, dtype, out, keepdims, dim=dim, where=where)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, dim=None,
            where=True, mean=_NOVALUE, correction=_NOVALUE):
        """Variance (two-pass, as numpy)."""
        keepdims = bool(keepdims) if keepdims is not _NOVALUE else False
        return _var(self, axis, dtype, out, ddof, keepdims, dim=dim, where=where, mean=mean,
                    correction=correction, what="var")

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, dim=None,
            where=True, mean=_NOVALUE, correction=_NOVALUE):
        keepdims = bool(keepdims) if keepdims is not _NOVALUE else False
        return _var(self, axis, dtype, out, ddof, keepdims, dim=dim, where=where, mean=mean,
                    correction=correction, what="std", root=True)

    def argmax(self, axis=None, out=None, *, keepdims=False, dim=None):
        """Global 0-based index of the (first) maximum, flat (replicated) or along an axis."""
        return _argreduce(self, "max", axis, out, keepdims=bool(keepdims), dim=dim)

    def argmin(self, axis=None, out=None, *, keepdims=False, dim=None):
        return _argreduce(self, "min", axis, out, keepdims=bool(keepdims), dim=dim)

    # ---- shape ----------------------------------------------------------------------------
    def transpose(self, *axes):
        """Permuted axes (no communication: the layout is permuted with the local part)."""
        return _transpose(self, axes)

    @property
    def T(self):
        return _transpose(self, None)

    def dot(self, other, out=None):
        return _np_dot(self, other, out)

    def reshape(self, *shape, order="C"):
        """C-order reshape (a codistributed copy; data moves in one all-to-all)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _reshape(self, shape, order)

    def ravel(self, order="C"):
        return _reshape(self, (-1,), order, "ravel")

    def flatten(self, order="C"):
        return _reshape(self, (-1,), order, "flatten")

    def squeeze(self, axis=None):
        return _squeeze(self, axis)

    def cumsum(self, axis=None, dtype=None, out=None):
        """Cumulative sum (along the distributed dimension: local scans plus the totals of
        the labs before, as numpy on the gathered array)."""
        return _scan(self, "sum", axis, dtype, out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return _scan(self, "prod", axis, dtype, out)

    def nonzero(self):
        """Tuple of codistributed 1-D arrays of global indices of the nonzero elements."""
        return _nonzero(self)

    def fill(self, value) -> None:
        """Set every element to ``value`` (each lab fills its part)."""
        self._local.fill(value)

    # ---- indexing -------------------------------------------------------------------------
    def __getitem__(self, key):
        """Global 0-based indexing: ints → a replicated scalar, slices → a codistributed
        copy, a boolean mask of the array's shape → a 1-D codistributed array."""
        what = "indexing D[...]"
        if _is_mask(key, self):
            return _mask_get(self, key, what)
        parsed = _parse_key(key, tuple(self.shape), what, self._codist)
        if all(kind == "i" for kind, _ in parsed):
            return _scalar_get(self, tuple(v for _, v in parsed), what)
        return _slice_get(self, parsed, what)

    def __setitem__(self, key, value):
        """``D[i, j] = v`` writes on the owning lab; slices and boolean masks as numpy
        (the value: a scalar, a replicated array, or a codistributed array)."""
        _setitem(self, key, value)
