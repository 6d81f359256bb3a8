"""Issue 27: the two-stage eigenvalue path (``band.py``): the panels, and on one lab
(a 1 x 1 grid, no MPI) the reduction to band form and the band's eigenvalues against
numpy's ``eigvalsh`` for every LAPACK dtype, band widths wider and narrower than the
grid's block, and n below, at and above one panel. Several labs: ``test_linalg_eig``."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab import codistributor2dbc
from spmdlab.arrays.grid import ProcessGrid
from spmdlab.arrays.linalg import band as B

pytestmark = pytest.mark.nompi


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
