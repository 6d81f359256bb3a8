"""Distributed FFTs of codistributed arrays, without gathering (DESIGN §7).

numpy's ``np.fft`` functions work on codistributed arrays through ``__array_function__``
(each registered with ``registry.implements``; this package is one of
``registry.LAZY_MODULES``), with numpy's ``n``/``s``, ``axis``/``axes``,
``norm`` and ``out`` and its dtypes (float32 in, complex64 out); MATLAB's ``fft(X, n,
dim)``, ``ifft(X, n, dim, 'symmetric')``, ``fft2``, ``ifft2``, ``fftn``, ``ifftn`` (1-based
``dim``, default the first non-singleton dimension) are in ``fft_matlab``, exported by
spmdlab.
At the client, both work on ``distributed`` arrays (the call runs on the labs).

The algorithms are the classic transpose-based ones (e.g. C. Van Loan, "Computational
Frameworks for the Fast Fourier Transform", SIAM 1992, §3.3; the slab decomposition of
multidimensional FFTs):

- along an axis every lab holds whole: the local FFT (scipy.fft, one thread per lab),
  no communication;
- along the distributed axis: one all-to-all to a 1-D layout along another axis, where
  the transformed axis is local, then the local FFT. The axes that are local are always
  transformed first, so ``fft2``/``fftn`` of a slab-distributed array need one
  all-to-all there and one back. For a matrix these are slab transposes pipelined
  through the labs' staging window with the local FFTs fused into their chunks
  (``fft.pipeline``; by messages, ``fft.exchange``, when the labs are on several
  machines); arrays of three or more dimensions laid out along their first or last
  dimension go by pencils (``fft.pencil``); others through ``redistribute``;
- a vector (or an array whose other dimensions are all 1): the four-step (Bailey)
  algorithm, Bluestein for lengths without a usable factorization; see
  ``spmdlab.arrays.fft.bailey``. No lab ever holds the whole vector.

Layout of results: the input's layout (same 1-D dimension, same partition when the
length along it is unchanged, else the default one; 2dbc inputs are transformed in a
1-D layout and come back to their lab grid and block size). With ``transposed=True``
(the functions of this module and MATLAB's names) the result stays in the 1-D layout
of the last all-to-all, saving the all-to-all back; ``getCodistributor(R)`` tells which.
The inverse transform of such a result (``transposed=True`` too) transforms the local
axes first, so ``ifft2(fft2(D, transposed=True), transposed=True)`` takes two
all-to-alls and ends in D's layout (when D has the default partition).

Memory (``tests/arrays/test_fft.py::test_memory_part_plus_one_exchange_buffer``, tracemalloc on
4 labs, the staging window's growth counted): during ``fft2`` a lab holds its part plus,
at the peak, the intermediate part, the result's part and four chunks of the staging
window (at most half a part: 2.51 parts of new memory); the pipelined four-step frees
each intermediate after its transpose (2.02 parts). The exchange buffer of the message
transposes (``fft_exchange``) is kept for the next call, and Bluestein keeps the
spectrum of its chirp (one part of the padded length); ``fft_bailey.clear_cache()``
drops both.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import scipy.fft as sfft
from numpy.lib.array_utils import normalize_axis_index

from ...layouts.codistributor import codistributor1d, codistributor2dbc
from .. import threads
from ..adapt import check_out_cast
from ..array import codistributed
from ..base import here, is_codist, labs_for
from ..layout import is1d
from ..registry import implements
from . import bailey as fb
from . import exchange as fft_exchange
from . import pencil, pipeline
from .plan import default_partition

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
           "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")
_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


# --------------------------------------------------------------------------- small helpers
def _check_norm(norm: Optional[str]) -> None:
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')


def _scale(forward: bool, n: int, norm: Optional[str]) -> float:
    """numpy's normalization of one 1-D transform of length n."""
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") == forward:
        return 1.0 / n
    return 1.0


class _Step(tuple):
    """``(kind, axis, n)``: kind "c2c-" (forward), "c2c+" (inverse), "r2c", "c2r"."""

    __slots__ = ()
    kind = property(lambda self: self[0])
    axis = property(lambda self: self[1])
    n = property(lambda self: self[2])


