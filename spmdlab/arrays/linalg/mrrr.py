"""Eigenpairs of an index window of a real symmetric tridiagonal matrix by MRRR
(Dhillon and Parlett, "Multiple representations to compute orthogonal eigenvectors of
symmetric tridiagonal matrices", Linear Algebra Appl. 387, 2004), one lab's share.

:func:`window` is PDSTEMR's division of work (Vömel, "ScaLAPACK's MRRR algorithm",
ACM TOMS 37(1), 2010): every lab finds the root representation and *all* eigenvalues
by dqds (LAPACK ``xLARRE`` with ``RANGE='A'``, O(n^2)), then computes only the
eigenvectors of its own index window (``xLARRV`` with ``DOL:DOU``; a cluster crossing
the window's edge is refined the same way on both labs, so the vectors stay
orthogonal). LAPACK's driver ``xSTEMR`` with ``RANGE='I'`` would instead find the
window's eigenvalues by bisection, several times slower here (1.05 s for half the
spectrum of n = 2048 against 0.2 s). The driver's steps kept from ``xSTEMR``: scaling
into the safe range, the splitting threshold (absolute, ``-eps``: no relative-accuracy
test), the tolerances and ``MINRGP``. A matrix that splits into several blocks lists
its eigenvalues block by block, not ascending; there :func:`window` answers ``None`` and
:func:`stemr` (``RANGE='I'``) does the work. :class:`Roots` keeps xLARRE's output,
so the labs choose their windows from its eigenvalues (no separate ``xSTERF``).
"""
from __future__ import annotations

import ctypes
from typing import Optional, Tuple

import numpy as np

from .bidiag import lapack_routine, real_of

__all__ = ["Roots", "roots", "window", "stemr"]

_MINRGP = 1.0e-3  # xSTEMR's parameter


def _ref(x: object) -> object:
    return ctypes.byref(x)  # type: ignore[arg-type]


def _scale(d: np.ndarray, e: np.ndarray) -> float:
    """``xSTEMR``'s scale factor bringing ``max |T|`` into ``[rmin, rmax]``."""
    fi = np.finfo(d.dtype)
    safmin, eps = float(fi.tiny), float(fi.eps)
    smlnum = safmin / eps
    rmin, rmax = np.sqrt(smlnum), min(np.sqrt(1.0 / smlnum), 1.0 / np.sqrt(np.sqrt(safmin)))
    tnrm = max(float(np.abs(d).max(initial=0.0)), float(np.abs(e).max(initial=0.0)))
    if 0.0 < tnrm < rmin:
        return float(rmin / tnrm)
    if tnrm > rmax:
        return float(rmax / tnrm)
    return 1.0


class Roots:
    """T's root representation and all its eigenvalues (``xLARRE``, ``RANGE='A'``: dqds),
    ready for the eigenvectors of any window (:meth:`window`). Deterministic: labs that
    hold the same (d, e) bitwise get the same eigenvalues bitwise.

    :func:`roots` answers ``None`` for n < 3 and where T splits into blocks."""

    def __init__(self, d: np.ndarray, e: np.ndarray) -> None:
        n = self.n = d.size
        dt = self.dt = real_of(d)
        self.s = _scale(d, e)
        self.d = np.array(d, dtype=dt) * dt.type(self.s)
        self.e = np.zeros(n, dtype=dt)
        self.e[:n - 1] = e
        self.e[:n - 1] *= dt.type(self.s)
        eps = float(np.finfo(dt).eps)
        self.c_t = ctypes.c_float if dt == np.float32 else ctypes.c_double
        self.rtol = (self.c_t(np.sqrt(eps)), self.c_t(max(np.sqrt(eps) * 5.0e-3, 4.0 * eps)))
        self.vl, self.vu, self.pivmin = self.c_t(0.0), self.c_t(0.0), self.c_t(0.0)
        self.nsplit, self.m = ctypes.c_int(0), ctypes.c_int(0)
        self.isplit = np.zeros(n, np.int32)
        self.w, self.werr, self.wgap = np.zeros(n, dt), np.zeros(n, dt), np.zeros(n, dt)
        self.iblock, self.indexw = np.zeros(n, np.int32), np.zeros(n, np.int32)
        self.gers = np.zeros(2 * n, dt)
        work, iwork, info = np.zeros(6 * n, dt), np.zeros(5 * n, np.int32), ctypes.c_int(0)
        e2 = self.e * self.e
        self.p = "s" if dt == np.float32 else "d"
        zero = ctypes.c_int(0)
        lapack_routine(self.p + "larre", 25)(
            _ref(ctypes.c_char(b"A")), _ref(ctypes.c_int(n)), _ref(self.vl), _ref(self.vu),
            _ref(zero), _ref(zero), self.d.ctypes.data, self.e.ctypes.data, e2.ctypes.data,
            _ref(self.rtol[0]), _ref(self.rtol[1]), _ref(self.c_t(-eps)), _ref(self.nsplit),
            self.isplit.ctypes.data, _ref(self.m), self.w.ctypes.data, self.werr.ctypes.data,
            self.wgap.ctypes.data, self.iblock.ctypes.data, self.indexw.ctypes.data,
            self.gers.ctypes.data, _ref(self.pivmin), work.ctypes.data, iwork.ctypes.data,
            _ref(info))
        if info.value:
            raise np.linalg.LinAlgError("Eigenvalues did not converge")

    @property
    def values(self) -> np.ndarray:
        """All eigenvalues, ascending (one block: the root's plus its shift, unscaled)."""
        return (self.w + self.e[self.n - 1]) / self.dt.type(self.s)

    def window(self, lo: int, hi: int) -> Tuple[np.ndarray, np.ndarray]:
        """Eigenvalues ``lo..hi-1`` (ascending, refined) and their eigenvectors as the
        rows of a ``(hi - lo) x n`` array (a view of a buffer with one more row either
        side, where xLARRV keeps the representations of clusters crossing the window's
        edge). Uses up the root: one window per :class:`Roots`."""
        n, dt = self.n, self.dt
        # xLARRV reads and writes only Z's columns DOL-1..DOU+1 (its ZUSEDL..ZUSEDU): a
        # buffer of those columns, passed as if it were column 1's address of all n
        zl, zu = max(lo, 1), min(hi + 1, n)
        Zt = np.zeros((zu - zl + 1, n), dtype=dt)  # C order: row k is Fortran's column zl + k
        z_at = Zt.ctypes.data - (zl - 1) * n * Zt.itemsize
        isuppz = np.zeros(2 * n, np.int32)
        work, iwork, info = np.zeros(12 * n, dt), np.zeros(7 * n, np.int32), ctypes.c_int(0)
        lapack_routine(self.p + "larrv", 25)(
            _ref(ctypes.c_int(n)), _ref(self.vl), _ref(self.vu), self.d.ctypes.data,
            self.e.ctypes.data, _ref(self.pivmin), self.isplit.ctypes.data, _ref(self.m),
            _ref(ctypes.c_int(lo + 1)), _ref(ctypes.c_int(hi)), _ref(self.c_t(_MINRGP)),
            _ref(self.rtol[0]), _ref(self.rtol[1]), self.w.ctypes.data, self.werr.ctypes.data,
            self.wgap.ctypes.data, self.iblock.ctypes.data, self.indexw.ctypes.data,
            self.gers.ctypes.data, z_at, _ref(ctypes.c_int(n)), isuppz.ctypes.data,
            work.ctypes.data, iwork.ctypes.data, _ref(info))
        if info.value:
            raise np.linalg.LinAlgError("Eigenvalues did not converge")
        vals = self.w[lo:hi] / dt.type(self.s)
        return vals, Zt[lo + 1 - zl:hi + 1 - zl]


