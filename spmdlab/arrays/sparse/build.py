"""Making sparse codistributed matrices: MATLAB's ``sparse`` in its forms,
``speye``, ``sprand``, ``sprandn``, ``spdiags``, ``kron``, and ``codistributed(S,
codist)`` / ``codistributed.build(L, codist)`` for scipy.sparse inputs.

Every constructor builds only this lab's rows (or columns): nothing is assembled on one
lab. Entries given on any lab (``sparse(i, j, v, m, n)`` with codistributed vectors)
travel to their owners in one all-to-all (``move.assemble``). The default layout is
MATLAB's for matrices, by columns (``codistributor1d()``); pass ``codistributor1d(1)``
for rows, the layout the solvers use.
"""
from __future__ import annotations

import numbers
import zlib
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...layouts.codistributor import codistributor1d
from ..base import CodistArray, here
from ..collectives import allgather_objects, check_same_codist, error_entry, raise_combined
from ..transfer import redistribute
from .matrix import (
    SUPPORTED_DTYPES,
    as_1d,
    complete_1d,
    layout_error,
    local_format,
    offsets,
    partition_of,
    target_layout,
)
from .move import assemble

__all__ = ["target_layout", "from_dense", "from_triplets", "zeros", "from_replicated", "from_local",
           "speye", "sprand", "sprandn", "spdiags", "kron"]


def _check_size(m: Any, n: Any, what: str) -> tuple[int, int]:
    for v in (m, n):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or v < 0:
            raise ValueError(f"{what}: sizes must be non-negative integers, got {m!r}, {n!r}")
    return int(m), int(n)


def _wrap(cls: Any, local: Any, codist: codistributor1d) -> Any:
    return cls._from_local(local, codist)


def _local_range(codist: codistributor1d) -> tuple[int, int]:
    o = offsets(partition_of(codist))
    lab = here()[0]
    return int(o[lab - 1]), int(o[lab])


def from_dense(cls: Any, D: Any, codist: Any = None) -> Any:
    """``sparse(D)`` of a dense codistributed (or replicated) matrix, keeping D's 1-D
    layout when it is one a sparse matrix can have."""
    what = "sparse(D)"
    shape = tuple(D.shape)
    if len(shape) != 2:
        raise ValueError(f"{what}: sparse matrices are 2-D; D has shape {shape}")
    if codist is None and isinstance(D, CodistArray) and layout_error(D._codist, what) is None:
        codist = D._codist
    target = target_layout(codist, shape, what)
    if isinstance(D, CodistArray):
        local = redistribute(D, target)._local
    else:
        lo, hi = _local_range(target)
        D = np.asarray(D)
        local = D[lo:hi] if target.Dimension == 1 else D[:, lo:hi]
    return _wrap(cls, local, target)


def from_triplets(cls: Any, i: Any, j: Any, v: Any, m: int | None = None, n: int | None = None,
                  codist: Any = None) -> Any:
    """``sparse(i, j, v, m, n)``: 0-based indices, duplicates summed (scipy's COO). The
    triplets are replicated arrays (every lab keeps its own) or codistributed vectors
    (entries travel to their owners)."""
    what = "sparse(i, j, v, m, n)"
    dist = isinstance(i, CodistArray)
    parts = [x._local if isinstance(x, CodistArray) else np.asarray(x) for x in (i, j, v)]
    if dist:
        same = [redistribute(x, i._codist)._local if isinstance(x, CodistArray) else None for x in (j, v)]
        parts = [parts[0], same[0] if same[0] is not None else parts[1], same[1] if same[1] is not None else parts[2]]
    ii, jj, vv = parts
    if np.ndim(vv) == 0:
        vv = np.full(ii.shape, vv)
    if not (ii.shape == jj.shape == vv.shape):
        raise ValueError(f"{what}: i, j and v must have the same length; got {ii.shape}, {jj.shape}, {vv.shape}")
    if m is None or n is None:
        if dist:
            raise ValueError(f"{what}: give m and n with codistributed triplets")
        m = int(ii.max()) + 1 if ii.size else 0
        n = int(jj.max()) + 1 if jj.size else 0
    m, n = _check_size(m, n, what)
    bad = ii.size and (ii.min() < 0 or jj.min() < 0 or ii.max() >= m or jj.max() >= n)
    if not dist and bad:
        raise ValueError(f"{what}: indices out of range for a {m}x{n} matrix (0-based)")
    target = target_layout(codist, (m, n), what)
    if dist:
        err = f"indices out of range for a {m}x{n} matrix (0-based)" if bad else None
        raise_combined([e[0] for e in allgather_objects((error_entry(err),), what)], what)
        return _wrap(cls, assemble(ii, jj, vv, (m, n), target, what), target)
    lo, hi = _local_range(target)
    key = ii if target.Dimension == 1 else jj
    mine = (key >= lo) & (key < hi)
    ii, jj, vv = ii[mine], jj[mine], vv[mine]
    if target.Dimension == 1:
        local = sp.coo_array((vv, (ii - lo, jj)), shape=(hi - lo, n))
    else:
        local = sp.coo_array((vv, (ii, jj - lo)), shape=(m, hi - lo))
    local.sum_duplicates()
    return _wrap(cls, local, target)