def _codist_1d(dim0: int, part: Sequence[int], shape: Sequence[int]):
    return codistributor1d(dim0 + 1, list(part), tuple(shape))


def _move(local: np.ndarray, codist, new, shape: Tuple[int, ...], step: Optional[_Step] = None,
          norm: Optional[str] = None) -> np.ndarray:
    """One all-to-all to the layout ``new``, after the local transform ``step`` (None:
    none) of the part: for a matrix between rows and columns, a slab transpose with the
    transform fused into its chunks (``fft.pipeline``, one machine) or, without a
    staging window, the transform and then one ``Alltoallv``; else ``redistribute``."""
    if len(shape) == 2 and is1d(codist) and is1d(new) and codist.Dimension != new.Dimension:
        rows, cols = (codist, new) if codist.Dimension == 1 else (new, codist)
        pre = _pre(step, norm, local.size) if step is not None else pipeline.copy
        n1, n2, rp, cp = shape[0], shape[1], rows.Partition, cols.Partition
        if codist.Dimension == 2:
            out = pipeline.cols_to_rows(local, n1, n2, rp, cp, pre, "fft")
        else:
            out = pipeline.rows_to_cols(local, n1, n2, rp, cp, pre, "fft")
        if out is not None:
            return out
        if step is not None:
            local = _local(step.kind, local, step.axis, step.n, norm, False)
        return fft_exchange.slab_transpose(local, n1, n2, rp, cp, codist.Dimension == 1)
    if step is not None:
        local = _local(step.kind, local, step.axis, step.n, norm, False)
    if codist == new:
        return local
    return fft_exchange.move(local, codist, new)


def _pre(step: _Step, norm: Optional[str], size: int) -> pipeline.Pre:
    """The local transform ``step`` of one chunk, into the chunk's buffer."""
    axes, forward, workers = (step.axis,), step.kind == "c2c-", threads.fft_workers(size)

    def pre(src: np.ndarray, buf: np.ndarray, first: int) -> None:
        pipeline.fft_into(src, buf, axes, forward, norm, workers)
    return pre


def _pencils_apply(steps: List[_Step], local: np.ndarray, shape: Tuple[int, ...], codist) -> bool:
    """Whether ``fft.pencil`` may run ``steps``: complex transforms of one direction along
    distinct axes, lengths kept, of an array of three or more dimensions in a 1-D layout."""
    return (len(shape) >= 3 and bool(steps) and is1d(codist) and local.dtype.kind == "c"
            and len({s.kind for s in steps}) == 1 and steps[0].kind in ("c2c-", "c2c+")
            and len({s.axis for s in steps}) == len(steps) and all(s.n == shape[s.axis] for s in steps))


def _fusable(step: _Step, local: np.ndarray, shape: Tuple[int, ...], codist, p: int) -> bool:
    """Whether ``step`` may wait to be fused into the next slab transpose: a complex
    transform of a matrix that keeps its length."""
    return (p > 1 and len(shape) == 2 and is1d(codist) and step.kind in ("c2c-", "c2c+")
            and step.n == shape[step.axis] and local.dtype.kind == "c" and local.size > 0)


# --------------------------------------------------------------------------- local kernels
def _local(kind: str, x: np.ndarray, axis: int, n: int, norm: Optional[str], own: bool) -> np.ndarray:
    """One 1-D transform of the local part along a local axis (scipy.fft, the lab's
    threads when the part is large: arrays.threads)."""
    norm = norm or "backward"
    if x.shape[axis] == 0:  # numpy zero-pads an empty axis
        shape = list(x.shape)
        shape[axis] = 1
        x, own = np.zeros(shape, dtype=x.dtype), True
    w = threads.fft_workers(x.size)
    if kind == "c2c-":
        return sfft.fft(x, n, axis, norm, overwrite_x=own, workers=w)
    if kind == "c2c+":
        return sfft.ifft(x, n, axis, norm, overwrite_x=own, workers=w)
    if kind == "r2c":
        return sfft.rfft(x, n, axis, norm, workers=w)
    return sfft.irfft(x, n, axis, norm, workers=w)


