"""Sorting and sets of codistributed arrays against numpy: ``np.sort``, ``argsort``,
``partition``/``argpartition``, ``unique``, ``searchsorted``, ``isin`` and MATLAB's
``sort``/``unique``, exactly (values, dtype, shape, the order of ties, NaNs last), on every
layout kind, with labs holding nothing, at the client through ``distributed``, and the
same exception types as numpy for bad input, raised on every lab."""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest
from support import fuzz

import spmdlab
from spmdlab import SpmdError, codistributed, codistributor1d, codistributor2dbc, distributed, gather, spmd

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the suites run on the labs

pytestmark = pytest.mark.timeout(600)

OPS = {
    "sort_none": (lambda X, c: np.sort(X, axis=None), "biuf", 0),
    "sort_last": (lambda X, c: np.sort(X), "biufc", 0),
    "sort0": (lambda X, c: np.sort(X, axis=0), "biufc", 0),
    "sort_stable": (lambda X, c: np.sort(X, axis=None, kind="stable"), "biuf", 0),
    "argsort_none": (lambda X, c: np.argsort(X, axis=None, kind="stable"), "biuf", 0),
    "argsort0": (lambda X, c: np.argsort(X, axis=0, stable=True), "biuf", 0),
    "unique": (lambda X, c: np.unique(X), "biuf", 0),
    "unique_index": (lambda X, c: np.unique(X, return_index=True)[1], "biuf", 0),
    "unique_inverse": (lambda X, c: np.unique(X, return_inverse=True)[1], "biuf", 0),
    "unique_counts": (lambda X, c: np.unique(X, return_counts=True)[1], "biuf", 0),
    "unique_nan_apart": (lambda X, c: np.unique(X, return_counts=True, equal_nan=False)[1], "f", 0),
    "searchsorted": (lambda X, c: np.searchsorted(np.sort(X, axis=None), np.array([-1, 0, 0.5, 2, np.nan])),
                     "iuf", 0),
    "searchsorted_right": (lambda X, c: np.searchsorted(np.sort(X, axis=None), 1, side="right"), "iuf", 0),
    "isin": (lambda X, c: np.isin(X, [0, 2, -1]), "biuf", 0),
    "isin_invert": (lambda X, c: np.isin(X, np.array([1, 3]), invert=True), "biuf", 0),
    "partition_kth": (lambda X, c: np.sort(np.partition(X, 0, axis=None)), "biuf", 0),
    "sort_bad_axis": (lambda X, c: np.sort(X, axis=5), "biuf", 0),
    "sort_bad_kind": (lambda X, c: np.sort(X, kind="bogus"), "biuf", 0),
    "partition_out_of_bounds": (lambda X, c: np.sort(np.partition(X, 99, axis=None)), "biuf", 0),
}


test_sorting_agrees_with_numpy_on_every_layout = fuzz.on_every_layout(OPS, nans=True)
test_sorting_agrees_with_numpy_at_the_client = fuzz.at_the_client(OPS, nans=True)


# --------------------------------------------------------------------------- exact suites on the labs
def _same(got, want) -> bool:
    g = gather(got) if isinstance(got, (codistributed, distributed)) else got
    g, w = np.asarray(g), np.asarray(want)
    return g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w, equal_nan=w.dtype.kind in "fc")


def _arrays(n):
    rng = np.random.default_rng(7)
    ties = rng.integers(0, 4, 300).astype(np.float64)
    ties[::9] = np.nan
    big = rng.standard_normal(5000)
    return {
        "ties": ties,
        "ints": rng.integers(-5, 5, 401),
        "bools": rng.random(100) > 0.3,
        "equal": np.full(257, 3.0),
        "all_nan": np.full(10, np.nan),
        "one": np.array([2.5]),
        "empty": np.zeros(0),
        "big": big,
        "int32": rng.integers(0, 1000, 3000).astype(np.int32),
        "f32": rng.standard_normal(999).astype(np.float32),
        "matrix": rng.integers(0, 6, (37, 11)).astype(np.float64),
    }


def _layouts(X, n):
    if X.ndim == 2:
        return [codistributor1d(1), codistributor1d(2), codistributor2dbc(None, 4)]
    out = [codistributor1d(1)]
    if n > 1 and X.size:
        out.append(codistributor1d(1, [0] * (n - 1) + [X.size]))  # every lab but the last holds nothing
        out.append(codistributor1d(1, [X.size] + [0] * (n - 1)))
    return out


