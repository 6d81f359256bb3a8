"""The SVD of a codistributed matrix of any shape on the 2dbc grid, and what follows
from it: ``pinv``, ``matrix_rank``, ``cond``.

Algorithm: bidiagonal reduction (``bidiag.gebrd``, ScaLAPACK PDGEBRD), chosen over a
polar decomposition (QDWH, Nakatsukasa and Higham, "Stable and efficient spectral
divide and conquer algorithms for the symmetric eigenvalue decomposition and the SVD",
SIAM J. Sci. Comput. 35(3), 2013) because QDWH costs several QR factorizations and an
``eigh`` (tens of n^3 flops against the reduction's 8/3 n^3), which cannot approach
LAPACK's ``xGESDD`` on a few cores; QDWH pays off on thousands of cores. Then:

- singular values only (``compute_uv=False``): the two-stage form instead
  (``bandsvd.py``: a distributed reduction to band form by GEMMs, then LAPACK's
  ``xGBBRD`` and ``xLASQ1`` (dqds) on every lab);
- with vectors, the singular values: ``xLASQ1`` on the real bidiagonal, on every lab;
- singular vectors: the bidiagonal's SVD by divide and conquer (LAPACK ``xBDSDC``, as
  ``xGESDD``) **on lab 1**, which holds U_B and V_B (2 n^2 words there, as the README
  says); they are redistributed lab to lab to the 2dbc layout and multiplied by the
  reduction's Q and P on every lab (PDORMBR). (Splitting the spectrum over the labs
  through the Golub-Kahan tridiagonal and MRRR, xBDSVDX's method, was tried: it loses
  orthogonality, or stemr fails, for clustered small singular values.)

A wide matrix (m < n) is handled through its conjugate transpose (one distributed
transpose). Results: singular values a replicated numpy array (descending); U and Vh
codistributed on A's 2dbc grid. NaN/Inf input: numpy's ``LinAlgError("SVD did not
converge")`` on every lab.
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from ...layouts.codistributor import codistributor1d, codistributor2dbc
from ..array import codistributed, getLocalPart
from ..base import here
from ..collectives import allgatherv
from ..transfer import redistribute
from .bandsvd import band_svdvals
from .bidiag import Bidiagonal, apply_p, apply_q, bdsdc, gebrd, real_of
from .eigh import all_finite
from .grid import ProcessGrid, grid_codist, to_2dbc
from .householder import identity_like
from .qrbase import build, ctrans

__all__ = ["svd_2dbc", "diag_like"]


def _like(c: codistributor2dbc, shape: Tuple[int, int]) -> codistributor2dbc:
    grid = c.LabGrid
    assert grid is not None, "a complete 2dbc layout has its grid"
    return codistributor2dbc(list(grid), c.BlockSize, c.Orientation, shape)


def _lab1_vectors(bd: Bidiagonal, what: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """B's SVD by xBDSDC on lab 1 (n x n U_B and V_B there), s sent to every lab:
    ``(s, u, v, counts)`` with u, v this lab's columns (all on lab 1, none elsewhere)."""
    n = bd.d.size
    lab, p = here()
    counts = [n] + [0] * (p - 1)
    if lab == 1:
        s, u, vt = bdsdc(bd.d, bd.e)
        u, v = np.ascontiguousarray(u), np.ascontiguousarray(vt.T)
        del vt
    else:
        s = np.zeros(n, real_of(bd.d))
        u = v = np.zeros((n, 0), s.dtype)
    s = allgatherv(s if lab == 1 else s[:0], counts, what)
    return s, u, v, counts


def _left(bd: Bidiagonal, u: np.ndarray, counts: list, c: codistributor2dbc, m: int,
          full: bool, dt: Any) -> codistributed:
    """U = Q [U_B; 0] (m x n) or Q [[U_B, 0], [0, I]] (m x m)."""
    n = u.shape[0]
    mine = np.zeros((m, u.shape[1]), dtype=dt)
    mine[:n] = u
    ce = _like(c, (m, n))
    Ue = getLocalPart(redistribute(build(mine, codistributor1d(2, counts, (m, n))), ce))
    del mine
    g = bd.grid
    if full and m > n:
        Z, cz = identity_like(g, m, m, dt)
        Z[:, :Ue.shape[1]] = Ue
    else:
        Z, cz = np.array(Ue, dtype=dt, copy=True), ce
    apply_q(bd, Z)
    return build(Z, cz)


def _right(bd: Bidiagonal, v: np.ndarray, counts: list, c: codistributor2dbc, dt: Any) -> codistributed:
    """V = P V_B (n x n), as Vh = V^H."""
    n = v.shape[0]
    cv = _like(c, (n, n))
    Vl = np.array(getLocalPart(redistribute(build(v.astype(dt), codistributor1d(2, counts, (n, n))), cv)),
                  copy=True)
    apply_p(bd, Vl, ProcessGrid(cv).connect(bd.what))
    V = build(Vl, cv)
    return redistribute(ctrans(V), cv)


def svd_2dbc(A: codistributed, full_matrices: bool, compute_uv: bool, what: str) -> Any:
    """``(U, s, Vh)`` or ``s`` of the codistributed matrix A (LAPACK dtype, 2-D)."""
    m, n = A.shape
    if m < n:
        out = svd_2dbc(ctrans(A), full_matrices, compute_uv, what)
        if not compute_uv:
            return out
        U, s, Vh = out  # A^H = U s Vh  =>  A = Vh^H s U^H
        c = grid_codist(U)
        return redistribute(ctrans(Vh), _like(c, (m, m))), s, \
            redistribute(ctrans(U), _like(c, (U.shape[1], U.shape[0])))
    D = to_2dbc(A, what)
    c = grid_codist(D)
    g = ProcessGrid(c).connect(what)
    a = np.array(getLocalPart(D), copy=True)
    if not all_finite(a, g, what):
        raise np.linalg.LinAlgError("SVD did not converge")
    if not compute_uv:
        return band_svdvals(a, g, what)
    bd = gebrd(a, g, what)
    s, u, v, counts = _lab1_vectors(bd, what)
    U = _left(bd, u, counts, c, m, full_matrices, a.dtype)
    Vh = _right(bd, v, counts, c, a.dtype)
    return U, s, Vh


def diag_like(s: np.ndarray, c: codistributor2dbc, shape: Tuple[int, int]) -> codistributed:
    """The r x c matrix with ``s`` on its diagonal, in the 2dbc layout ``c`` (MATLAB's
    S and D are distributed like the input)."""
    cs = _like(c, shape)
    g = ProcessGrid(cs)
    S = np.zeros((g.mloc, g.nloc), dtype=s.dtype)
    gr, gc = g.global_rows(), g.global_cols()
    _, ir, ic = np.intersect1d(gr[gr < s.size], gc, return_indices=True)
    S[ir, ic] = s[gr[ir]]
    return build(S, cs)
