"""Statistics of codistributed arrays against numpy: ``median``/``percentile``/``quantile``
(every method) and their NaN forms by distributed selection, ``histogram``, ``bincount``,
``diff``, ``cumsum``/``cumprod``, ``ptp``, ``average``, ``cov``, ``corrcoef`` and MATLAB's
``median``/``prctile``/``histcounts``/``cumsum``/``cumprod``/``diff``: exact where numpy's
result does not depend on the order of a sum, on every layout kind, at the client, with
numpy's exception types for bad input."""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest
from support import fuzz

import spmdlab
from spmdlab import codistributed, codistributor1d, codistributor2dbc, distributed, gather, spmd
from spmdlab.arrays.stats import selection

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the suites run on the labs

pytestmark = pytest.mark.timeout(600)

METHODS = ["inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
           "hazen", "weibull", "linear", "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint",
           "nearest"]

OPS = {
    "median": (lambda X, c: np.median(X), "biuf", 0),
    "median0": (lambda X, c: np.median(X, axis=0), "biuf", 0),
    "median_keep": (lambda X, c: np.median(X, axis=-1, keepdims=True), "iuf", 0),
    "nanmedian": (lambda X, c: np.nanmedian(X), "f", 0),
    "percentile": (lambda X, c: np.percentile(X, [0, 12.5, 50, 99, 100]), "iuf", 0),
    "percentile_scalar": (lambda X, c: np.percentile(X, 30), "iuf", 0),
    "quantile_method": (lambda X, c: np.quantile(X, [0.1, 0.5, 0.77], method=METHODS[c["seed"] % len(METHODS)]),
                        "iuf", 0),
    "quantile_axis0": (lambda X, c: np.quantile(X, 0.25, axis=0), "iuf", 0),
    "nanquantile": (lambda X, c: np.nanquantile(X, [0.2, 0.9], method=METHODS[c["seed"] % len(METHODS)]), "f", 0),
    "nanpercentile": (lambda X, c: np.nanpercentile(X, 40.0), "f", 0),
    "percentile_bad_q": (lambda X, c: np.percentile(X, 101), "iuf", 0),
    "histogram": (lambda X, c: np.histogram(X)[0], "iuf", 0),
    "histogram_edges": (lambda X, c: np.histogram(X, bins=4)[1], "iuf", 0),
    "histogram_range": (lambda X, c: np.histogram(X, bins=3, range=(-1, 2))[0], "iuf", 0),
    "histogram_array": (lambda X, c: np.histogram(X, bins=[-3, -1, 0, 0.5, 3])[0], "iuf", 0),
    "histogram_sqrt": (lambda X, c: np.histogram(X, bins="sqrt")[0], "iuf", 0),
    "histogram_sturges": (lambda X, c: np.histogram(X, bins="sturges")[1], "iuf", 0),
    "histogram_density": (lambda X, c: np.histogram(X, bins=3, range=(-3, 3), density=True)[0], "iuf", 1e-12),
    "histogram_weights": (lambda X, c: np.histogram(X, bins=3, range=(-3, 3), weights=X)[0], "iuf", 1e-9),
    "bincount": (lambda X, c: np.bincount(X.ravel() if X.ndim > 1 else X), "iu", 0),
    "bincount_abs": (lambda X, c: np.bincount(abs(X), minlength=9), "iu", 0),
    "diff": (lambda X, c: np.diff(X), "biuf", 0),
    "diff0": (lambda X, c: np.diff(X, axis=0), "iuf", 0),
    "diff2": (lambda X, c: np.diff(X, n=2, axis=0), "iuf", 0),
    "diff_prepend": (lambda X, c: np.diff(X, axis=0, prepend=0, append=5), "iuf", 0),
    "diff_negative": (lambda X, c: np.diff(X, n=-1), "iuf", 0),
    "cumsum_none": (lambda X, c: np.cumsum(X), "iu", 0),
    "cumsum_dtype": (lambda X, c: np.cumsum(X, axis=0, dtype=np.float64), "iuf", 1e-12),
    "cumprod_none": (lambda X, c: np.cumprod(X), "iu", 0),
    "ptp": (lambda X, c: np.ptp(X), "iuf", 0),
    "ptp0": (lambda X, c: np.ptp(X, axis=0), "iuf", 0),
    "average": (lambda X, c: np.average(X), "iuf", 1e-9),
    "average_w": (lambda X, c: np.average(X, weights=abs(X) + 1), "iuf", 1e-9),
    "average_returned": (lambda X, c: np.average(X, axis=0, weights=abs(X) + 1, returned=True)[1], "iuf", 1e-9),
    "cov": (lambda X, c: np.cov(X), "iuf", 1e-9),
    "cov_cols": (lambda X, c: np.cov(X, rowvar=False, bias=True), "iuf", 1e-9),
    "corrcoef": (lambda X, c: np.corrcoef(X), "iuf", 1e-9),
}


