"""TSQR: QR of a tall-skinny matrix distributed by rows.

The algorithm is the flat-tree-of-height-one TSQR of Demmel, Grigori, Hoemmen and
Langou, "Communication-optimal parallel and sequential QR and LU factorizations",
SIAM J. Sci. Comput. 34(1), 2012 (§3, with the butterfly/all-reduce variant of the
reduction): every lab factors its block of rows with LAPACK (``xGEQRF``; a block taller
than ``CHUNK_ROWS`` by the sequential TSQR of §4 over row chunks, which keeps each
panel in cache),
``A_i = Q_i R_i``; the small triangles ``R_i`` (at most n x n each) are gathered on every
lab in lab order (one ``Iallgatherv``) and the stack is factored again, redundantly and
identically on every lab, ``[R_1; ...; R_p] = Q_2 R``. So ``A = diag(Q_i) Q_2 R``. ``R`` is
then replicated, which makes every data-dependent decision after it (rank, singular
values, convergence) the same on every lab without more messages.

``Q`` is never needed as a whole: a lab's rows of ``Q`` are ``Q_i`` applied (``xORMQR``,
implicitly) to its rows of ``Q_2``; ``Q^H B`` is ``Q_2^H`` applied to the stacked
``Q_i^H B_i``. A lab holds its local part, its Householder factor (the local part's
size), and the stacked triangles (numlabs x n x n), never the whole matrix.

The functions ``local_factor``, ``combine``, ``local_q`` and ``apply_qh`` are pure math
(no MPI) so the algorithm is tested in a fast loop over simulated labs; :func:`tsqr`
drives them with the collectives.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from scipy.linalg import get_lapack_funcs

from ..base import here
from ..collectives import allgatherv
from .qrbase import combine_sum

__all__ = ["LocalFactor", "Factor", "geqrf", "apply_q", "local_factor", "local_apply", "combine",
           "local_q", "local_q_complete", "local_qh", "stacked_qh", "tsqr", "tsqr_q", "tsqr_qh",
           "CHUNK_ROWS"]


# --------------------------------------------------------------------------- LAPACK
def geqrf(a: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Householder QR of ``a`` (a copy; LAPACK xGEQRF, blocked): ``(h, tau)`` with R in the
    upper triangle of ``h`` and the Householder vectors below it (Fortran order)."""
    m, n = a.shape
    if m == 0 or n == 0:
        return np.zeros((m, n), dtype=a.dtype, order="F"), np.zeros(0, dtype=a.dtype)
    f, flw = get_lapack_funcs(("geqrf", "geqrf_lwork"), (a,))
    work, info = flw(m, n)
    lwork = max(1, int(np.real(work)))
    h, tau, _, info = f(a, lwork=lwork)
    if info != 0:
        raise np.linalg.LinAlgError(f"xGEQRF failed with info={info}")
    return h, tau


def apply_q(h: np.ndarray, tau: np.ndarray, c: np.ndarray, conj: bool,
            overwrite: bool = False) -> np.ndarray:
    """``Q c`` (``conj`` False) or ``Q^H c`` (True) for ``Q`` = the reflectors in ``(h, tau)``
    (LAPACK xORMQR/xUNMQR, side L). ``c`` has ``h.shape[0]`` rows; the result is a new
    array, or ``c`` itself with ``overwrite`` when ``c`` is Fortran-ordered."""
    k = tau.shape[0]
    m = h.shape[0]
    c = np.asarray(c, dtype=h.dtype)
    if k == 0 or c.size == 0:
        return np.array(c, order="F", copy=True)
    cplx = h.dtype.kind == "c"
    name = "unmqr" if cplx else "ormqr"
    (f,) = get_lapack_funcs((name,), (h,))
    trans = ("C" if cplx else "T") if conj else "N"
    a = h[:, :k]
    cq, work, info = f("L", trans, a, tau, c, -1)
    lwork = max(1, int(np.real(work[0])), c.shape[1] * 64)
    cq, work, info = f("L", trans, a, tau, c, lwork, overwrite_c=int(overwrite and c.flags.f_contiguous))
    if info != 0:
        raise np.linalg.LinAlgError(f"x{name.upper()} failed with info={info}")
    assert cq.shape[0] == m
    return cq


# --------------------------------------------------------------------------- pure math
# Rows per chunk of a lab's own block (sequential TSQR, Demmel et al. §4: a chunk's
# Householder panel stays in cache, where xGEQRF on a very tall block streams the whole
# block from memory for every panel; measured 3-5x faster on 100000 x 64).
CHUNK_ROWS = 4096


