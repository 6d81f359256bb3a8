"""FFT of one long vector spread over the labs, never whole on any lab.

The four-step algorithm (D. H. Bailey, "FFTs in external or hierarchical memory",
J. Supercomputing 4 (1990) 23-35; the "six-step" variant with explicit transposes):
for N = N1·N2 write the input index n = N2·n1 + n2 and the output index
k = k1 + N1·k2, so with w = exp(s·2πi/N)

    X[k1 + N1·k2] = Σ_n2 w^(n2·k1) · w_N2^(n2·k2) · Σ_n1 x[N2·n1 + n2] · w_N1^(n1·k1)

The vector in natural order is the N1 x N2 matrix ``x[n1, n2]`` by rows (the "rows
layout": each lab holds whole rows, a contiguous piece of the vector). Then:
all-to-all to columns; N2 column FFTs of length N1; twiddles w^(n2·k1); all-to-all to
rows; N1 row FFTs of length N2. That gives ``W[k1, k2] = X[k1 + N1·k2]`` by rows
(the "spectral layout"); one more all-to-all of the transposed matrix puts X in
natural order. The same two passes backwards (row FFTs, twiddles, column FFTs) take a
vector in the spectral layout to one in natural order.

Lengths without a usable factorization (primes, 2·prime, ...) go through Bluestein's
chirp-z algorithm (L. I. Bluestein, "A linear filtering approach to the computation of
the discrete Fourier transform", 1970): with c[n] = exp(s·πi·n²/N),
X[k] = c[k] · Σ_n (x[n]·c[n]) · conj(c[k - n]), a convolution done as a cyclic one of
the power-of-two length M ≥ 2N - 1 by four-step FFTs; the product of the two spectra is
formed in the spectral layout, so the forward and inverse transforms of length M
skip their permutation all-to-alls. The FFT of the chirp is cached per plan.

Everything here works on local parts and partitions (how many elements each lab holds);
the data moves with ``spmdlab.redistribute`` (one all-to-all each time, interruptible).
The index math (``plan``, ``roll_pieces``, ``window_partition``) is pure, in ``fft_plan``.
"""
from __future__ import annotations

import functools
import math
from typing import Optional, Tuple

import numpy as np
import scipy.fft as sfft

from ...lab import lazy_comm as comm
from ...layouts.codistributor import codistributor1d
from .. import threads
from ..base import here
from . import exchange as fft_exchange
from . import pipeline
from .exchange import move
from .plan import Partition, Plan, default_partition, plan, window_partition

__all__ = ["vector_dft", "four_step_shared", "move_vector", "resize_vector", "nat_to_spec", "spec_to_nat",
           "spec_order_to_nat", "nat_order_to_spec", "clear_cache"]


def clear_cache() -> None:
    """Drop the cached spectra of Bluestein chirps (one local part each) and the exchange
    buffer slab transposes reuse."""
    _chirp_spectrum.cache_clear()
    fft_exchange.clear_buffer()


# --------------------------------------------------------------------------- lab helpers
def _codist1d(dim: int, part: Partition, shape: Tuple[int, ...]):
    return codistributor1d(dim, list(part), tuple(shape))


def move_vector(local: np.ndarray, part: Partition, new_part: Partition) -> np.ndarray:
    """A vector's part, from partition ``part`` to ``new_part`` (same length)."""
    if list(part) == list(new_part):
        return local
    n = sum(part)
    return move(local, _codist1d(1, part, (n,)), _codist1d(1, new_part, (n,)))


def resize_vector(local: np.ndarray, part: Partition, n_out: int, part_out: Partition,
                  valid: Optional[int] = None) -> np.ndarray:
    """The part, in partition ``part_out`` of length ``n_out``, of the vector cut or
    zero-padded to ``n_out`` (numpy's ``n``; only its first ``valid`` elements kept, the
    rest zeros): one redistribution plus local padding."""
    n_in = sum(part)
    valid = min(n_in, n_out, n_out if valid is None else valid)
    lab, p = here()
    win = window_partition(part_out, valid)
    win[-1] += n_in - valid  # the cut tail rides along to the last lab, which drops it
    got = move_vector(local, part, win)
    keep = win[lab - 1] - (n_in - valid if lab == p else 0)
    if keep == part_out[lab - 1] and got.shape[0] == keep:
        return got
    out = np.zeros(part_out[lab - 1], dtype=local.dtype)
    out[:keep] = got[:keep]
    return out