test_statistics_agree_with_numpy_on_every_layout = fuzz.on_every_layout(OPS, nans=True)
test_statistics_agree_with_numpy_at_the_client = fuzz.at_the_client(OPS, nans=True)


def _same(got, want, tol=0.0) -> bool:
    g = gather(got) if isinstance(got, (codistributed, distributed)) else got
    g, w = np.asarray(g), np.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype:
        return False
    if tol:
        return bool(np.allclose(g, w, rtol=tol, atol=tol, equal_nan=True))
    return bool(np.array_equal(g, w, equal_nan=w.dtype.kind in "fc"))


def _selection_suite():
    """Large enough arrays that the selection samples and narrows (not one gather)."""
    bad = []
    n = spmdlab.numlabs()
    rng = np.random.default_rng(11)
    keep = selection.GATHER_AT_MOST
    selection.GATHER_AT_MOST = 500  # force several rounds of narrowing
    try:
        arrays = {
            "normal": rng.standard_normal(20001),
            "ties": rng.integers(0, 3, 20000).astype(np.float64),
            "equal": np.full(9000, 2.0),
            "ints": rng.integers(-1000, 1000, 15000),
            "f32_nans": np.where(rng.random(12000) < 0.1, np.nan, rng.standard_normal(12000)).astype(np.float32),
            "sorted": np.arange(30000.0),
        }
        for name, X in arrays.items():
            layouts = [codistributor1d(1)]
            if n > 1:
                layouts.append(codistributor1d(1, [X.size] + [0] * (n - 1)))
            for c in layouts:
                D = codistributed(X, c)
                for key, fn in {"median": np.median, "nanmedian": np.nanmedian,
                                "pct": lambda A: np.percentile(A, [0, 1, 25, 50, 75, 99.9, 100]),
                                "nanq": lambda A: np.nanquantile(A, [0.001, 0.5, 0.999], method="nearest"),
                                "q_weibull": lambda A: np.quantile(A, 0.37, method="weibull")}.items():
                    with np.errstate(all="ignore"):
                        got, want = fn(D), fn(X)
                    if not _same(got, want):
                        bad.append(f"{name} {c!r} {key}: {got!r} != {want!r}")
    finally:
        selection.GATHER_AT_MOST = keep
    return bad


@pytest.mark.parametrize("n", [2, 3])
def test_selection_is_exact_after_narrowing(pools, n):
    with spmd(pool=pools(n), timeout=300):
        bad = _selection_suite()
    assert bad[1] == [], bad[1][:5]


def _errors():
    X = np.arange(12.0).reshape(3, 4)
    D = codistributed(X)
    calls = {
        "q_range": lambda A: np.quantile(A, 1.5),
        "method": lambda A: np.percentile(A, 50, method="bogus"),
        "axis": lambda A: np.median(A, axis=4),
        "complex": lambda A: np.percentile(A.astype(complex), 50),
        "bins": lambda A: np.histogram(A, bins=-1),
        "bins_order": lambda A: np.histogram(A, bins=[3, 1, 2]),
        "bins_name": lambda A: np.histogram(A, bins="bogus"),
        "bincount_2d": lambda A: np.bincount(A.astype(int)),
        "bincount_float": lambda A: np.bincount(A.ravel()),
        "bincount_negative": lambda A: np.bincount((A - 5).astype(int).ravel()),
        "diff_n": lambda A: np.diff(A, n=-2),
        "average_zero": lambda A: np.average(A, weights=A * 0),
        "cov_3d": lambda A: np.cov(A.reshape(3, 2, 2)),
    }
    return fuzz.exception_kinds(calls, X, D)


