"""``distributed(X)`` and ``gather(D)`` by cross-memory copies on one machine
(``client.crosscopy``, ``protocol.crossmem``; issue 22: scatter and gather straight into
place), with a real pool: every plain layout, and the fallbacks to the sockets."""
import numpy as np
import pytest
from support.processes import cross_memory_refused

import spmdlab
from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    codistributorBlocks,
    codistributorChunks,
    distributed,
    gather,
    getCodistributor,
    getLocalPart,
    spmd,
)
from spmdlab.client import crosscopy
from spmdlab.protocol import crossmem

pytestmark = [pytest.mark.timeout(180),
              pytest.mark.skipif(cross_memory_refused() is not None, reason=str(cross_memory_refused()))]


@pytest.fixture
def copies(monkeypatch):
    """Counts of the cross-memory reads and writes the client makes, with every array
    large enough for the path."""
    seen = {"read": 0, "write": 0}
    read, write = crossmem.read_into, crossmem.write_from

    def counted(kind, fn):
        def run(jobs):
            seen[kind] += len(jobs)
            return fn(jobs)
        return run

    monkeypatch.setattr(crossmem, "read_into", counted("read", read))
    monkeypatch.setattr(crossmem, "write_from", counted("write", write))
    monkeypatch.setattr(crosscopy, "TOTAL_MIN", 0)
    return seen


def _layouts(shape, n):
    yield None
    for dim in range(1, len(shape) + 1):
        yield codistributor1d(dim)
    if len(shape) == 2:
        yield codistributor1d(2, [shape[1]] + [0] * (n - 1), shape)  # all on lab 1
        for grid in ([1, n], [n, 1]):
            for block in (64, 100):
                yield codistributor2dbc(grid, block)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int32, np.float32])
def test_every_plain_layout_round_trips_by_cross_memory(pools, copies, dtype):
    pool = pools(3, current=True)
    rng = np.random.default_rng(3)
    wanted = 0
    for shape in ((130, 517), (9, 1100), (4, 5, 700)):
        X = (rng.random(shape) * 1000).astype(dtype)
        for codist in _layouts(shape, 3):
            before = dict(copies)
            D = distributed(X, codist)
            assert np.array_equal(gather(D), X), (shape, codist)
            done = getCodistributor(D)
            runs = [crossmem.Region(X, done.localSelection(k, 3)) for k in (1, 2, 3)]
            long_runs = all(r.iovecs() is not None for r in runs if r.nbytes)  # else packed, by the sockets
            assert (copies["write"] > before["write"]) == long_runs, (shape, codist)
            assert (copies["read"] > before["read"]) == long_runs, (shape, codist)
            wanted += long_runs
            with spmd():  # the parts the client wrote are the labs' own arrays
                E = D * 2 + 1
            assert np.array_equal(gather(E), X * 2 + 1)
    assert pool not in crosscopy._refused
    assert wanted >= 9


def test_strided_and_reversed_client_arrays(pools, copies):
    pools(3, current=True)
    base = np.arange(40 * 1200, dtype=np.float64).reshape(40, 1200)
    for X in (base[:, 100:1100], base[::2], base[::-1], np.asfortranarray(base)):
        for codist in (None, codistributor1d(1), codistributor2dbc([1, 3], 128)):
            D = distributed(X, codist)
            assert np.array_equal(gather(D), X)
    assert copies["write"] and copies["read"]


def test_a_real_sized_array_goes_by_cross_memory_without_lowering_the_floor(pools, monkeypatch):
    pool = pools(2)
    seen = []
    read = crossmem.read_into
    monkeypatch.setattr(crossmem, "read_into", lambda jobs: (seen.append(len(jobs)), read(jobs))[1])
    X = np.random.default_rng(1).random((1100, 600))  # 5.3 MB
    assert X.nbytes >= crosscopy.TOTAL_MIN
    assert np.array_equal(gather(distributed(X, pool=pool)), X)
    small = np.ones((10, 10))
    assert np.array_equal(gather(distributed(small, codistributor1d(1), pool=pool)), small)
    assert seen == [2]  # the small array went by the sockets


def test_a_refused_copy_falls_back_to_the_sockets_for_good(pools, copies, monkeypatch):
    pool = pools(3, current=True)
    X = np.random.default_rng(2).random((60, 900))
    D = distributed(X)
    assert copies["write"] == 3
    monkeypatch.setattr(crossmem._calls, "read", lambda *args: -1)
    monkeypatch.setattr(crossmem._calls, "write", lambda *args: -1)
    try:
        assert np.array_equal(gather(D), X)  # refused, then the sockets
        assert pool in crosscopy._refused
        E = distributed(X + 1, codistributor1d(1))
        assert np.array_equal(gather(E), X + 1)
        assert copies == {"read": 3, "write": 3}  # tried once, then never again
    finally:
        crosscopy._refused.discard(pool)


