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

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    codistributorBlocks,
    codistributorChunks,
    gather,
    getCodistributor,
    redistribute,
    spmd,
)

pytestmark = pytest.mark.timeout(600)

EXAMPLES = int(os.environ.get("SPMDLAB_FUZZ_EXAMPLES", "40"))
LABS = [int(n) for n in os.environ.get("SPMDLAB_FUZZ_LABS", "1,2,3").split(",")]
DTYPES = ["bool", "int8", "int64", "uint16", "float32", "float64", ">f8", ">i4", "complex64", "complex128"]


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
    "pow2_plus_c64": (lambda X, c: X ** 2 + X.astype(np.complex64), "biufc", 1e-5),
    "plus_f32": (lambda X, c: X + X.astype(np.float32), "biuf", 1e-6),
}


# --------------------------------------------------------------------------- lab side
def _layout(case, n):
    kind, arg, part = case["layout"]
    shape = tuple(case["shape"])
    nd = len(shape)
    if kind == "2dbc":
        return codistributor2dbc(None, arg)
    if kind == "blocks":
        return codistributorBlocks((arg,) * nd, "cyclicrow", shape)
    if kind == "chunks":  # lab k's share of the first dimension grown by one each side (overlaps)
        starts = np.concatenate(([0], np.cumsum(codistributor1d.defaultPartition(shape[0], n))))
        rest = (slice(None),) * (nd - 1)
        return codistributorChunks({k: [(slice(max(0, int(starts[k - 1]) - 1), min(shape[0], int(starts[k]) + 1)),)
                                        + rest] for k in range(1, n + 1)}, shape)
    dim = arg % nd + 1
    if kind == "halo":
        return codistributor1d(dim, None, shape, halo=1)
    if part is None:
        return codistributor1d(dim)
    extent = case["shape"][dim - 1]
    cuts = sorted(p % (extent + 1) for p in part[:n - 1])
    return codistributor1d(dim, [b - a for a, b in zip([0] + cuts, cuts + [extent])])


def _values(case):
    rng = np.random.default_rng(case["seed"])
    X = rng.integers(-3, 4, size=case["shape"])
    dtype = np.dtype(case["dtype"])
    if dtype.kind == "b":
        return X > 0
    if dtype.kind == "c":
        return (X + 1j * rng.integers(-2, 3, size=case["shape"])).astype(dtype)
    if dtype.kind == "u":
        X = np.abs(X)
    return X.astype(dtype)


def _outcome(fn, X, case):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return "ok", fn(X, case)
    except NotImplementedError as exc:
        return "unsupported", exc
    except Exception as exc:
        return "error", exc


def _differs(got, want, tol) -> str:
    """Why the codistributed result ``got`` is not numpy's ``want`` ('' if it is)."""
    if isinstance(want, np.ndarray) and want.ndim > 0:
        if not isinstance(got, codistributed):
            return f"expected a codistributed array, got {type(got).__name__}"
        g = gather(got)
    else:
        if isinstance(got, codistributed):
            return "expected a replicated value, got a codistributed array"
        g = got
    g_arr, w_arr = np.asarray(g), np.asarray(want)
    if g_arr.shape != w_arr.shape:
        return f"shape {g_arr.shape} != numpy's {w_arr.shape}"
    if type(want) is not type(g) and not (isinstance(want, np.ndarray) and isinstance(got, codistributed)):
        return f"type {type(g).__name__} != numpy's {type(want).__name__}"
    if isinstance(want, (np.ndarray, np.generic)) and g_arr.dtype.str != w_arr.dtype.str:
        return f"dtype {g_arr.dtype.str} != numpy's {w_arr.dtype.str}"
    if tol and w_arr.dtype.kind in "fc":
        same = np.allclose(g_arr, w_arr, rtol=tol, atol=tol, equal_nan=True)
    else:
        same = np.array_equal(g_arr, w_arr, equal_nan=w_arr.dtype.kind in "fc")
    return "" if same else f"values {g_arr!r} != numpy's {w_arr!r}"


def check_case(case) -> list:
    """On every lab: the differences between the codistributed and numpy outcomes."""
    X = _values(case)
    bad = []
    try:
        D = codistributed(X, _layout(case, case["n"]))
        if case["redistribute"]:
            D = redistribute(D, codistributor1d())
    except NotImplementedError:
        return []
    for name in case["ops"]:
        fn, kinds, tol = OPS[name]
        if X.dtype.kind not in kinds:
            continue
        want = _outcome(fn, X, case)
        got = _outcome(fn, D, case)
        if got[0] == "unsupported":
            continue
        if want[0] == "error" or got[0] == "error":
            if want[0] != got[0] or type(want[1]) is not type(got[1]):
                bad.append(f"{name}: numpy {want[0]} {want[1]!r}, codistributed {got[0]} {got[1]!r}")
            continue
        why = _differs(got[1], want[1], tol)
        if why:
            bad.append(f"{name}: {why}")
    return bad


# --------------------------------------------------------------------------- the client
@st.composite
def cases(draw, n):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    kind = draw(st.sampled_from(["1d", "1d", "2dbc", "blocks", "chunks", "halo"]))
    if ndim == 2 and kind == "2dbc":
        layout = ("2dbc", draw(st.sampled_from([1, 2, 64])), None)
    elif kind in ("blocks", "chunks", "halo"):
        layout = (kind, draw(st.integers(1, 3)) if kind == "blocks" else draw(st.integers(0, ndim - 1)), None)
    else:
        part = draw(st.none() | st.lists(st.integers(0, 5), min_size=n, max_size=n))
        layout = ("1d", draw(st.integers(0, ndim - 1)), part)
    picks = draw(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 12), st.integers(0, 12),
                                    st.sampled_from([None, 1, 2, 3, -1, -2, -3])),
                          min_size=ndim, max_size=ndim))
    return {"n": n, "shape": shape, "dtype": draw(st.sampled_from(DTYPES)), "layout": layout,
            "seed": draw(st.integers(0, 2**32 - 1)), "picks": picks,
            "redistribute": draw(st.booleans()) and n > 1,
            "ops": draw(st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=6, unique=True))}


def run_case(pool, case) -> list:
    with spmd(pool=pool, timeout=60):
        bad = check_case(case)
    return sorted({msg for lab in range(1, len(bad) + 1) for msg in bad[lab]})


@pytest.mark.parametrize("n", LABS)
def test_codistributed_agrees_with_numpy(pools, n):
    pool = pools(n)
    long_run = "SPMDLAB_FUZZ_EXAMPLES" in os.environ

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=not long_run, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases(n))
    def check(case):
        assert run_case(pool, case) == [], case

    check()


@pytest.mark.nompi
@given(cases(1))
@settings(max_examples=EXAMPLES, deadline=None, derandomize="SPMDLAB_FUZZ_EXAMPLES" not in os.environ,
          database=None, suppress_health_check=list(HealthCheck))
def test_codistributed_agrees_with_numpy_at_the_client(case):
    """The same cases at the client, where arrays behave as on one lab (no MPI, fast)."""
    assert check_case(case) == [], case