class LocalFactor(NamedTuple):
    """One lab's step 1, ``A_i = Q_i R_i``, itself a flat TSQR over row chunks:
    ``Q_i = diag(Q_c) P diag(Q_s, I)`` with ``Q_c`` each chunk's reflectors and ``Q_s`` those
    of the stacked chunk triangles (``hs`` is None when the block is one chunk)."""
    chunks: List[Tuple[int, int, np.ndarray, np.ndarray]]  # (start, stop, h, tau) per chunk
    hs: Optional[np.ndarray]
    taus: Optional[np.ndarray]
    R: np.ndarray  # k_i x n, k_i = min(m_i, n)

    @property
    def k(self) -> int:
        return int(self.R.shape[0])


class Factor(NamedTuple):
    """The TSQR factorization as one lab sees it (``R``, ``h2``, ``tau2`` replicated)."""
    local: LocalFactor
    counts: List[int]  # rows of every lab's block
    ks: List[int]  # k_i = min(m_i, n) of every lab
    h2: np.ndarray  # K x n (K = sum k_i): the factored stack
    tau2: np.ndarray
    R: np.ndarray  # min(m, n) x n


def local_factor(Ai: np.ndarray, chunk: Optional[int] = None) -> LocalFactor:
    m, n = Ai.shape
    rows = max(CHUNK_ROWS, 8 * n) if chunk is None else max(1, int(chunk))
    if m <= rows:
        h, tau = geqrf(Ai)
        return LocalFactor([(0, m, h, tau)], None, None, np.triu(h[:tau.shape[0]]))
    chunks, tri = [], []
    for s in range(0, m, rows):
        e = min(s + rows, m)
        h, tau = geqrf(Ai[s:e])
        chunks.append((s, e, h, tau))
        tri.append(np.triu(h[:tau.shape[0]]))
    hs, taus = geqrf(np.vstack(tri))
    return LocalFactor(chunks, hs, taus, np.triu(hs[:min(m, n)]))


def _stack_rows(lf: LocalFactor) -> List[int]:
    return [c[3].shape[0] for c in lf.chunks]


def local_apply(lf: LocalFactor, C: np.ndarray, conj: bool) -> np.ndarray:
    """``Q_i C`` or ``Q_i^H C`` for this lab's full m_i x m_i ``Q_i`` (rows of C: the
    chunks' stacked-triangle coordinates first, then every chunk's remaining rows)."""
    if lf.hs is None:
        _, _, h, tau = lf.chunks[0]
        return apply_q(h, tau, C, conj=conj)
    assert lf.taus is not None  # set with hs
    ks = _stack_rows(lf)
    Ks = sum(ks)
    out = np.empty(C.shape, dtype=lf.hs.dtype, order="F")
    if conj:
        tops, rests = [], []
        for (s, e, h, tau), k in zip(lf.chunks, ks):
            Z = apply_q(h, tau, C[s:e], conj=True)
            tops.append(Z[:k])
            rests.append(Z[k:])
        out[:Ks] = apply_q(lf.hs, lf.taus, np.vstack(tops), conj=True)
        out[Ks:] = np.vstack(rests)
        return out
    S = apply_q(lf.hs, lf.taus, C[:Ks], conj=False)
    off, roff = 0, Ks
    for (s, e, h, tau), k in zip(lf.chunks, ks):
        Z = np.empty((e - s, C.shape[1]), dtype=out.dtype, order="F")
        Z[:k] = S[off:off + k]
        Z[k:] = C[roff:roff + e - s - k]
        out[s:e] = apply_q(h, tau, Z, conj=False, overwrite=True)
        off, roff = off + k, roff + e - s - k
    return out


def local_apply_top(lf: LocalFactor, top: np.ndarray, m: int) -> np.ndarray:
    """``Q_i [top; 0]`` (m_i rows) without forming the zero rows of a chunked block."""
    if lf.hs is None:
        _, _, h, tau = lf.chunks[0]
        C = np.zeros((m, top.shape[1]), dtype=h.dtype, order="F")
        C[:top.shape[0]] = top
        return apply_q(h, tau, C, conj=False, overwrite=True)
    assert lf.taus is not None  # set with hs
    ks = _stack_rows(lf)
    Y = np.zeros((sum(ks), top.shape[1]), dtype=lf.hs.dtype)
    Y[:top.shape[0]] = top
    S = apply_q(lf.hs, lf.taus, Y, conj=False)
    out = np.empty((m, top.shape[1]), dtype=lf.hs.dtype, order="F")
    off = 0
    for (s, e, h, tau), k in zip(lf.chunks, ks):
        Z = np.zeros((e - s, top.shape[1]), dtype=out.dtype, order="F")
        Z[:k] = S[off:off + k]
        out[s:e] = apply_q(h, tau, Z, conj=False, overwrite=True)
        off += k
    return out