def test_labs_elsewhere_are_never_copied_from(pools, copies, monkeypatch):
    pool = pools(3, current=True)
    monkeypatch.setattr(crossmem, "_here", [("another machine", 1)])  # the client's view only
    try:
        X = np.random.default_rng(4).random((50, 800))
        assert np.array_equal(gather(distributed(X)), X)
        assert pool in crosscopy._refused
        assert copies == {"read": 0, "write": 0}
    finally:
        crosscopy._refused.discard(pool)


def test_switched_off_by_the_setting(pools, copies):
    pool = pools(3, current=True)
    pool.settings.cross_memory = False
    try:
        X = np.random.default_rng(5).random((50, 800))
        assert np.array_equal(gather(distributed(X)), X)
        assert copies == {"read": 0, "write": 0}
    finally:
        pool.settings.cross_memory = True
    with pytest.raises(ValueError, match="SPMDLAB_CROSS_MEMORY"):
        spmdlab.settings.load.__globals__["os"].environ["SPMDLAB_CROSS_MEMORY"] = "maybe"
        try:
            spmdlab.settings.load()
        finally:
            del spmdlab.settings.load.__globals__["os"].environ["SPMDLAB_CROSS_MEMORY"]
    assert spmdlab.settings.load(cross_memory=False).cross_memory is False


def test_a_gathered_codistributed_made_on_the_labs(pools, copies):
    pools(3, current=True)
    with spmd():
        D = codistributed.rand(300, 400, codistributor2dbc([1, 3], 64), seed=7)
        L = D.sum()
    X = gather(D)
    assert copies["read"] == 3
    assert np.isclose(X.sum(), L[1])


def test_every_other_layout_is_scattered_and_gathered_by_cross_memory(pools, copies):
    """Halos, Dagger's blocks and CuPy's chunk maps (copies on several labs): every array
    a lab stores (halo cells, each chunk) is written from X; for the gather each lab lends
    the pieces it owns (``ownedPieces``), nothing is redistributed first."""
    pools(3, current=True)
    X = np.random.default_rng(8).random((240, 700))
    boxes = {1: [(slice(0, 120), slice(None))], 2: [(slice(120, 240), slice(0, 350)), (slice(0, 240), slice(600, 700))],
             3: [(slice(120, 240), slice(350, 700)), (slice(0, 240), slice(0, 70))]}  # overlapping lab 1's and 2's
    layouts = [codistributor1d(1, halo=2), codistributor1d(1, [100, 50, 90], halo=1),
               codistributorBlocks((60, 350)), codistributorBlocks((60, 350), "cyclicrow"),
               codistributorChunks(boxes, X.shape)]
    for codist in layouts:
        before = dict(copies)
        D = distributed(X, codist)
        assert copies["write"] > before["write"], codist  # halo cells and chunks written too
        assert np.array_equal(gather(D), X), codist
        assert copies["read"] > before["read"], codist
        with spmd():
            E = D + 1  # the array is still the labs' own, halos and all
            P = [np.array(p) for p in ([getLocalPart(D)] if not D.codistributor.isChunked(3) else D._local)]
        done = getCodistributor(D)
        for lab in (1, 2, 3):  # every stored array, halo cells included, holds X's values
            sels = done.chunkSelections(lab, 3) if done.isChunked(3) else [done.localSelection(lab, 3)]
            assert len(P[lab]) == len(sels)
            for part, sel in zip(P[lab], sels):
                assert np.array_equal(part, X[np.ix_(*[np.arange(X.shape[d])[s] if isinstance(s, slice) else s
                                                       for d, s in enumerate(sel)])]), (codist, lab)
        assert np.array_equal(gather(E), X + 1)


def test_a_halo_along_columns_is_moved_to_a_plain_layout_first(pools, copies):
    pools(3, current=True)
    X = np.random.default_rng(9).random((300, 900))
    D = distributed(X, codistributor1d(2, halo=1))  # an interior of columns is not contiguous: not lent
    assert np.array_equal(gather(D), X)
    assert copies["read"] == 3  # the plain copy the labs made, one part a lab


def test_a_refusal_holds_for_one_start_of_the_pool():
    class Pool:
        generation = 3

    pool = Pool()
    crosscopy._refused.add(pool)
    assert pool in crosscopy._refused
    pool.generation = 4  # restarted: its new labs are asked again
    assert pool not in crosscopy._refused
    crosscopy._refused.add(pool)
    crosscopy._refused.discard(pool)
    assert pool not in crosscopy._refused
