"""Client-side distributed arrays on real pools: scatter, gather, spmd round trips, freeing,
and numpy operations forwarded to the labs."""
import gc
import sys

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import (
    Composite,
    SpmdError,
    codistributed,
    codistributor1d,
    codistributor2dbc,
    distributed,
    gather,
    getCodistributor,
    getLocalPart,
    globalIndices,
    iscodistributed,
    isdistributed,
    labindex,
    spmd,
)

pytestmark = pytest.mark.timeout(120)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def stored_keys(pool):
    """The keys each lab stores (reads the lab server's store through a call)."""
    from spmdlab.protocol.messages import Call

    replies = pool.request_many({lab: Call(_store_keys, None) for lab in range(1, pool.numlabs + 1)})
    return {lab: r.result for lab, r in replies.items()}


def _store_keys(_):
    import gc as _gc

    from spmdlab.lab.server import LabServer

    servers = [o for o in _gc.get_objects() if isinstance(o, LabServer)]
    return set(servers[0].store) if servers else set()


ARRAYS = [
    np.arange(80 * 100, dtype=np.float64).reshape(80, 100),
    np.arange(35, dtype=np.int32).reshape(5, 7),
    np.arange(7, dtype=np.int16),
    np.ones((1, 9), dtype=bool),
    (np.arange(12) * (1 + 2j)).reshape(3, 4).astype(np.complex64),
    np.array([["a", "bc"], ["def", "g"]]),
    np.zeros((0, 3)),
    np.arange(24.0).reshape(2, 3, 4),
    np.arange(6.0).reshape(3, 2).T,  # not contiguous
]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_scatter_and_gather_round_trip(pools, n):
    P = pools(n)
    for A in ARRAYS:
        D = distributed(A, pool=P)
        assert isdistributed(D) and not isdistributed(A)
        assert D.shape == A.shape and D.dtype == A.dtype and D.ndim == A.ndim and D.size == A.size
        if A.ndim:
            assert len(D) == len(A)
        G = gather(D)
        assert G.dtype == A.dtype and np.array_equal(G, A)
        assert getCodistributor(D) == codistributor1d().complete(A.shape, n)


@pytest.mark.parametrize("n", [2, 4])
def test_scatter_with_a_codistributor(pools, n):
    P = pools(n)
    A = np.arange(11 * 13.0).reshape(11, 13)
    for c in [codistributor1d(1), codistributor2dbc(None, 2), codistributor2dbc([1, n], 3, "col"),
              codistributor1d(2, [13] + [0] * (n - 1))]:
        D = distributed(A, c, pool=P)
        assert np.array_equal(gather(D), A)
        with spmd(pool=P):
            ok = np.array_equal(getLocalPart(D), A[np.ix_(globalIndices(D, 1), globalIndices(D, 2))])
        assert all(ok)


def test_client_distributed_used_in_spmd_is_the_codistributed_array(pools):
    P = pools(4)
    A = np.arange(80 * 1000.0).reshape(80, 1000)
    D = distributed(A, pool=P)
    with spmd(pool=P):
        is_codist = iscodistributed(D)
        L = getLocalPart(D)
        k = labindex()
        same = np.array_equal(L, A[:, 250 * (k - 1):250 * k])
        total = gather(D).sum()
        getLocalPart(D)[0, 0] = -k  # writes go to the labs' copy
    assert all(is_codist) and all(same) and L[1].shape == (80, 250)
    assert total[3] == A.sum()
    G = gather(D)
    assert [G[0, 250 * (k - 1)] for k in range(1, 5)] == [-1, -2, -3, -4]


def test_codistributed_assigned_in_spmd_comes_back_as_distributed(pools):
    P = pools(3)
    with spmd(pool=P):
        D = codistributed.colon(1, 10)
        E = codistributed.eye(4, codist=codistributor2dbc([1, 3], 1))
        k = labindex()
        local = getLocalPart(D)
    assert isinstance(D, distributed) and isinstance(E, distributed)
    assert isinstance(k, Composite) and isinstance(local, Composite)
    assert D.shape == (10,) and D.dtype == np.int64
    assert np.array_equal(gather(D), np.arange(1, 11))
    assert np.array_equal(gather(E), np.eye(4))
    assert getCodistributor(E) == codistributor2dbc([1, 3], 1, "row", (4, 4))
    text = repr(D)
    assert text.startswith("distributed array, shape (10,), dtype int64, on labs 1-3")
    assert "codistributor1d" in text and "[ 1,  2,  3" in text
    # ... and a distributed from one block is usable in the next
    with spmd(pool=P):
        F = codistributed.build(getLocalPart(D) * 2, getCodistributor(D))
    assert np.array_equal(gather(F), 2 * np.arange(1, 11))


