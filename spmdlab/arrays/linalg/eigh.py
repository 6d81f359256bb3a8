"""Hermitian eigenproblems of codistributed matrices: ``np.linalg.eigh``/``eigvalsh``.

ScaLAPACK's PDSYEVR pattern: the matrix goes to 2dbc (``grid.to_2dbc``; a 2dbc input
keeps its grid and block size), the triangle numpy reads (``UPLO``) is mirrored into
the other by one distributed transpose, ``tridiag.sytrd`` reduces it to a real
tridiagonal T (PDSYTRD), and T's eigenproblem is solved by LAPACK through scipy:

- eigenvalues only: the two-stage form instead (``band.py``: a distributed reduction to
  band form by GEMMs, then LAPACK's band eigensolver on every lab);
- eigenvectors: each lab computes the eigenpairs of its own share of the spectrum with
  MRRR (``mrrr.window``: all eigenvalues by dqds, ``xLARRE``, then only its share's
  eigenvectors, ``xLARRV`` with ``DOL:DOU``; the division of work of PDSTEMR, Vömel,
  "ScaLAPACK's MRRR algorithm", ACM TOMS 37(1), 2010; ``xSTEMR`` with ``RANGE='I'``
  when T splits). The shares are
  contiguous index ranges whose boundaries are the gaps wider than 1e-3 ||T|| nearest
  the even split, so a cluster of close eigenvalues is computed by one lab (orthogonality within
  a cluster is MRRR's job within one call). The eigenvectors, n x (my share) on each
  lab, are redistributed lab to lab to A's 2dbc layout and multiplied by Q
  (``tridiag.apply_q``, PDORMTR).

Results as numpy returns them: eigenvalues ascending, a replicated real numpy array
(bitwise the same on every lab); eigenvectors a codistributed matrix in the 2dbc
layout the reduction ran on. NaN or Inf in the input raises numpy's
``LinAlgError("Eigenvalues did not converge")`` on every lab.
"""
from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np
from scipy.linalg import eigvalsh_tridiagonal

from ...layouts.codistributor import codistributor1d
from ..array import codistributed, getLocalPart
from ..base import here, is_codist
from ..collectives import allgatherv
from ..layout import labs_of
from ..registry import implements
from ..transfer import redistribute
from .band import band_eigvalsh
from .grid import ProcessGrid, grid_codist, to_2dbc
from .mrrr import roots, stemr
from .qrbase import build, linalg_dtype
from .tridiag import Tridiagonal, apply_q, sytrd

__all__ = ["np_eigh", "np_eigvalsh", "hermitian_eig", "is_hermitian", "square_2dbc",
           "all_finite"]


def square_2dbc(A: Any, what: str) -> codistributed:
    """``A`` as a square 2dbc codistributed matrix in LAPACK's dtype (numpy's errors)."""
    if not is_codist(A):
        raise TypeError(f"{what}: expected a codistributed matrix, got {type(A).__name__}")
    labs_of(A, what)
    if A.ndim != 2:
        if A.ndim < 2:
            raise np.linalg.LinAlgError(f"{what}: {A.ndim}-dimensional array given. Array must "
                                        "be at least two-dimensional")
        raise NotImplementedError(f"{what}: stacks of matrices (a {A.ndim}-D codistributed "
                                  "array) are not supported; use a 2-D matrix")
    if A.shape[0] != A.shape[1]:
        raise np.linalg.LinAlgError(f"{what}: Last 2 dimensions of the array must be square "
                                    f"(got {A.shape[0]}x{A.shape[1]})")
    dt = linalg_dtype(A.dtype, what)
    A = A if A.dtype == dt else A.astype(dt)
    return to_2dbc(A, what)


def all_finite(a: np.ndarray, g: ProcessGrid, what: str) -> bool:
    """Whether every lab's local part is finite (the same answer on every lab)."""
    bad = np.array([0 if np.isfinite(a).all() else 1], dtype=np.int32)
    if g.numlabs > 1:
        bad = g.connect(what).allreduce(bad, "max", what)
    return not bool(bad[0])


def _real_diagonal(a: np.ndarray, gr: np.ndarray, gc: np.ndarray) -> None:
    """A complex Hermitian matrix's diagonal made real in my part (as LAPACK reads it)."""
    if np.iscomplexobj(a):
        i, j = np.nonzero(gr[:, None] == gc[None, :])
        a[i, j] = a[i, j].real


def _mirror(D: codistributed, uplo: str, what: str) -> Tuple[np.ndarray, ProcessGrid]:
    """A local copy of the Hermitian matrix read from D's ``uplo`` triangle (both
    triangles filled, real diagonal), and the grid."""
    c = grid_codist(D)
    g = ProcessGrid(c).connect(what)
    a = np.array(getLocalPart(D), copy=True)
    DH = D.T.conj() if np.iscomplexobj(a) else D.T
    ah = getLocalPart(redistribute(DH, c))
    gr, gc = g.global_rows(), g.global_cols()
    other = gr[:, None] < gc[None, :] if uplo == "L" else gr[:, None] > gc[None, :]
    a[other] = ah[other]
    del ah
    _real_diagonal(a, gr, gc)
    return a, g