def _vector_step(step: _Step, x: np.ndarray, own: bool, part: List[int],
                 norm: Optional[str]) -> Tuple[np.ndarray, List[int]]:
    """One transform of a distributed vector (four-step / Bluestein); ``own``: x may be
    overwritten."""
    lab, p = here()
    kind, n = step.kind, step.n
    if kind in ("c2c-", "c2c+"):
        cx = x.astype(np.result_type(x.dtype, np.complex64), copy=False)
        y, part = fb.vector_dft(cx, part, n, -1 if kind == "c2c-" else 1, owned=own or cx is not x)
        f = _scale(kind == "c2c-", n, norm)
        if f != 1.0:
            y *= f
        return y, part
    if kind == "r2c":
        x = x.astype(np.result_type(x.dtype, np.complex64))
        y, full = fb.vector_dft(x, part, n, -1, owned=True)
        f = _scale(True, n, norm)
        if f != 1.0:
            y *= f
        out = default_partition(n // 2 + 1, p)
        return fb.resize_vector(y, full, n // 2 + 1, out), out
    # c2r: x = Re(ifft(Z)) with Z[0] = X[0], Z[k] = 2 X[k] for 1 <= k <= (n-1)//2,
    # Z[n/2] = X[n/2] (n even), 0 beyond: numpy's irfft without the mirrored half.
    target = default_partition(n, p)
    z = fb.resize_vector(x, part, n, target, valid=n // 2 + 1)
    if z is x and not own:
        z = z.copy()
    lo = sum(target[:lab - 1])
    k = np.arange(lo, lo + target[lab - 1])
    z[(k >= 1) & (k <= (n - 1) // 2)] *= 2
    y, part = fb.vector_dft(z, target, n, 1, owned=True)
    del z
    r = np.ascontiguousarray(y.real)
    f = _scale(False, n, norm)
    if f != 1.0:
        r *= f
    return r, part


# --------------------------------------------------------------------------- the scheduler
def _first_steps(pending: List[_Step]) -> List[int]:
    """Indices of the steps that may run next: each axis's first pending step; the real
    forward step only first, the real inverse step only last."""
    if pending[0].kind == "r2c":
        return [0]
    seen, out = set(), []
    for i, s in enumerate(pending):
        if s.axis in seen:
            continue
        seen.add(s.axis)
        if s.kind == "c2r" and len(pending) > 1:
            continue
        out.append(i)
    return out


def _choose_dim(shape: Tuple[int, ...], pending: List[_Step], axis: int, p: int) -> int:
    """The dimension to distribute along so that ``axis`` becomes local: preferably one
    that is long enough for every lab and not transformed later (then no more moves)."""
    later = {s.axis for s in pending if s.axis != axis}
    best = max((e for e in range(len(shape)) if e != axis),
               key=lambda e: (shape[e] >= p, e not in later, shape[e], -e))
    return best


def _transform(D: Any, steps: List[_Step], norm: Optional[str], out: Any = None, transposed: bool = False,
               what: str = "fft"):
    """Run the 1-D transforms ``steps`` over a codistributed array (see the module doc)."""
    codist, local, shape = D._codist, D._local, tuple(D.shape)
    lab, p = labs_for(codist, what)
    orig, own = codist, False
    pending = list(steps)
    if not is1d(codist) and p > 1:  # 2dbc: work in a 1-D layout
        first = pending[0].axis if pending else 0
        e = _choose_dim(shape, pending, first, p)
        if math.prod(shape) == shape[first] and shape[first] > 1:  # a vector: keep it spread
            e = first
        new = _codist_1d(e, default_partition(shape[e], p), shape)
        local, codist, own = _move(local, codist, new, shape), new, True
    if out is None and not transposed and _pencils_apply(pending, local, shape, codist):
        y = pencil.transform(local, shape, codist.Partition, codist.Dimension - 1, [s.axis for s in pending],
                             pending[0].kind, norm)
        if y is not None:
            return fft_exchange.wrap(y, codist)
    deferred: Optional[_Step] = None  # a local transform left to fuse into the next transpose

    def flush() -> None:
        nonlocal local, own, deferred
        if deferred is not None:
            local, own, deferred = _local(deferred.kind, local, deferred.axis, deferred.n, norm, own), True, None

    while pending:
        d = codist.Dimension - 1 if is1d(codist) else -1
        runnable = _first_steps(pending)
        local_steps = [i for i in runnable if pending[i].axis != d or p == 1]
        if local_steps:
            flush()
            step = pending.pop(local_steps[0])
            if _fusable(step, local, shape, codist, p):
                deferred = step
                continue
            local, own = _local(step.kind, local, step.axis, step.n, norm, own), True
            shape = shape[:step.axis] + (local.shape[step.axis],) + shape[step.axis + 1:]
            if is1d(codist):  # (one lab: the distributed axis may change length)
                codist = _codist_1d(d, codist.Partition if step.axis != d else [shape[d]], shape)
            continue
        step = pending[runnable[0]]
        if math.prod(shape[:step.axis] + shape[step.axis + 1:]) == 1:  # a vector: four-step / Bluestein
            flush()
            pending.pop(runnable[0])
            y, part = _vector_step(step, local.reshape(-1), own, codist.Partition, norm)
            shape = shape[:step.axis] + (sum(part),) + shape[step.axis + 1:]
            local_shape = list(shape)
            local_shape[step.axis] = part[lab - 1]
            local, own = y.reshape(local_shape), True
            codist = _codist_1d(step.axis, part, shape)
            continue
        e = _choose_dim(shape, pending, step.axis, p)
        new = _codist_1d(e, default_partition(shape[e], p), shape)
        local, codist, own, deferred = _move(local, codist, new, shape, deferred, norm), new, True, None
    if not is1d(orig):
        target = codistributor2dbc(orig.LabGrid, orig.BlockSize, orig.Orientation).complete(shape, p)
    else:
        dim = orig.Dimension - 1
        same = shape[dim] == orig.GlobalSize[dim]
        target = _codist_1d(dim, orig.Partition if same else default_partition(shape[dim], p), shape)
    if p == 1:  # one lab holds the whole array in any layout
        codist = target
    if out is not None:
        flush()
        return _into(out, local, codist, shape, what)
    if not transposed and codist != target:
        local, codist, own, deferred = _move(local, codist, target, shape, deferred, norm), target, True, None
    flush()
    if not own:
        local = local.copy()
    return fft_exchange.wrap(local, codist)


def _into(out: Any, local: np.ndarray, codist, shape: Tuple[int, ...], what: str):
    if not is_codist(out):
        raise TypeError(f"{what}: out= must be a codistributed array, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{what}: out= has shape {tuple(out.shape)}, the result has {tuple(shape)}")
    check_out_cast(what, local.dtype, out.dtype)
    local = fft_exchange.move(local, codist, out._codist)
    np.copyto(out._local, local, casting="same_kind")
    return out


# --------------------------------------------------------------------------- dtypes, args
def _prepare(a: Any, kind: str, what: str):
    """``a`` converted to the precision numpy's ``what`` computes in (numpy's own errors
    for unsupported dtypes come from a 2-element probe)."""
    if not is_codist(a):
        raise TypeError(f"{what}: expected a codistributed array, got {type(a).__name__}")
    probe = np.zeros(2, dtype=a.dtype)
    want: np.dtype[Any]
    if kind == "r2c":
        want = np.fft.rfft(probe).real.dtype
    elif kind == "c2r":
        want = np.fft.ifft(probe).dtype
    else:
        want = np.fft.fft(probe).dtype
    return a if a.dtype == want else a.astype(want)


def _axis(axis: Any, ndim: int) -> int:
    return normalize_axis_index(operator_index(axis), ndim)


def operator_index(x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"axis must be an integer, got {x!r}")
    return int(x)


def _n(n: Any, default: int) -> int:
    n = default if n is None else operator_index(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _one(a, kind: str, n, axis, norm, out, what: str, transposed: bool = False):
    _check_norm(norm)
    a = _prepare(a, kind, what)
    ax = _axis(axis, a.ndim)
    length = a.shape[ax]
    n = _n(n, 2 * (length - 1) if kind == "c2r" else length)
    return _transform(a, [_Step((kind, ax, n))], norm, out, transposed, what)


def _cook(shape: Tuple[int, ...], s, axes, invreal: bool = False) -> Tuple[list, list]:
    """numpy 2.x's ``_cook_nd_args``: s and axes of an N-D transform (with its warnings)."""
    if s is None:
        shapeless = True
        s = list(shape) if axes is None else [shape[_axis(a, len(shape))] for a in axes]
    else:
        shapeless = False
    s = list(s)
    if axes is None:
        if not shapeless:
            warnings.warn("`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). "
                          "In a future version of NumPy, this will raise an error and `s[i]` will "
                          "correspond to the size along the transformed axis specified by `axes[i]`. "
                          "To retain current behaviour, pass a sequence [0, ..., k-1] to `axes` for "
                          "an array of dimension k.", DeprecationWarning, stacklevel=4)
        axes = list(range(-len(s), 0))
    axes = list(axes)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if invreal and shapeless:
        s[-1] = (shape[_axis(axes[-1], len(shape))] - 1) * 2
    if None in s:
        warnings.warn("Passing an array containing `None` values to `s` is deprecated in NumPy 2.0 "
                      "and will raise an error in a future version of NumPy. To use the default "
                      "behaviour of the corresponding 1-D transform, pass the value matching the "
                      "default for its `n` parameter. To use the default behaviour for every axis, "
                      "the `s` argument can be omitted.", DeprecationWarning, stacklevel=4)
    axes = [_axis(a, len(shape)) for a in axes]
    s = [shape[a] if v == -1 else v for v, a in zip(s, axes)]
    return s, axes


def _many(a, kind: str, s, axes, norm, out, what: str, transposed: bool = False):
    _check_norm(norm)
    base = "c2c-" if kind in ("c2c-", "r2c") else "c2c+"
    a = _prepare(a, "r2c" if kind == "r2c" else ("c2r" if kind == "c2r" else base), what)
    s, axes = _cook(tuple(a.shape), s, axes, invreal=kind == "c2r")
    if not axes:
        return _transform(a, [], norm, out, transposed, what)
    shape = tuple(a.shape)
    size = lambda v, ax: _n(v, shape[ax])  # noqa: E731
    if kind in ("c2c-", "c2c+"):  # numpy's order: the last axis first
        steps = [_Step((kind, ax, size(v, ax))) for v, ax in reversed(list(zip(s, axes)))]
    elif kind == "r2c":
        steps = [_Step(("r2c", axes[-1], size(s[-1], axes[-1])))]
        steps += [_Step(("c2c-", ax, size(v, ax))) for v, ax in reversed(list(zip(s[:-1], axes[:-1])))]
    else:
        steps = [_Step(("c2c+", ax, size(v, ax))) for v, ax in zip(s[:-1], axes[:-1])]
        steps.append(_Step(("c2r", axes[-1], _n(s[-1], 2 * (shape[axes[-1]] - 1)))))
    return _transform(a, steps, norm, out, transposed, what)


# --------------------------------------------------------------------------- numpy's names
@implements(np.fft.fft)
def fft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, out: Any = None, *,
        transposed: bool = False) -> codistributed:
    """``np.fft.fft`` of a codistributed array (see the module doc for the algorithm)."""
    return _one(a, "c2c-", n, axis, norm, out, "fft", transposed)


@implements(np.fft.ifft)
def ifft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, out: Any = None, *,
         transposed: bool = False) -> codistributed:
    """``np.fft.ifft`` of a codistributed array."""
    return _one(a, "c2c+", n, axis, norm, out, "ifft", transposed)


@implements(np.fft.rfft)
def rfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, out: Any = None, *,
         transposed: bool = False) -> codistributed:
    """``np.fft.rfft``: real input, the n//2 + 1 non-negative frequencies."""
    return _one(a, "r2c", n, axis, norm, out, "rfft", transposed)


@implements(np.fft.irfft)
def irfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, out: Any = None, *,
          transposed: bool = False) -> codistributed:
    """``np.fft.irfft``: the real signal of n = 2(m - 1) points (default) from m frequencies."""
    return _one(a, "c2r", n, axis, norm, out, "irfft", transposed)


@implements(np.fft.hfft)
def hfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, out: Any = None, *,
         transposed: bool = False) -> codistributed:
    """``np.fft.hfft``: irfft of the conjugate, with the opposite normalization."""
    _check_norm(norm)
    return irfft(_prepare(a, "c2r", "hfft").conj(), n, axis, _SWAP[norm], out, transposed=transposed)


@implements(np.fft.ihfft)
def ihfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, out: Any = None, *,
          transposed: bool = False) -> codistributed:
    """``np.fft.ihfft``: the conjugate of rfft, with the opposite normalization."""
    _check_norm(norm)
    r = rfft(a, n, axis, _SWAP[norm], None, transposed=transposed).conj()
    return r if out is None else _into(out, r._local, r._codist,
                                       tuple(r.shape), "ihfft")