def test_bad_input_raises_numpys_exception_types_on_every_lab(pools):
    fuzz.assert_numpys_exception_kinds(pools(3), _errors)


def test_statistics_at_the_client_and_on_2dbc(pools):
    pool = pools(2)
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 30))
    X[3, 4] = np.nan
    for c in (None, codistributor2dbc(None, 8)):
        D = distributed(X, c, pool=pool)
        assert _same(np.median(D), np.median(X))
        assert _same(np.nanmedian(D), np.nanmedian(X))
        assert _same(np.nanpercentile(D, [10, 90]), np.nanpercentile(X, [10, 90]))
        assert _same(np.median(D, axis=0), np.median(X, axis=0))
        assert _same(np.quantile(D, 0.3, axis=1), np.quantile(X, 0.3, axis=1))
        Y = np.nan_to_num(X)
        E = distributed(Y, c, pool=pool)
        h, e = np.histogram(E, bins=7)
        assert _same(h, np.histogram(Y, bins=7)[0]) and _same(e, np.histogram(Y, bins=7)[1])
        assert _same(np.diff(E, axis=0), np.diff(Y, axis=0)) and _same(np.diff(E), np.diff(Y))
        assert _same(np.cov(E), np.cov(Y), 1e-10) and _same(np.corrcoef(E, rowvar=False), np.corrcoef(Y, rowvar=False),
                                                             1e-10)


def test_matlab_statistics(pools):
    pool = pools(3)
    rng = np.random.default_rng(6)
    M = rng.integers(0, 9, (12, 5)).astype(np.float64)
    x = rng.standard_normal(301)
    x[::10] = np.nan
    D, v = distributed(M, pool=pool), distributed(x, pool=pool)
    assert _same(spmdlab.median(D), np.median(M, axis=0))  # along the first dimension, as MATLAB
    assert _same(spmdlab.median(D, 2), np.median(M, axis=1))
    assert _same(spmdlab.prctile(v, [5, 50, 95]), np.nanpercentile(x, [5, 50, 95], method="hazen"))
    # MATLAB's prctile: the i-th of n sorted values is the 100 (i - 0.5) / n percentile
    y = np.sort(x[~np.isnan(x)])
    assert np.isclose(gather(spmdlab.prctile(v, [100 * 0.5 / y.size]))[0], y[0])
    counts, edges = spmdlab.histcounts(distributed(np.nan_to_num(x), pool=pool), [-3, -1, 0, 1, 3], nargout=2)
    assert _same(counts, np.histogram(np.nan_to_num(x), [-3, -1, 0, 1, 3])[0])
    assert _same(spmdlab.cumsum(D), np.cumsum(M, axis=0)) and _same(spmdlab.cumprod(D, 2), np.cumprod(M, axis=1))
    assert _same(spmdlab.diff(D), np.diff(M, axis=0)) and _same(spmdlab.diff(D, 2, 2), np.diff(M, 2, axis=1))


def test_histogram_keeps_the_weights_byte_order(pools):
    # found by the fuzz: numpy's weighted counts have the weights' dtype, '>f8' included
    with spmd(pool=pools(2), timeout=120):
        out = []
        for n in (0, 7):
            X = np.arange(n, dtype=">f8")
            counts = np.histogram(codistributed(X), bins=3, range=(-3, 3), weights=codistributed(X))[0]
            want = np.histogram(X, bins=3, range=(-3, 3), weights=X)[0]
            out.append((counts.dtype.str, want.dtype.str, np.array_equal(counts, want)))
    assert out[1] == out[2] == [(">f8", ">f8", True)] * 2, out[1]
