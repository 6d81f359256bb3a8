"""Codistributed arrays: the lab side of MATLAB's distributed arrays (DESIGN §4).

A ``codistributed`` array lives inside ``spmd`` blocks: every lab stores only its local
part (a numpy array, ``_local``) and a complete codistributor (``_codist``) that maps
global indices to labs. The numpy operations come from the ``CodistOps`` mixin; this
module holds creation, reading, ``gather`` and ``redistribute``.

Numbering (DESIGN §1): labs are 1..numlabs, dimensions passed as ``dim`` are 1-based
(``axis=`` is the 0-based alternative), element indices are 0-based.

Communication: collectives are nonblocking MPI requests on the block's communicator,
waited through ``comm.wait`` (interruptible). Every collective is called by all labs
in the same order; checks that may fail on one lab only are exchanged first, so every
lab raises the same error (no lab is left waiting). This module imports no MPI at
import time, so ``from spmdlab import codistributed`` works at the client; there, and
on a lab outside a block, arrays behave as on a pool of one lab.
"""
from __future__ import annotations

import itertools
import math
import numbers
import pickle
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import runtime
from .checks import check_lab
from .codist_ops import CodistOps
from .codistributor import codistributor1d, codistributor2dbc, sel_array, sel_len, transfer_regions

__all__ = ["codistributed", "getLocalPart", "getCodistributor", "globalIndices",
           "redistribute", "gather", "iscodistributed"]


class _LazyComm:
    """``comm`` imported on first use: the client must never load MPI."""

    def __getattr__(self, name: str):
        from . import comm as real

        globals()["comm"] = real  # later uses skip this proxy
        return getattr(real, name)


comm = _LazyComm()

_CODISTRIBUTORS = (codistributor1d, codistributor2dbc)
_HEADER_BYTES = 2048


# --------------------------------------------------------------------------- where we are
def _here() -> Tuple[int, int]:
    """``(labindex, numlabs)`` of the running block; ``(1, 1)`` at the client."""
    return runtime.state.index, runtime.state.size


def _codist_numlabs(c) -> int:
    """The number of labs a complete codistributor is laid out for."""
    if isinstance(c, codistributor1d):
        return len(c.Partition)
    grid = c.LabGrid
    return grid[0] * grid[1]


def _check_codist_arg(codist: Any, what: str) -> None:
    if codist is not None and not isinstance(codist, _CODISTRIBUTORS):
        raise TypeError(f"{what}: the distribution scheme must be a codistributor1d or "
                        f"codistributor2dbc, got {type(codist).__name__}")


def _complete(codist, shape: Tuple[int, ...], n: int):
    """``codist`` (or the default codistributor1d()) completed for ``shape`` on n labs."""
    if codist is None:
        codist = codistributor1d()
    if codist.isComplete() and codist.GlobalSize == tuple(shape) and _codist_numlabs(codist) == n:
        return codist
    if codist.isComplete() and codist.GlobalSize == tuple(shape):
        if isinstance(codist, codistributor1d):
            raise ValueError(f"the codistributor's partition {codist.Partition} is for "
                             f"{len(codist.Partition)} labs but there are {n} labs")
        raise ValueError(f"the codistributor's lab grid {codist.LabGrid} holds "
                         f"{_codist_numlabs(codist)} labs but there are {n} labs")
    return codist.complete(tuple(shape), n)


# --------------------------------------------------------------------------- collectives
def _allgather_small(obj: Any, what: str) -> list:
    """Every lab's small picklable ``obj``, in lab order, with ONE collective."""
    _, n = _here()
    if n == 1:
        return [obj]
    payload = pickle.dumps(obj, 5)
    if len(payload) + 8 > _HEADER_BYTES:
        payload = pickle.dumps(("too-big", repr(obj)[:200]), 5)
    buf = np.zeros(_HEADER_BYTES, dtype=np.uint8)
    buf[:8] = np.frombuffer(np.int64(len(payload)).tobytes(), dtype=np.uint8)
    buf[8:8 + len(payload)] = np.frombuffer(payload, dtype=np.uint8)
    c = comm.block()
    out = np.empty(_HEADER_BYTES * n, dtype=np.uint8)
    comm.wait(c.Iallgather([buf, comm.MPI.BYTE], [out, comm.MPI.BYTE]), what, keep=(buf, out))
    result = []
    for k in range(n):
        chunk = out[k * _HEADER_BYTES:(k + 1) * _HEADER_BYTES]
        length = int(np.frombuffer(chunk[:8].tobytes(), dtype=np.int64)[0])
        result.append(pickle.loads(chunk[8:8 + length].tobytes()))
    return result