def _sort_suite():
    bad = []
    n = spmdlab.numlabs()
    for name, X in _arrays(n).items():
        for c in _layouts(X, n):
            D = codistributed(X, c)
            checks = {
                "sort": (np.sort(D, axis=None), np.sort(X, axis=None)),
                "sort_axis": (np.sort(D), np.sort(X)),
                "argsort": (np.argsort(D, axis=None, kind="stable"), np.argsort(X, axis=None, kind="stable")),
                "argsort_axis0": (np.argsort(D, axis=0, kind="stable"), np.argsort(X, axis=0, kind="stable")),
                "unique": (np.unique(D), np.unique(X)),
            }
            if X.size:
                for k in (0, X.size // 2, -1):
                    checks[f"partition{k}"] = (np.partition(D, k, axis=None)[k], np.partition(X, k, axis=None)[k])
                    checks[f"argpartition{k}"] = (np.argpartition(D, k, axis=None)[k],
                                                  np.argsort(X, axis=None, kind="stable")[k])
            for flag, i in (("return_index", 1), ("return_inverse", 1), ("return_counts", 1)):
                checks[flag] = (np.unique(D, **{flag: True})[i], np.unique(X, **{flag: True})[i])
            both = (np.unique(D, return_index=True, return_inverse=True, return_counts=True),
                    np.unique(X, return_index=True, return_inverse=True, return_counts=True))
            for i in range(4):
                checks[f"unique_all{i}"] = (both[0][i], both[1][i])
            if X.ndim == 1 and X.dtype.kind != "b":
                S, s = np.sort(D), np.sort(X)
                v = np.array([-10, 0, 1, 2.5, 3, 100, np.nan])
                for side in ("left", "right"):
                    checks[f"searchsorted_{side}"] = (np.searchsorted(S, v, side=side), np.searchsorted(s, v, side=side))
                checks["searchsorted_dist_v"] = (np.searchsorted(S, codistributed(v)), np.searchsorted(s, v))
                checks["isin_dist"] = (np.isin(D, codistributed(X[:5])), np.isin(X, X[:5]))
            for key, (got, want) in checks.items():
                if not _same(got, want):
                    bad.append(f"{name} {c!r} {key}: {got!r} != {want!r}")
    return bad


@pytest.mark.parametrize("n", [1, 2, 3])
def test_sort_unique_search_exact_with_ties_nans_and_labs_holding_nothing(pools, n):
    with spmd(pool=pools(n), timeout=300):
        bad = _sort_suite()
    assert bad[1] == [], bad[1][:5]


def _balance():
    """The sample sort leaves each lab about N / n elements, also for many ties."""
    rng = np.random.default_rng(0)
    out = []
    for X in (rng.standard_normal(30000), np.zeros(30000), rng.integers(0, 3, 30000)):
        S = np.sort(codistributed(X))
        out.append(int(spmdlab.getLocalPart(S).size))
    return out


def test_sample_sort_balances_even_with_ties(pools):
    with spmd(pool=pools(3), timeout=300):
        sizes = _balance()
    for lab in (1, 2, 3):
        assert all(6000 <= s <= 14000 for s in sizes[lab]), sizes[lab]


def _errors():
    """Each bad call: numpy's exception type and the codistributed one (on this lab)."""
    X = np.arange(12.0).reshape(3, 4)
    D = codistributed(X)
    calls = {
        "axis": lambda A: np.sort(A, axis=2),
        "kind": lambda A: np.argsort(A, kind="bogus"),
        "kth": lambda A: np.partition(A, 7),
        "kth_type": lambda A: np.partition(A, 1.5),
        "unique_axis": lambda A: np.unique(A, axis=3),
        "searchsorted_2d": lambda A: np.searchsorted(A, 1.0),
        "searchsorted_side": lambda A: np.searchsorted(A.ravel(), 1.0, side="middle"),
        "isin_kind": lambda A: np.isin(A, [1.0], kind="bogus"),
    }
    return fuzz.exception_kinds(calls, X, D)


def test_bad_input_raises_numpys_exception_types_on_every_lab(pools):
    fuzz.assert_numpys_exception_kinds(pools(3), _errors)


def test_an_error_is_raised_on_every_lab_and_the_pool_stays_usable(pools):
    pool = pools(3)
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool, timeout=120):
            D = codistributed(np.arange(10.0))
            np.partition(D, 10)
    assert "Error detected on labs 1-3" in str(info.value), str(info.value)
    assert "kth(=10) out of bounds (10)" in str(info.value)
    with spmd(pool=pool, timeout=120):
        ok = bool(np.array_equal(gather(np.sort(codistributed(np.arange(10.0)[::-1]))), np.arange(10.0)))
    assert all(ok[k] for k in (1, 2, 3))