def test_spmd_on_a_subset_of_labs_gives_a_distributed_over_those_labs(pools):
    P = pools(4)
    with spmd(2, pool=P):
        D = codistributed(np.arange(10.0))
    assert isinstance(D, distributed) and D._nlabs == 2
    assert np.array_equal(gather(D), np.arange(10.0))
    E = D.redistribute(codistributor1d(1, [10, 0]))
    assert np.array_equal(gather(E), np.arange(10.0)) and getCodistributor(E).Partition == [10, 0]


def test_constructors_at_the_client(pools):
    P = pools(3)
    Z = distributed.zeros(4, 5, pool=P)
    assert Z.shape == (4, 5) and np.array_equal(gather(Z), np.zeros((4, 5)))
    O = distributed.ones((6,), dtype=np.int8, pool=P)
    assert np.array_equal(gather(O), np.ones(6, np.int8))
    I = distributed.eye(5, codist=codistributor2dbc([3, 1], 2), pool=P)
    assert np.array_equal(gather(I), np.eye(5)) and getCodistributor(I).LabGrid == [3, 1]
    R = distributed.rand(50, 40, seed=5, pool=P)
    R2 = distributed.rand(50, 40, seed=5, pool=P)
    g = gather(R)
    assert g.shape == (50, 40) and 0 <= g.min() < g.max() < 1 and np.array_equal(g, gather(R2))
    N = distributed.randn(30, 30, pool=P)
    assert abs(gather(N).mean()) < 0.3
    assert gather(distributed.randi([1, 3], 10, 10, pool=P)).max() <= 3
    assert np.isinf(gather(distributed.inf(2, 2, pool=P))).all()
    assert np.isnan(gather(distributed.nan(2, pool=P))).all()
    assert gather(distributed.true(3, pool=P)).all() and not gather(distributed.false(3, pool=P)).any()
    assert np.array_equal(gather(distributed.colon(0, 2, 9, pool=P)), np.arange(0, 10, 2))
    assert np.allclose(gather(distributed.linspace(0, 1, 7, pool=P)), np.linspace(0, 1, 7))
    with pytest.raises(SpmdError, match=r"labs 1-3[\s\S]*sizes must be >= 0"):
        distributed.zeros(-1, pool=P)


def test_copy_astype_redistribute_and_distributed_of_distributed(pools):
    P = pools(4)
    A = np.arange(12.0).reshape(3, 4)
    D = distributed(A, pool=P)
    C = D.copy()
    assert C._key != D._key and np.array_equal(gather(C), A)
    E = D.astype(np.int32)
    assert E.dtype == np.int32 and np.array_equal(gather(E), A.astype(np.int32))
    F = distributed(D)  # a copy
    assert F._key != D._key and np.array_equal(gather(F), A)
    G = distributed(D, codistributor2dbc([2, 2], 1))
    assert getCodistributor(G).LabGrid == [2, 2] and np.array_equal(gather(G), A)
    H = spmdlab.redistribute(G, codistributor1d(1))
    assert getCodistributor(H).Dimension == 1 and np.array_equal(gather(H), A)


def test_dropped_distributed_arrays_are_freed_on_the_labs(pools):
    P = pools(2)
    D = distributed(np.arange(100.0), pool=P)
    with spmd(pool=P):
        E = codistributed.ones(10)
    keys = (D._key, E._key)
    assert all(set(keys) <= stored for stored in stored_keys(P).values())
    del D, E
    gc.collect()
    with spmd(pool=P):  # frees travel with the next block
        pass
    assert all(not (set(keys) & stored) for stored in stored_keys(P).values())