def _raise_combined(errors: list, what: str) -> None:
    """Raise one error, the same on every lab, if any lab reported one."""
    bad = [(k + 1, e) for k, e in enumerate(errors) if e is not None]
    if not bad:
        return
    kinds = {e[0] for _, e in bad}
    messages = {e[1] for _, e in bad}
    if len(messages) == 1:
        labs = [lab for lab, _ in bad]
        where = "every lab" if len(labs) == len(errors) else \
            ("lab " if len(labs) == 1 else "labs ") + ", ".join(map(str, labs))
        text = f"{what}: {next(iter(messages))} (on {where})"
    else:
        text = f"{what}: " + "; ".join(f"lab {lab}: {e[1]}" for lab, e in bad[:4])
        if len(bad) > 4:
            text += f"; ... ({len(bad)} labs)"
    raise (TypeError if kinds == {"TypeError"} else ValueError)(text)


def _err(message: Optional[str]) -> Optional[tuple]:
    return None if message is None else ("ValueError", message[:600])


def _check_same_codist(codists: list, what: str) -> None:
    if any(c != codists[0] for c in codists[1:]):
        detail = "; ".join(f"lab {k + 1}: {c!r}" for k, c in enumerate(codists))
        raise ValueError(f"{what}: use the same codistributor on every lab; got {detail}")


def _check_dtype(dtype: np.dtype) -> Optional[str]:
    if dtype.hasobject:
        return (f"arrays of dtype {dtype} cannot be codistributed: elements must be "
                "plain data (numbers, bools, fixed-width strings), not Python objects")
    return None


# --------------------------------------------------------------------------- index helpers
def _as_slice(ix) -> Optional[slice]:
    if isinstance(ix, slice):
        return ix
    if ix.size == 0:
        return slice(0, 0)
    lo, hi = int(ix[0]), int(ix[-1])
    if hi - lo + 1 == ix.size and (ix.size < 3 or bool(np.all(np.diff(ix) == 1))):
        return slice(lo, hi + 1)
    return None


def _region(index: Sequence) -> tuple:
    """An indexing tuple selecting the Cartesian product of per-dimension selections
    (slices or index arrays): slices where contiguous (views), fancy indexing only where
    needed."""
    slices = [_as_slice(ix if isinstance(ix, slice) else np.asarray(ix)) for ix in index]
    fancy = [k for k, s in enumerate(slices) if s is None]
    if len(fancy) <= 1:
        return tuple(s if s is not None else np.asarray(index[k]) for k, s in enumerate(slices))
    return np.ix_(*[sel_array(ix) for ix in index])


_MAX_RUN_COMBOS = 4096


def _joint_runs(src, dst) -> list:
    """Maximal stretches where both aligned index sets step by one:
    ``[(src_start, src_stop, dst_start, dst_stop), ...]``."""
    if isinstance(src, slice) and isinstance(dst, slice):
        return [(src.start, src.stop, dst.start, dst.stop)] if src.stop > src.start else []
    src, dst = sel_array(src), sel_array(dst)
    if src.size == 0:
        return []
    breaks = np.flatnonzero((np.diff(src) != 1) | (np.diff(dst) != 1)) + 1
    starts = np.concatenate(([0], breaks)).tolist()
    ends = np.concatenate((breaks, [src.size])).tolist()
    s0, d0 = src[starts].tolist(), dst[starts].tolist()
    return [(a, a + e - b, c, c + e - b) for a, c, b, e in zip(s0, d0, starts, ends)]


def _copy_region(dst: np.ndarray, dst_index: Sequence, src: np.ndarray, src_index: Sequence) -> None:
    """``dst[np.ix_(*dst_index)] = src[np.ix_(*src_index)]`` for aligned per-dimension
    selections (slices, index arrays, or None: all of that dimension, in order). Copies
    runs of contiguous indices with slices (block-cyclic layouts have few, long runs);
    falls back to fancy indexing when there are very many short runs."""
    runs = []
    combos = 1
    for d in range(dst.ndim):
        si = slice(0, src.shape[d]) if src_index[d] is None else src_index[d]
        di = slice(0, dst.shape[d]) if dst_index[d] is None else dst_index[d]
        if sel_len(si) != sel_len(di):
            raise ValueError(f"internal error: index lengths differ along dimension {d + 1}")
        r = _joint_runs(si, di)
        if not r:
            return
        runs.append(r)
        combos *= len(r)
    if dst.ndim == 0:
        dst[()] = src[()]
        return
    if combos <= _MAX_RUN_COMBOS:
        for combo in itertools.product(*runs):
            dst[tuple(slice(c[2], c[3]) for c in combo)] = src[tuple(slice(c[0], c[1]) for c in combo)]
        return
    full = lambda ix, n: slice(0, n) if ix is None else ix  # noqa: E731
    dst[_region([full(ix, n) for ix, n in zip(dst_index, dst.shape)])] = \
        src[_region([full(ix, n) for ix, n in zip(src_index, src.shape)])]


def _take(a: np.ndarray, index: Sequence) -> np.ndarray:
    """``a[np.ix_(*index)]``: a view when every selection is a contiguous range, else a copy."""
    slices = [_as_slice(ix if isinstance(ix, slice) else np.asarray(ix)) for ix in index]
    if all(s is not None for s in slices):
        return a[tuple(slices)]
    out = np.empty(tuple(sel_len(ix) for ix in index), dtype=a.dtype)
    _copy_region(out, [None] * out.ndim, a, index)
    return out