def _unit(angle_units: np.ndarray, n: int, sign: int, dtype) -> np.ndarray:
    """exp(sign·2πi·m/n) for integer m (reduced mod n first, for accuracy)."""
    theta = (np.mod(angle_units, n).astype(np.float64)) * (sign * 2.0 * np.pi / n)
    out = np.empty(theta.shape, dtype=np.complex128)
    out.real = np.cos(theta)
    out.imag = np.sin(theta)
    return out.astype(dtype, copy=False)


def _twiddle(y: np.ndarray, k1_start: int, n2_start: int, n: int, sign: int) -> None:
    """``y[i, j] *= w^((k1_start + i)·(n2_start + j))``, w = exp(sign·2πi/n), in place,
    with about 2·√rows·cols complex exponentials (rows split into blocks of L:
    w^(k1·n2) = w^(block start·n2) · w^(offset·n2))."""
    rows, cols = y.shape
    if rows == 0 or cols == 0:
        return
    n2 = np.arange(n2_start, n2_start + cols, dtype=np.int64)
    step = max(1, math.isqrt(rows))
    inner = _unit(np.arange(step, dtype=np.int64)[:, None] * n2[None, :], n, sign, y.dtype)
    for b in range(0, rows, step):
        cnt = min(step, rows - b)
        block = y[b:b + cnt]
        block *= inner[:cnt]
        block *= _unit((k1_start + b) * n2, n, sign, y.dtype)


def _local_fft(x: np.ndarray, axis: int, sign: int, workers: Optional[int] = None) -> np.ndarray:
    """Unnormalized DFT along ``axis`` in place where possible (scipy, the lab's threads
    when the part is large: arrays.threads)."""
    f = sfft.fft if sign < 0 else sfft.ifft
    norm = "backward" if sign < 0 else "forward"  # ifft with "forward": no 1/n
    return f(x, axis=axis, norm=norm, overwrite_x=True,
             workers=threads.fft_workers(x.size) if workers is None else workers)


def _rows_part(n1: int, p: int) -> Partition:
    return default_partition(n1, p)


def _slab(a: np.ndarray, n1: int, n2: int, to_cols: bool) -> np.ndarray:
    """The n1 x n2 matrix's part moved from rows to columns (or back): one all-to-all,
    through the staging window (``fft.pipeline``) or by messages."""
    lab, p = here()
    if p == 1:
        return a.reshape(n1, n2)
    rows, cols = _rows_part(n1, p), default_partition(n2, p)
    if to_cols:
        out = pipeline.rows_to_cols(a.reshape(rows[lab - 1], n2), n1, n2, rows, cols, pipeline.copy, "fft")
    else:
        out = pipeline.cols_to_rows(a.reshape(n1, cols[lab - 1]), n1, n2, rows, cols, pipeline.copy, "fft")
    if out is not None:
        return out
    return fft_exchange.slab_transpose(a, n1, n2, rows, cols, to_cols)


def nat_to_spec(x: np.ndarray, n1: int, n2: int, sign: int) -> np.ndarray:
    """Four-step, first half: x in natural order, rows layout of the n1 x n2 matrix
    (this lab's part: a contiguous piece of whole rows) -> ``W[k1, k2] = X[k1 + n1·k2]``
    by rows of k1, X the unnormalized DFT with ``sign``. Two all-to-alls."""
    lab, p = here()
    rows, cols = _rows_part(n1, p), default_partition(n2, p)
    a = _slab(x.reshape(rows[lab - 1], n2), n1, n2, True)
    if np.may_share_memory(a, x):  # one lab: nothing moved
        a = a.copy()
    a = _local_fft(a, 0, sign)
    _twiddle(a, 0, sum(cols[:lab - 1]), n1 * n2, sign)
    a = _slab(a, n1, n2, False)
    return _local_fft(a, 1, sign)