def zeros(cls: Any, m: int, n: int, codist: Any = None, dtype: Any = float) -> Any:
    """``sparse(m, n)``: an all-zero m x n sparse matrix."""
    m, n = _check_size(m, n, "sparse(m, n)")
    target = target_layout(codist, (m, n), "sparse(m, n)")
    shape = target.localShape(here()[0], here()[1])
    return _wrap(cls, sp.csr_array(shape, dtype=dtype), target)


def _check_input(S: Any, what: str) -> str | None:
    if np.dtype(S.dtype) not in SUPPORTED_DTYPES:
        return f"{what}: dtype {S.dtype} is not supported (use one of {', '.join(map(str, SUPPORTED_DTYPES))})"
    if S.ndim != 2:
        return f"{what}: sparse matrices are 2-D, got {S.ndim}-D"
    return None


def _checksum(S: Any) -> tuple[int, int]:
    """``(nnz, crc32 of the canonical csr arrays)``: equal matrices give equal sums."""
    C = sp.csr_array(S, copy=True)
    C.sum_duplicates()
    crc = 0
    for a in (C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data):
        crc = zlib.crc32(np.ascontiguousarray(a).tobytes(), crc)
    return int(C.nnz), crc


def from_replicated(cls: Any, S: Any, codist: Any = None, *, noCommunication: bool = False) -> Any:
    """``codistributed(S, codist)``: a scipy.sparse matrix the same on every lab; each lab
    keeps its own rows (columns)."""
    what = "codistributed(S)"
    error = _check_input(S, what) or layout_error(codist, what)
    target = None
    if error is None:
        try:
            target = target_layout(codist, S.shape, what)
        except ValueError as exc:
            error = str(exc)
    if not noCommunication and here()[1] > 1:
        infos = allgather_objects((tuple(S.shape), str(S.dtype), _checksum(S), error_entry(error), target), what)
        raise_combined([x[3] for x in infos], what)
        if len({x[:3] for x in infos}) > 1:
            detail = ", ".join(f"lab {k + 1}: {x[0]} {x[1]} nnz {x[2][0]}" for k, x in enumerate(infos))
            raise ValueError(f"{what}: S must be the same matrix on every lab (replicated); got {detail}")
        check_same_codist([x[4] for x in infos], what)
    elif error:
        raise ValueError(error)
    if target is None:  # only with an error, raised above on every lab
        raise ValueError(f"{what}: {error}")
    lo, hi = _local_range(target)
    local = sp.csr_array(S)[lo:hi] if target.Dimension == 1 else sp.csc_array(S)[:, lo:hi]
    return _wrap(cls, local, target)


def from_local(cls: Any, L: Any, codist: Any = None) -> Any:
    """``codistributed.build(L, codist)`` with a scipy.sparse local part on every lab:
    sizes checked across labs (one collective), the global size inferred when
    ``codist`` has none."""
    what = "codistributed.build"
    lab, n = here()
    error = _check_input(L, what) or layout_error(codist, what)
    infos = allgather_objects((tuple(L.shape), str(L.dtype), error_entry(error), codist), what)
    raise_combined([x[2] for x in infos], what)
    check_same_codist([x[3] for x in infos], what)
    c = as_1d(codist, what) if codist is not None else codistributor1d(2)
    dim = c.Dimension or 2
    shapes = [x[0] for x in infos]
    if len({x[1] for x in infos}) > 1:
        raise ValueError(f"{what}: the local parts must have one dtype; got "
                         + ", ".join(f"lab {k + 1}: {x[1]}" for k, x in enumerate(infos)))
    other = {s[2 - dim] for s in shapes}
    gsize = c.GlobalSize
    if gsize is None:
        if len(other) > 1:
            raise ValueError(f"{what}: the local parts must agree in their {'columns' if dim == 1 else 'rows'}; "
                             f"got {shapes}")
        along = [s[dim - 1] for s in shapes]
        gsize = (sum(along), other.pop()) if dim == 1 else (other.pop(), sum(along))
        c = codistributor1d(dim, along, gsize)
    target = complete_1d(codistributor1d(dim, c.Partition, gsize), tuple(gsize), n)
    bad = [(k, shapes[k - 1], target.localShape(k, n)) for k in range(1, n + 1)
           if tuple(shapes[k - 1]) != tuple(target.localShape(k, n))]
    if bad:
        raise ValueError(f"{what}: the local part sizes do not match {target!r}: "
                         + "; ".join(f"lab {k} has {g}, expected {w}" for k, g, w in bad[:6]))
    return _wrap(cls, L, target)