def _put(a: np.ndarray, index: Sequence, value: np.ndarray) -> None:
    """``a[np.ix_(*index)] = value``."""
    _copy_region(a, index, np.asarray(value), [None] * a.ndim)


def _bytes_of(a: np.ndarray) -> np.ndarray:
    """A C-contiguous array's memory as a flat uint8 array (no copy when contiguous)."""
    a = np.ascontiguousarray(a)
    if a.dtype.itemsize == 0 or a.size == 0:
        return np.empty(0, dtype=np.uint8)
    return a.reshape(-1).view(np.uint8)


# --------------------------------------------------------------------------- argument parsing
def _size_value(x: Any, what: str) -> int:
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{what}: sizes must be whole numbers, got {x!r}")
    if isinstance(x, numbers.Integral):
        v = int(x)
    elif isinstance(x, numbers.Real) and float(x).is_integer():
        v = int(x)  # MATLAB sizes are doubles: 1e6 is fine
    else:
        raise TypeError(f"{what}: sizes must be whole numbers, got {x!r}")
    if v < 0:
        raise ValueError(f"{what}: sizes must be >= 0, got {v}")
    return v


def _is_dtype_like(x: Any) -> bool:
    if isinstance(x, (np.dtype, type)):
        return True
    if isinstance(x, str):
        try:
            np.dtype(x)
            return True
        except TypeError:
            return False
    return False


def _is_size_like(x: Any) -> bool:
    return isinstance(x, (numbers.Real, tuple, list, np.ndarray)) and not isinstance(x, (bool, np.bool_))


def _parse(args: tuple, codist: Any, dtype: Any, what: str, square: bool = True):
    """MATLAB-style ``(m, n, ..., [codist], [dtype/'noCommunication'])`` or
    ``((m, n, ...), [codist], ...)`` -> ``(shape, codist, dtype)``.

    One whole number n means n-by-n, as MATLAB's ``zeros(n)``; a tuple is the shape
    as given (so ``(n,)`` makes a 1-D array); no size means 1-by-1.
    """
    args = list(args)
    while args and not _is_size_like(args[-1]):
        tail = args.pop()
        if isinstance(tail, _CODISTRIBUTORS):
            if codist is not None:
                raise TypeError(f"{what}: the codistributor was given twice")
            codist = tail
        elif isinstance(tail, str) and tail.lower() == "nocommunication":
            pass  # constructors never communicate anyway
        elif _is_dtype_like(tail):
            if dtype is not None:
                raise TypeError(f"{what}: the dtype was given twice")
            dtype = tail
        else:
            raise TypeError(f"{what}: unexpected argument {tail!r} (expected sizes, then "
                            "optionally a codistributor and a dtype)")
    _check_codist_arg(codist, what)
    if len(args) == 1 and isinstance(args[0], (tuple, list, np.ndarray)):
        shape = tuple(_size_value(s, what) for s in np.asarray(args[0]).reshape(-1).tolist()) \
            if not isinstance(args[0], (tuple, list)) else tuple(_size_value(s, what) for s in args[0])
    elif any(isinstance(a, (tuple, list, np.ndarray)) for a in args):
        raise TypeError(f"{what}: give the size as whole numbers (m, n, ...) or one tuple, not a mix")
    elif len(args) == 0:
        shape = (1, 1)
    elif len(args) == 1 and square:
        n = _size_value(args[0], what)
        shape = (n, n)
    else:
        shape = tuple(_size_value(a, what) for a in args)
    if len(shape) == 0:
        raise ValueError(f"{what}: a codistributed array needs at least one dimension")
    if dtype is not None:
        try:
            dtype = np.dtype(dtype)
        except TypeError as exc:
            raise TypeError(f"{what}: invalid dtype {dtype!r}: {exc}") from None
        error = _check_dtype(dtype)
        if error:
            raise TypeError(f"{what}: {error}")
    return shape, codist, dtype


# --------------------------------------------------------------------------- the class
def _rebuild(local: np.ndarray, codist) -> "codistributed":
    return codistributed._from_local(local, codist)