def test_errors(pools):
    P, Q = pools(2), pools(3)
    with pytest.raises(TypeError, match="plain data"):
        distributed(np.array([object()]), pool=P)
    with pytest.raises(ValueError, match="labs"):
        distributed(np.zeros((4, 4)), codistributor2dbc([2, 2]), pool=P)
    with pytest.raises(TypeError, match="codistributor"):
        distributed(np.zeros(3), "1d", pool=P)
    D = distributed(np.zeros(4), pool=P)
    with pytest.raises(ValueError, match="only be used on the pool that holds it"):
        with spmd(pool=Q):
            x = D
    with pytest.raises(TypeError, match="gather\\(D, lab\\)"):
        gather(D, 1)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(D)
    with pytest.raises(TypeError, match="iterating"):
        list(D)
    with pytest.raises(TypeError, match="Composite"):
        c = Composite(pool=P)
        c[1] = D


def test_lost_after_pool_close():
    pool = spmdlab.Pool(2)
    D = distributed(np.arange(4), pool=pool)
    pool.close()
    with pytest.raises(SpmdError, match="lost"):
        gather(D)
    assert "data lost" in repr(D)


# --------------------------------------------------------------------------- numpy operations
def test_forwarding_runs_the_operation_on_the_labs(pools):
    # astype/copy are the codistributed class's own; a method that does not exist on
    # the labs comes back as an error from the labs.
    P = pools(2)
    D = distributed(np.arange(6.0), pool=P)
    assert np.array_equal(gather(D.astype(np.int64)), np.arange(6))
    from spmdlab.client.distributed import _run
    from spmdlab.protocol.calls import call_method
    assert _run(call_method, (D, "__len__")) == 6  # non-codistributed result: lab 1's value
    with pytest.raises(SpmdError, match=r"labs 1 and 2[\s\S]*AttributeError"):
        _run(call_method, (D, "no_such_method"))


@pytest.mark.parametrize("n", [1, 3, 4])
def test_numpy_operations_at_the_client(pools, n):
    P = pools(n)
    A = np.arange(1.0, 31.0).reshape(5, 6)
    B = np.linspace(-1, 1, 30).reshape(5, 6)
    D, E = distributed(A, pool=P), distributed(B, codistributor2dbc(None, 2), pool=P)
    checks = [
        (D * 2 + 1, A * 2 + 1), (1 - D, 1 - A), (D / E, A / B), (D ** 2, A ** 2), (-D, -A),
        (D > 10, A > 10), (D == E, A == B), (abs(E), abs(B)), (D % 4, A % 4), (D // 4, A // 4),
        (np.sin(D), np.sin(A)), (np.add(D, 1), A + 1), (np.maximum(D, E), np.maximum(A, B)),
        (D + A, A + A), (A + D, A + A), (D.T, A.T), (D @ E.T, A @ B.T),
        (D.sum(axis=0), A.sum(axis=0)), (np.sum(D, axis=1), A.sum(axis=1)),
    ]
    for got, want in checks:
        assert isinstance(got, distributed), type(got)
        np.testing.assert_allclose(gather(got), want)
    for got, want in [(D.sum(), A.sum()), (D.max(), A.max()), (D.mean(), A.mean()), (E.std(), B.std()),
                      (D[1, 2], A[1, 2]), ((D > 0).all(), True), (D.argmax(), A.argmax())]:
        np.testing.assert_allclose(got, want)
    S = D[1:4, :]
    assert isinstance(S, distributed) and np.array_equal(gather(S), A[1:4, :])
    D[0, 0] = 100
    assert gather(D)[0, 0] == 100


@pytest.mark.parametrize("chunk", [1, 100, 1 << 20])
def test_gather_in_rounds_of_row_slices(pools, monkeypatch, chunk):
    monkeypatch.setattr(sys.modules["spmdlab.client.parts"], "GATHER_CHUNK", chunk)
    P = pools(3)
    for shape, codist in [((37, 11), None), ((37, 11), codistributor1d(1)), ((25, 19), codistributor2dbc([3, 1], 4)),
                          ((5, 6, 7), codistributor1d(2)), ((0, 5), None), ((1, 30), codistributor1d(1, [0, 1, 0]))]:
        A = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        D = distributed(A, codist, pool=P)
        assert np.array_equal(gather(D), A), (shape, codist)