def four_step_shared(x: np.ndarray, n1: int, n2: int, sign: int) -> Optional[Tuple[np.ndarray, Partition]]:
    """The whole four-step (``nat_to_spec`` then ``spec_order_to_nat``) with its three
    transposes pipelined through the staging window (``fft.pipeline``): the column FFTs
    and the twiddles fused into the chunks of the second transpose, the row FFTs into
    those of the third, which also puts the result in natural order (it writes the
    transposed chunks). Returns the flat part in natural order and its partition (whole
    rows of n1), or None when there is no staging window (nothing done)."""
    lab, p = here()
    me = lab - 1
    rows, cols, krows = _rows_part(n1, p), default_partition(n2, p), default_partition(n2, p)
    workers = threads.fft_workers(x.size)
    a = pipeline.rows_to_cols(x.reshape(rows[me], n2), n1, n2, rows, cols, pipeline.copy, "fft")
    if a is None:
        return None
    c0 = sum(cols[:me])

    how = "backward" if sign < 0 else "forward"  # unnormalized both ways

    def columns(src: np.ndarray, buf: np.ndarray, j0: int) -> None:
        pipeline.fft_into(src, buf, (0,), sign < 0, how, workers)
        _twiddle(buf, 0, c0 + j0, n1 * n2, sign)

    def by_rows(src: np.ndarray, buf: np.ndarray, i0: int) -> None:
        pipeline.fft_into(src, buf, (1,), sign < 0, how, workers)

    b = pipeline.cols_to_rows(a, n1, n2, rows, cols, columns, "fft")
    if b is None:  # (longer chunks than the window holds: messages)
        a = _local_fft(a, 0, sign, workers)
        _twiddle(a, 0, c0, n1 * n2, sign)
        b = _slab(a, n1, n2, False)
    del a
    out = pipeline.rows_to_cols(b, n1, n2, rows, krows, by_rows, "fft", transpose=True)
    if out is None:
        return spec_order_to_nat(_local_fft(b, 1, sign, workers), n1, n2)
    return out.reshape(-1), [r * n1 for r in krows]


def spec_to_nat(w: np.ndarray, n1: int, n2: int, sign: int) -> np.ndarray:
    """Four-step backwards: ``W[k1, k2] = X[k1 + n1·k2]`` by rows of k1 -> the unnormalized
    DFT (``sign``) of X in natural order, rows layout of the n1 x n2 matrix (flat)."""
    lab, p = here()
    rows = _rows_part(n1, p)
    a = _local_fft(w, 1, sign)
    _twiddle(a, sum(rows[:lab - 1]), 0, n1 * n2, sign)
    a = _local_fft(_slab(a, n1, n2, True), 0, sign)
    return _slab(a, n1, n2, False).reshape(-1)


def spec_order_to_nat(w: np.ndarray, n1: int, n2: int) -> Tuple[np.ndarray, Partition]:
    """``W[k1, k2] = X[k1 + n1·k2]`` by rows -> X in natural order (one all-to-all of the
    transposed matrix); returns the flat part and its partition (whole rows of n1)."""
    _, p = here()
    rows, krows = _rows_part(n1, p), default_partition(n2, p)
    t = move(w.T, _codist1d(2, rows, (n2, n1)), _codist1d(1, krows, (n2, n1)))
    return np.ascontiguousarray(t).reshape(-1), [r * n1 for r in krows]