def combine(stack: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 2: ``[R_1; ...; R_p] = Q_2 R`` -> ``(h2, tau2, R)``."""
    h2, tau2 = geqrf(stack)
    k = min(stack.shape)
    return h2, tau2, np.triu(h2[:k])


def _offset(ks: Sequence[int], i: int) -> int:
    return int(sum(ks[:i]))


def local_q(f: Factor, lab: int, X: np.ndarray) -> np.ndarray:
    """This lab's rows of ``Q X`` for ``X`` with min(m, n) rows (replicated):
    ``Q_i [ (Q_2 X)_i ; 0 ]`` — ``Q X`` is ``diag(Q_i) Q_2 [X; 0]``."""
    K = f.h2.shape[0]
    Y = np.zeros((K, X.shape[1]), dtype=f.h2.dtype)
    Y[:X.shape[0]] = X
    Y = apply_q(f.h2, f.tau2, Y, conj=False)
    o, k = _offset(f.ks, lab - 1), f.ks[lab - 1]
    return local_apply_top(f.local, Y[o:o + k], f.counts[lab - 1])


def local_q_complete(f: Factor, lab: int, X: Optional[np.ndarray] = None) -> np.ndarray:
    """This lab's rows of the complete m x m ``Q`` (``X`` replaces its first columns'
    min(m, n) x min(m, n) block, for ``U = Q diag(X, I)``).

    ``Q = diag(Qf_i) P diag(Qf_2, I)``: the first K columns are ``Q_2``'s full factor, the
    other ``m - K`` are every lab's trailing ``m_i - k_i`` reflector columns, in lab order."""
    m = sum(f.counts)
    K = f.h2.shape[0]
    kk = min(f.R.shape)
    E = np.eye(K, dtype=f.h2.dtype)
    if X is not None:
        E[:kk, :kk] = X
    Y = apply_q(f.h2, f.tau2, E, conj=False)  # K x K
    i = lab - 1
    o, k, mi = _offset(f.ks, i), f.ks[i], f.counts[i]
    C = np.zeros((mi, m), dtype=f.h2.dtype, order="F")
    C[:k, :K] = Y[o:o + k]
    extra = K + sum(c - kc for c, kc in zip(f.counts[:i], f.ks[:i]))
    C[k:, extra:extra + mi - k] = np.eye(mi - k, dtype=f.h2.dtype)
    return local_apply(f.local, C, conj=False)


def local_qh(f_local: LocalFactor, Bi: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``Q_i^H B_i`` split into its first k_i rows (stacked next) and the rest."""
    k = f_local.k
    C = local_apply(f_local, Bi, conj=True)
    return C[:k], C[k:]


def stacked_qh(f: Factor, stack: np.ndarray) -> np.ndarray:
    """``Q_2^H`` applied to the stacked ``(Q_i^H B_i)[:k_i]`` (K x nrhs)."""
    return apply_q(f.h2, f.tau2, stack, conj=True)


# --------------------------------------------------------------------------- distributed
def tsqr(Ai: np.ndarray, counts: Sequence[int], n: int, what: str) -> Factor:
    """TSQR of the matrix whose rows ``counts[lab-1]`` this lab holds as ``Ai``
    (m_i x n, the LAPACK dtype already). Collective: one all-gather of the triangles."""
    lab, _ = here()
    counts = [int(c) for c in counts]
    ks = [min(c, n) for c in counts]
    loc = local_factor(Ai)
    stack = allgatherv(np.ascontiguousarray(loc.R), ks, what)
    h2, tau2, R = combine(stack)
    return Factor(loc, counts, ks, h2, tau2, R)


def tsqr_q(f: Factor, X: Optional[np.ndarray] = None) -> np.ndarray:
    """This lab's rows of ``Q`` (m_i x min(m, n)), or of ``Q X``. No communication."""
    lab, _ = here()
    kk = min(f.R.shape)
    if X is None:
        X = np.eye(kk, dtype=f.h2.dtype)
    return local_q(f, lab, X)


def tsqr_qh(f: Factor, Bi: np.ndarray, what: str) -> Tuple[np.ndarray, np.ndarray]:
    """``(Q^H B)[:min(m, n)]`` (replicated) and the squared norms of the rest of ``Q_full^H B``
    per column (the least-squares residual of a full-rank problem), for ``B`` whose rows
    this lab holds as ``Bi``. Collective: one all-gather, one lab-order sum."""
    top, rest = local_qh(f.local, Bi)
    stack = allgatherv(np.ascontiguousarray(top), f.ks, what)
    c = stacked_qh(f, stack)
    kk = min(f.R.shape)
    own = np.sum(np.abs(rest) ** 2, axis=0)
    res = combine_sum(own, what) + np.sum(np.abs(c[kk:]) ** 2, axis=0)
    return c[:kk], res
