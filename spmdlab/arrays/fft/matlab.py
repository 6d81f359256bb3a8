"""MATLAB's FFT names on codistributed (inside spmd), distributed (at the client) and numpy
arrays: ``fft(X, n, dim)``, ``ifft(X, n, dim, 'symmetric')``, ``fft2(X, m, n)``,
``ifft2``, ``fftn(X, siz)``, ``ifftn`` (DESIGN §7).

``dim`` is 1-based (default: the first dimension that is not 1, as MATLAB); dimensions
beyond ``ndims`` are trailing singleton dimensions, as in MATLAB (a 1-D array is a column;
the result drops the singletons added at the end again). ``n=None``
stands for MATLAB's ``[]``; ``fft2``/``ifft2`` transform the first two dimensions, as
MATLAB's do. ``'symmetric'`` takes X as conjugate symmetric and returns a real result,
computed from the first half of X as ``irfft``/``irfftn`` do. ``transposed=True`` leaves
a codistributed result in the layout of the last all-to-all (see ``spmdlab.arrays.fft``).
The algorithms are those of ``spmdlab.arrays.fft`` (slab transposes, four-step, Bluestein).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ...checks import dim_to_axis
from ..base import is_codist
from . import fft, fft2, fftn, ifft, ifft2, ifftn, irfft, irfft2, irfftn

__all__ = ["matlab_fft", "matlab_ifft", "matlab_fft2", "matlab_ifft2", "matlab_fftn", "matlab_ifftn"]


def _shape(X) -> tuple:
    return tuple(np.shape(X)) if not is_codist(X) else tuple(X.shape)


def _grow(X, nd: int):
    """``X`` with trailing singleton dimensions up to ``nd``: MATLAB's arrays have them
    beyond ``ndims`` (a 1-D array is a column)."""
    shape = _shape(X)
    if len(shape) >= nd:
        return X
    new = shape + (1,) * (nd - len(shape))
    return np.reshape(X, new) if _plain(X) else X.reshape(new)


def _trim(Y, nd: int):
    """``Y`` without the trailing singleton dimensions ``_grow`` added beyond ``nd``."""
    shape = _shape(Y)
    k = len(shape)
    while k > nd and shape[k - 1] == 1:
        k -= 1
    if k == len(shape):
        return Y
    return np.reshape(Y, shape[:k]) if _plain(Y) else Y.reshape(shape[:k])


def _matlab_dim(X, dim, axis) -> tuple:
    """``(X grown to dim's dimensions, 0-based axis, X's ndim)``."""
    shape = _shape(X)
    first = next((k for k, v in enumerate(shape) if v != 1), 0)
    if axis is None and isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) and dim > len(shape):
        return _grow(X, int(dim)), int(dim) - 1, len(shape)  # a trailing singleton dimension
    return X, dim_to_axis(dim, axis, len(shape), default=first), len(shape)


def _flag(flag: Optional[str], what: str) -> bool:
    if flag is None or flag == "nonsymmetric":
        return False
    if flag == "symmetric":
        return True
    raise ValueError(f"{what}: the option must be 'symmetric' or 'nonsymmetric', got {flag!r}")


def _plain(X) -> bool:
    return not is_codist(X)


def matlab_fft(X: Any, n: Optional[int] = None, dim: Optional[int] = None, *, axis: Optional[int] = None,
               transposed: bool = False) -> Any:
    """MATLAB's ``fft(X, n, dim)``: along ``dim`` (1-based; default the first dimension
    that is not 1), cut or zero-padded to ``n`` (None for MATLAB's ``[]``)."""
    X, ax, nd = _matlab_dim(X, dim, axis)
    if _plain(X):
        return _trim(np.fft.fft(X, n, ax), nd)
    return _trim(fft(X, n, ax, transposed=transposed), nd)


def matlab_ifft(X: Any, n: int | str | None = None, dim: int | str | None = None, symflag: Optional[str] = None, *,
                axis: Optional[int] = None, transposed: bool = False) -> Any:
    """MATLAB's ``ifft(X, n, dim)`` and ``ifft(..., 'symmetric')`` (X taken as conjugate
    symmetric: a real result, from the first half of X as ``irfft``)."""
    if isinstance(n, str):
        n, symflag = None, n
    elif isinstance(dim, str):
        dim, symflag = None, dim
    sym = _flag(symflag, "ifft")
    X, ax, nd = _matlab_dim(X, dim, axis)
    if _plain(X):
        m = X.shape[ax] if n is None else n
        return _trim(np.fft.irfft(X, m, ax) if sym else np.fft.ifft(X, n, ax), nd)
    if sym:
        return _trim(irfft(X, X.shape[ax] if n is None else n, ax, transposed=transposed), nd)
    return _trim(ifft(X, n, ax, transposed=transposed), nd)


def _size2(X, m, n):
    if m is None and n is None:
        return None
    if m is None or n is None:
        raise TypeError("fft2(X, m, n) needs both m and n")
    return [m, n]


def matlab_fft2(X: Any, m: Optional[int] = None, n: Optional[int] = None, *, transposed: bool = False) -> Any:
    """MATLAB's ``fft2(X)`` / ``fft2(X, m, n)``: the first two dimensions."""
    s = _size2(X, m, n)
    nd = len(_shape(X))
    X = _grow(X, 2)
    if _plain(X):
        return _trim(np.fft.fft2(X, s, axes=(0, 1)), nd)
    return _trim(fft2(X, s, axes=(0, 1), transposed=transposed), nd)


def matlab_ifft2(X: Any, m: int | str | None = None, n: Optional[int] = None, symflag: Optional[str] = None, *,
                 transposed: bool = False) -> Any:
    """MATLAB's ``ifft2(X, m, n)``, ``ifft2(..., 'symmetric')``."""
    if isinstance(m, str):
        m, symflag = None, m
    sym = _flag(symflag, "ifft2")
    nd = len(_shape(X))
    X = _grow(X, 2)
    s = _size2(X, m, n) or [X.shape[0], X.shape[1]]
    if _plain(X):
        return _trim(np.fft.irfft2(X, s, axes=(0, 1)) if sym else np.fft.ifft2(X, s, axes=(0, 1)), nd)
    if sym:
        return _trim(irfft2(X, s, axes=(0, 1), transposed=transposed), nd)
    return _trim(ifft2(X, s, axes=(0, 1), transposed=transposed), nd)


def matlab_fftn(X: Any, siz: Optional[Sequence[int]] = None, *, transposed: bool = False) -> Any:
    """MATLAB's ``fftn(X)`` / ``fftn(X, siz)``: every dimension."""
    nd = len(_shape(X))
    X = _grow(X, len(siz) if siz is not None else nd)
    axes = list(range(len(siz) if siz is not None else nd))
    if _plain(X):
        return _trim(np.fft.fftn(X, siz, axes), nd)
    return _trim(fftn(X, siz, axes, transposed=transposed), nd)


def matlab_ifftn(X: Any, siz: Sequence[int] | str | None = None, symflag: Optional[str] = None, *,
                 transposed: bool = False) -> Any:
    """MATLAB's ``ifftn(X, siz)``, ``ifftn(..., 'symmetric')``."""
    if isinstance(siz, str):
        siz, symflag = None, siz
    sym = _flag(symflag, "ifftn")
    shape = _shape(X)
    siz = list(shape) if siz is None else list(siz)
    X = _grow(X, len(siz))
    axes = list(range(len(siz)))
    if _plain(X):
        return _trim(np.fft.irfftn(X, siz, axes) if sym else np.fft.ifftn(X, siz, axes), len(shape))
    if sym:
        return _trim(irfftn(X, siz, axes, transposed=transposed), len(shape))
    return _trim(ifftn(X, siz, axes, transposed=transposed), len(shape))
