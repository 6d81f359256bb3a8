"""Issue 27: the two-stage paths (``band.py``, ``bandsvd.py``): the panels; on one lab
(a 1 x 1 grid, no MPI) the reduction to band form and the band's eigenvalues against
numpy's ``eigvalsh`` for every LAPACK dtype, band widths wider and narrower than the
grid's block, and n below, at and above one panel; on 2-4 labs, hypothesis draws the
size, grid, block, dtype and a small band width (many panels across labs) for both
paths. The public functions on every layout: ``test_linalg_eig``."""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spmdlab import codistributor2dbc, spmd_run
from spmdlab.arrays.grid import ProcessGrid
from spmdlab.arrays.linalg import band as B

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # _band_case travels by value
pytestmark = pytest.mark.timeout(600)


@pytest.mark.nompi
def test_panels_cover_every_column_reaching_beyond_the_band():
    assert list(B.panels(10, 3)) == [0, 3]
    assert list(B.panels(5, 3)) == [0]
    assert list(B.panels(4, 3)) == [] and list(B.panels(1, 3)) == [] and list(B.panels(0, 0)) == []
    for n in range(0, 40):
        for b in range(1, 9):
            js = list(B.panels(n, b))
            assert all(j2 - j1 == b for j1, j2 in zip(js, js[1:]))
            done = (js[-1] + b) if js else 0
            # after the last panel, every column c >= done reaches at most n - 1 <= c + b
            assert n - 1 <= done + b or n == 0


def hermitian(n, dt, seed=0, kind="random"):
    rng = np.random.default_rng(seed)
    if kind == "clustered":
        w = np.resize(np.repeat(rng.standard_normal(max(n // 4, 1)), 4), n)
        Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
        return ((Q * w) @ Q.T).astype(dt)
    A = rng.standard_normal((n, n))
    if np.dtype(dt).kind == "c":
        A = A + 1j * rng.standard_normal((n, n))
    return (A + A.conj().T).astype(dt)


@pytest.mark.nompi
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("n,nb,b", [(0, 4, 32), (1, 4, 32), (2, 4, 32), (3, 2, 32), (37, 5, 32),
                                    (50, 8, 3), (64, 64, 32), (65, 64, 32), (130, 16, 7), (200, 64, 32)])
def test_one_lab_matches_numpy(dt, n, nb, b):
    c = codistributor2dbc([1, 1], nb, "row", (n, n))
    g = ProcessGrid(c, lab=1, numlabs=1)
    for kind in ("random", "clustered"):
        A = hermitian(n, dt, seed=n, kind=kind)
        w = B.band_eigvalsh(A.copy(), g, "numpy.linalg.eigvalsh", b)
        ref = np.linalg.eigvalsh(A)
        assert w.dtype == ref.dtype and w.shape == (n,)
        scale = max(np.abs(ref).max(initial=0.0), 1.0)
        assert np.abs(w - ref).max(initial=0.0) <= 30 * max(n, 1) * np.finfo(w.dtype).eps * scale


@pytest.mark.nompi
def test_the_reduction_leaves_a_band_with_the_same_eigenvalues():
    n, b = 90, 6
    A = hermitian(n, np.float64, 3)
    g = ProcessGrid(codistributor2dbc([1, 1], 16, "row", (n, n)), lab=1, numlabs=1)
    a = A.copy()
    B.reduce_to_band(a, g, "x", b)
    L = np.tril(a)
    i, j = np.indices(L.shape)
    assert not L[i - j > b].any()  # nothing below the band
    H = np.tril(L) + np.tril(L, -1).T
    np.testing.assert_allclose(np.linalg.eigvalsh(H), np.linalg.eigvalsh(A), atol=1e-12 * np.abs(A).max() * n)
    ab = B.band_of(a, g, b, "x")
    assert ab.shape == (b + 1, n)
    for d in range(b + 1):
        np.testing.assert_array_equal(ab[d, :n - d], np.diagonal(a, -d))


# --------------------------------------------------------------------------- several labs
def _band_case(n, m, nb, grid, dt, b, seed):
    """On the labs: both two-stage paths with band width ``b`` (so small matrices still
    take several panels across labs), against numpy on the replicated matrix."""
    import numpy as np

    from spmdlab import codistributed, codistributor2dbc, getCodistributor, getLocalPart, numlabs
    from spmdlab.arrays.grid import ProcessGrid
    from spmdlab.arrays.linalg import band as B
    from spmdlab.arrays.linalg import bandsvd as S
    from spmdlab.arrays.linalg.eigh import _mirror

    p = numlabs()
    shape = {"row": [1, p], "col": [p, 1], "square": [2, p // 2] if p % 2 == 0 else [1, p]}[grid]
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((max(m, n), n))
    if np.dtype(dt).kind == "c":
        X = X + 1j * rng.standard_normal(X.shape)
    X = X.astype(dt)
    out = []
    H = X[:n]
    D = codistributed(H, codistributor2dbc(shape, nb))
    a, g = _mirror(D, "L", "eigvalsh")
    w = B.band_eigvalsh(a, g, "eigvalsh", b)
    ref = np.linalg.eigvalsh(H)
    scale = max(np.abs(ref).max(initial=0.0), 1.0)
    out.append(("eigvalsh", float(np.abs(w - ref).max(initial=0.0) / scale)))
    A = X[:m] if m >= n else X[:n]
    D = codistributed(A, codistributor2dbc(shape, nb))
    g = ProcessGrid(getCodistributor(D)).connect("svd")
    s = S.band_svdvals(np.array(getLocalPart(D), copy=True), g, "svd", b)
    ref = np.linalg.svd(A, compute_uv=False)
    out.append(("svdvals", float(np.abs(s - ref).max(initial=0.0) / max(ref.max(initial=0.0), 1.0))))
    return out


@pytest.mark.parametrize("labs", [2, 3, 4])
def test_several_labs_agree_with_numpy(pools, labs):
    """Hypothesis draws the size, the tall extra rows, the block, the grid's shape, the
    dtype and the band width; every lab's answer is within 60 n eps of numpy's."""
    pool = pools(labs)

    @settings(max_examples=12, deadline=None, derandomize=True)
    @given(st.integers(0, 40), st.integers(0, 20), st.integers(1, 9), st.sampled_from(["row", "col", "square"]),
           st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]), st.integers(1, 7),
           st.integers(0, 2**16))
    def check(n, extra, nb, grid, dt, b, seed):
        res = spmd_run(_band_case, n, n + extra, nb, grid, dt, b, seed, pool=pool, timeout=120)
        eps = np.finfo(dt).eps
        for lab in res:
            for name, err in lab:
                assert err <= 60 * max(n + extra, 1) * eps, (name, err, n, extra, nb, grid, dt, b)

    check()