def speye(cls: Any, m: int, n: int | None = None, codist: Any = None, dtype: Any = float) -> Any:
    """``speye(m, n)``: the sparse identity (ones on the main diagonal)."""
    n = m if n is None else n
    m, n = _check_size(m, n, "speye")
    target = target_layout(codist, (m, n), "speye")
    lo, hi = _local_range(target)
    k = np.arange(lo, min(hi, m if target.Dimension == 1 else n, n if target.Dimension == 1 else m))
    ones = np.ones(k.size, dtype=dtype)
    return from_triplets(cls, k, k, ones, m, n, target)


def _random(cls: Any, m: int, n: int, density: float, codist: Any, seed: Any, draw: str, what: str) -> Any:
    m, n = _check_size(m, n, what)
    if not 0 <= density <= 1:
        raise ValueError(f"{what}: density must be between 0 and 1, got {density}")
    target = target_layout(codist, (m, n), what)
    lab, _ = here()
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(lab - 1,)))
    shape = target.localShape(lab, here()[1])
    local = sp.random_array(shape, density=density, format=local_format(target), rng=rng,
                            data_sampler=getattr(rng, draw))
    return _wrap(cls, local, target)


def sprand(cls: Any, m: int, n: int, density: float, codist: Any = None, seed: Any = None) -> Any:
    """``sprand(m, n, density)``: uniform [0, 1) values at random positions, each lab
    drawing its own part (``seed=``: lab k uses ``SeedSequence(seed, spawn_key=(k-1,))``)."""
    return _random(cls, m, n, density, codist, seed, "random", "sprand")


def sprandn(cls: Any, m: int, n: int, density: float, codist: Any = None, seed: Any = None) -> Any:
    """``sprandn(m, n, density)``: standard normal values at random positions."""
    return _random(cls, m, n, density, codist, seed, "standard_normal", "sprandn")


def spdiags(cls: Any, B: Any, d: Any, m: int, n: int, codist: Any = None) -> Any:
    """MATLAB's ``spdiags(B, d, m, n)``: column k of B on diagonal ``d[k]`` (for m >= n
    B's row is the column index, else the row index, as MATLAB). B and d replicated."""
    what = "spdiags"
    m, n = _check_size(m, n, what)
    B = np.asarray(B)
    d = np.atleast_1d(np.asarray(d, dtype=np.int64))
    if B.ndim == 1:
        B = B[:, None]
    if B.ndim != 2 or B.shape[1] != d.size:
        raise ValueError(f"{what}: B must have one column per diagonal: B is {B.shape}, d has {d.size}")
    target = target_layout(codist, (m, n), what)
    lo, hi = _local_range(target)
    rows, cols, vals = [], [], []
    for k, dk in enumerate(d):  # one vectorized step per diagonal, not per entry
        t = np.arange(min(B.shape[0], n if m >= n else m))
        i, j = (t - dk, t) if m >= n else (t, t + dk)
        major = i if target.Dimension == 1 else j
        keep = (i >= 0) & (i < m) & (j >= 0) & (j < n) & (major >= lo) & (major < hi)
        rows.append(i[keep])
        cols.append(j[keep])
        vals.append(B[t[keep], k])
    cat = (lambda xs: np.concatenate(xs)) if d.size else (lambda xs: np.empty(0))
    return from_triplets(cls, cat(rows).astype(np.int64), cat(cols).astype(np.int64),
                         cat(vals).astype(B.dtype), m, n, target)


def kron(cls: Any, A: Any, B: Any, codist: Any = None) -> Any:
    """``kron(A, B)`` of two replicated (small) matrices, sparse or dense, as a sparse
    codistributed matrix: each lab forms only its own rows (columns)."""
    what = "kron"
    A, B = sp.csr_array(A), sp.csr_array(B)
    (ma, na), (mb, nb) = A.shape, B.shape
    shape = (ma * mb, na * nb)
    target = target_layout(codist, shape, what)
    lo, hi = _local_range(target)
    if target.Dimension == 1:
        a0, a1 = lo // max(mb, 1), -(-hi // max(mb, 1))
        K = sp.kron(A[a0:a1], B, format="csr")[lo - a0 * mb:hi - a0 * mb]
    else:
        a0, a1 = lo // max(nb, 1), -(-hi // max(nb, 1))
        K = sp.kron(sp.csc_array(A)[:, a0:a1], B, format="csc")[:, lo - a0 * nb:hi - a0 * nb]
    return _wrap(cls, K, target)
