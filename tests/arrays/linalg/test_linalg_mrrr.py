"""Issue 27: one lab's share of a tridiagonal eigenproblem by MRRR (``mrrr.window``:
xLARRE for all eigenvalues, xLARRV for the window's vectors), against numpy's ``eigh``
of the same tridiagonal; and the fallback (``mrrr.stemr``) where T splits."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab.arrays.linalg import mrrr

pytestmark = pytest.mark.nompi


def tridiagonal(kind: str, n: int, dt, seed: int = 0):
    rng = np.random.default_rng(seed)
    if kind == "random":
        d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    elif kind == "wilkinson":  # W_n^+: pairs of eigenvalues agreeing to many digits
        d, e = np.abs(np.arange(n) - (n - 1) / 2.0), np.ones(n - 1)
    elif kind == "clustered":  # glued copies of one matrix: tight clusters of n/4
        k = max(n // 4, 1)
        d = np.resize(rng.standard_normal(k), n)
        e = np.resize(np.abs(rng.standard_normal(k)) + 0.5, n - 1)
        e[k - 1::k] = 1e-7
    elif kind == "scaled":  # far outside the safe range: xSTEMR's scaling step
        d, e = rng.standard_normal(n) * 1e-160, rng.standard_normal(n - 1) * 1e-160
    else:
        raise ValueError(kind)
    return d.astype(dt), e.astype(dt)


def check(d, e, lo, hi, w, Z):
    n = d.size
    T = np.diag(d.astype(np.float64)) + np.diag(e.astype(np.float64), 1) + np.diag(e.astype(np.float64), -1)
    ref = np.linalg.eigvalsh(T)
    scale = max(np.abs(ref).max(), np.finfo(np.float64).tiny)
    tol = 50 * n * np.finfo(d.dtype).eps
    assert w.shape == (hi - lo,) and Z.shape == (hi - lo, n)
    assert np.all(np.diff(w) >= 0)
    np.testing.assert_allclose(w, ref[lo:hi], rtol=0, atol=tol * scale)
    V = Z.T.astype(np.float64)
    assert np.abs(T @ V - V * w).max() <= tol * scale
    assert np.abs(V.T @ V - np.eye(hi - lo)).max() <= tol


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["random", "wilkinson", "clustered", "scaled"])
@pytest.mark.parametrize("n", [3, 8, 65, 300])
def test_a_window_is_numpys_eigenpairs(kind, n, dt):
    if kind == "scaled" and dt == np.float32:
        pytest.skip("1e-160 underflows float32")
    d, e = tridiagonal(kind, n, dt, seed=n)
    for lo, hi in ((0, n), (0, n // 2), (n // 2, n), (n // 3, n // 3 + 1), (n - 1, n)):
        got = mrrr.window(d, e, lo, hi)
        if got is None:  # T split into blocks: the fallback's answer is held to the same
            got = mrrr.stemr(d, e, lo, hi)
        check(d, e, lo, hi, *got)


def test_windows_of_two_labs_are_orthogonal_to_each_other():
    d, e = tridiagonal("wilkinson", 201, np.float64)
    cut = 100  # through the middle of W_201^+'s close pairs
    w1, Z1 = mrrr.window(d, e, 0, cut)
    w2, Z2 = mrrr.window(d, e, cut, 201)
    V = np.vstack([Z1, Z2]).T
    assert np.abs(V.T @ V - np.eye(201)).max() < 1e-12


def test_a_split_matrix_goes_to_the_fallback():
    d, e = tridiagonal("random", 40, np.float64)
    e[19] = 0.0  # two blocks: xLARRE lists their eigenvalues block by block
    assert mrrr.window(d, e, 0, 20) is None
    check(d, e, 0, 20, *mrrr.stemr(d, e, 0, 20))


def test_small_and_empty_windows_are_left_to_the_fallback():
    d, e = tridiagonal("random", 2, np.float64)
    assert mrrr.window(d, e, 0, 2) is None
    d, e = tridiagonal("random", 10, np.float64)
    assert mrrr.window(d, e, 4, 4) is None


def test_the_window_holds_only_its_own_vectors():
    """xLARRV is given the window's columns and one either side, no n x n buffer."""
    d, e = tridiagonal("random", 300, np.float64)
    for lo, hi, rows in ((100, 150, 52), (0, 10, 11), (290, 300, 11), (0, 300, 300)):
        w, Z = mrrr.window(d, e, lo, hi)
        assert Z.base is not None and Z.base.shape == (rows, 300)
        check(d, e, lo, hi, w, Z)


@pytest.mark.parametrize("kind", ["random", "wilkinson", "scaled"])
def test_the_roots_eigenvalues_are_numpys(kind):
    """The labs choose their windows from these: all of T's eigenvalues, ascending."""
    d, e = tridiagonal(kind, 129, np.float64, seed=5)
    r = mrrr.roots(d, e)
    assert r is not None
    T = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    ref = np.linalg.eigvalsh(T)
    np.testing.assert_allclose(r.values, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    assert np.all(np.diff(r.values) >= 0)
