"""The differential fuzzing machinery (tests/arrays/test_differential.py and the tests of
each family of numpy functions): hypothesis draws a case at the client (a shape, possibly
with zero-length dimensions, a dtype, a layout of every kind, a pool size, values with many
ties and, when asked, NaNs, and a few operations from an ``ops`` table); the labs build the
codistributed array, apply each operation to it and to the replicated numpy array, and
report every difference in result kind, shape, dtype, values or raised exception type. An
operation the codistributed arrays do not support (``NotImplementedError``) is skipped.

``ops`` maps a name to ``(fn(X, case), dtype kinds it applies to, tolerance)``; ``fn``
receives a numpy or a codistributed ``X`` and the case (``case["picks"]``: raw draws for
index keys, ``case["seed"]``: for more random values).
"""
from __future__ import annotations

import os
import sys
import warnings

import cloudpickle
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
    redistribute,
    spmd,
)

__all__ = ["DTYPES", "EXAMPLES", "LABS", "assert_numpys_exception_kinds", "at_the_client", "budget", "cases",
           "check_case", "exception_kinds", "on_every_layout", "run_case"]

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # check_case runs on the labs

# The CI budget: 40 derandomized cases per pool size; SPMDLAB_FUZZ_EXAMPLES=5000
# SPMDLAB_FUZZ_LABS=1,2,3,4,5 for a longer, random run.
EXAMPLES = int(os.environ.get("SPMDLAB_FUZZ_EXAMPLES", "40"))
LABS = [int(n) for n in os.environ.get("SPMDLAB_FUZZ_LABS", "1,2,3").split(",")]


def budget():
    """hypothesis's settings for a differential test: the budget above, no deadline."""
    return settings(max_examples=EXAMPLES, deadline=None, derandomize="SPMDLAB_FUZZ_EXAMPLES" not in os.environ,
                    database=None, suppress_health_check=list(HealthCheck))


DTYPES = ["bool", "int8", "int64", "uint16", "float32", "float64", ">f8", ">i4", "complex64", "complex128"]


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
    X = X.astype(dtype)
    if case.get("nans") and dtype.kind in "fc" and X.size:
        X[rng.random(X.shape) < 0.2] = np.nan  # NaNs among ties
    return X


def _outcome(fn, X, case):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return "ok", fn(X, case)
    except NotImplementedError as exc:
        return "unsupported", exc
    except Exception as exc:
        return "error", exc


class Replicated:
    """An operation's result that is replicated by design (eigenvalues, singular values):
    an ndarray on every lab, as numpy returns it, never a codistributed array."""

    def __init__(self, value) -> None:
        self.value = value


def _differs(got, want, tol) -> str:
    """Why the codistributed result ``got`` is not numpy's ``want`` ('' if it is)."""
    if isinstance(want, Replicated):
        got, want = got.value, want.value
        if isinstance(got, codistributed):
            return "expected a replicated value, got a codistributed array"
        g = got
    elif isinstance(want, np.ndarray) and want.ndim > 0:
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


def exception_kinds(calls: dict, *arrays) -> dict:
    """On a lab: for each ``calls[key](A)``, the name of the exception it raised on each of
    ``arrays`` (None where it returned), to compare numpy's kinds with ours."""
    out = {}
    for key, call in calls.items():
        kinds = []
        for A in arrays:
            try:
                call(A)
                kinds.append(None)
            except Exception as exc:
                kinds.append(type(exc).__name__)
        out[key] = kinds
    return out


def assert_numpys_exception_kinds(pool, probe, *args, timeout: float = 300) -> None:
    """At the client: run ``probe(*args)`` on every lab of ``pool`` (a lab-side function
    returning ``exception_kinds(calls, X, D)`` for a numpy ``X`` and a codistributed ``D``)
    and assert that on every lab each bad call raised, with numpy's exception type."""
    with spmd(pool=pool, timeout=timeout):
        kinds = probe(*args)
    for lab in range(1, pool.numlabs + 1):
        assert kinds[lab], (lab, "the probe made no calls")
        for key, (want, got) in kinds[lab].items():
            assert want is not None and got == want, (lab, key, want, got)


def check_case(case, ops: dict) -> list:
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
        fn, kinds, tol = ops[name]
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
def cases(draw, n, ops: dict, nans: bool = False):
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
            "nans": nans and draw(st.booleans()),
            "ops": draw(st.lists(st.sampled_from(sorted(ops)), min_size=1, max_size=6, unique=True))}


def run_case(pool, case, ops: dict) -> list:
    with spmd(pool=pool, timeout=60):
        bad = check_case(case, ops)
    return sorted({msg for lab in range(1, len(bad) + 1) for msg in bad[lab]})


# --------------------------------------------------------------------------- the tests
def on_every_layout(ops: dict, nans: bool = False):
    """A family's differential test on pools of every size in ``LABS``:
    ``test_x_agrees_with_numpy = fuzz.on_every_layout(OPS)`` in its test module."""

    @pytest.mark.parametrize("n", LABS)
    def test(pools, n):
        pool = pools(n)

        @budget()
        @given(cases(n, ops, nans=nans))
        def check(case):
            bad = run_case(pool, case, ops)
            assert bad == [], (case, bad)

        check()

    return test


def at_the_client(ops: dict, nans: bool = False):
    """The same cases run in this process (the numpy fallbacks the client uses), no MPI."""

    @pytest.mark.nompi
    @given(cases(1, ops, nans=nans))
    @budget()
    def test(case):
        bad = check_case(case, ops)
        assert bad == [], (case, bad)

    return test