class codistributed(CodistOps):
    """An array distributed over the labs of an ``spmd`` block; each lab stores its part.

    ``codistributed(X)`` distributes ``X``, which must be the same on every lab (each lab
    keeps its own part); ``codistributed(X, codist)`` uses the given codistributor.
    ``codistributed.build(L, codist)`` assembles an array from the local parts ``L``.
    Constructors: ``zeros ones eye rand randn randi inf nan true false colon linspace``.

    >>> with spmd():                                          # doctest: +SKIP
    ...     D = codistributed(np.zeros((80, 1000)))
    ...     L = getLocalPart(D)          # 80 x 250 on each of 4 labs
    """

    __array_priority__ = 20.0

    # ---- creation ---------------------------------------------------------------------
    def __init__(self, X: Any, codist=None, *, noCommunication: bool = False):
        what = "codistributed(X)"
        _check_codist_arg(codist, what)
        if isinstance(X, codistributed):
            source = redistribute(X, codist) if codist is not None else X.copy()
            self._local, self._codist = source._local, source._codist
            return
        lab, n = _here()
        X = np.asarray(X)
        error = _check_dtype(X.dtype)
        target = None
        if error is None:
            try:
                target = _complete(codist, X.shape, n)
            except (ValueError, TypeError) as exc:
                error = str(exc)
        if not noCommunication and n > 1:
            infos = _allgather_small((X.shape, X.dtype.str, _err(error), target), what)
            _raise_combined([i[2] for i in infos], what)
            shapes = {(i[0], i[1]) for i in infos}
            if len(shapes) > 1:
                detail = ", ".join(f"lab {k + 1}: {i[0]} {np.dtype(i[1])}" for k, i in enumerate(infos))
                raise ValueError(f"{what}: X must be the same array on every lab (replicated), "
                                 f"but its size or dtype differs: {detail}")
            _check_same_codist([i[3] for i in infos], what)
        elif error is not None:
            raise ValueError(f"{what}: {error}")
        part = np.ascontiguousarray(_take(X, target.localSelection(lab, n)))
        self._local = part.copy() if np.may_share_memory(part, X) else part
        self._codist = target

    @classmethod
    def _from_local(cls, local: np.ndarray, codist) -> "codistributed":
        """Wrap a local part and a complete codistributor; no checks, no communication."""
        self = object.__new__(cls)
        self._local = local
        self._codist = codist
        return self

    _new = _from_local

    def __reduce_ex__(self, protocol):
        # A contiguous local part travels out of band (pickle 5): no extra copy.
        return (_rebuild, (np.ascontiguousarray(self._local), self._codist))

    @classmethod
    def build(cls, L: Any, codist=None, *, noCommunication: bool = False) -> "codistributed":
        """Assemble a codistributed array from each lab's local part ``L``.

        ``codist`` should be complete (GlobalSize set); otherwise the global size is
        inferred from the local parts (1-D: along ``Dimension``, default the last one;
        2dbc: from the grid). Local sizes and dtypes are checked across labs with one
        collective; a mismatch raises the same ``ValueError`` on every lab.
        """
        what = "codistributed.build"
        _check_codist_arg(codist, what)
        lab, n = _here()
        L = np.asarray(L)
        error = _check_dtype(L.dtype)
        if noCommunication:
            infos = [(L.shape, L.dtype.str, None)] * n
            if error is not None:
                raise ValueError(f"{what}: {error}")
        else:
            infos = _allgather_small((L.shape, L.dtype.str, _err(error), codist), what)
            _raise_combined([i[2] for i in infos], what)
            _check_same_codist([i[3] for i in infos], what)
        shapes = [tuple(i[0]) for i in infos]
        dtypes = [np.dtype(i[1]) for i in infos]
        if len(set(dtypes)) > 1:
            detail = ", ".join(f"lab {k + 1}: {d}" for k, d in enumerate(dtypes))
            raise ValueError(f"{what}: the local parts must have the same dtype on every lab; got {detail}")
        if len({len(s) for s in shapes}) > 1:
            detail = ", ".join(f"lab {k + 1}: {s}" for k, s in enumerate(shapes))
            raise ValueError(f"{what}: the local parts must have the same number of dimensions "
                             f"on every lab; got {detail}")
        if codist is None:
            codist = codistributor1d(len(shapes[0]) if shapes[0] else None)
        if codist.GlobalSize is None:
            gsize = _infer_gsize(codist, shapes, n, what)
            codist = _complete(codist, gsize, n)
        else:
            codist = _complete(codist, codist.GlobalSize, n)
        bad = [(k, shapes[k - 1], codist.localShape(k, n)) for k in range(1, n + 1)
               if shapes[k - 1] != codist.localShape(k, n)]
        if bad:
            detail = "; ".join(f"lab {k} has {got}, expected {want}" for k, got, want in bad[:6])
            if len(bad) > 6:
                detail += f"; ... ({len(bad)} labs)"
            raise ValueError(f"{what}: the local part sizes do not match the codistributor "
                             f"{codist!r}: {detail}")
        return cls._from_local(L, codist)

    # ---- constructors -------------------------------------------------------------------
    @classmethod
    def _filled(cls, what: str, args: tuple, codist, dtype, fill, default=np.float64,
                allowed: str = "") -> "codistributed":
        shape, codist, dtype = _parse(args, codist, dtype, what)
        dtype = np.dtype(default) if dtype is None else dtype
        if allowed and dtype.kind not in allowed:
            raise TypeError(f"{what}: dtype {dtype} is not allowed here")
        lab, n = _here()
        codist = _complete(codist, shape, n)
        return cls._from_local(np.full(codist.localShape(lab, n), fill, dtype=dtype), codist)

    @classmethod
    def zeros(cls, *args, codist=None, dtype=None) -> "codistributed":
        """``codistributed.zeros(m, n, ..., codist, dtype=)``: all zeros (float64 default)."""
        return cls._filled("codistributed.zeros", args, codist, dtype, 0)

    @classmethod
    def ones(cls, *args, codist=None, dtype=None) -> "codistributed":
        """``codistributed.ones(m, n, ..., codist, dtype=)``: all ones."""
        return cls._filled("codistributed.ones", args, codist, dtype, 1)

    @classmethod
    def inf(cls, *args, codist=None, dtype=None) -> "codistributed":
        """``codistributed.inf(m, n, ..., codist)``: all ``inf`` (a float or complex dtype)."""
        return cls._filled("codistributed.inf", args, codist, dtype, np.inf, allowed="fc")

    Inf = inf

    @classmethod
    def nan(cls, *args, codist=None, dtype=None) -> "codistributed":
        """``codistributed.nan(m, n, ..., codist)``: all ``nan`` (a float or complex dtype)."""
        return cls._filled("codistributed.nan", args, codist, dtype, np.nan, allowed="fc")

    NaN = nan

    @classmethod
    def true(cls, *args, codist=None) -> "codistributed":
        """``codistributed.true(m, n, ..., codist)``: a bool array of True."""
        return cls._filled("codistributed.true", args, codist, None, True, default=np.bool_, allowed="b")

    @classmethod
    def false(cls, *args, codist=None) -> "codistributed":
        """``codistributed.false(m, n, ..., codist)``: a bool array of False."""
        return cls._filled("codistributed.false", args, codist, None, False, default=np.bool_, allowed="b")

    @classmethod
    def eye(cls, *args, codist=None, dtype=None) -> "codistributed":
        """``codistributed.eye(n)`` (n-by-n), ``eye(m, n)``, ``eye((m, n))``: the identity."""
        what = "codistributed.eye"
        shape, codist, dtype = _parse(args, codist, dtype, what)
        if len(shape) != 2:
            raise ValueError(f"{what}: the identity is 2-D; got size {shape}")
        dtype = np.dtype(np.float64) if dtype is None else dtype
        lab, n = _here()
        codist = _complete(codist, shape, n)
        rows, cols = codist.localIndices(lab, n)
        local = (rows[:, None] == cols[None, :]).astype(dtype)
        return cls._from_local(local, codist)

    @staticmethod
    def _rng(seed) -> np.random.Generator:
        lab, _ = _here()
        if seed is None:
            return np.random.default_rng()  # fresh entropy: a different stream on each lab
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (numbers.Integral, Sequence)):
            raise TypeError(f"seed must be a non-negative integer (or a sequence of them), got {seed!r}")
        try:
            seq = np.random.SeedSequence(seed, spawn_key=(lab - 1,))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"invalid seed {seed!r}: {exc}") from None
        return np.random.default_rng(seq)

    @classmethod
    def rand(cls, *args, codist=None, dtype=None, seed=None) -> "codistributed":
        """Uniform on [0, 1). Each lab draws from its own stream; ``seed=`` makes the
        result reproducible (lab k uses ``SeedSequence(seed, spawn_key=(k-1,))``)."""
        what = "codistributed.rand"
        shape, codist, dtype = _parse(args, codist, dtype, what)
        dtype = np.dtype(np.float64) if dtype is None else dtype
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"{what}: dtype must be float32 or float64, got {dtype}")
        lab, n = _here()
        codist = _complete(codist, shape, n)
        rng = cls._rng(seed)
        return cls._from_local(rng.random(codist.localShape(lab, n), dtype=dtype), codist)

    @classmethod
    def randn(cls, *args, codist=None, dtype=None, seed=None) -> "codistributed":
        """Standard normal values; streams as :meth:`rand`."""
        what = "codistributed.randn"
        shape, codist, dtype = _parse(args, codist, dtype, what)
        dtype = np.dtype(np.float64) if dtype is None else dtype
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"{what}: dtype must be float32 or float64, got {dtype}")
        lab, n = _here()
        codist = _complete(codist, shape, n)
        rng = cls._rng(seed)
        return cls._from_local(rng.standard_normal(codist.localShape(lab, n), dtype=dtype), codist)

    @classmethod
    def randi(cls, imax, *args, codist=None, dtype=None, seed=None) -> "codistributed":
        """``randi(imax, m, n, ...)``: integers in 1..imax; ``randi([imin, imax], ...)``:
        in imin..imax (inclusive, as MATLAB). Default dtype int64."""
        what = "codistributed.randi"
        if isinstance(imax, (tuple, list, np.ndarray)):
            bounds = list(np.asarray(imax).reshape(-1).tolist())
            if len(bounds) != 2:
                raise ValueError(f"{what}: the range must be imax or [imin, imax], got {imax!r}")
            lo, hi = bounds
        else:
            lo, hi = 1, imax
        for v in (lo, hi):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or not float(v).is_integer():
                raise TypeError(f"{what}: the range limits must be whole numbers, got {imax!r}")
        lo, hi = int(lo), int(hi)
        if hi < lo:
            raise ValueError(f"{what}: the range [{lo}, {hi}] is empty (imax must be >= imin)")
        shape, codist, dtype = _parse(args, codist, dtype, what)
        dtype = np.dtype(np.int64) if dtype is None else dtype
        if dtype.kind not in "iuf":
            raise TypeError(f"{what}: dtype must be an integer or float type, got {dtype}")
        lab, n = _here()
        codist = _complete(codist, shape, n)
        rng = cls._rng(seed)
        local = rng.integers(lo, hi, size=codist.localShape(lab, n), endpoint=True, dtype=np.int64)
        return cls._from_local(local.astype(dtype, copy=False), codist)

    @classmethod
    def colon(cls, a, d, b=None, *, codist=None, dtype=None) -> "codistributed":
        """MATLAB's ``a:d:b`` (``colon(a, b)`` is ``a:1:b``) as a 1-D codistributed array;
        the end ``b`` is included when it is reached, as in MATLAB."""
        what = "codistributed.colon"
        if b is None:
            a, d, b = a, 1, d
        _check_codist_arg(codist, what)
        for v in (a, d, b):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                raise TypeError(f"{what}: a, d and b must be real numbers, got {v!r}")
        if not all(math.isfinite(v) for v in (a, d, b)):
            raise ValueError(f"{what}: a, d and b must be finite")
        integral = all(isinstance(v, numbers.Integral) for v in (a, d, b))
        if d == 0 or (d > 0 and b < a) or (d < 0 and b > a):
            count = 0
        elif integral:
            count = (int(b) - int(a)) // int(d) + 1
        else:
            count = int(math.floor((b - a) / d + 1e-10)) + 1
        if dtype is None:
            dtype = np.dtype(np.int64) if integral else np.dtype(np.float64)
        dtype = np.dtype(dtype)
        lab, n = _here()
        codist = _complete(codist, (count,), n)
        idx = codist.localIndices(lab, n)[0]
        local = (a + idx * d) if integral else (a + idx.astype(np.float64) * d)
        return cls._from_local(np.asarray(local).astype(dtype, copy=False), codist)

    @classmethod
    def linspace(cls, a, b, n: int = 100, *, codist=None, dtype=None) -> "codistributed":
        """``n`` evenly spaced values from ``a`` to ``b`` inclusive (MATLAB default n=100),
        as ``np.linspace``; a 1-D codistributed array."""
        what = "codistributed.linspace"
        _check_codist_arg(codist, what)
        for v in (a, b):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Number):
                raise TypeError(f"{what}: the end points must be numbers, got {v!r}")
        count = _size_value(n, what)
        lab, labs = _here()
        codist = _complete(codist, (count,), labs)
        idx = codist.localIndices(lab, labs)[0]
        dt = np.result_type(np.float64, np.asarray(a).dtype, np.asarray(b).dtype)
        if count > 1:
            step = (b - a) / (count - 1)
            local = idx.astype(dt) * step + a
            local[idx == count - 1] = b
        else:
            local = np.full(idx.shape, a, dtype=dt)
        if dtype is not None:
            local = local.astype(np.dtype(dtype))
        return cls._from_local(local, codist)

    # ---- properties ----------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self._codist.GlobalSize)

    @property
    def dtype(self) -> np.dtype:
        return self._local.dtype

    @property
    def ndim(self) -> int:
        return len(self._codist.GlobalSize)

    @property
    def size(self) -> int:
        """The number of elements (numpy's meaning)."""
        return math.prod(self._codist.GlobalSize)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def astype(self, dtype, copy: bool = True) -> "codistributed":
        """The same array converted to ``dtype`` (each lab converts its own part)."""
        return type(self)._from_local(self._local.astype(dtype, copy=copy), self._codist)

    def copy(self) -> "codistributed":
        return type(self)._from_local(self._local.copy(), self._codist)

    def __copy__(self) -> "codistributed":
        return self.copy()

    def __deepcopy__(self, memo) -> "codistributed":
        return self.copy()

    # ---- display -------------------------------------------------------------------------
    def _describe(self, name: str = "D") -> str:
        lab = runtime.state.index if runtime.state.size == _codist_numlabs(self._codist) else 1
        return self._codist.describe_slice(lab, _codist_numlabs(self._codist), name)

    def __repr__(self) -> str:
        local = self._local
        lines = [self._describe(),
                 f"  local part: shape {local.shape}, dtype {local.dtype}",
                 f"  global: shape {self.shape}, {self._codist!r}"]
        if 0 < local.size <= 64:
            lines.append("  " + np.array2string(local, separator=", ").replace("\n", "\n  "))
        return "\n".join(lines)

    __str__ = __repr__

    def _spmdlab_summary(self) -> tuple:
        """What the client learns about this value without fetching it."""
        return ("codist", self.shape, str(self.dtype), repr(self._codist), self._codist)