@implements(np.fft.fftn)
def fftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: Optional[str] = None,
         out: Any = None, *, transposed: bool = False) -> codistributed:
    """``np.fft.fftn``: local axes first, then one all-to-all per distributed axis."""
    return _many(a, "c2c-", s, axes, norm, out, "fftn", transposed)


@implements(np.fft.ifftn)
def ifftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: Optional[str] = None,
          out: Any = None, *, transposed: bool = False) -> codistributed:
    return _many(a, "c2c+", s, axes, norm, out, "ifftn", transposed)


@implements(np.fft.rfftn)
def rfftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: Optional[str] = None,
          out: Any = None, *, transposed: bool = False) -> codistributed:
    return _many(a, "r2c", s, axes, norm, out, "rfftn", transposed)


@implements(np.fft.irfftn)
def irfftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: Optional[str] = None,
           out: Any = None, *, transposed: bool = False) -> codistributed:
    return _many(a, "c2r", s, axes, norm, out, "irfftn", transposed)


@implements(np.fft.fft2)
def fft2(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = (-2, -1),
         norm: Optional[str] = None, out: Any = None, *, transposed: bool = False) -> codistributed:
    """``np.fft.fft2``: the slab decomposition (one all-to-all there, one back)."""
    return _many(a, "c2c-", s, axes, norm, out, "fft2", transposed)


