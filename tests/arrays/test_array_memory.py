"""Memory of distributed arrays, measured with tracemalloc on the labs
(numpy registers its allocations with tracemalloc, and the lab server's socket buffers
are Python objects): a lab holds its part plus small metadata; ``gather(D, 1)``
allocates the full array on lab 1 only; ``redistribute`` never allocates anything near
the full array on any lab; ``distributed(X)`` gives each lab only its part and the client
no full copy. (MPI's own shared-memory transport buffers are not Python allocations and
are not counted: they are bounded, reused, and independent of the array size.)"""
import sys
import tracemalloc

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import codistributed, codistributor1d, codistributor2dbc, distributed, gather, redistribute, spmd
from spmdlab.arrays import elementwise as ew

pytestmark = pytest.mark.timeout(120)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

N = 1000  # 1000 x 1000 float64: 8 MB, 2 MB per lab on 4 labs
FULL = N * N * 8


@pytest.fixture(scope="module")
def pool(pools):
    pool = pools(4)
    with spmd(pool=pool):
        import tracemalloc as _tm

        _tm.start()
    return pool


def make(codist):
    return codistributed.rand(N, N, codist=codist, seed=1)


@pytest.mark.parametrize("layout,lab1_max", [(codistributor1d(1), 1.1), (codistributor1d(2), 2.1),
                                              (codistributor2dbc([2, 2], 64), 2.1)])
def test_gather_to_lab_1_allocates_the_full_array_there_only(pool, layout, lab1_max):
    def go(codist):
        D = make(codist)
        import tracemalloc as _tm

        _tm.reset_peak()
        before = _tm.get_traced_memory()[0]
        G = gather(D, 1)
        return (_tm.get_traced_memory()[1] - before) / FULL, G.shape

    results = list(spmdlab.spmd_run(go, layout, pool=pool))
    lab1, others = results[0], results[1:]
    assert lab1[1] == (N, N) and 1.0 <= lab1[0] <= lab1_max, lab1
    for peak, shape in others:
        assert shape == (0, 0) and peak < 0.02, peak  # no copy of anything on the other labs


@pytest.mark.parametrize("src,dst", [(codistributor1d(2), codistributor2dbc()),
                                     (codistributor2dbc([2, 2], 64), codistributor1d(1)),
                                     (codistributor1d(1), codistributor1d(2)),
                                     (codistributor2dbc([1, 4], 7), codistributor2dbc([4, 1], 3))])
def test_redistribute_never_allocates_the_full_array(pool, src, dst):
    def go(a, b):
        D = make(a)
        import tracemalloc as _tm

        from spmdlab.lab import comm as _comm

        _tm.reset_peak()
        before = _tm.get_traced_memory()[0]
        E = redistribute(D, b)
        # the staging window is MPI's memory, not traced: count it too
        return (_tm.get_traced_memory()[1] - before + _comm.staging_bytes()) / FULL

    for peak in spmdlab.spmd_run(go, src, dst, pool=pool):
        # new part (1/4) + send and receive buffers (each at most 1/4), or + the staging
        # segment (the old part's size, 1/4): well below 1
        assert 0.2 <= peak <= 0.8, peak


def test_distributed_scatter_gives_each_lab_its_part_and_the_client_no_full_copy(pool):
    X = np.random.default_rng(0).random((N, N))
    for codist in (None, codistributor1d(1), codistributor2dbc()):
        with spmd(pool=pool):  # (the block first frees what the client dropped)
            import tracemalloc as _tm

            _tm.reset_peak()
            _before = _tm.get_traced_memory()[0]
        tracemalloc.start()
        D = distributed(X, codist, pool=pool)
        client_peak = tracemalloc.get_traced_memory()[1] / FULL
        tracemalloc.stop()
        # the client cuts out one part at a time (the row layout sends views: nothing)
        assert client_peak < 0.35, (codist, client_peak)
        with spmd(pool=pool):
            import tracemalloc as _tm

            lab_peak = (_tm.get_traced_memory()[1] - _before) / FULL
        for lab in range(1, 5):
            assert 0.2 <= lab_peak[lab] < 0.35, (codist, lab, list(lab_peak), list(_before))
        # (no gather here: the lab server keeps its last reply, the gathered part, alive
        # until the next command has run, which would blur the next measurement)
        del D