def _infer_gsize(codist, shapes: list, n: int, what: str) -> Tuple[int, ...]:
    """The global size implied by the local parts' shapes for an incomplete codistributor."""
    ndim = len(shapes[0])
    if isinstance(codist, codistributor1d):
        dim = codist.Dimension
        if dim is None:
            pending = codist._pending_axis
            dim = (pending % ndim + 1) if (pending is not None and ndim) else ndim
        if ndim == 0 or dim > ndim:
            raise ValueError(f"{what}: cannot distribute {ndim}-D local parts along dimension {dim}")
        others = {s[:dim - 1] + s[dim:] for s in shapes}
        if len(others) > 1:
            detail = ", ".join(f"lab {k + 1}: {s}" for k, s in enumerate(shapes))
            raise ValueError(f"{what}: local parts distributed along dimension {dim} must agree "
                             f"in the other dimensions; got {detail}")
        g = list(shapes[0])
        g[dim - 1] = sum(s[dim - 1] for s in shapes)
        part = codist.Partition
        if part is not None and len(part) == n and part != [s[dim - 1] for s in shapes]:
            pass  # reported below as a size mismatch
        return tuple(g)
    if ndim != 2:
        raise ValueError(f"{what}: codistributor2dbc distributes 2-D arrays; the local parts are {ndim}-D")
    grid = codist.LabGrid or codistributor2dbc.defaultLabGrid(n)
    if grid[0] * grid[1] != n:
        raise ValueError(f"{what}: labgrid {grid} holds {grid[0] * grid[1]} labs but there are {n} labs")
    probe = codistributor2dbc(grid, codist.BlockSize, codist.Orientation, (1, 1))
    # Labs in grid column 0 hold every row once; labs in grid row 0 hold every column once.
    rows = sum(shapes[lab - 1][0] for lab in range(1, n + 1) if probe.gridCoords(lab, n)[1] == 0)
    cols = sum(shapes[lab - 1][1] for lab in range(1, n + 1) if probe.gridCoords(lab, n)[0] == 0)
    return (rows, cols)


