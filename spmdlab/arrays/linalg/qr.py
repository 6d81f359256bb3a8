"""QR factorization and least squares of codistributed matrices.

Two distributed algorithms, chosen by the input's layout and shape:

- **TSQR** (``tsqr.py``; Demmel, Grigori, Hoemmen, Langou, SIAM J. Sci. Comput. 2012)
  for a *tall-skinny* matrix in a 1-D layout: m >= numlabs * n. A layout by columns is
  first redistributed by rows. Results: ``Q`` by rows with A's row partition
  (``codistributor1d(1)``); ``R`` (small) in the default ``codistributor1d`` of its shape,
  except mode 'complete', where the m x n ``R`` is by rows like ``Q``.
- **Householder QR on the 2dbc grid** (``householder.py``; ScaLAPACK PDGEQRF) for every
  other input: a 2dbc matrix keeps its grid and block size, a 1-D one is redistributed
  to the default grid (``grid.to_2dbc``). ``Q`` and ``R`` come back in that 2dbc layout.

``np.linalg.qr(A, mode)`` follows numpy ('reduced', 'complete', 'r', 'raw'; 'raw' always
uses the 2dbc factorization, whose Householder vectors are LAPACK's: ``h`` is the
factored matrix transposed, ``tau`` a replicated numpy array). ``qr(A)`` follows MATLAB:
``Q, R = qr(A)`` full, ``qr(A, 0)`` / ``qr(A, "econ")`` economy, ``nargout=1`` gives R.

``lstsq(A, B, rcond=None)`` is ``np.linalg.lstsq`` (``(x, residuals, rank, s)``,
minimum-norm solution) for tall-skinny A (TSQR, then the SVD of the small R) and for
short-wide A (n >= numlabs * m: TSQR of A^H). ``lstsq(A, B, full_output=False)`` gives
only x and works for every non-square A with m >= n through the 2dbc Householder QR
(``Q^H B``, then back substitution with R) and with m < n through the Householder QR of
A^H (the minimum-norm solution); a rank-deficient A is an error on that path, since
there is no column pivoting. That is what ``mldivide`` uses for non-square A.
x comes back by rows for TSQR inputs, in A's 2dbc grid (n x nrhs) otherwise; a 1-D b
gives a 1-D x in the default 1-D layout.
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Tuple

import numpy as np

from ...layouts.codistributor import codistributor1d, codistributor2dbc
from ..array import codistributed, getCodistributor, getLocalPart
from ..base import here, is_codist
from ..collectives import allgatherv
from ..layout import labs_of
from ..registry import implements
from ..transfer import redistribute
from .factor import trsm
from .grid import ProcessGrid, numroc, to_2dbc
from .householder import householder_qr, identity_like
from .qrbase import build, combine_sum, eps_of, linalg_dtype, local_rows_of, real_dtype, replicated_to_codist, rows_of
from .tsqr import local_q_complete, tsqr, tsqr_q, tsqr_qh

__all__ = ["qr", "np_qr", "lstsq", "tall_skinny", "prepare", "tsqr_factor", "QRResult"]



def QRResult(Q: Any, R: Any) -> tuple:
    """``(Q, R)`` as a plain tuple: a client ``distributed`` call splits plain tuples
    into distributed results (numpy's ``QRResult`` namedtuple would come back whole)."""
    return (Q, R)


# --------------------------------------------------------------------------- input rules
def prepare(A: Any, what: str) -> codistributed:
    """``A`` as a 2-D codistributed matrix in the dtype LAPACK works in (numpy's rules)."""
    if not is_codist(A):
        raise TypeError(f"{what}: expected a codistributed matrix, got {type(A).__name__}")
    labs_of(A, what)
    if A.ndim < 2:
        raise np.linalg.LinAlgError(f"{what}: {A.ndim}-dimensional array given. Array must be "
                                    "at least two-dimensional")
    if A.ndim > 2:
        raise NotImplementedError(f"{what}: stacks of matrices (a {A.ndim}-D codistributed array) "
                                  "are not supported; use a 2-D matrix")
    dt = linalg_dtype(A.dtype, what)
    return A if A.dtype == dt else A.astype(dt)


def tall_skinny(shape: Tuple[int, int], nlabs: int) -> bool:
    """TSQR's case: the stacked n x n triangles of all labs are no bigger than the matrix."""
    m, n = shape
    return m >= nlabs * n


def _uses_tsqr(A: codistributed) -> bool:
    m, n = A.shape
    return isinstance(getCodistributor(A), codistributor1d) and tall_skinny((m, n), here()[1])


def tsqr_factor(A: codistributed, what: str) -> Tuple[Any, codistributed]:
    """TSQR of ``A`` laid out by rows (redistributed if needed): ``(factor, A_by_rows)``."""
    Ar = rows_of(A, what)
    parts = getCodistributor(Ar).Partition
    return tsqr(getLocalPart(Ar), parts, A.shape[1], what), Ar


def _rows_codist(parts: Any, shape: Tuple[int, ...]) -> codistributor1d:
    return codistributor1d(1, list(parts), tuple(shape))


def _triu_local(local: np.ndarray, g: ProcessGrid, nrows: int) -> np.ndarray:
    """The upper triangle of the first ``nrows`` global rows of a 2dbc local part."""
    lr = numroc(nrows, g.nb, g.myrow, g.nprow)
    R = np.array(local[:lr], copy=True)
    rows = g.global_rows()[:lr]
    cols = g.global_cols()
    R[rows[:, None] > cols[None, :]] = 0
    return R


# --------------------------------------------------------------------------- QR
def _qr(A: Any, mode: str, what: str) -> Any:
    if mode not in ("reduced", "complete", "r", "raw", "r-complete"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    A = prepare(A, what)
    lab, n_labs = here()
    m, n = A.shape
    k = min(m, n)
    if mode != "raw" and _uses_tsqr(A):
        f, Ar = tsqr_factor(A, what)
        parts = getCodistributor(Ar).Partition
        if mode == "r":
            return replicated_to_codist(f.R)
        if mode == "reduced":
            return QRResult(build(tsqr_q(f), _rows_codist(parts, (m, k))), replicated_to_codist(f.R))
        lo = int(sum(parts[:lab - 1]))
        Rl = np.zeros((parts[lab - 1], n), dtype=f.R.dtype)
        top = f.R[lo:lo + parts[lab - 1]]
        Rl[:top.shape[0]] = top
        Rc = build(Rl, _rows_codist(parts, (m, n)))
        if mode == "r-complete":
            return Rc
        return QRResult(build(local_q_complete(f, lab), _rows_codist(parts, (m, m))), Rc)
    A2 = to_2dbc(A, what)
    c = getCodistributor(A2)
    h = householder_qr(A2, what)
    g = h.grid
    if mode == "raw":
        nprow, npcol = c.LabGrid
        flip = "col" if c.Orientation == "row" else "row"
        H = build(h.local.T, codistributor2dbc([npcol, nprow], c.BlockSize, flip, (n, m)))
        return H, h.tau.copy()
    nr = k if mode in ("reduced", "r") else m
    R = build(_triu_local(h.local, g, nr), codistributor2dbc(c.LabGrid, c.BlockSize, c.Orientation, (nr, n)))
    if mode in ("r", "r-complete"):
        return R
    ncols = k if mode == "reduced" else m
    E, cq = identity_like(g, m, ncols, h.local.dtype)
    h.apply(E, conj=False, col_from=g.cols_before)
    return QRResult(build(E, cq), R)


@implements(np.linalg.qr)
def np_qr(a: Any, mode: str = "reduced") -> Any:
    """``np.linalg.qr`` for a codistributed matrix (see the module docstring for layouts)."""
    return _qr(a, mode, "numpy.linalg.qr")


def qr(A: Any, *args: Any, nargout: int = 2) -> Any:
    """MATLAB's ``qr``: ``Q, R = qr(A)`` (full: Q m x m, R m x n), ``qr(A, 0)`` or
    ``qr(A, "econ")`` (economy: Q m x min(m, n)), ``qr(A, nargout=1)`` (R only, upper
    triangular). Column pivoting (``"vector"``, ``"matrix"``, three outputs) is not
    supported. Algorithms and result layouts: the module docstring."""
    what = "qr"
    econ = False
    for opt in args:
        if isinstance(opt, str) and opt.lower() == "econ" or (not isinstance(opt, str) and opt == 0):
            econ = True
        elif isinstance(opt, str) and opt.lower() in ("vector", "matrix"):
            raise NotImplementedError(f"{what}: column pivoting (option {opt!r}, [Q,R,P] = qr(A)) is "
                                      "not supported for distributed matrices")
        else:
            raise ValueError(f"{what}: unknown option {opt!r}: use 0 or \"econ\"")
    if nargout not in (1, 2):
        raise NotImplementedError(f"{what}: nargout={nargout}: [Q,R,P] = qr(A) (column pivoting) is "
                                  "not supported; use nargout=1 (R) or 2 (Q, R)")
    if not is_codist(A):
        X = np.asarray(A)
        res = np.linalg.qr(X, mode="reduced" if econ else "complete")
        return res.R if nargout == 1 else tuple(res)
    if nargout == 1:
        return _qr(A, "r" if econ else "r-complete", what)
    return tuple(_qr(A, "reduced" if econ else "complete", what))


# --------------------------------------------------------------------------- least squares
def _rhs(B: Any, m: int, what: str) -> Tuple[Any, bool]:
    """``(B, was_vector)`` after the shape checks of ``np.linalg.lstsq``."""
    if is_codist(B):
        labs_of(B, what)
    nd = B.ndim if is_codist(B) else np.ndim(B)
    shape = tuple(B.shape) if is_codist(B) else np.shape(B)
    if nd not in (1, 2):
        raise np.linalg.LinAlgError(f"{what}: b must be 1- or 2-dimensional, got shape {shape}")
    if shape[0] != m:
        raise np.linalg.LinAlgError(f"{what}: Incompatible dimensions: A has {m} rows, b has {shape[0]}")
    return B, nd == 1


def _rhs_rows(B: Any, parts: Any, dt: np.dtype, what: str) -> np.ndarray:
    """This lab's rows of B as a 2-D array of dtype ``dt``."""
    Bi = local_rows_of(B, list(parts), what)
    Bi = Bi.reshape(Bi.shape[0], 1) if Bi.ndim != 2 else Bi
    return np.asarray(Bi, dtype=dt)


def _rcond(rcond: Optional[float], m: int, n: int, dt: np.dtype) -> float:
    if rcond is None:
        return eps_of(dt) * max(m, n)
    return float(rcond) if rcond >= 0 else eps_of(dt)


def _x_result(x: np.ndarray, vector: bool) -> codistributed:
    """A replicated small solution as a codistributed array in the default 1-D layout."""
    return replicated_to_codist(x[:, 0].copy() if vector else x)


def _out_dtype(A: codistributed, B: Any) -> np.dtype:
    bt = B.dtype if is_codist(B) else np.asarray(B).dtype
    return np.result_type(linalg_dtype(A.dtype, "lstsq"), linalg_dtype(bt, "lstsq"))


def _ls_tall_tsqr(A: codistributed, B: Any, vector: bool, rcond: Optional[float], full: bool,
                  what: str) -> Any:
    m, n = A.shape
    f, Ar = tsqr_factor(A, what)
    parts = getCodistributor(Ar).Partition
    dt = f.R.dtype
    c, res = tsqr_qh(f, _rhs_rows(B, parts, dt, what), what)
    U, s, Vh = np.linalg.svd(f.R, full_matrices=False)
    tol = _rcond(rcond, m, n, dt) * (s[0] if s.size else 0)
    rank = int(np.count_nonzero(s > tol))
    x = Vh[:rank].conj().T @ ((U[:, :rank].conj().T @ c) / s[:rank, None])
    if not full and rank < min(m, n):
        warnings.warn(f"Rank deficient, rank = {rank}, tol = {tol:.6e}.", RuntimeWarning, stacklevel=3)
    xs = _x_result(x.astype(dt, copy=False), vector)
    if not full:
        return xs
    resid = res.astype(s.dtype) if rank == n and m > n else np.empty(0, dtype=s.dtype)
    return xs, resid, np.int32(rank), s


def _ls_wide_tsqr(A: codistributed, B: Any, vector: bool, rcond: Optional[float], full: bool,
                  what: str) -> Any:
    """Short-wide A (m x n, n >= numlabs m): A^H = Q R by TSQR, x = Q pinv(R^H) b."""
    m, n = A.shape
    lab, _ = here()
    Ac = A if (isinstance(getCodistributor(A), codistributor1d) and getCodistributor(A).Dimension == 2) \
        else redistribute(A, codistributor1d(2, None, (m, n)))
    parts = getCodistributor(Ac).Partition
    f = tsqr(np.ascontiguousarray(getLocalPart(Ac).conj().T), parts, m, what)
    dt = f.R.dtype
    Bf = B if not is_codist(B) else _gather_small(B, what)
    Bf = np.asarray(Bf, dtype=dt).reshape(m, -1)
    U, s, Vh = np.linalg.svd(f.R, full_matrices=False)
    tol = _rcond(rcond, m, n, dt) * (s[0] if s.size else 0)
    rank = int(np.count_nonzero(s > tol))
    # R^H = Vh^H s U^H, so pinv(R^H) b = U[:, :r] s^-1 Vh[:r] b
    y = U[:, :rank] @ ((Vh[:rank] @ Bf) / s[:rank, None])
    if not full and rank < m:
        warnings.warn(f"Rank deficient, rank = {rank}, tol = {tol:.6e}.", RuntimeWarning, stacklevel=3)
    xl = tsqr_q(f, y.astype(dt, copy=False))
    nrhs = xl.shape[1]
    if vector:
        xs = build(xl[:, 0].copy(), codistributor1d(1, list(parts), (n,)))
    else:
        xs = build(xl, _rows_codist(parts, (n, nrhs)))
    if not full:
        return xs
    return xs, np.empty(0, dtype=s.dtype), np.int32(rank), s


def _gather_small(B: codistributed, what: str) -> np.ndarray:
    """A small codistributed B (m x nrhs with m small) on every lab, by rows."""
    shape = tuple(B.shape)
    Br = rows_of(B, what)
    parts = getCodistributor(Br).Partition
    L = np.ascontiguousarray(getLocalPart(Br)).reshape(parts[here()[0] - 1], *shape[1:])
    return allgatherv(L, parts, what).reshape(shape)


def _ls_tall_2dbc(A: codistributed, B: Any, vector: bool, what: str) -> codistributed:
    """m >= n, any size: Householder QR on the grid, Q^H b, back substitution."""
    m, n = A.shape
    A2 = to_2dbc(A, what)
    c = getCodistributor(A2)
    h = householder_qr(A2, what)
    g = h.grid
    dt = h.local.dtype
    _rank_check(h, what)
    cb = codistributor2dbc(c.LabGrid, c.BlockSize, c.Orientation, (m, 1 if vector else B.shape[1]))
    Y = _rhs_2dbc(B, cb, vector, dt, what)
    h.apply(Y, conj=True)
    ln = numroc(n, g.nb, g.myrow, g.nprow)
    X = np.ascontiguousarray(Y[:ln])
    cx = codistributor2dbc(c.LabGrid, c.BlockSize, c.Orientation, (n, 1 if vector else B.shape[1]))
    trsm(h.local, g, X, ProcessGrid(cx), False, False, what)  # R: the upper triangle, n x n
    xc = build(X, cx)
    if vector:
        xr = redistribute(xc, codistributor1d(1, None, (n, 1)))
        return build(getLocalPart(xr)[:, 0].copy(), codistributor1d(1, getCodistributor(xr).Partition, (n,)))
    return xc


def _rank_check(h: Any, what: str) -> None:
    """LinAlgError on every lab when |R[i,i]| says the factored matrix is rank deficient
    (the diagonal is combined over the labs, so every lab decides alike)."""
    g = h.grid
    k = h.k
    d = np.zeros(k, dtype=np.float64)
    rows, cols = g.global_rows(), g.global_cols()
    mine = np.intersect1d(rows[rows < k], cols)
    if mine.size:
        d[mine] = np.abs(h.local[np.searchsorted(rows, mine), np.searchsorted(cols, mine)])
    d = combine_sum(d, what)
    tol = max(g.m, g.n) * eps_of(h.local.dtype) * (d.max() if d.size else 0.0)
    rank = int(np.count_nonzero(d > tol))
    if rank < k or not np.all(np.isfinite(d)):
        raise np.linalg.LinAlgError(
            f"{what}: Rank deficient, rank = {rank}, tol = {tol:.6e} (|R[i,i]| of the Householder QR "
            f"on the 2dbc grid; without column pivoting there is no basic solution). The "
            f"tall-skinny case (m >= numlabs*n, or n >= numlabs*m) gives the minimum-norm solution")


def _rhs_2dbc(B: Any, cb: codistributor2dbc, vector: bool, dt: np.dtype, what: str) -> np.ndarray:
    """A copy of this lab's part of B (as m x nrhs) in the 2dbc layout ``cb``."""
    if is_codist(B):
        Bc = B.astype(np.result_type(B.dtype, dt), copy=False)
        if vector:
            Bc = _vector_to_column(Bc, what)
        return np.array(getLocalPart(redistribute(Bc, cb)), dtype=dt, copy=True)
    Bn = np.asarray(B, dtype=dt).reshape(cb.GlobalSize)
    lab, p = here()
    sel = cb.localSelection(lab, p)
    return np.array(Bn[np.ix_(*[np.arange(s.start, s.stop) if isinstance(s, slice) else s for s in sel])],
                    dtype=dt, copy=True)


def _ls_wide_2dbc(A: codistributed, B: Any, vector: bool, what: str) -> codistributed:
    """m < n, any size: the minimum-norm solution through the Householder QR of A^H on the
    transposed grid, ``A^H = Q R``: solve ``R^H y = b`` (12a's PDTRSM, lower), ``x = Q [y; 0]``.
    A^H and R^H are local transposes (a 2dbc layout transposes to the transposed grid),
    so only b and y move."""
    m, n = A.shape
    A2 = to_2dbc(A, what)
    c = getCodistributor(A2)
    nprow, npcol = c.LabGrid
    flip = "col" if c.Orientation == "row" else "row"
    ct = codistributor2dbc([npcol, nprow], c.BlockSize, flip, (n, m))
    AH = build(getLocalPart(A2).conj().T, ct)
    h = householder_qr(AH, what)
    _rank_check(h, what)
    g = h.grid
    dt = h.local.dtype
    nrhs = 1 if vector else B.shape[1]
    # R^H (m x m, lower) in A's grid: the conjugate transpose of R's local part
    Rl = _triu_local(h.local, g, m)[:, :numroc(m, g.nb, g.mycol, g.npcol)]
    cl = codistributor2dbc(c.LabGrid, c.BlockSize, c.Orientation, (m, m))
    L = np.ascontiguousarray(Rl.conj().T)
    cy = codistributor2dbc(c.LabGrid, c.BlockSize, c.Orientation, (m, nrhs))
    Y = _rhs_2dbc(B, cy, vector, dt, what)
    trsm(L, ProcessGrid(cl).connect(what), Y, ProcessGrid(cy), True, False, what)
    # y into the first m rows of an n x nrhs matrix on the transposed grid, then x = Q [y; 0]
    cy2 = codistributor2dbc([npcol, nprow], c.BlockSize, flip, (m, nrhs))
    y2 = getLocalPart(redistribute(build(Y, cy), cy2))
    X = np.zeros((g.mloc, y2.shape[1]), dtype=dt)  # my columns of the n x nrhs matrix
    X[:y2.shape[0]] = y2
    h.apply(X, conj=False)
    xc = build(X, codistributor2dbc([npcol, nprow], c.BlockSize, flip, (n, nrhs)))
    if vector:
        xr = redistribute(xc, codistributor1d(1, None, (n, 1)))
        return build(getLocalPart(xr)[:, 0].copy(), codistributor1d(1, getCodistributor(xr).Partition, (n,)))
    return xc


def _vector_to_column(b: codistributed, what: str) -> codistributed:
    br = rows_of(b, what)
    p = getCodistributor(br).Partition
    return build(getLocalPart(br).reshape(-1, 1), codistributor1d(1, p, (b.shape[0], 1)))


def _ls_empty(B: Any, shape: Tuple[int, int], vector: bool, dt: np.dtype, full: bool, what: str) -> Any:
    """A with no rows or no columns: x = 0 (n x nrhs); numpy's residuals ``|b|^2`` per
    column when m > n = 0, no singular values, rank 0."""
    m, n = shape
    x = replicated_to_codist(np.zeros((n,) if vector else (n, B.shape[1]), dtype=dt))
    if not full:
        return x
    rdt = real_dtype(dt)
    if m > 0:
        Bf = _gather_small(B, what) if is_codist(B) else np.asarray(B)
        resid = (np.abs(Bf.reshape(m, -1)) ** 2).sum(axis=0).astype(rdt)
    else:
        resid = np.empty(0, dtype=rdt)
    return x, resid, np.int32(0), np.empty(0, dtype=rdt)


@implements(np.linalg.lstsq)
def lstsq(A: Any, B: Any, rcond: Optional[float] = None, *, full_output: bool = True) -> Any:
    """Least squares ``min ||A x - B||`` (numpy's ``np.linalg.lstsq``; see the module
    docstring for the algorithms, the result layouts and ``full_output=False``)."""
    what = "numpy.linalg.lstsq" if full_output else "lstsq"
    A = prepare(A, what)
    m, n = A.shape
    B, vector = _rhs(B, m, what)
    _, p = here()
    out_dt = _out_dtype(A, B)
    A = A if A.dtype == out_dt else A.astype(out_dt)
    if m == 0 or n == 0:
        return _ls_empty(B, (m, n), vector, out_dt, full_output, what)
    if m >= n and tall_skinny((m, n), p):
        return _ls_tall_tsqr(A, B, vector, rcond, full_output, what)
    if m < n and tall_skinny((n, m), p):
        return _ls_wide_tsqr(A, B, vector, rcond, full_output, what)
    if full_output:
        raise NotImplementedError(
            f"{what}: for a {m}x{n} matrix on {p} labs; np.linalg.lstsq returns the singular "
            "values, computed here only in the tall-skinny case (m >= numlabs*n or n >= numlabs*m, "
            "TSQR). For the solution alone use mldivide(A, b) or lstsq(A, b, full_output=False)")
    if m >= n:
        return _ls_tall_2dbc(A, B, vector, what)
    return _ls_wide_2dbc(A, B, vector, what)