def roots(d: np.ndarray, e: np.ndarray) -> Optional[Roots]:
    """:class:`Roots` of (d, e), or ``None`` (n < 3, or T splits: xLARRE then lists the
    eigenvalues block by block, not ascending; use :func:`stemr`)."""
    if d.size < 3:
        return None
    r = Roots(d, e)
    return r if r.nsplit.value == 1 and r.m.value == d.size else None


def window(d: np.ndarray, e: np.ndarray, lo: int, hi: int) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """Eigenpairs ``lo..hi-1`` of (d, e) (:meth:`Roots.window`), or ``None`` as :func:`roots`."""
    r = roots(d, e) if hi > lo else None
    return None if r is None else r.window(lo, hi)


def stemr(d: np.ndarray, e: np.ndarray, lo: int, hi: int) -> Tuple[np.ndarray, np.ndarray]:
    """Eigenpairs ``lo..hi-1`` (ascending) by LAPACK ``xSTEMR`` with ``RANGE='I'``
    (bisection for the window's eigenvalues); the eigenvectors as the rows of a
    ``(hi - lo) x n`` array (scipy's wrapper would allocate n x n)."""
    n, k = d.size, hi - lo
    dt = real_of(d)
    dd = np.array(d, dtype=dt, copy=True)
    ee = np.zeros(max(n, 1), dtype=dt)
    ee[:max(n - 1, 0)] = e
    w = np.zeros(max(n, 1), dtype=dt)
    Z = np.zeros((k, n), dtype=dt)  # C order k x n: Fortran's n x k
    isuppz = np.zeros(max(2 * k, 2), dtype=np.int32)
    work = np.zeros(max(18 * n, 1), dtype=dt)
    iwork = np.zeros(max(10 * n, 1), dtype=np.int32)
    m, info = ctypes.c_int(0), ctypes.c_int(0)
    tryrac = ctypes.c_int(1)
    ints = [ctypes.c_int(x) for x in (n, lo + 1, hi, max(n, 1), k, work.size, iwork.size)]
    vl = np.zeros(1, dt)
    lapack_routine("sstemr" if dt == np.float32 else "dstemr", 21)(
        _ref(ctypes.c_char(b"V")), _ref(ctypes.c_char(b"I")), _ref(ints[0]),
        dd.ctypes.data, ee.ctypes.data, vl.ctypes.data, vl.ctypes.data, _ref(ints[1]),
        _ref(ints[2]), _ref(m), w.ctypes.data, Z.ctypes.data, _ref(ints[3]),
        _ref(ints[4]), isuppz.ctypes.data, _ref(tryrac), work.ctypes.data,
        _ref(ints[5]), iwork.ctypes.data, _ref(ints[6]), _ref(info))
    if info.value or m.value != k:
        raise np.linalg.LinAlgError("Eigenvalues did not converge")
    return w[:k], Z