# --------------------------------------------------------------------------- functions
def iscodistributed(X: Any) -> bool:
    """True if ``X`` is a codistributed array."""
    return isinstance(X, codistributed)


def _need(D: Any, what: str) -> codistributed:
    if not isinstance(D, codistributed):
        raise TypeError(f"{what} needs a codistributed array, got {type(D).__name__}")
    return D


def getLocalPart(D: codistributed) -> np.ndarray:
    """This lab's part of ``D`` (the stored numpy array itself, not a copy)."""
    return _need(D, "getLocalPart")._local


def getCodistributor(D: Any):
    """The (complete) codistributor of a codistributed (or client distributed) array."""
    codist = getattr(D, "_codist", None)
    if codist is None:
        raise TypeError(f"getCodistributor needs a codistributed array, got {type(D).__name__}")
    return codist


def globalIndices(D: Any, dim: Optional[int] = None, lab: Optional[int] = None, *,
                  axis: Optional[int] = None) -> np.ndarray:
    """0-based global indices along ``dim`` (1-based; or ``axis=``, 0-based) of the
    elements that ``lab`` (default: this lab) stores, as a numpy int64 array.

    ``D`` is a codistributed array or a complete codistributor. For a 1-D
    codistributor ``dim`` defaults to its distribution dimension.

    >>> c = codistributor1d(2, None, (1, 10)).complete((1, 10), 4)
    >>> globalIndices(c, 2, 3)
    array([6, 7])
    """
    if isinstance(D, _CODISTRIBUTORS):
        codist = D
    else:
        codist = getattr(D, "_codist", None)
        if not isinstance(codist, _CODISTRIBUTORS):
            raise TypeError(f"globalIndices needs a codistributed array or a codistributor, "
                            f"got {type(D).__name__}")
    if not codist.isComplete():
        raise ValueError("globalIndices needs a complete codistributor (GlobalSize set); "
                         "use codist.complete(gsize, numlabs) or pass the array")
    n = _codist_numlabs(codist)
    if lab is None:
        lab = runtime.state.index if runtime.state.size == n else None
        if lab is None:
            raise ValueError(f"globalIndices: pass lab= (1..{n}): this block does not run on "
                             f"the {n} labs of the codistributor")
    lab = check_lab(lab, n)
    if dim is None and axis is None and isinstance(codist, codistributor2dbc):
        raise TypeError("globalIndices of a 2dbc layout needs dim (1 = rows, 2 = columns) or axis=")
    return codist.globalIndices(dim, lab, n, axis=axis)