@implements(np.fft.ifft2)
def ifft2(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = (-2, -1),
          norm: Optional[str] = None, out: Any = None, *, transposed: bool = False) -> codistributed:
    return _many(a, "c2c+", s, axes, norm, out, "ifft2", transposed)


@implements(np.fft.rfft2)
def rfft2(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = (-2, -1),
          norm: Optional[str] = None, out: Any = None, *, transposed: bool = False) -> codistributed:
    return _many(a, "r2c", s, axes, norm, out, "rfft2", transposed)


@implements(np.fft.irfft2)
def irfft2(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = (-2, -1),
           norm: Optional[str] = None, out: Any = None, *, transposed: bool = False) -> codistributed:
    return _many(a, "c2r", s, axes, norm, out, "irfft2", transposed)


def _shift(x, axes, inverse: bool):
    ndim = x.ndim
    if axes is None:
        axes = list(range(ndim))
    elif isinstance(axes, numbers.Integral):
        axes = [axes]
    shifts: dict[int, int] = {}
    for ax in axes:
        ax = _axis(ax, ndim)
        n = x.shape[ax]
        shifts[ax] = shifts.get(ax, 0) + (-(n // 2) if inverse else n // 2)
    return fft_exchange.roll_axes(x, shifts)


@implements(np.fft.fftshift)
def fftshift(x: Any, axes: int | Sequence[int] | None = None) -> codistributed:
    """``np.fft.fftshift``: local axes rolled in place; the distributed axis with one
    ``Alltoallv`` (each lab's block lands in at most two pieces per lab)."""
    return _shift(x, axes, False)


@implements(np.fft.ifftshift)
def ifftshift(x: Any, axes: int | Sequence[int] | None = None) -> codistributed:
    return _shift(x, axes, True)
