"""The SVD of codistributed matrices (``np.linalg.svd``, MATLAB's ``svd``).

Tall-skinny (m >= numlabs n) and short-wide (n >= numlabs m) matrices: the SVD
through QR is Chan's R-bidiagonalization idea (T. F. Chan, "An improved algorithm for
computing the singular value decomposition", ACM TOMS 8(1), 1982) with the QR done by
TSQR (Demmel, Grigori, Hoemmen, Langou 2012): ``A = Q R`` with R small and replicated,
``R = U_r S V^H`` by LAPACK (``xGESDD`` through numpy, so a NaN gives numpy's
LinAlgError, on every lab alike), so ``A = (Q U_r) S V^H``; ``Q U_r`` is formed lab by
lab without communication. A short-wide matrix goes through ``A^H``. Results: tall A
(any layout; redistributed by rows): ``U`` by rows with the row partition of A's row
layout, ``S`` and ``Vh`` replicated numpy arrays (small); short-wide A: ``U`` and ``S``
replicated, ``Vh`` by columns.

Every other shape: the bidiagonal reduction on the 2dbc grid (``svd2d.py``, PDGEBRD),
U and Vh codistributed on A's grid. ``compute_uv=False``: ``S`` only, a replicated numpy
array (every lab has the same bits).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...layouts.codistributor import codistributor1d, codistributor2dbc
from ..array import getCodistributor, getLocalPart
from ..base import here, is_codist
from ..registry import implements, numpy_names
from ..transfer import redistribute
from .qr import prepare, tall_skinny, tsqr_factor
from .qrbase import build
from .svd2d import diag_like, svd_2dbc
from .tsqr import local_q_complete, tsqr, tsqr_q

__all__ = ["np_svd", "svd", "singular_values", "svd_any"]



def SVDResult(U: Any, S: Any, Vh: Any) -> tuple:
    """A plain tuple (see ``qr.QRResult``)."""
    return (U, S, Vh)


def _core(A: Any, full_matrices: bool, compute_uv: bool, what: str) -> Any:
    A = prepare(A, what)
    m, n = A.shape
    lab, p = here()
    if m >= n and tall_skinny((m, n), p):
        f, Ar = tsqr_factor(A, what)
        parts = getCodistributor(Ar).Partition
        if not compute_uv:
            return np.linalg.svd(f.R, compute_uv=False)
        Ur, s, Vh = np.linalg.svd(f.R, full_matrices=full_matrices)
        if full_matrices:
            U = build(local_q_complete(f, lab, Ur), codistributor1d(1, parts, (m, m)))
        else:
            U = build(tsqr_q(f, Ur), codistributor1d(1, parts, (m, Ur.shape[1])))
        return SVDResult(U, s, Vh)
    if m < n and tall_skinny((n, m), p):
        c = getCodistributor(A)
        Ac = A if isinstance(c, codistributor1d) and c.Dimension == 2 \
            else redistribute(A, codistributor1d(2, None, (m, n)))
        parts = getCodistributor(Ac).Partition
        f = tsqr(np.ascontiguousarray(getLocalPart(Ac).conj().T), parts, m, what)
        if not compute_uv:
            return np.linalg.svd(f.R, compute_uv=False)
        # A^H = Q R, R = Ur s Vr^H  =>  A = Vr s (Q Ur)^H
        Ur, s, Vrh = np.linalg.svd(f.R, full_matrices=full_matrices)
        if full_matrices:
            W = local_q_complete(f, lab, Ur)
        else:
            W = tsqr_q(f, Ur)
        return SVDResult(Vrh.conj().T.copy(), s, build(W.conj().T, codistributor1d(2, parts, (W.shape[1], n))))
    return svd_2dbc(A, full_matrices, compute_uv, what)


def svd_any(A: Any, full_matrices: bool, compute_uv: bool, what: str) -> Any:
    """``(U, s, Vh)`` or ``s`` of a codistributed matrix of any shape (the path by shape
    and layout as in the module docstring)."""
    return _core(A, full_matrices, compute_uv, what)


@implements(np.linalg.svd)
def np_svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """``np.linalg.svd`` of a tall-skinny or short-wide codistributed matrix."""
    what = "numpy.linalg.svd"
    if hermitian:
        raise NotImplementedError(f"{what}: hermitian=True (an eigendecomposition of a square "
                                  "matrix) is not supported for codistributed matrices")
    return _core(a, full_matrices, compute_uv, what)


@implements(*numpy_names(np.linalg, "svdvals"))
def np_svdvals(x: Any, /) -> Any:
    """``np.linalg.svdvals`` (numpy >= 2): the singular values, as ``svd(compute_uv=False)``."""
    return np_svd(x, compute_uv=False)


def singular_values(A: Any, what: str = "svd") -> np.ndarray:
    """The singular values (descending, replicated numpy array) of a tall-skinny or
    short-wide codistributed matrix."""
    return _core(A, False, False, what)


def svd(A: Any, *args: Any, nargout: int = 1) -> Any:
    """MATLAB's ``svd``: ``s = svd(A)`` (a replicated numpy vector), ``U, S, V = svd(A,
    nargout=3)`` (full) or ``svd(A, "econ", nargout=3)`` / ``svd(A, 0, nargout=3)``
    (economy); ``S`` is the diagonal matrix (replicated for the TSQR path, 2dbc like U
    otherwise), ``V`` (not ``V^H``); see the module docstring for layouts."""
    what = "svd"
    econ = False
    for opt in args:
        if (isinstance(opt, str) and opt.lower() == "econ") or (not isinstance(opt, str) and opt == 0):
            econ = True
        else:
            raise ValueError(f"{what}: unknown option {opt!r}: use \"econ\" or 0")
    if not is_codist(A):
        X = np.asarray(A)
        if nargout == 1:
            return np.linalg.svd(X, compute_uv=False)
        U, s, Vh = np.linalg.svd(X, full_matrices=not econ)
        return U, _diag(s, U.shape[1], Vh.shape[0], s.dtype), Vh.conj().T
    if nargout == 1:
        return singular_values(A, what)
    if nargout != 3:
        raise ValueError(f"{what}: nargout must be 1 or 3, got {nargout}")
    U, s, Vh = _core(A, not econ, True, what)
    m, n = A.shape
    rows = U.shape[1]
    cols = Vh.shape[0]
    if is_codist(U) and isinstance(getCodistributor(U), codistributor2dbc):
        c2 = getCodistributor(U)
        V = redistribute(Vh.T.conj() if np.iscomplexobj(getLocalPart(Vh)) else Vh.T,
                         codistributor2dbc(c2.LabGrid, c2.BlockSize, c2.Orientation, (cols, Vh.shape[0])))
        return U, diag_like(s, c2, (rows, cols)), V
    S = _diag(s, rows, cols, s.dtype)
    if is_codist(Vh):
        c = getCodistributor(Vh)
        V = build(getLocalPart(Vh).conj().T, codistributor1d(1, c.Partition, (Vh.shape[1], Vh.shape[0])))
    else:
        V = Vh.conj().T.copy()
    return U, S, V


def _diag(s: np.ndarray, r: int, c: int, dt: Any) -> np.ndarray:
    S = np.zeros((r, c), dtype=dt)
    k = min(r, c, s.size)
    S[np.arange(k), np.arange(k)] = s[:k]
    return S