def redistribute(D: codistributed, codist=None) -> codistributed:
    """``D`` with the layout ``codist`` (default: ``codistributor1d()``), moved with one
    all-to-all exchange; no lab ever holds more than its old and new parts."""
    what = "redistribute"
    if not isinstance(D, codistributed) and getattr(type(D), "_spmdlab_input", None) is not None \
            and hasattr(D, "redistribute"):
        return D.redistribute(codist)  # a client distributed array: moved on the labs
    _need(D, what)
    _check_codist_arg(codist, what)
    lab, n = _here()
    src = D._codist
    if _codist_numlabs(src) != n:
        raise ValueError(f"{what}: the array is distributed over {_codist_numlabs(src)} labs "
                         f"but this block runs on {n}")
    target = _complete(codist, D.shape, n)
    if target == src:
        return D.copy()
    dtype = D.dtype
    local = D._local
    new = np.empty(target.localShape(lab, n), dtype=dtype)
    plan = transfer_regions(src, target, n, lab=lab)
    sends = plan[lab - 1]
    recvs = [plan[s][lab - 1] for s in range(n)]
    mine = sends[lab - 1]
    if mine.size:
        _copy_region(new, mine.dst_index, local, mine.src_index)
    if n == 1:
        return codistributed._from_local(new, target)
    item = dtype.itemsize
    scounts = np.array([0 if t.dst_lab == lab else t.size * item for t in sends], dtype=np.int64)
    rcounts = np.array([0 if t.src_lab == lab else t.size * item for t in recvs], dtype=np.int64)
    sdispl = np.concatenate(([0], np.cumsum(scounts)[:-1])).astype(np.int64)
    rdispl = np.concatenate(([0], np.cumsum(rcounts)[:-1])).astype(np.int64)
    sendbuf = np.empty(int(scounts.sum()), dtype=np.uint8)
    for t, off, cnt in zip(sends, sdispl, scounts):
        if cnt:
            _copy_region(sendbuf[off:off + cnt].view(dtype).reshape(t.shape), [None] * len(t.shape),
                         local, t.src_index)
    recvbuf = np.empty(int(rcounts.sum()), dtype=np.uint8)
    MPI = comm.MPI
    c = comm.block()
    request = c.Ialltoallv([sendbuf, (scounts, sdispl), MPI.BYTE], [recvbuf, (rcounts, rdispl), MPI.BYTE])
    comm.wait(request, what, keep=(sendbuf, recvbuf, scounts, rcounts, sdispl, rdispl))
    del sendbuf
    for t, off, cnt in zip(recvs, rdispl, rcounts):
        if cnt:
            _copy_region(new, t.dst_index, recvbuf[off:off + cnt].view(dtype).reshape(t.shape),
                         [None] * len(t.shape))
    return codistributed._from_local(new, target)