def nat_order_to_spec(x: np.ndarray, n1: int, n2: int) -> np.ndarray:
    """X in natural order, laid out in whole rows of n1 (``spec_order_to_nat``'s
    partition) -> ``W[k1, k2] = X[k1 + n1·k2]`` by rows of k1 (one all-to-all)."""
    lab, p = here()
    rows, krows = _rows_part(n1, p), default_partition(n2, p)
    m = x.reshape(krows[lab - 1], n1)
    t = move(m.T, _codist1d(2, krows, (n1, n2)), _codist1d(1, rows, (n1, n2)))
    return np.ascontiguousarray(t)


@functools.lru_cache(maxsize=2)
def _chirp_spectrum(n: int, m1: int, m2: int, sign: int, lab: int, p: int, dtype: str,
                    comm_id: int) -> np.ndarray:
    """This lab's part (spectral layout) of the length-M DFT of Bluestein's kernel
    b[j] = conj(c[j]) for |j| < n, wrapped cyclically."""
    m = m1 * m2
    part = [r * m2 for r in _rows_part(m1, p)]
    lo = sum(part[:lab - 1])
    j = np.arange(lo, lo + part[lab - 1], dtype=np.int64)
    d = np.minimum(j, m - j)  # distance to 0 on the cycle
    b = np.where(d < n, _unit(d * d, 2 * n, -sign, np.complex128), 0).astype(dtype)
    return nat_to_spec(b, m1, m2, -1)


def _comm_id(p: int) -> int:
    """The block communicator's identity (a renewed one after an abort: a fresh cache)."""
    if p == 1:
        return 0
    return id(comm.block())


def vector_dft(local: np.ndarray, part: Partition, n: int, sign: int,
               how: Optional[Plan] = None, owned: bool = False) -> Tuple[np.ndarray, Partition]:
    """The unnormalized DFT (``sign`` -1 forward, +1 inverse) of a vector of length
    ``sum(part)``, cut or zero-padded to ``n`` first (numpy's ``n``). ``local`` is a
    complex part; returns this lab's part and the result's partition (the default one
    of n). Never more than about one local part of the vector on any lab. ``how``
    overrides ``plan(n, numlabs)`` (tests run the four-step and Bluestein on one lab);
    ``owned``: ``local`` may be overwritten (else it is left as it is)."""
    lab, p = here()
    pl = plan(n, p) if how is None else how
    target = default_partition(n, p)
    if pl.kind == "local":  # one lab
        x = resize_vector(local, part, n, [n])
        if x is local and not owned:
            x = x.copy()
        return _local_fft(x, 0, sign), [n]
    if pl.kind == "fourstep":
        rows = [r * pl.N2 for r in _rows_part(pl.N1, p)]
        x = resize_vector(local, part, n, rows)
        shared = four_step_shared(x, pl.N1, pl.N2, sign) if p > 1 else None
        if shared is None:
            w = nat_to_spec(x, pl.N1, pl.N2, sign)
            out, opart = spec_order_to_nat(w, pl.N1, pl.N2)
        else:
            out, opart = shared
        return move_vector(out, opart, target), target
    # Bluestein: a = x·c zero-padded to M (rows layout), A = DFT_M(a) (spectral layout),
    # A·B, inverse DFT_M back to natural order, X[k] = c[k]·conv[k] / M for k < n.
    m1, m2, m = pl.N1, pl.N2, pl.M
    rows = [r * m2 for r in _rows_part(m1, p)]
    a = resize_vector(local, part, m, rows, valid=n)
    if a is local and not owned:
        a = a.copy()
    lo = sum(rows[:lab - 1])
    j = np.arange(lo, lo + rows[lab - 1], dtype=np.int64)
    valid = j < n
    a[valid] *= _unit(j[valid] * j[valid], 2 * n, sign, a.dtype)
    spec = nat_to_spec(a, m1, m2, -1)
    del a
    spec *= _chirp_spectrum(n, m1, m2, sign, lab, p, spec.dtype.str, _comm_id(p))
    conv = spec_to_nat(spec, m1, m2, +1)
    del spec
    conv[valid] *= _unit(j[valid] * j[valid], 2 * n, sign, conv.dtype) * (1.0 / m)
    return resize_vector(conv, rows, n, target), target