def test_at_the_client_through_distributed(pools):
    pool = pools(2)
    rng = np.random.default_rng(3)
    X = rng.integers(0, 50, 1001).astype(np.float64)
    X[::17] = np.nan
    D = distributed(X, pool=pool)
    assert _same(np.sort(D), np.sort(X))
    assert _same(np.argsort(D, kind="stable"), np.argsort(X, kind="stable"))
    for got, want in zip(np.unique(D, return_index=True, return_inverse=True, return_counts=True),
                         np.unique(X, return_index=True, return_inverse=True, return_counts=True)):
        assert _same(got, want)
    S = np.sort(D)
    assert _same(np.searchsorted(S, np.array([0.0, 10.5, 49.0])), np.searchsorted(np.sort(X), [0.0, 10.5, 49.0]))
    assert _same(np.isin(D, [1.0, 2.0]), np.isin(X, [1.0, 2.0]))


def test_matlab_sort_and_unique(pools):
    pool = pools(3)
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, 200).astype(np.float64)
    x[::13] = np.nan
    M = rng.integers(0, 5, (9, 7))
    D, E = distributed(x, pool=pool), distributed(M, pool=pool)
    B, I = spmdlab.sort(D, nargout=2)
    assert _same(B, np.sort(x)) and _same(I, np.argsort(x, kind="stable"))
    B, I = spmdlab.sort(D, 1, "descend", nargout=2)
    order = np.argsort(-np.nan_to_num(x, nan=np.inf), kind="stable")  # descending, NaNs first, ties in order
    assert _same(B, x[order]) and _same(I, order)
    B, I = spmdlab.sort(E, nargout=2)  # along the first dimension, as MATLAB
    assert _same(B, np.sort(M, axis=0)) and _same(I, np.argsort(M, axis=0, kind="stable"))
    B = spmdlab.sort(E, 2, "descend")
    assert _same(B, -np.sort(-M, axis=1))
    C, ia, ic = spmdlab.unique(D, nargout=3)
    want = np.unique(x, return_index=True, return_inverse=True, equal_nan=False)
    assert _same(C, want[0]) and _same(ia, want[1]) and _same(ic, want[2])
    assert int(np.isnan(gather(C)).sum()) == int(np.isnan(x).sum())  # every NaN distinct, as MATLAB


@pytest.mark.nompi
@pytest.mark.parametrize("block", [1, 7, 1 << 15])
def test_counts_below_and_at_pivots_block_by_block(monkeypatch, block):
    """The counting pass of the key sort (block by block, NaN pivots counting the NaNs)
    against numpy's comparisons of the whole part."""
    from spmdlab.arrays.sorting import samplesort
    monkeypatch.setattr(samplesort, "COUNT_BLOCK", block)
    rng = np.random.default_rng(11)
    x = rng.integers(-3, 3, 1000).astype(np.float64)
    x[::7] = np.nan
    for part in (x, x[:0], rng.integers(-3, 3, 999)):
        vals = np.array([-1, 0, 2] + ([np.nan] if part.dtype.kind == "f" else []), dtype=part.dtype)
        nan = np.isnan(part) if part.dtype.kind == "f" else np.zeros(part.size, bool)
        want = [[np.count_nonzero(~nan), np.count_nonzero(nan)] if v != v else
                [np.count_nonzero(part < v), np.count_nonzero(part == v)] for v in vals]
        assert np.array_equal(samplesort._less_equal_counts(part, vals), np.array(want).reshape(-1, 2))


def _large_suite():
    """Parts larger than a counting block, with ties and NaNs: sort, stable argsort and
    unique (first indices, inverse, counts) against numpy on the gathered array."""
    rng = np.random.default_rng(13)
    X = rng.integers(0, 50, 100_003).astype(np.float64)
    X[::11] = np.nan
    Y = rng.standard_normal(90_001)
    bad = []
    for A in (X, Y):
        D = codistributed(A)
        checks = {"sort": (np.sort(D), np.sort(A)),
                  "argsort": (np.argsort(D, kind="stable"), np.argsort(A, kind="stable"))}
        for i, (g, w) in enumerate(zip(np.unique(D, return_index=True, return_inverse=True, return_counts=True),
                                       np.unique(A, return_index=True, return_inverse=True, return_counts=True))):
            checks[f"unique{i}"] = (g, w)
        bad += [key for key, (got, want) in checks.items() if not _same(got, want)]
    return bad


@pytest.mark.parametrize("n", [2, 3])
def test_sort_and_unique_of_parts_larger_than_a_counting_block(pools, n):
    with spmd(pool=pools(n), timeout=300):
        bad = _large_suite()
    assert all(bad[lab] == [] for lab in range(1, n + 1)), bad[1]
