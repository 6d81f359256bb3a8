"""Client handles of arrays on a process grid of some labs (issue 24), on a real pool.

An array made on a 2x1 grid inside ``spmd`` comes back as a ``distributed``
(``distributedGrid``) whose gather, display, indexing, elementwise operations, reductions
and ``redistribute`` work like any other's, checked against numpy; ``distributed.zeros/
rand/...`` with a grid made at the client build one on the labs.
"""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import codistributed, codistributor1d, codistributor2dbc, distributed, gather, spmd

pytestmark = pytest.mark.timeout(300)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

A = np.arange(1.0, 36.0).reshape(7, 5) / 3


@pytest.mark.parametrize("labs", [[1, 2], [4, 3]])
def test_a_sub_grid_array_from_spmd_is_a_distributed(pool4, labs):
    with spmd(pool=pool4):
        g = spmdlab.grid(2, 1, labs=labs)
        D = codistributed(A, codistributor2dbc(g, (2, 3)))
        E = D * 2  # the result of an operation: labs outside do not know its shape
    for X, want in ((D, A), (E, A * 2)):
        assert isinstance(X, distributed) and X.shape == (7, 5) and X.dtype == np.float64
        assert np.array_equal(gather(X), want) and np.array_equal(X.get(), want)
        assert X.grid.labs == tuple(labs) and X.numlabs_used == 2
    text = repr(D)
    others = "labs 3 and 4" if labs == [1, 2] else "labs 1 and 2"
    assert text.startswith(f"distributed array, shape (7, 5), dtype float64, on labs {labs} as a 2x1 grid "
                           f"({others} hold nothing)")
    assert np.array2string(A, separator=", ").replace("\n", "\n  ") in text  # the values, as numpy shows them
    with np.printoptions(threshold=10, edgeitems=1):  # a big array: only its corners
        assert repr(D).endswith(np.array2string(A, separator=", ", threshold=0, edgeitems=1).replace("\n", "\n  "))
    with pytest.raises(TypeError, match="does not convert to a numpy array implicitly"):
        np.asarray(D)  # as every distributed: gather(D) fetches it
    # elementwise, ufuncs, reductions, indexing: on the grid's labs, results at the client
    assert np.allclose(gather(np.sin(D) + D / 2 - 1), np.sin(A) + A / 2 - 1)
    assert np.allclose(gather(D.sum(axis=0)), A.sum(axis=0))
    assert np.isclose(D.sum(), A.sum()) and np.isclose(float(D.max()), A.max())
    assert float(D[2, 3]) == A[2, 3]
    assert np.array_equal(gather(D[1:6, ::2]), A[1:6, ::2]) and np.array_equal(gather(D.T), A.T)
    F = D.copy()
    F[0, :] = -1
    assert np.array_equal(gather(F)[0], -np.ones(5)) and np.array_equal(gather(D), A)
    chunks = D.all_chunks()
    assert sorted(chunks) == [1, 2, 3, 4] and sum(c[0].size for c in chunks.values()) == A.size
    # redistribute: to the whole pool, and to another grid
    P = D.redistribute(codistributor1d(2))
    assert type(P) is distributed and np.array_equal(gather(P), A)
    h = spmdlab.grid(1, 3, labs=[2, 3, 4])  # made at the client: the labs make its communicator
    H = D.redistribute(codistributor2dbc(h, 2))
    assert H.grid.labs == (2, 3, 4) and np.array_equal(gather(H), A) and H.numlabs_used == 3
    with spmd(pool=pool4):  # back into a block: each lab's SubgridArray again
        K = H + spmdlab.redistribute(D, codistributor2dbc(h, 2))  # every lab: a collective of the block
        ok = (not K.holds) or bool(np.array_equal(gather(K), 2 * A))
    assert list(ok) == [True] * 4


def test_client_constructors_on_a_grid(pool4):
    g = spmdlab.grid(2, 1, labs=[3, 1])  # at the client: the pool's size is checked on the labs
    c = codistributor2dbc(g, (2, 2))
    Z = distributed.zeros(6, 5, codist=c, pool=pool4)
    assert Z.grid.labs == (3, 1) and np.array_equal(gather(Z), np.zeros((6, 5)))
    O = distributed.ones((4, 3), codist=c, dtype=np.int32, pool=pool4)
    assert gather(O).dtype == np.int32 and np.array_equal(gather(O), np.ones((4, 3)))
    assert np.array_equal(gather(distributed.eye(5, codist=c, pool=pool4)), np.eye(5))
    R = gather(distributed.rand(9, 4, codist=c, seed=7, pool=pool4))
    assert R.shape == (9, 4) and ((R >= 0) & (R < 1)).all()
    assert np.array_equal(R, gather(distributed.rand(9, 4, codist=c, seed=7, pool=pool4)))
    assert np.array_equal(gather(Z + 1), np.ones((6, 5))) and "labs 1 and 3 hold nothing" not in repr(Z)


def test_tuple_results_of_a_sub_grid_array(pool4):
    """Functions giving tuples: every lab returns as many values (labs outside learn how
    many from the grid), so the client gets each result, not None."""
    M = np.random.default_rng(0).random((6, 6)) + 6 * np.eye(6)
    with spmd(pool=pool4):
        g = spmdlab.grid(2, 1, labs=[3, 4])  # lab 1, whose value the client would read, is outside
        D = codistributed(M, codistributor2dbc(g, 2))
    Q, R = np.linalg.qr(D)
    assert isinstance(Q, distributed) and np.allclose(gather(Q) @ gather(R), M)
    q, r = np.divmod(D, 0.3)
    assert np.allclose(gather(q), np.divmod(M, 0.3)[0]) and np.allclose(gather(r), np.divmod(M, 0.3)[1])
    q2, _ = divmod(D, 0.3)
    assert np.allclose(gather(q2), M // 0.3)
    rows, cols = np.nonzero(D > 6)
    want = np.nonzero(M > 6)
    assert np.array_equal(gather(rows), want[0]) and np.array_equal(gather(cols), want[1])


@pytest.mark.parametrize("labs", [[1, 2], [4, 3]])
def test_distributed_of_a_client_array_in_a_grid_layout(pool4, labs):
    # MATLAB's distributed(X, codist) with the layout on some labs: built there
    c = codistributor2dbc(spmdlab.grid(2, 1, labs=labs), (2, 2))
    D = distributed(A, c, pool=pool4)
    assert type(D).__name__ == "distributedGrid" and D.grid.labs == tuple(labs)
    assert np.array_equal(gather(D), A) and D.numlabs_used == 2
    assert np.allclose(gather(D @ D.T), A @ A.T)
