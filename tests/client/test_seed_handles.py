"""CuPy's and Dagger's names on the client's ``distributed`` handle, on a real pool:
``D.mode``, ``D.get()``, ``D.all_chunks()``, ``itemsize``, ``mT``, ``D.map``,
``D.rand_``, ``D.show``, Dagger's partitions in the display, and ``distributed(X,
AutoBlocks())``; each against numpy or the seed's documented example."""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest

from spmdlab import (
    AutoBlocks,
    codistributorBlocks,
    codistributorChunks,
    distributed,
    gather,
    make_2d_index_map,
    spmd_run,
)

pytestmark = pytest.mark.timeout(240)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def pool(pools):
    return pools(3, current=True)


def test_cupy_names(pool):
    imap = make_2d_index_map([0, 2, 4], [0, 3, 5], [[{1}, {2}], [{3}, {1, 2}]])  # CuPy's docstring map
    X = np.arange(20.0).reshape(4, 5)
    D = distributed(X, codistributorChunks(imap, (4, 5)))
    assert D.mode == "replica" and D.itemsize == 8
    assert np.array_equal(D.get(), X)
    out = np.empty((4, 5))
    assert D.get(out=out) is out and np.array_equal(out, X)
    with pytest.raises(ValueError, match="out must be a numpy array of shape \\(4, 5\\)"):
        D.get(out=np.empty(3))
    chunks = D.all_chunks()
    assert sorted(chunks) == [1, 2, 3]
    for lab, boxes in imap.items():
        assert [c.tolist() for c in chunks[lab]] == [X[b].tolist() for b in boxes]
    assert np.array_equal(gather(D.mT), X.T)
    S = spmd_run(lambda D: __import__("spmdlab").changeMode(D, "sum"), D)
    assert S.mode == "sum"
    total = sum(c.sum() for cs in S.all_chunks().values() for c in cs)  # partial values, as stored
    assert np.isclose(total, X.sum()) and np.array_equal(S.get(), X)
    P = distributed(np.arange(12.0).reshape(3, 4))
    assert {lab: [c.shape for c in cs] for lab, cs in P.all_chunks().items()} == {1: [(3, 2)], 2: [(3, 1)], 3: [(3, 1)]}


def test_dagger_names(pool, capsys):
    D = distributed.rand(100, 100, codist=codistributorBlocks((50, 50)), seed=5)
    text = repr(D)
    assert "distributed array, shape (100, 100), dtype float64, on labs 1-3 with 2×2 partitions of size 50×50" in text
    A = distributed(np.ones((100, 100)), AutoBlocks())
    assert "with 1×3 partitions of size 100×34" in repr(A)
    Z = distributed.zeros(6, 4)
    assert Z.rand_(seed=9) is Z
    assert np.array_equal(gather(Z), gather(distributed.rand(6, 4, seed=9)))
    Z.randn_(seed=1)
    assert np.array_equal(gather(Z), gather(distributed.randn(6, 4, seed=1)))
    M = distributed(np.arange(6).reshape(2, 3)).map(lambda x: x * 10 + 1)
    assert gather(M).tolist() == [[1, 11, 21], [31, 41, 51]]
    capsys.readouterr()
    distributed(np.arange(6).reshape(2, 3)).show(all=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == ["Lab 1: [0, :] [0 1 2]", "Lab 1: [1, :] [3 4 5]"]
