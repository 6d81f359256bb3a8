"""Issue 23's pure pieces of the dense factorizations, without MPI: the measured
block-size table (``linalg/blocksizes.py``) and the row-run zeroing of a triangle
(``dense._keep_triangle``) against a mask-built reference on many grids."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab.arrays.grid import ProcessGrid
from spmdlab.arrays.linalg import blocksizes
from spmdlab.arrays.linalg.dense import _keep_triangle
from spmdlab.arrays.linalg.grid import DEFAULT_BLOCKSIZE, _blocksize
from spmdlab.layouts.codistributor import codistributor2dbc

pytestmark = pytest.mark.nompi


@pytest.mark.parametrize("what, op", [
    ("numpy.linalg.solve", "lu"), ("mldivide", "lu"), ("lu", "lu"), ("inv", "lu"),
    ("numpy.linalg.slogdet", "lu"), ("chol", "cholesky"), ("numpy.linalg.cholesky", "cholesky"),
    ("numpy.linalg.qr", "qr"), ("lstsq", "qr"), ("numpy.linalg.eigh", ""), ("svd", ""),
])
def test_operation_of_names(what, op):
    assert blocksizes.operation_of(what) == op


def test_table_entries_are_used_and_unknown_grids_take_the_nearest(monkeypatch):
    monkeypatch.setattr(blocksizes, "TABLE", {("lu", 1, 2): 96, ("lu", 2, 2): 32, ("qr", 1, 2): 128})
    assert blocksizes.default_blocksize("numpy.linalg.solve", [1, 2]) == 96
    assert blocksizes.default_blocksize("numpy.linalg.solve", [2, 2]) == 32
    assert blocksizes.default_blocksize("numpy.linalg.solve", [1, 3]) == 96  # 3 labs: nearest count 2
    assert blocksizes.default_blocksize("qr", [4, 1]) == 128
    assert blocksizes.default_blocksize("chol", [1, 2]) == blocksizes.FALLBACK  # no entry at all
    assert _blocksize("numpy.linalg.eigh", [1, 2]) == DEFAULT_BLOCKSIZE
    assert _blocksize("mldivide", [1, 2]) == 96


def test_every_measured_entry_is_the_fastest_or_documented():
    """The table holds the block size that was fastest where a measurement exists."""
    for key, (times, _load, _date) in blocksizes.MEASURED.items():
        assert key in blocksizes.TABLE
        assert blocksizes.TABLE[key] in times


def _reference(a, G, lower, unit, ncols):
    gr = G.global_rows()[:a.shape[0]]
    gc = G.global_cols()[:a.shape[1] if ncols is None else ncols]
    sub = a[:, :gc.size]
    outside = gr[:, None] < gc[None, :] if lower else gr[:, None] > gc[None, :]
    sub[outside] = 0
    if unit:
        sub[gr[:, None] == gc[None, :]] = 1
    return a


@pytest.mark.parametrize("grid", [[1, 1], [1, 2], [2, 1], [2, 2], [1, 3], [3, 2]])
@pytest.mark.parametrize("nb", [1, 3, 16])
def test_keep_triangle_matches_a_mask(grid, nb):
    rng = np.random.default_rng(nb)
    nl = grid[0] * grid[1]
    for m, k in [(7, 7), (13, 5), (5, 13), (40, 33), (1, 1), (0, 3)]:
        c = codistributor2dbc(grid, nb, "row", (m, k))
        for lab in range(1, nl + 1):
            G = ProcessGrid(c, lab, nl)
            a = rng.random((G.mloc, G.nloc))
            for lower in (True, False):
                for unit in (False, True):
                    for ncols in (None, G.nloc // 2):
                        want = _reference(a.copy(), G, lower, unit, ncols)
                        got = _keep_triangle(a.copy(), G, lower, unit, ncols)
                        np.testing.assert_array_equal(got, want)
