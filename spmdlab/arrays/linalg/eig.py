"""General (non-symmetric) eigenproblems of codistributed matrices: ``np.linalg.eig``,
``eigvals`` and MATLAB's ``eig``.

The reduction to Hessenberg form is distributed (``hessenberg.gehrd``, PDGEHRD); the
Hessenberg eigenproblem then runs **on lab 1** with LAPACK (numpy's ``eig``/``eigvals``
of H: xHSEQR and xTREVC, through xGEEV), which needs the n x n Hessenberg matrix
(and, for eigenvectors, the n x n eigenvectors of H) on lab 1: n^2 words there, as
the README says. The original matrix is never gathered. The eigenvalues are sent to
every lab; the eigenvectors of H are redistributed from lab 1 to the 2dbc layout and
multiplied by Q on every lab (``tridiag.apply_q``, PDORMHR). ScaLAPACK's PDHSEQR
(distributed multishift QR) is not implemented.

Results as numpy: eigenvalues a replicated array (real when every eigenvalue of a real
matrix is real), eigenvectors (unit 2-norm columns) codistributed on A's 2dbc grid.
NaN/Inf input raises ``LinAlgError("Array must not contain infs or NaNs")`` on every
lab. MATLAB's ``eig`` uses the Hermitian solver (``eigh.py``) for a matrix that is
exactly Hermitian, as MATLAB does.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...layouts.codistributor import codistributor1d
from ..array import getLocalPart
from ..base import here, is_codist
from ..collectives import allgatherv
from ..registry import implements
from ..transfer import redistribute
from .eigh import all_finite, hermitian_eig, is_hermitian, square_2dbc
from .grid import ProcessGrid, grid_codist
from .hessenberg import gehrd
from .qrbase import build
from .svd2d import diag_like
from .tridiag import apply_q

__all__ = ["np_eig", "np_eigvals", "eig"]


def _from_lab1(x: np.ndarray, count: int, what: str) -> np.ndarray:
    """Lab 1's ``x`` (``count`` rows) on every lab (an all-gather in which only lab 1
    sends)."""
    lab, p = here()
    counts = [count] + [0] * (p - 1)
    return allgatherv(x if lab == 1 else x[:0], counts, what)


def general_eig(A: Any, vectors: bool, what: str) -> Any:
    D = square_2dbc(A, what)
    c = grid_codist(D)
    g = ProcessGrid(c).connect(what)
    a = np.array(getLocalPart(D), copy=True)
    if not all_finite(a, g, what):
        raise np.linalg.LinAlgError("Array must not contain infs or NaNs")
    n = g.n
    real_input = a.dtype.kind == "f"
    H, red = gehrd(a, g, what, keep_q=vectors)
    cdt = np.result_type(a.dtype, np.complex64)
    if H is not None:
        if vectors:
            w, Z = np.linalg.eig(H)
        else:
            w, Z = np.linalg.eigvals(H), None
        del H
        w = w.astype(cdt)
    else:
        w, Z = np.zeros(n, cdt), None
    w = _from_lab1(w, n, what)
    real = real_input and bool(np.all(w.imag == 0))
    if real:
        w = w.real.copy()
    if not vectors:
        return w
    lab, p = here()
    vdt = a.dtype if real else cdt
    mine = np.ascontiguousarray(Z, dtype=vdt) if lab == 1 else np.zeros((n, 0), vdt)
    del Z
    Zd = build(mine, codistributor1d(2, [n] + [0] * (p - 1), (n, n)))
    del mine
    R = redistribute(Zd, c)
    del Zd
    if vdt == a.dtype:
        Zl = np.array(getLocalPart(R), copy=True)
        del R
        apply_q(red, Zl)
    else:  # complex eigenvectors of a real matrix: Q to the real and imaginary parts
        re, im = np.ascontiguousarray(getLocalPart(R).real), np.ascontiguousarray(getLocalPart(R).imag)
        del R
        apply_q(red, re)
        apply_q(red, im)
        Zl = np.empty(re.shape, dtype=vdt)
        Zl.real, Zl.imag = re, im
        del re, im
    return w, build(Zl, c)


@implements(np.linalg.eig)
def np_eig(a: Any) -> Any:
    """``np.linalg.eig``: ``(eigenvalues, eigenvectors)`` (a plain tuple)."""
    w, V = general_eig(a, True, "numpy.linalg.eig")
    return (w, V)


@implements(np.linalg.eigvals)
def np_eigvals(a: Any) -> np.ndarray:
    """``np.linalg.eigvals``: the eigenvalues, replicated."""
    return general_eig(a, False, "numpy.linalg.eigvals")


def eig(A: Any, *args: Any, nargout: int = 1) -> Any:
    """MATLAB's ``eig``: ``e = eig(A)`` (eigenvalues), ``V, D = eig(A, nargout=2)``
    (``A V = V D``, D diagonal, distributed like V). A matrix exactly equal to its
    conjugate transpose goes to the Hermitian solver (real eigenvalues, ascending,
    orthonormal V), as MATLAB's does; others to the general one. ``eig(A, B)``
    (generalized) is not supported."""
    what = "eig"
    if args:
        raise NotImplementedError(f"{what}: options and the generalized problem eig(A, B) are "
                                  "not supported for distributed matrices")
    if nargout not in (1, 2):
        raise ValueError(f"{what}: nargout must be 1 or 2, got {nargout}")
    if not is_codist(A):
        X = np.asarray(A)
        herm = X.ndim == 2 and X.shape[0] == X.shape[1] and np.array_equal(X, X.conj().T)
        if nargout == 1:
            return np.linalg.eigvalsh(X) if herm else np.linalg.eigvals(X)
        w, V = np.linalg.eigh(X) if herm else np.linalg.eig(X)
        return V, np.diag(w)
    D = square_2dbc(A, what)
    if is_hermitian(D, what):
        out = hermitian_eig(D, "L", nargout == 2, what)
    else:
        out = general_eig(D, nargout == 2, what)
    if nargout == 1:
        return out
    w, V = out
    n = D.shape[0]
    return V, diag_like(w, grid_codist(V), (n, n))