def _lower(D: codistributed, uplo: str, what: str) -> Tuple[np.ndarray, ProcessGrid, bool]:
    """A Fortran-order copy of D's part whose lower triangle holds the Hermitian matrix
    read from D's ``uplo`` triangle (``'U'``: brought over by one distributed
    transpose), with a real diagonal; the grid; whether that triangle is finite (the
    same answer on every lab). The strictly upper triangle is stale: never read."""
    c = grid_codist(D)
    g = ProcessGrid(c).connect(what)
    a = np.array(getLocalPart(D), order="F", copy=True)
    gr, gc = g.global_rows(), g.global_cols()
    lower = gr[:, None] >= gc[None, :]
    if uplo == "U":
        ah = getLocalPart(redistribute(D.T.conj() if np.iscomplexobj(a) else D.T, c))
        a[lower] = ah[lower]
        del ah
    _real_diagonal(a, gr, gc)
    return a, g, all_finite(a[lower], g, what)


def is_hermitian(D: codistributed, what: str) -> bool:
    """MATLAB's test before a Hermitian solver: ``A == A'`` exactly (every lab)."""
    c = grid_codist(D)
    g = ProcessGrid(c).connect(what)
    DH = D.T.conj() if np.iscomplexobj(getLocalPart(D)) else D.T
    same = np.array_equal(getLocalPart(redistribute(DH, c)), getLocalPart(D))
    flag = np.array([0 if same else 1], dtype=np.int32)
    if g.numlabs > 1:
        flag = g.allreduce(flag, "max", what)
    return not bool(flag[0])


def _shares(w: np.ndarray, p: int) -> List[int]:
    """Split points ``0 = s_0 <= ... <= s_p = n`` of the ascending eigenvalues ``w``:
    each the one nearest ``k n / p`` among the gaps wider than 1e-3 ||T|| (MRRR's
    cluster threshold), so a cluster is never split between labs (with no such gap,
    one lab takes all)."""
    n = w.size
    if n == 0 or p == 1:
        return [0] + [n] * p
    scale = float(np.abs(w).max()) or 1.0
    ok = np.flatnonzero(np.diff(w) > 1e-3 * scale) + 1
    cuts = [0]
    for k in range(1, p):
        cand = ok[ok >= cuts[-1]]
        s = int(cand[np.argmin(np.abs(cand - (k * n) // p))]) if cand.size else n
        cuts.append(s)
    cuts.append(n)
    return cuts


def _my_share(d: np.ndarray, e: np.ndarray, lab: int, p: int) -> Tuple[List[int], np.ndarray, np.ndarray]:
    """The split points of the spectrum and my eigenpairs (eigenvectors as rows): by
    MRRR's pieces where T is one block (every lab finds all eigenvalues by dqds and
    the vectors of its window), else ``xSTERF`` for the split and ``xSTEMR``."""
    n = d.size
    r = roots(d, e)
    if r is not None:
        cuts = _shares(r.values, p)
        lo, hi = cuts[lab - 1], cuts[lab]
        if hi > lo:
            return cuts, *r.window(lo, hi)
    else:
        cuts = _shares(eigvalsh_tridiagonal(d, e, lapack_driver="sterf") if p > 1 and n else d, p)
        lo, hi = cuts[lab - 1], cuts[lab]
        if hi > lo:
            return cuts, *stemr(d, e, lo, hi)
    return cuts, np.empty(0, d.dtype), np.empty((0, n), d.dtype)


def _vectors(tri: Tridiagonal, D: codistributed, what: str) -> Tuple[np.ndarray, codistributed]:
    d, e = tri.d, tri.e
    n = d.size
    lab, p = here()
    cuts, w, Zt = _my_share(d, e, lab, p)
    lo, hi = cuts[lab - 1], cuts[lab]
    counts = [cuts[k + 1] - cuts[k] for k in range(p)]
    w = allgatherv(w.astype(d.dtype), counts, what)
    c = grid_codist(D)
    Z = np.empty((n, hi - lo), dtype=tri.local.dtype)
    Z[...] = Zt.T
    del Zt
    R = redistribute(build(Z, codistributor1d(2, counts, (n, n))), c)
    del Z
    Zl = np.array(getLocalPart(R), copy=True)
    del R
    apply_q(tri, Zl)
    return w, build(Zl, c)


def hermitian_eig(A: Any, uplo: str, vectors: bool, what: str) -> Any:
    """Eigenvalues (and eigenvectors) of the Hermitian matrix in A's ``uplo`` triangle."""
    if uplo not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    D = square_2dbc(A, what)
    if not vectors:
        a, g = _mirror(D, uplo, what)
        if not all_finite(a, g, what):
            raise np.linalg.LinAlgError("Eigenvalues did not converge")
        return band_eigvalsh(a, g, what)
    a, g, finite = _lower(D, uplo, what)
    if not finite:
        raise np.linalg.LinAlgError("Eigenvalues did not converge")
    return _vectors(sytrd(a, g, what), D, what)


@implements(np.linalg.eigh)
def np_eigh(a: Any, UPLO: str = "L") -> Tuple[np.ndarray, Any]:
    """``np.linalg.eigh``: ``(eigenvalues, eigenvectors)`` (a plain tuple, so a client
    ``distributed`` call splits it), eigenvectors 2dbc; see the module docstring."""
    w, V = hermitian_eig(a, UPLO, True, "numpy.linalg.eigh")
    return (w, V)


@implements(np.linalg.eigvalsh)
def np_eigvalsh(a: Any, UPLO: str = "L") -> np.ndarray:
    """``np.linalg.eigvalsh``: the eigenvalues, ascending, replicated."""
    return hermitian_eig(a, UPLO, False, "numpy.linalg.eigvalsh")