def _assemble(shape, dtype, codist, parts) -> np.ndarray:
    """The global array from ``parts`` (lab order) laid out by ``codist``."""
    n = _codist_numlabs(codist)
    out = np.empty(shape, dtype=dtype)
    for lab in range(1, n + 1):
        part = parts[lab - 1]
        if part.size:
            _put(out, codist.localSelection(lab, n), part)
    return out


def _concatenates(codist, shape) -> bool:
    """True when the local parts, in lab order, are the global array's C-order bytes."""
    return isinstance(codist, codistributor1d) and math.prod(shape[:codist.Dimension - 1]) == 1


def gather(D: Any, lab: Optional[int] = None) -> Any:
    """The whole array as a numpy array.

    On a lab: ``gather(D)`` gives it to every lab, ``gather(D, lab)`` to that lab only
    (the others get an empty array); one collective. At the client, ``gather`` of a
    ``distributed`` array fetches it from the labs. Anything else is returned as is.
    """
    if not isinstance(D, codistributed):
        hook = getattr(type(D), "_spmdlab_gather", None)
        if hook is not None:
            if lab is not None:
                raise TypeError("gather(D, lab) is for codistributed arrays inside spmd; "
                                "at the client use gather(D)")
            return hook(D)
        return D
    what = "gather" if lab is None else f"gather(D, {lab})"
    me, n = _here()
    codist = D._codist
    if _codist_numlabs(codist) != n:
        raise ValueError(f"{what}: the array is distributed over {_codist_numlabs(codist)} labs "
                         f"but this block runs on {n}")
    root = None if lab is None else check_lab(lab, n, "lab") - 1
    shape, dtype = D.shape, D.dtype
    if n == 1:
        return np.array(D._local, copy=True).reshape(shape)
    item = dtype.itemsize
    counts = np.array([math.prod(codist.localShape(k, n)) * item for k in range(1, n + 1)], dtype=np.int64)
    displs = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    send = _bytes_of(D._local)
    receiving = root is None or root == me - 1
    MPI = comm.MPI
    c = comm.block()
    whole = _concatenates(codist, shape)
    result = None
    if receiving:
        if whole:
            result = np.empty(shape, dtype=dtype)
            recv = _bytes_of(result) if result.size and item else np.empty(0, np.uint8)
            if recv.size and not np.shares_memory(recv, result):
                whole = False
        if not whole:
            recv = np.empty(int(counts.sum()), dtype=np.uint8)
        spec = [recv, (counts, displs), MPI.BYTE]
    else:
        recv, spec = None, None
    if root is None:
        request = c.Iallgatherv([send, MPI.BYTE], spec)
    else:
        request = c.Igatherv([send, MPI.BYTE], spec, root)
    comm.wait(request, what, keep=(send, recv, counts, displs))
    if not receiving:
        return np.empty((0,) * len(shape), dtype=dtype)
    if whole:
        return result
    parts = [recv[o:o + k].view(dtype).reshape(codist.localShape(lab_, n))
             for lab_, (o, k) in enumerate(zip(displs, counts), start=1)]
    return _assemble(shape, dtype, codist, parts)
