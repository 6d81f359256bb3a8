"""Differential test: random codistributed arrays and operations against numpy.

Hypothesis draws a case at the client (a shape, possibly with zero-length dimensions, a
dtype, a layout, a pool size, values and a few operations); the labs build the
codistributed array, apply each operation to it and to the replicated numpy array, and
report every difference in result kind, shape, dtype, values or raised exception type.
An operation the codistributed arrays do not support (``NotImplementedError``) is
skipped, never counted as a difference.

The CI run is bounded to about a minute. To fuzz longer or on more labs::

    SPMDLAB_FUZZ_EXAMPLES=5000 SPMDLAB_FUZZ_LABS=1,2,3,4,5 python -m pytest tests/arrays/test_differential.py

``SPMDLAB_FUZZ_EXAMPLES`` is the number of cases per pool size (default 40); with it
set, cases are random (else derandomized, the same on every run).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from support import fuzz

from spmdlab import (
    codistributed,
    getCodistributor,
)

pytestmark = pytest.mark.timeout(600)



# --------------------------------------------------------------------------- the operations
def _slice_key(shape, picks):
    """An index tuple of ints and slices (negative steps, empty ranges) from raw draws."""
    key = []
    for s, (kind, a, b, step) in zip(shape, picks):
        if kind == 0 and s > 0:
            key.append(a % (2 * s) - s)
        else:
            key.append(slice(None if a == 0 else a - s - 2, None if b == 0 else b - s - 2, step))
    return tuple(key)


def _reshape_target(shape):
    size = int(np.prod(shape))
    if size == 0:
        return (0, -1) if len(shape) > 1 and max(shape) > 0 else (-1,)
    return (-1, size) if size % 2 else (2, -1)


def _set_slice(X, key):
    Y = X.copy()
    Y[key] = 1
    return Y


def _set_mask(X):
    Y = X.copy()
    Y[Y != 0] = 2
    return Y


def _zeros_like(X, dtype):
    """Zeros of X's shape in ``dtype``, in X's layout when X is codistributed (an out=)."""
    Z = np.zeros(X.shape, dtype=dtype)
    return codistributed(Z, getCodistributor(X)) if isinstance(X, codistributed) else Z


def _into(fn, X, dtype):
    """``fn(X, out=E)`` must write into E and return E itself."""
    E = _zeros_like(X, dtype)
    r = fn(X, E)
    return r if r is E else f"returned {type(r).__name__}, not the out= array"


def _inplace(X, op, other):
    Y = X.copy()
    alias = Y
    Y = op(Y, other(X) if callable(other) else other)
    return alias if Y is alias else "in-place operator made a new array"


def _fft_dtype(X):
    return np.fft.fft(np.zeros(1, X.dtype)).dtype


# name -> (function of X (numpy or codistributed), dtype kinds it applies to, tolerance)
def _nan_to_num_in_place(X):
    """``nan_to_num(copy=False)`` returns its argument, changed where it held NaN or inf."""
    Y = X * np.inf if X.dtype.kind in "fc" else X + 0
    R = np.nan_to_num(Y, copy=False, neginf=-3.0)
    assert R is Y
    return Y


OPS = {
    "neg": (lambda X, c: -X, "iufc", 0),
    "abs": (lambda X, c: abs(X), "biufc", 0),
    "invert": (lambda X, c: ~X, "biu", 0),
    "conj": (lambda X, c: X.conj(), "biufc", 0),
    "square": (lambda X, c: X ** 2, "biufc", 0),
    "reciprocal": (lambda X, c: X ** -1, "fc", 0),
    "sqrt_pow": (lambda X, c: X ** 0.5, "fc", 0),
    "affine": (lambda X, c: X * 2 + 1, "iufc", 0),
    "add_self": (lambda X, c: X + X, "biufc", 0),
    "compare": (lambda X, c: X > 0, "biuf", 0),
    "sin": (lambda X, c: np.sin(X), "fc", 1e-6),
    "sum": (lambda X, c: X.sum(), "biufc", 1e-5),
    "sum0": (lambda X, c: X.sum(axis=0), "biufc", 1e-5),
    "sum_last": (lambda X, c: X.sum(axis=-1), "biufc", 1e-5),
    "prod0": (lambda X, c: X.prod(axis=0), "biu", 0),
    "max": (lambda X, c: X.max(), "biuf", 0),
    "min_last": (lambda X, c: X.min(axis=-1), "biuf", 0),
    "mean": (lambda X, c: X.mean(), "biuf", 1e-5),
    "any": (lambda X, c: X.any(), "biufc", 0),
    "all0": (lambda X, c: X.all(axis=0), "biufc", 0),
    "argmax": (lambda X, c: X.argmax(), "biuf", 0),
    "argmin0": (lambda X, c: X.argmin(axis=0), "biuf", 0),
    "cumsum": (lambda X, c: X.cumsum(), "iuf", 1e-5),
    "cumsum0": (lambda X, c: X.cumsum(axis=0), "iuf", 1e-5),
    "getitem": (lambda X, c: X[_slice_key(X.shape, c["picks"])], "biufc", 0),
    "getitem_of_getitem": (lambda X, c: (lambda R: R[R != 0] if R.ndim else R)(X[_slice_key(X.shape, c["picks"])]),
                           "biufc", 0),
    "mask": (lambda X, c: X[X != 0], "biufc", 0),
    "item_last": (lambda X, c: X.item(-1), "biufc", 0),
    "reshape": (lambda X, c: X.reshape(_reshape_target(X.shape)), "biufc", 0),
    "ravel": (lambda X, c: X.ravel(), "biufc", 0),
    "squeeze": (lambda X, c: X.squeeze(), "biufc", 0),
    "transpose": (lambda X, c: X.T, "biufc", 0),
    "set_slice": (lambda X, c: _set_slice(X, _slice_key(X.shape, c["picks"])), "biufc", 0),
    "set_mask": (lambda X, c: _set_mask(X), "biufc", 0),
    "float": (lambda X, c: float(X), "biuf", 0),
    # issue 19: out=, in-place operators, norms of empty and stacked arrays, byte orders, promotion
    "out_sqrt": (lambda X, c: _into(lambda a, e: np.sqrt(a, out=e), X, np.sqrt(np.zeros(1, X.dtype)).dtype),
                 "fc", 1e-6),
    "out_add": (lambda X, c: _into(lambda a, e: np.add(a, a, out=e), X, np.add(X[:0], X[:0]).dtype), "biufc", 0),
    "out_fft": (lambda X, c: _into(lambda a, e: np.fft.fft(a, out=e), X, _fft_dtype(X)), "fc", 1e-5),
    "iadd": (lambda X, c: _inplace(X, lambda a, b: a.__iadd__(b), 1), "iufc", 0),
    "imul_self": (lambda X, c: _inplace(X, lambda a, b: a.__imul__(b), lambda Z: Z), "biufc", 0),
    "iadd_float": (lambda X, c: _inplace(X, lambda a, b: a.__iadd__(b), 1.5), "biufc", 0),
    "vnorm_inf": (lambda X, c: np.linalg.vector_norm(X, ord=np.inf), "biufc", 1e-6),
    "vnorm_keep": (lambda X, c: np.linalg.vector_norm(X, ord=0.5, keepdims=True), "biuf", 1e-5),
    "norm": (lambda X, c: np.linalg.norm(X), "biufc", 1e-5),
    "norm_1": (lambda X, c: np.linalg.norm(X, 1), "biufc", 1e-5),
    "norm_inf": (lambda X, c: np.linalg.norm(X, np.inf), "biufc", 1e-5),
    "mnorm_1": (lambda X, c: np.linalg.matrix_norm(X, ord=1), "biufc", 1e-5),
    "mnorm_fro": (lambda X, c: np.linalg.matrix_norm(X), "biufc", 1e-5),
    "triu": (lambda X, c: np.triu(X), "biufc", 0),
    # issue 27: the two-stage eigenvalue and singular value paths (stacks: NotImplementedError)
    "eigvalsh": (lambda X, c: fuzz.Replicated(np.linalg.eigvalsh(X)), "biufc", 1e-5),
    "svdvals": (lambda X, c: fuzz.Replicated(np.linalg.svd(X, compute_uv=False)), "biufc", 1e-5),
    # np.nan_to_num, copied and in place (X * inf: NaN where X is 0, infinities elsewhere)
    "nan_to_num": (lambda X, c: np.nan_to_num(X * np.inf, nan=-1.0, posinf=7.0), "f", 0),
    "nan_to_num_default": (lambda X, c: np.nan_to_num(X * np.inf), "fc", 0),
    "nan_to_num_in_place": (lambda X, c: _nan_to_num_in_place(X), "biufc", 0),
    "pow2_plus_c64": (lambda X, c: X ** 2 + X.astype(np.complex64), "biufc", 1e-5),
    "plus_f32": (lambda X, c: X + X.astype(np.float32), "biuf", 1e-6),
}


@pytest.mark.parametrize("n", fuzz.LABS)
def test_codistributed_agrees_with_numpy(pools, n):
    pool = pools(n)

    @fuzz.budget()
    @given(fuzz.cases(n, OPS))
    def check(case):
        assert fuzz.run_case(pool, case, OPS) == [], case

    check()


@pytest.mark.nompi
@given(fuzz.cases(1, OPS))
@fuzz.budget()
def test_codistributed_agrees_with_numpy_at_the_client(case):
    """The same cases at the client, where arrays behave as on one lab (no MPI, fast)."""
    assert fuzz.check_case(case, OPS) == [], case
