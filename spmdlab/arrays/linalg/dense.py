"""Solve, LU, Cholesky, inverse and determinant of codistributed matrices.

MATLAB's names (``mldivide``, ``mrdivide``, ``lu``, ``chol``, ``inv``, ``det``) follow
MATLAB's conventions; the numpy functions (``np.linalg.solve``, ``cholesky``, ``inv``,
``det``, ``slogdet``) follow numpy's, through ``__array_function__``. The kernels are
in ``factor.py`` (ScaLAPACK PDGETRF / PDPOTRF / PDTRSM on the 2dbc grid); nothing is
gathered. Every function also takes a client ``distributed`` (it then runs on the
labs) or a replicated numpy array (split over the labs first).

Result layouts: matrices come back 2dbc on the lab grid and block size the
factorization ran on (the input's if it was 2dbc, else MATLAB's default grid with
block size ``DEFAULT_BLOCKSIZE``); a 1-D right-hand side gives a 1-D codistributed
solution; ``lu(A, 'vector')``'s permutation, ``det`` and ``slogdet`` are replicated.

Bad input is reported on every lab at the same step: a singular matrix raises
``np.linalg.LinAlgError('Singular matrix')`` under numpy's names and warns MATLAB's
"Matrix is singular to working precision." under MATLAB's (the result then holds
Inf/NaN, as in MATLAB); ``chol`` names the failing leading minor.
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Tuple

import numpy as np

from ...layouts.codistributor import codistributor2dbc
from ..array import codistributed, getLocalPart
from ..registry import implements
from ..transfer import redistribute
from .factor import getrf, move_rows, potrf, trsm
from .grid import ProcessGrid, grid_codist, to_2dbc
from .qr import lstsq
from .qrbase import ctrans

__all__ = ["mldivide", "mrdivide", "solve", "lu", "chol", "cholesky", "inv", "det", "slogdet",
           "solve_triangular", "SINGULAR_WARNING"]

SINGULAR_WARNING = "Matrix is singular to working precision."
_CLOSE_WARNING = ("Matrix is close to singular or badly scaled. Results may be inaccurate. "
                  "RCOND = {:e}.")


_LAPACK_TYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


# --------------------------------------------------------------------------- plumbing
def _dtype(what: str, *xs: Any) -> np.dtype:
    """numpy.linalg's result type: integers and bools become float64; float16 and
    long double are refused, as numpy refuses them."""
    dts = [np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype for x in xs]
    dts = [d.newbyteorder("=") if d.kind in "biufc" else d for d in dts]  # numpy takes any byte order
    for d in dts:
        if d.kind not in "biufc":
            raise TypeError(f"{what}: array type {d} is not supported (numbers only)")
        if d.kind in "fc" and d not in _LAPACK_TYPES:
            raise TypeError(f"{what}: array type {d} is unsupported in linalg "
                            "(use float32, float64, complex64 or complex128)")
    if any(d.kind in "biu" for d in dts):  # numpy.linalg: integers and bools make it double
        dts.append(np.dtype(np.float64))
    dt = np.result_type(*dts)
    if dt not in _LAPACK_TYPES:
        raise TypeError(f"{what}: array type {dt} is unsupported in linalg")
    return dt


def _shape(x: Any) -> Tuple[int, ...]:
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _square(A: Any, what: str, numpy_name: bool) -> int:
    s = _shape(A)
    if len(s) > 2 and numpy_name:  # numpy takes a stack and works matrix by matrix
        raise NotImplementedError(f"{what}: stacks of matrices (a {len(s)}-D codistributed array) are "
                                  "not supported; use each 2-D matrix D[i]")
    if len(s) != 2:
        raise np.linalg.LinAlgError(f"{what}: {len(s)}-dimensional array given. Array must be "
                                    "two-dimensional") if numpy_name else \
            ValueError(f"{what}: the matrix must be 2-D, got shape {s}")
    if s[0] != s[1]:
        if numpy_name:
            raise np.linalg.LinAlgError(f"{what}: Last 2 dimensions of the array must be square "
                                        f"(got {s[0]}x{s[1]})")
        raise ValueError(f"{what}: the matrix must be square, got {s[0]}x{s[1]}")
    return s[0]


class _Work:
    """A 2dbc copy of a matrix to factor: ``D`` the codistributed input as 2dbc,
    ``a`` a C-order local copy in the work dtype, ``G`` its process grid."""

    def __init__(self, A: Any, dt: np.dtype, what: str, like: Optional[Any] = None) -> None:
        if like is not None:
            c = grid_codist(like)
            D = to_2dbc(A, what, c.BlockSize, c.LabGrid, c.Orientation)
        else:
            D = to_2dbc(A, what)
        self.D = D
        self.codist = grid_codist(D)
        self.a = np.array(_local(D), dtype=dt, order="C", copy=True)
        self.G = ProcessGrid(self.codist)

    def result(self, local: Optional[np.ndarray] = None, shape: Optional[Tuple[int, int]] = None):
        c = self.codist if shape is None else codistributor2dbc(
            self.codist.LabGrid, self.codist.BlockSize, self.codist.Orientation, shape)
        return codistributed.build(self.a if local is None else local, c)


def _local(D: Any) -> np.ndarray:
    return getLocalPart(D)


def _strips(G: ProcessGrid, ncols: int):
    """Local column strips of at most one block: ``(c0, c1, global column indices)``."""
    gc = G.global_cols()[:ncols]
    for c0 in range(0, ncols, G.nb):
        c1 = min(ncols, c0 + G.nb)
        yield c0, c1, gc[c0:c1]


def _keep_triangle(a: np.ndarray, G: ProcessGrid, lower: bool, unit: bool = False,
                   ncols: Optional[int] = None) -> np.ndarray:
    """Zero ``a``'s entries outside the lower (upper) triangle; ``unit`` also sets the
    diagonal to 1. Row by row: a local row's columns outside the triangle are one
    contiguous run (the local columns are in increasing global order), so each row is
    one slice assignment (no masks of the local part's size)."""
    nc = a.shape[1] if ncols is None else ncols
    gr = G.global_rows()[:a.shape[0]]
    gc = G.global_cols()[:nc]
    if gr.size == 0 or gc.size == 0:
        return a
    cut = np.searchsorted(gc, gr, side="right" if lower else "left")
    for i, k in enumerate(cut.tolist()):
        if lower:
            a[i, k:nc] = 0
        else:
            a[i, :k] = 0
    if unit:
        pos = np.searchsorted(gc, gr)
        hit = np.flatnonzero((pos < gc.size) & (gc[np.minimum(pos, gc.size - 1)] == gr))
        a[hit, pos[hit]] = 1
    return a


def _any_all_labs(G: ProcessGrid, flags: np.ndarray, what: str) -> np.ndarray:
    """Element-wise OR of boolean flags over the block's labs."""
    G.connect(what)
    return G.allreduce(np.asarray(flags, dtype=np.int32), "max", what).astype(bool)


def _singular(numpy_name: bool, what: str) -> None:
    """A zero pivot, known on every lab at the same step."""
    if numpy_name:
        raise np.linalg.LinAlgError("Singular matrix")
    warnings.warn(SINGULAR_WARNING, RuntimeWarning, stacklevel=3)


def _check_conditioning(diag: np.ndarray, numpy_name: bool) -> None:
    """MATLAB warns when the reciprocal condition is below eps; this estimate is the
    ratio of the smallest to the largest pivot (cheap, every lab has the pivots), not
    LAPACK's xGECON."""
    if numpy_name or diag.size == 0:
        return
    mags = np.abs(diag)
    top = mags.max()
    r = mags.min() / top if top else 0.0
    if r < np.finfo(diag.dtype).eps:
        warnings.warn(_CLOSE_WARNING.format(r), RuntimeWarning, stacklevel=3)


# --------------------------------------------------------------------------- right-hand sides
def _rhs(B: Any, n: int, work: _Work, dt: np.dtype, what: str) -> Tuple[Any, bool]:
    """B as a C-order local copy of an ``n x r`` 2dbc matrix on the factor's grid;
    returns ``(_Work of B, was_vector)``."""
    s = _shape(B)
    vec = len(s) == 1
    if len(s) not in (1, 2):
        raise ValueError(f"{what}: the right-hand side must be a vector or a matrix, got shape {s}")
    if s[0] != n:
        raise ValueError(f"{what}: size mismatch: the matrix has {n} rows but the right-hand "
                         f"side has {s[0]} (shape {s})")
    if vec:
        B = B.reshape(n, 1) if isinstance(B, codistributed) else np.asarray(B).reshape(n, 1)
    return _Work(B, dt, what, like=work.D), vec


def _out(wb: _Work, vec: bool):
    X = wb.result()
    return X.reshape(X.shape[0]) if vec else X


# --------------------------------------------------------------------------- LU
def _lu_factor(A: Any, what: str, numpy_name: bool, dt: Optional[np.dtype] = None):
    n = _square(A, what, numpy_name)
    dt = dt or _dtype(what, A)
    w = _Work(A, dt, what)
    perm, diag, info = getrf(w.a, w.G, what)
    return n, w, perm, diag, info


def _lu_solve(w: _Work, perm: np.ndarray, wb: _Work, what: str) -> None:
    moved = np.flatnonzero(perm != np.arange(perm.size))
    move_rows(wb.a, wb.G, moved, perm[moved], what)
    trsm(w.a, w.G, wb.a, wb.G, lower=True, unit=True, what=what)
    trsm(w.a, w.G, wb.a, wb.G, lower=False, unit=False, what=what)


def _triangular_kind(w: _Work, what: str) -> Tuple[bool, bool]:
    """(is lower triangular, is upper triangular), the same on every lab."""
    G, a = w.G, w.a
    gr = G.global_rows()
    below = above = False
    for c0, c1, gc in _strips(G, a.shape[1]):
        sub = a[:, c0:c1]
        nz = sub != 0
        below = below or bool(np.any(nz & (gr[:, None] > gc[None, :])))
        above = above or bool(np.any(nz & (gr[:, None] < gc[None, :])))
    b, ab = _any_all_labs(G, np.array([below, above]), what)
    return not ab, not b


def _hermitian_posdiag(w: _Work, what: str) -> bool:
    """Hermitian with a real positive diagonal (MATLAB's test before trying chol)."""
    G, a = w.G, w.a
    gr = G.global_rows()
    bad = False
    for c0, c1, gc in _strips(G, a.shape[1]):
        i, j = np.nonzero(gr[:, None] == gc[None, :])
        d = a[i, c0 + j]
        bad = bad or bool(np.any((d.real <= 0) | (d.imag != 0) | np.isnan(d.real)))
    if _any_all_labs(G, np.array([bad]), what)[0]:
        return False
    AH = w.D.T.conj() if np.iscomplexobj(a) else w.D.T
    AH = redistribute(AH, w.codist)
    diff = not np.array_equal(_local(AH).astype(a.dtype, copy=False), a)
    return not _any_all_labs(G, np.array([diff]), what)[0]


def _solve_square(A: Any, B: Any, what: str, numpy_name: bool):
    n = _square(A, what, numpy_name)
    dt = _dtype(what, A, B)
    w = _Work(A, dt, what)
    wb, vec = _rhs(B, n, w, dt, what)
    if not numpy_name:
        lower, upper = _triangular_kind(w, what)
        if lower or upper:  # substitution, as MATLAB does for a triangular matrix
            zero = _zero_diagonal(w, what)
            if zero:
                _singular(numpy_name, what)
            trsm(w.a, w.G, wb.a, wb.G, lower=lower, unit=False, what=what)
            return _out(wb, vec)
        if _hermitian_posdiag(w, what):
            chol_a = w.a.copy()
            if potrf(chol_a, w.G, what) == 0:
                _chol_solve(w, chol_a, wb, what)
                return _out(wb, vec)
    perm, diag, info = getrf(w.a, w.G, what)
    if info:
        _singular(numpy_name, what)
    else:
        _check_conditioning(diag, numpy_name)
    _lu_solve(w, perm, wb, what)
    return _out(wb, vec)


def _zero_diagonal(w: _Work, what: str) -> bool:
    G, a = w.G, w.a
    gr = G.global_rows()
    zero = False
    for c0, c1, gc in _strips(G, a.shape[1]):
        i, j = np.nonzero(gr[:, None] == gc[None, :])
        zero = zero or bool(np.any(a[i, c0 + j] == 0))
    return bool(_any_all_labs(G, np.array([zero]), what)[0])


def _chol_solve(w: _Work, L: np.ndarray, wb: _Work, what: str) -> None:
    """B := A^-1 B with A = L L^H (L lower in ``L``): L y = b, then L^H x = y, with
    L^H made by a transpose (lab to lab) onto the same grid."""
    _keep_triangle(L, w.G, lower=True)
    trsm(L, w.G, wb.a, wb.G, lower=True, unit=False, what=what)
    Ld = codistributed.build(L, w.codist)
    LH = redistribute(Ld.T.conj() if np.iscomplexobj(L) else Ld.T, w.codist)
    trsm(np.ascontiguousarray(_local(LH)), w.G, wb.a, wb.G, lower=False, unit=False, what=what)


def mldivide(A: Any, B: Any) -> Any:
    """MATLAB's ``A\\B``: the solution X of ``A X = B``.

    Square A: triangular → substitution (PDTRSM); Hermitian with a positive real
    diagonal → Cholesky (PDPOTRF), falling back to LU when it fails; otherwise LU
    with partial pivoting (PDGETRF). A singular A warns "Matrix is singular to
    working precision." Non-square A: least squares (``lstsq``, QR)."""
    s = _shape(A)
    if len(s) == 2 and s[0] != s[1]:
        return _least_squares(A, B, "mldivide")
    return _solve_square(A, B, "mldivide", numpy_name=False)


def mrdivide(B: Any, A: Any) -> Any:
    """MATLAB's ``B/A``: the solution X of ``X A = B``, computed as ``(A.' \\ B.').'``.
    A 1-D ``B`` is a row vector."""
    sb = _shape(B)
    if len(sb) == 1:
        return mldivide(A.T, B)
    X = mldivide(A.T, B.T)
    return X.T


def _least_squares(A: Any, B: Any, what: str):
    """Non-square A: least squares through QR (the QR side's ``lstsq``)."""
    return lstsq(A, B, full_output=False)


@implements(np.linalg.solve)
def solve(a: Any, b: Any) -> Any:
    """``np.linalg.solve(a, b)`` for codistributed (or replicated) arrays: LU with partial
    pivoting (PDGETRF), as numpy (LAPACK gesv); ``LinAlgError('Singular matrix')`` on
    every lab when a pivot is exactly zero."""
    return _solve_square(a, b, "numpy.linalg.solve", numpy_name=True)


def solve_triangular(T: Any, B: Any, lower: bool = False, unit_diagonal: bool = False) -> Any:
    """Solve ``T X = B`` for triangular T by blocked substitution (ScaLAPACK PDTRSM),
    reading only T's lower (``lower=True``) or upper triangle, as
    ``scipy.linalg.solve_triangular``."""
    what = "solve_triangular"
    n = _square(T, what, False)
    dt = _dtype(what, T, B)
    w = _Work(T, dt, what)
    wb, vec = _rhs(B, n, w, dt, what)
    empty = 0 in _shape(B)  # no right-hand sides: scipy returns the empty solution unchecked
    if not unit_diagonal and not empty and _zero_diagonal(w, what):
        raise np.linalg.LinAlgError(f"{what}: singular matrix: a diagonal entry is zero")
    trsm(w.a, w.G, wb.a, wb.G, lower=bool(lower), unit=bool(unit_diagonal), what=what)
    return _out(wb, vec)


def lu(A: Any, option: str = "matrix") -> Tuple[Any, Any, Any]:
    """MATLAB's ``[L, U, P] = lu(A)``: ``P @ A == L @ U`` with L unit lower (m x k), U
    upper (k x n), k = min(m, n), by blocked LU with partial pivoting (PDGETRF).

    ``lu(A, 'vector')`` returns ``(L, U, p)`` with ``A[p, :] == L @ U``; ``p`` is a
    replicated int64 array of 0-based row indices (MATLAB's is 1-based). L, U and P
    are 2dbc on the factorization's grid. A zero pivot does not stop ``lu`` (as in
    MATLAB, U is then singular)."""
    what = "lu"
    if option not in ("matrix", "vector"):
        raise ValueError(f"lu: option must be 'matrix' or 'vector', got {option!r}")
    s = _shape(A)
    if len(s) != 2:
        raise ValueError(f"lu: the matrix must be 2-D, got shape {s}")
    m, n = s
    k = min(m, n)
    w = _Work(A, _dtype(what, A), what)
    perm, diag, info = getrf(w.a, w.G, what)
    G = w.G
    kc, kr = G.cols_before(k), G.rows_before(k)
    L = _keep_triangle(np.array(w.a[:, :kc]), G, lower=True, unit=True)
    U = _keep_triangle(np.array(w.a[:kr, :]), G, lower=False)
    Ld, Ud = w.result(L, (m, k)), w.result(U, (k, n))
    if option == "vector":
        return Ld, Ud, perm
    cP = codistributor2dbc(G.codist.LabGrid, G.nb, G.orientation, (m, m))
    GP = ProcessGrid(cP)
    P = np.zeros((GP.mloc, GP.nloc), dtype=w.a.dtype)
    cols = perm[GP.global_rows()]
    mine = GP.col_owner(cols) == GP.mycol
    P[np.flatnonzero(mine), GP.local_col(cols[mine])[1]] = 1
    return Ld, Ud, codistributed.build(P, cP)


# --------------------------------------------------------------------------- Cholesky
def _chol_lower(A: Any, what: str, numpy_name: bool):
    _square(A, what, numpy_name)
    w = _Work(A, _dtype(what, A), what)
    bad = potrf(w.a, w.G, what)
    if bad:
        raise np.linalg.LinAlgError(
            f"{what}: Matrix must be positive definite: its leading minor of order {bad} is "
            "not positive definite" if not numpy_name else
            f"Matrix is not positive definite (leading minor of order {bad})")
    _keep_triangle(w.a, w.G, lower=True)
    return w.result()


def chol(A: Any, triangle: str = "upper") -> Any:
    """MATLAB's ``chol``: upper R with ``R^H R = A`` from A's upper triangle, or with
    ``'lower'`` lower L with ``L L^H = A`` from its lower triangle (PDPOTRF). A matrix
    that is not positive definite raises ``np.linalg.LinAlgError`` naming the first
    leading minor that is not. The result is 2dbc on A's grid."""
    if triangle not in ("upper", "lower"):
        raise ValueError(f"chol: triangle must be 'upper' or 'lower', got {triangle!r}")
    if triangle == "lower":
        return _chol_lower(A, "chol", numpy_name=False)
    _square(A, "chol", False)
    D = A if isinstance(A, codistributed) else to_2dbc(A, "chol")
    return ctrans(_chol_lower(ctrans(D), "chol", numpy_name=False))


@implements(np.linalg.cholesky)
def cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """``np.linalg.cholesky``: lower L with ``L L^H = a`` from a's lower triangle
    (``upper=True``: upper U with ``U^H U = a`` from a's upper triangle, as numpy)."""
    what = "numpy.linalg.cholesky"
    if not upper:
        return _chol_lower(a, what, numpy_name=True)
    _square(a, what, True)
    D = a if isinstance(a, codistributed) else to_2dbc(a, what)
    return ctrans(_chol_lower(ctrans(D), what, numpy_name=True))


# --------------------------------------------------------------------------- inverse, determinant
def _inv(A: Any, what: str, numpy_name: bool):
    n, w, perm, diag, info = _lu_factor(A, what, numpy_name)
    if info:
        _singular(numpy_name, what)
    else:
        _check_conditioning(diag, numpy_name)
    G = w.G
    I = np.zeros((G.mloc, G.nloc), dtype=w.a.dtype)
    gr, gc = G.global_rows(), G.global_cols()
    common, ir, ic = np.intersect1d(gr, gc, return_indices=True)
    I[ir, ic] = 1
    wb = _Work.__new__(_Work)
    wb.D, wb.codist, wb.a, wb.G = w.D, w.codist, I, ProcessGrid(w.codist)
    _lu_solve(w, perm, wb, what)
    return wb.result()


def inv(A: Any) -> Any:
    """MATLAB's ``inv``: A⁻¹ by LU (PDGETRF) and two triangular solves against the
    identity (PDGETRI's result, without its in-place algorithm). Singular A warns
    "Matrix is singular to working precision." (entries become Inf/NaN)."""
    return _inv(A, "inv", numpy_name=False)


@implements(np.linalg.inv)
def np_inv(a: Any) -> Any:
    """``np.linalg.inv``: as :func:`inv`, raising ``LinAlgError('Singular matrix')``."""
    return _inv(a, "numpy.linalg.inv", numpy_name=True)


def _perm_sign(perm: np.ndarray) -> int:
    seen = np.zeros(perm.size, dtype=bool)
    swaps = 0
    for i in range(perm.size):
        if not seen[i]:
            j, length = i, 0
            while not seen[j]:
                seen[j] = True
                j = perm[j]
                length += 1
            swaps += length - 1
    return -1 if swaps % 2 else 1


def _logdet(A: Any, what: str):
    """``(sign, logabsdet)`` in the matrix's precision, accumulated in double (as numpy)."""
    n, w, perm, diag, info = _lu_factor(A, what, True)
    real = diag.real.dtype.type
    sign = _perm_sign(perm)
    if info:
        return diag.dtype.type(0), real(-np.inf)
    d = diag.astype(np.complex128 if diag.dtype.kind == "c" else np.float64)
    mags = np.abs(d)
    phase = sign * np.prod(d / mags) if n else sign
    return diag.dtype.type(phase), real(np.sum(np.log(mags)))


@implements(np.linalg.det)
def det(A: Any) -> Any:
    """Determinant (MATLAB ``det`` and ``np.linalg.det``): the permutation's sign times
    the product of U's diagonal from the distributed LU, accumulated as sign and log
    (as numpy: overflow gives inf, not NaN); replicated on every lab."""
    sign, logabs = _logdet(A, "det")
    with np.errstate(over="ignore"):
        return sign.dtype.type(sign * np.exp(np.float64(logabs)))


@implements(np.linalg.slogdet)
def slogdet(a: Any) -> Tuple[Any, Any]:
    """``np.linalg.slogdet``: ``(sign, logabsdet)`` from the distributed LU."""
    sign, logabs = _logdet(a, "numpy.linalg.slogdet")
    try:
        from numpy.linalg._linalg import SlogdetResult
        return SlogdetResult(sign, logabs)
    except ImportError:  # numpy < 2
        return sign, logabs
