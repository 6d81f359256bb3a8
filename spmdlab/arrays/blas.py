"""In-place GEMM on strided views through scipy's BLAS (``scipy.linalg.cython_blas``).

``scipy.linalg.blas.dgemm`` (f2py) copies any operand that is not a whole contiguous
array, so ``A[r0:, c0:] -= L @ U`` on a sub-block of a local part would cost a copy of
the trailing matrix per step. The BLAS routines scipy exports for Cython take leading
dimensions, so this module calls them through ``ctypes`` on the function pointers in
``scipy.linalg.cython_blas.__pyx_capi__`` (the same library scipy itself uses): the
update runs in place on the view, with no copy and no temporary of the result's size.

Any 2-D view whose elements are contiguous along one axis works (row-major views are
passed as their transpose in column-major terms).
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["gemm", "supported"]

_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}
_SCALAR: dict[str, Callable[..., Any]] = {"s": ctypes.c_float, "d": ctypes.c_double,
           "c": ctypes.c_float * 2, "z": ctypes.c_double * 2}
_funcs: dict[str, Callable[..., Any]] = {}


def supported(dtype: Any) -> bool:
    return np.dtype(dtype) in _PREFIX


def _load(name: str) -> Callable[..., Any]:
    f = _funcs.get(name)
    if f is None:
        from scipy.linalg import cython_blas

        capsule = cython_blas.__pyx_capi__[name]
        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
        get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        address = get_ptr(capsule, get_name(capsule))
        # all Fortran arguments are pointers; ctypes releases the GIL during the call
        f = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 13))(address)
        _funcs[name] = f
    return f


def _colmajor(X: np.ndarray) -> tuple[bool, int]:
    """``(transposed, ld)``: X's memory as a column-major matrix is X (False) or X.T
    (True) with leading dimension ld. Raises if X is not contiguous along either axis."""
    it = X.itemsize
    r, c = X.shape
    s0, s1 = X.strides
    if (s0 == it or r <= 1) and (c <= 1 or s1 % it == 0 and s1 // it >= max(1, r)):
        return False, max(1, r, s1 // it if c > 1 else 1)
    if (s1 == it or c <= 1) and (r <= 1 or s0 % it == 0 and s0 // it >= max(1, c)):
        return True, max(1, c, s0 // it if r > 1 else 1)
    raise ValueError("gemm needs views contiguous along one axis")


def _scalar(p: str, v: complex) -> Any:
    t = _SCALAR[p]
    if p in "sd":
        return t(v.real)
    return t(v.real, v.imag)


def gemm(alpha: complex, A: np.ndarray, B: np.ndarray, beta: complex, C: np.ndarray) -> None:
    """``C[...] = alpha * A @ B + beta * C`` in place (BLAS xGEMM). A, B, C 2-D of one
    dtype (float32/64, complex64/128), each contiguous along one axis."""
    m, k = A.shape
    k2, n = B.shape
    if k != k2 or C.shape != (m, n):
        raise ValueError(f"gemm: shapes {A.shape} @ {B.shape} -> {C.shape}")
    if m == 0 or n == 0:
        return
    if k == 0:
        C *= beta
        return
    p = _PREFIX[C.dtype]
    if A.dtype != C.dtype or B.dtype != C.dtype:
        raise TypeError("gemm: operands must share one dtype")
    if not C.flags.writeable:
        raise ValueError("gemm: C is read-only")
    try:
        ta, lda = _colmajor(A)
    except ValueError:
        A = np.ascontiguousarray(A)
        ta, lda = _colmajor(A)
    try:
        tb, ldb = _colmajor(B)
    except ValueError:
        B = np.ascontiguousarray(B)
        tb, ldb = _colmajor(B)
    tc, ldc = _colmajor(C)
    if not tc:  # C col-major: C = op(A) op(B)
        args = (b"T" if ta else b"N", b"T" if tb else b"N", m, n, k, A, lda, B, ldb, ldc)
    else:  # C row-major: C.T = op(B.T) op(A.T)
        args = (b"N" if tb else b"T", b"N" if ta else b"T", n, m, k, B, ldb, A, lda, ldc)
    t1, t2, M, N, K, X, ldx, Y, ldy, ldz = args
    ci = ctypes.c_int
    f = _load(p + "gemm")
    al, be = _scalar(p, complex(alpha)), _scalar(p, complex(beta))
    refs = [ctypes.c_char(t1), ctypes.c_char(t2), ci(M), ci(N), ci(K), al, ci(ldx), ci(ldy), be, ci(ldz)]
    ptr = ctypes.addressof
    f(ptr(refs[0]), ptr(refs[1]), ptr(refs[2]), ptr(refs[3]), ptr(refs[4]), ptr(al),
      X.ctypes.data, ptr(refs[6]), Y.ctypes.data, ptr(refs[7]), ptr(be), C.ctypes.data, ptr(refs[9]))
