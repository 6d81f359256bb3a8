"""Issue 27: the two-stage singular values (``bandsvd.py``): on one lab (a 1 x 1 grid,
no MPI) the reduction to upper band form, the band's storage and xGBBRD, against
numpy's ``svd(compute_uv=False)`` for every LAPACK dtype, tall and square shapes, band
widths wider and narrower than the grid's block, and rank-deficient matrices.
Several labs and grids: ``test_linalg_eig``."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab import codistributor2dbc
from spmdlab.arrays.grid import ProcessGrid
from spmdlab.arrays.linalg import bandsvd as S

pytestmark = pytest.mark.nompi


def matrix(m, n, dt, seed=0, rank=None):
    rng = np.random.default_rng(seed)

    def one(shape):
        x = rng.standard_normal(shape)
        return x + 1j * rng.standard_normal(shape) if np.dtype(dt).kind == "c" else x

    A = one((m, n)) if rank is None else one((m, rank)) @ one((rank, n))
    return A.astype(dt)


def grid(m, n, nb):
    return ProcessGrid(codistributor2dbc([1, 1], nb, "row", (m, n)), lab=1, numlabs=1)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("m,n,nb,b", [(1, 1, 4, 32), (5, 1, 4, 32), (2, 2, 1, 1), (3, 3, 2, 32),
                                      (50, 50, 8, 3), (64, 64, 64, 32), (80, 37, 5, 32),
                                      (300, 130, 16, 7), (200, 200, 64, 32)])
def test_one_lab_matches_numpy(dt, m, n, nb, b):
    for rank in (None, max(n // 3, 1)):
        A = matrix(m, n, dt, seed=m + n, rank=rank)
        s = S.band_svdvals(A.copy(), grid(m, n, nb), "numpy.linalg.svd", b)
        ref = np.linalg.svd(A, compute_uv=False)
        assert s.dtype == ref.dtype and s.shape == (n,)
        assert np.all(np.diff(s) <= 0)
        assert np.abs(s - ref).max() <= 30 * max(m, n) * np.finfo(s.dtype).eps * ref.max()


def test_the_reduction_leaves_an_upper_band_with_the_same_singular_values():
    m, n, b = 120, 90, 6
    A = matrix(m, n, np.float64, 4)
    a = A.copy()
    g = grid(m, n, 16)
    S.reduce_to_upper_band(a, g, "x", b)
    i, j = np.indices(a.shape)
    assert not a[(j < i) | (j - i > b)].any()  # nothing outside the upper band
    np.testing.assert_allclose(np.linalg.svd(a, compute_uv=False), np.linalg.svd(A, compute_uv=False),
                               atol=1e-12 * n)
    ab = S.upper_band_of(a, g, b, "x")
    for c in range(n):
        for r in range(max(c - b, 0), c + 1):
            assert ab[c, b + r - c] == a[r, c]
    d, e = S.gbbrd(ab, n, b)
    Bd = np.diag(d) + np.diag(e, 1)
    np.testing.assert_allclose(np.linalg.svd(Bd, compute_uv=False), np.linalg.svd(A, compute_uv=False),
                               atol=1e-12 * n)