def test_client_gather_holds_the_result_plus_small_receive_buffers(pool, monkeypatch):
    monkeypatch.setattr(sys.modules["spmdlab.client.parts"], "GATHER_CHUNK", 256 * 1024)
    X = np.random.default_rng(1).random((N, N))
    for codist in (None, codistributor2dbc()):
        D = distributed(X, codist, pool=pool)
        tracemalloc.start()
        G = gather(D)
        peak = tracemalloc.get_traced_memory()[1] / FULL
        tracemalloc.stop()
        assert np.array_equal(G, X)
        # the result, plus at most one 256 KiB slice per lab in flight
        assert 1.0 <= peak < 1.2, (codist, peak)
        del D, G


def test_client_moves_parts_without_staging_copies(pool):
    """Issue 22: distributed(X) sends each lab's part from X's own memory (a column block
    piece by piece) and gather(D) receives every part straight into the result: besides
    the result the client allocates under 1% of the array either way (it packed each
    part, and received each into a buffer of its own, before)."""
    X = np.random.default_rng(2).random((500, 4096))  # columns on 4 labs: runs of 8 KB
    for codist in (None, codistributor1d(1)):
        tracemalloc.start()
        D = distributed(X, codist, pool=pool)
        scatter_peak = tracemalloc.get_traced_memory()[1] / X.nbytes
        tracemalloc.stop()
        tracemalloc.start()
        G = gather(D)
        gather_peak = tracemalloc.get_traced_memory()[1] / X.nbytes
        tracemalloc.stop()
        assert np.array_equal(G, X)
        assert scatter_peak < 0.01, (codist, scatter_peak)
        assert 1.0 <= gather_peak < 1.01, (codist, gather_peak)
        del D, G


def test_operations_on_a_1d_vector_allocate_no_index_arrays(pool):
    """A 1-D array's layout is two numbers per lab: reductions, scalar and slice indexing,
    argmax, a redistribution between 1-D layouts and elementwise chains must not build
    index arrays as long as the local part (they once cost as much memory as the data)."""
    def go():
        import tracemalloc as _tm

        D = codistributed.rand((N * N,), seed=2)  # 8 MB, 2 MB per lab
        local = D._local.nbytes
        peaks = {}

        def measure(label, fn):
            _tm.reset_peak()
            before = _tm.get_traced_memory()[0]
            result = fn()
            peaks[label] = (_tm.get_traced_memory()[1] - before) / local
            return result

        measure("sum", lambda: D.sum())
        measure("max axis 0", lambda: D.max(axis=0))
        measure("argmax", lambda: D.argmax())
        measure("mean", lambda: D.mean())
        measure("D[i]", lambda: D[N * N // 2 + 3])
        measure("D[a:b]", lambda: D[1000:3000])
        measure("D[i] = v", lambda: D.__setitem__(N * N - 1, 0.5))
        measure("globalIndices-free shape", lambda: D._codist.localShape(1, 4))
        moved = measure("redistribute 1d", lambda: redistribute(D, codistributor1d(1, [N * N, 0, 0, 0])))
        chain = measure("D * 2 + 1", lambda: D * 2 + 1)
        return peaks, moved.shape, chain.shape

    for peaks, shape, chain in spmdlab.spmd_run(go, pool=pool):
        assert shape == (N * N,) and chain == (N * N,)
        small = {k: v for k, v in peaks.items() if k not in ("redistribute 1d", "D * 2 + 1")}
        assert all(v < 0.05 for v in small.values()), peaks
        # a new local part (lab 1 gets all four parts: 4x) plus the exchange buffers
        assert peaks["redistribute 1d"] <= 4 * 2 + 0.1, peaks
        # D * 2 and D * 2 + 1 share one new array (the temporary is reused)
        assert peaks["D * 2 + 1"] < 1.1 or not ew._CAN_ELIDE, peaks
