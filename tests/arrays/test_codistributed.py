"""codistributed arrays on real pools of 1-4 labs: creation, reading, gather, redistribute.

Also the parts that need no pool (argument checks, single-lab behaviour at the client).
"""
import sys

import cloudpickle
import numpy as np
import pytest
from support.redistribute_checks import check_redistribute, layouts

import spmdlab
from spmdlab import (
    SpmdError,
    codistributed,
    codistributor1d,
    codistributor2dbc,
    gather,
    getCodistributor,
    getLocalPart,
    globalIndices,
    iscodistributed,
    labindex,
    numlabs,
    redistribute,
    spmd,
    spmd_run,
)

pytestmark = pytest.mark.timeout(120)
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # lab checks travel by value


def run(pool, fn, *args, **kwargs):
    """Run ``fn`` on every lab of ``pool``; return the list of per-lab results."""
    return list(spmd_run(fn, *args, pool=pool, **kwargs))


# --------------------------------------------------------------------------- DESIGN / MATLAB examples
def test_design_80x1000_over_4_labs(pools):
    P = pools(4)
    A = np.arange(80 * 1000, dtype=float).reshape(80, 1000)
    with spmd(pool=P):
        D = codistributed(A)
        L = getLocalPart(D)
        k = labindex()
        cols = globalIndices(D, 2)
        rows = globalIndices(D, 1)
        same = np.array_equal(L, A[:, 250 * (k - 1):250 * k])
        text = repr(D)
        props = (D.shape, str(D.dtype), D.ndim, D.size, len(D), iscodistributed(D), iscodistributed(L))
    for k in range(1, 5):
        assert L[k].shape == (80, 250)
        assert same[k]
        np.testing.assert_array_equal(cols[k], np.arange(250 * (k - 1), 250 * k))
        np.testing.assert_array_equal(rows[k], np.arange(80))
        assert cols[k].dtype.kind == "i"
        assert props[k] == ((80, 1000), "float64", 2, 80000, 80, True, False)
    assert text[1].startswith("This lab stores D[:, 0:250].")
    assert text[4].startswith("This lab stores D[:, 750:1000].")
    assert "(80, 250)" in text[2] and "float64" in text[2] and "codistributor1d" in text[2]


def test_default_partition_4x10(pools):
    P = pools(4)
    with spmd(pool=P):
        D = codistributed.zeros(4, 10)
        part = getCodistributor(D).Partition
        shape = getLocalPart(D).shape
        dim = getCodistributor(D).Dimension
    assert part[1] == [3, 3, 2, 2]
    assert [shape[k] for k in range(1, 5)] == [(4, 3), (4, 3), (4, 2), (4, 2)]
    assert dim[1] == 2


def test_default_partition_and_grid_use_the_blocks_labs_as_matlab(pools):
    """MATLAB's defaultPartition(N) and defaultLabGrid() take the lab count of the block."""
    with spmd(pool=pools(4)):
        part = codistributor1d.defaultPartition(10)
        grid = codistributor2dbc.defaultLabGrid()
    with spmd(3, pool=pools(4)):
        part3 = codistributor1d.defaultPartition(10)
    assert [part[k] for k in range(1, 5)] == [[3, 3, 2, 2]] * 4
    assert grid[1] == [2, 2]
    assert part3[1] == [4, 3, 3]
    assert codistributor1d.defaultPartition(10) == [10]  # at the client: one lab
    assert codistributor2dbc.defaultLabGrid() == [1, 1]


def test_2dbc_8x8_block_3(pools):
    P = pools(4)
    A = np.arange(64).reshape(8, 8)
    with spmd(pool=P):
        D = codistributed(A, codistributor2dbc([2, 2], 3))
        L = getLocalPart(D)
        ok = np.array_equal(L, A[np.ix_(globalIndices(D, 1), globalIndices(D, 2))])
        text = repr(D)
    assert [L[k].shape for k in range(1, 5)] == [(5, 5), (5, 3), (3, 5), (3, 3)]
    assert all(ok)
    np.testing.assert_array_equal(L[2], A[np.ix_([0, 1, 2, 6, 7], [3, 4, 5])])
    assert text[1].startswith("This lab stores blocks of size 3 of D: rows [0:3, 6:8], columns [0:3, 6:8].")
    assert np.array_equal(gather(D), A)


def test_1e6_elements_global_indices_4_and_5_labs(pools):
    P = pools(4)
    with spmd(pool=P):
        D = codistributed.zeros(1, 1e6)
        gi = globalIndices(D, 2)
        rows = globalIndices(D, 1)
        owner = gi[0] <= 612345 < gi[-1] + 1
    for k in range(1, 5):
        np.testing.assert_array_equal(gi[k], np.arange(250000 * (k - 1), 250000 * k))
        np.testing.assert_array_equal(rows[k], [0])
    assert [owner[k] for k in range(1, 5)] == [False, False, True, False]
    # 5 labs: on a real pool of 5, then with the index math at the client (a complete codistributor)
    with spmdlab.Pool(5) as P5:
        with spmd(pool=P5):
            D5 = codistributed.zeros(1, 1e6)
            gi5 = globalIndices(D5, 2)
            owner5 = gi5[0] <= 612345 < gi5[-1] + 1
            local5 = getLocalPart(D5).shape
        for k in range(1, 6):
            np.testing.assert_array_equal(gi5[k], np.arange(200000 * (k - 1), 200000 * k))
            assert local5[k] == (1, 200000)
        assert [owner5[k] for k in range(1, 6)] == [False, False, False, True, False]
    c = codistributor1d(2).complete((1, 10 ** 6), 5)
    assert c.Partition == [200000] * 5
    for k in range(1, 6):
        np.testing.assert_array_equal(globalIndices(c, 2, k), np.arange(200000 * (k - 1), 200000 * k))
    assert [k for k in range(1, 6) if 612345 in set(globalIndices(c, 2, k)[[0, -1]])
            or globalIndices(c, 2, k)[0] <= 612345 <= globalIndices(c, 2, k)[-1]] == [4]


# --------------------------------------------------------------------------- creation on 1..4 labs
SHAPES = [(7, 5), (1, 9), (9, 1), (0, 4), (3,), (2,), (13, 17), (2, 3, 4)]


def check_create_and_gather(shapes, kinds):
    n, lab = numlabs(), labindex()
    checked = 0
    for shape in shapes:
        for kind in kinds:
            A = (np.arange(int(np.prod(shape))) * 3 % 11).reshape(shape).astype(kind)
            for c in layouts(shape, n):
                D = codistributed(A, c)
                want = (c or codistributor1d()).complete(shape, n)
                assert getCodistributor(D) == want, (getCodistributor(D), want)
                L = getLocalPart(D)
                assert np.array_equal(L, A[np.ix_(*want.localIndices(lab, n))]), (shape, c)
                assert L.dtype == A.dtype and D.dtype == A.dtype and D.shape == shape
                G = gather(D)
                assert G.shape == shape and G.dtype == A.dtype and np.array_equal(G, A)
                checked += 1
    return checked


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_codistributed_of_replicated_then_gather(pools, n):
    counts = run(pools(n), check_create_and_gather, SHAPES, ["float64", "int32", "bool", "complex64"])
    assert len(set(counts)) == 1 and counts[0] > 50


def check_gather_to_one_lab(shape, layout):
    n, lab = numlabs(), labindex()
    A = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    D = codistributed(A, layout)
    out = []
    for target in range(1, n + 1):
        G = gather(D, target)
        if lab == target:
            assert np.array_equal(G, A) and G.dtype == A.dtype
        else:
            assert G.size == 0 and G.ndim == len(shape) and G.dtype == A.dtype
        out.append(G.shape)
    return out


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("shape,layout", [((6, 10), None), ((10, 6), codistributor1d(1)),
                                          ((9, 11), codistributor2dbc(None, 2))])
def test_gather_to_one_lab(pools, n, shape, layout):
    shapes = run(pools(n), check_gather_to_one_lab, shape, layout)
    for lab in range(1, n + 1):
        assert shapes[lab - 1][lab - 1] == shape


def test_gather_of_non_codistributed_returns_it():
    x = np.arange(3)
    assert gather(x) is x
    assert gather(5) == 5


# --------------------------------------------------------------------------- redistribute
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_redistribute_between_many_layouts(pools, n):
    pairs = run(pools(n), check_redistribute, [(7, 5), (1, 9), (0, 3), (5,), (13, 17), (2, 3, 4)])
    assert len(set(pairs)) == 1 and pairs[0] > 100


def test_redistribute_keeps_dtype_and_rejects_bad_layouts(pools):
    P = pools(4)
    with spmd(pool=P):
        D = codistributed(np.arange(24, dtype=np.int16).reshape(4, 6))
        E = redistribute(D, codistributor2dbc([4, 1], 1))
        F = redistribute(E)  # default: codistributor1d()
        kinds = (str(E.dtype), getCodistributor(F).Dimension, np.array_equal(gather(F), gather(D)))
    assert kinds[1] == ("int16", 2, True)
    with pytest.raises(SpmdError, match=r"labs 1-4[\s\S]*ValueError[\s\S]*labgrid \[3, 1\] holds 3 labs"):
        with spmd(pool=P):
            G = redistribute(D, codistributor2dbc([3, 1]))
    with pytest.raises(SpmdError, match=r"labs 1-4[\s\S]*ValueError[\s\S]*2-D arrays only"):
        with spmd(pool=P):
            H = redistribute(codistributed.zeros((2, 3, 4)), codistributor2dbc())
    with pytest.raises(SpmdError, match=r"labs 1-4[\s\S]*TypeError[\s\S]*codistributor1d, codistributor2dbc, codistributorBlocks or codistributorChunks"):
        with spmd(pool=P):
            H = redistribute(D, "1d")


# --------------------------------------------------------------------------- build
def check_build(shape, layout):
    n, lab = numlabs(), labindex()
    A = np.arange(int(np.prod(shape))).reshape(shape) * 2
    c = (layout or codistributor1d()).complete(shape, n)
    L = A[np.ix_(*c.localIndices(lab, n))]
    D = codistributed.build(L, c)
    assert np.array_equal(gather(D), A) and getCodistributor(D) == c
    assert getLocalPart(D) is L or np.array_equal(getLocalPart(D), L)
    # incomplete codistributor: the global size is inferred from the local parts
    incomplete = codistributor1d(c.Dimension) if isinstance(c, codistributor1d) else \
        codistributor2dbc(c.LabGrid, c.BlockSize, c.Orientation)
    E = codistributed.build(L, incomplete)
    assert E.shape == shape and getCodistributor(E) == c and np.array_equal(gather(E), A)
    return True


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("shape,layout", [((6, 10), None), ((10, 6), codistributor1d(1)),
                                          ((9, 11), codistributor2dbc(None, 2)), ((5,), None),
                                          ((2, 7, 3), codistributor1d(2))])
def test_build_from_local_parts(pools, n, shape, layout):
    assert all(run(pools(n), check_build, shape, layout))


def check_from_parts():
    """``codistributed.from_parts``: each lab's part taken as it is (the same object), for a
    1-D and a 2dbc layout, and with a mode."""
    lab, n = labindex(), numlabs()
    A = np.arange(99.0).reshape(9, 11)
    out = []
    for c in (codistributor1d(2, None, A.shape), codistributor2dbc(None, 2, "row", A.shape)):
        c = c.complete(A.shape, n)
        L = A[np.ix_(*c.localIndices(lab, n))]
        D = codistributed.from_parts(L, c)
        out.append(iscodistributed(D) and getLocalPart(D) is L and getCodistributor(D) is c and D.mode == "replica"
                   and np.array_equal(gather(D), A))
    S = codistributed.from_parts(np.ones(3), codistributor1d(1, [3] * n, (3 * n,)).complete((3 * n,), n), "sum")
    out.append(S.mode == "sum" and np.array_equal(gather(S), np.ones(3 * n)))
    return out


def test_from_parts_wraps_each_labs_part(pools):
    assert run(pools(3), check_from_parts) == [[True] * 3] * 3


def test_build_with_wrong_sizes_raises_the_same_error_on_every_lab(pools):
    P = pools(4)
    with pytest.raises(SpmdError) as info:
        with spmd(pool=P):
            B = codistributed.build(np.zeros((80, 10)), codistributor1d(2, None, (80, 1000)))
    text = str(info.value)
    assert text.startswith("Error detected on labs 1-4:")
    assert "ValueError" in text and "lab 1 has (80, 10), expected (80, 250)" in text
    assert set(info.value.errors) == {1, 2, 3, 4}

    # wrong on one lab only: still one error, the same on every lab (no lab left waiting)
    with pytest.raises(SpmdError) as info:
        with spmd(pool=P):
            B = codistributed.build(np.zeros((80, 249 if labindex() == 3 else 250)),
                                    codistributor1d(2, None, (80, 1000)))
    text = str(info.value)
    assert text.startswith("Error detected on labs 1-4:")
    assert "lab 3 has (80, 249), expected (80, 250)" in text and "lab 1 has" not in text

    with pytest.raises(SpmdError, match=r"labs 1-4[\s\S]*same dtype on every lab"):
        with spmd(pool=P):
            B = codistributed.build(np.zeros((2, 2), dtype=np.float32 if labindex() == 2 else np.float64))
    with pytest.raises(SpmdError, match=r"labs 1-4[\s\S]*same number of dimensions"):
        with spmd(pool=P):
            B = codistributed.build(np.zeros((2, 2) if labindex() < 4 else (2, 2, 1)))
    with pytest.raises(SpmdError, match=r"labs 1-4[\s\S]*must agree in the other dimensions"):
        with spmd(pool=P):
            B = codistributed.build(np.zeros((labindex(), 2)), codistributor1d(2))
    with pytest.raises(SpmdError, match=r"labs 1-4[\s\S]*plain data"):
        with spmd(pool=P):
            B = codistributed.build(np.empty(3, dtype=object) if labindex() == 1 else np.zeros(3))
    # the pool is fine afterwards
    with spmd(pool=P):
        B = codistributed.build(np.ones((2, 3)), codistributor1d(2))
    assert B.shape == (2, 12)


def test_codistributed_of_unreplicated_array_is_an_error_on_every_lab(pools):
    P = pools(4)
    with pytest.raises(SpmdError, match=r"^Error detected on labs 1-4:[\s\S]*must be the same array on every lab"):
        with spmd(pool=P):
            D = codistributed(np.zeros(4 + (labindex() == 2)))
    with pytest.raises(SpmdError, match=r"^Error detected on labs 1-4:[\s\S]*partition \[1, 1, 0, 0\] sums to 2[^\n]*\(on lab 1\)"):
        with spmd(pool=P):
            D = codistributed(np.zeros((3, 3)), codistributor1d(1, [1, 1, 0, 0]) if labindex() == 1
                              else codistributor1d(1, [1, 1, 1, 0]))
    with pytest.raises(SpmdError, match=r"labs 1-4[\s\S]*the same codistributor on every lab"):
        with spmd(pool=P):
            D = codistributed(np.zeros((4, 4)), codistributor1d(1 + (labindex() == 3)))
    with pytest.raises(SpmdError, match=r"labs 1-4[\s\S]*the same codistributor on every lab"):
        with spmd(pool=P):
            D = codistributed.build(np.zeros((4, 1)), codistributor1d(2) if labindex() != 3 else None)
    with pytest.raises(SpmdError, match=r"labs 1-4[\s\S]*plain data"):
        with spmd(pool=P):
            D = codistributed(np.array([None, 1]))


# --------------------------------------------------------------------------- constructors
def check_constructors():
    n, lab = numlabs(), labindex()
    c2 = codistributor2dbc(None, 2)
    out = {}
    cases = [
        (codistributed.zeros(3, 5), np.zeros((3, 5))),
        (codistributed.zeros(4), np.zeros((4, 4))),
        (codistributed.zeros((6,)), np.zeros(6)),
        (codistributed.zeros(2, 3, 4, codistributor1d(1)), np.zeros((2, 3, 4))),
        (codistributed.ones(5, 7, c2, dtype=np.int8), np.ones((5, 7), np.int8)),
        (codistributed.ones(5, 7, "int32", codist=codistributor1d(1)), np.ones((5, 7), np.int32)),
        (codistributed.ones(3, 2, "noCommunication"), np.ones((3, 2))),
        (codistributed.zeros(), np.zeros((1, 1))),
        (codistributed.inf(2, 9), np.full((2, 9), np.inf)),
        (codistributed.nan(9, 2, dtype=np.float32), np.full((9, 2), np.nan, np.float32)),
        (codistributed.true(3, 3, c2), np.ones((3, 3), bool)),
        (codistributed.false((4, 1)), np.zeros((4, 1), bool)),
        (codistributed.eye(5), np.eye(5)),
        (codistributed.eye(4, 7, c2), np.eye(4, 7)),
        (codistributed.eye((7, 3), dtype=np.int64, codist=codistributor1d(1)), np.eye(7, 3, dtype=np.int64)),
        (codistributed.colon(1, 10), np.arange(1, 11)),
        (codistributed.colon(1, 3, 10), np.arange(1, 11, 3)),
        (codistributed.colon(10, -2, 1), np.arange(10, 0, -2)),
        (codistributed.colon(5, 1), np.arange(0)),
        (codistributed.colon(0, 0.25, 1), np.array([0, 0.25, 0.5, 0.75, 1.0])),
        (codistributed.linspace(0, 1, 11), np.linspace(0, 1, 11)),
        (codistributed.linspace(-3, 7), np.linspace(-3, 7, 100)),
        (codistributed.linspace(2, 2, 1), np.linspace(2, 2, 1)),
        (codistributed.linspace(0, 1, 0), np.linspace(0, 1, 0)),
        # with a codistributor and dtype= (everything on the last lab: the others are empty)
        (codistributed.colon(2, 3, 20, codist=codistributor1d(1, [0] * (n - 1) + [7]), dtype=np.float32),
         np.arange(2, 21, 3, dtype=np.float32)),
        (codistributed.linspace(-1, 1, 9, codist=codistributor1d(1, [9] + [0] * (n - 1)), dtype=np.float32),
         np.linspace(-1, 1, 9, dtype=np.float32)),
        (codistributed.linspace(0, 10, 6, dtype=np.int16), np.linspace(0, 10, 6).astype(np.int16)),
        (codistributed.zeros(3, 4, dtype=np.complex64, codist=c2), np.zeros((3, 4), np.complex64)),
    ]
    for D, want in cases:
        G = gather(D)
        assert G.shape == want.shape and G.dtype == want.dtype, (G.shape, G.dtype, want.shape, want.dtype)
        assert np.allclose(G, want, equal_nan=True, rtol=1e-15, atol=1e-15) if G.dtype.kind in "fc" \
            else np.array_equal(G, want), (G, want)
    # random arrays: shape, range, a stream per lab, reproducible with seed=
    R = codistributed.rand(40, 30, seed=7)
    R2 = codistributed.rand(40, 30, seed=7)
    R3 = codistributed.rand(40, 30, seed=8)
    N = codistributed.randn(20, 50, c2, dtype=np.float32, seed=1)
    I = codistributed.randi(6, 30, 30, seed=3)
    J = codistributed.randi([-2, 2], (100,), dtype=np.int8)
    g = gather(R)
    assert g.shape == (40, 30) and 0 <= g.min() and g.max() < 1 and g.dtype == np.float64
    assert np.array_equal(g, gather(R2)) and not np.array_equal(g, gather(R3))
    if n > 1:  # each lab has its own stream
        parts = [g[:, c] for c in [globalIndices(R, 2, k) for k in range(1, n + 1)] if len(c)]
        assert not any(np.array_equal(parts[0][:, :3], p[:, :3]) for p in parts[1:])
    if n > 1:  # randn and randi too
        for A, dim in ((N, 2), (I, 2)):
            ga = gather(A)
            parts = [ga[np.ix_(globalIndices(A, 1, k), globalIndices(A, 2, k))].ravel()[:8] for k in range(1, n + 1)]
            assert not any(np.array_equal(parts[0], p) for p in parts[1:] if p.size == parts[0].size), parts
        assert np.array_equal(gather(codistributed.randn(20, 50, c2, dtype=np.float32, seed=1)), gather(N))
    gn = gather(N)
    assert gn.dtype == np.float32 and gn.shape == (20, 50) and abs(gn.mean()) < 0.3 and 0.7 < gn.std() < 1.3
    gi = gather(I)
    assert gi.dtype == np.int64 and gi.min() >= 1 and gi.max() <= 6 and len(np.unique(gi)) == 6
    gj = gather(J)
    assert gj.dtype == np.int8 and gj.min() >= -2 and gj.max() <= 2
    # unseeded: different on each call
    assert not np.array_equal(gather(codistributed.rand(5, 5)), gather(codistributed.rand(5, 5)))
    return len(cases)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_constructors_match_numpy(pools, n):
    assert set(run(pools(n), check_constructors)) == {28}


def test_seeded_rand_is_reproducible_across_blocks(pools):
    P = pools(3)
    with spmd(pool=P):
        a = gather(codistributed.rand(8, 8, seed=42))
    with spmd(pool=P):
        b = gather(codistributed.rand(8, 8, seed=42))
    assert np.array_equal(a[1], b[2]) and np.array_equal(a[1], a[3])


BAD_CONSTRUCTOR_CALLS = [
    (lambda: codistributed.zeros(-1, 3), ValueError, "sizes must be >= 0"),
    (lambda: codistributed.zeros(2.5), TypeError, "whole numbers"),
    (lambda: codistributed.ones(True, 3), TypeError, "whole numbers"),
    (lambda: codistributed.ones(3, (2, 2)), TypeError, "not a mix"),
    (lambda: codistributed.zeros(3, 3, "no-such-type"), TypeError, "unexpected argument"),
    (lambda: codistributed.zeros(3, 3, object()), TypeError, "unexpected argument"),
    (lambda: codistributed.zeros(3, codist="1d"), TypeError, "codistributor1d, codistributor2dbc, codistributorBlocks or codistributorChunks"),
    (lambda: codistributed.zeros(3, codistributor1d(), codist=codistributor1d()), TypeError, "given twice"),
    (lambda: codistributed.zeros(3, "int8", dtype="int16"), TypeError, "given twice"),
    (lambda: codistributed.zeros(3, 4, dtype="nonsense"), TypeError, "dtype"),
    (lambda: codistributed.zeros(()), ValueError, "at least one dimension"),
    (lambda: codistributed.zeros(2, 3, 4, codistributor2dbc()), ValueError, "2-D arrays only"),
    (lambda: codistributed.zeros(4, 4, codistributor1d(3)), ValueError, "out of range"),
    (lambda: codistributed.zeros(4, 4, codistributor1d(1, [1, 2], (4, 4))), ValueError, "sums to 3"),
    (lambda: codistributed.zeros(4, 4, codistributor1d(1, [2, 2])), ValueError, "2 entries but there are 1 labs"),
    (lambda: codistributed.zeros(4, 4, codistributor2dbc([2, 1])), ValueError, "holds 2 labs"),
    (lambda: codistributed.zeros(4, 4, codistributor1d(1, None, (5, 4))), ValueError, "global size"),
    (lambda: codistributed.ones(2, dtype=object), TypeError, "plain data"),
    (lambda: codistributed.inf(2, dtype=np.int32), TypeError, "not allowed"),
    (lambda: codistributed.nan(2, dtype=bool), TypeError, "not allowed"),
    (lambda: codistributed.true(2, "float64"), TypeError, "not allowed"),
    (lambda: codistributed.false(2, dtype="int8"), TypeError, "unexpected keyword"),
    (lambda: codistributed.eye(2, 3, 4), ValueError, "2-D"),
    (lambda: codistributed.eye(-2), ValueError, ">= 0"),
    (lambda: codistributed.rand(3, dtype=np.int32), TypeError, "float32 or float64"),
    (lambda: codistributed.randn(3, dtype=np.float16), TypeError, "float32 or float64"),
    (lambda: codistributed.rand(3, seed=-1), ValueError, "seed"),
    (lambda: codistributed.rand(3, seed=1.5), TypeError, "seed"),
    (lambda: codistributed.randi(0, 3), ValueError, "empty"),
    (lambda: codistributed.randi([5, 1], 3), ValueError, "empty"),
    (lambda: codistributed.randi([1, 2, 3], 3), ValueError, "imax or \\[imin, imax\\]"),
    (lambda: codistributed.randi(2.5, 3), TypeError, "whole numbers"),
    (lambda: codistributed.randi(4, 3, dtype=bool), TypeError, "integer or float"),
    (lambda: codistributed.colon(1, "a"), TypeError, "real numbers"),
    (lambda: codistributed.colon(0, 1, np.inf), ValueError, "finite"),
    (lambda: codistributed.colon(1, 5, codist=codistributor2dbc()), ValueError, "2-D arrays only"),
    (lambda: codistributed.linspace("a", 1), TypeError, "numbers"),
    (lambda: codistributed.linspace(0, 1, -3), ValueError, ">= 0"),
    (lambda: codistributed.linspace(0, 1, 2.5), TypeError, "whole numbers"),
    (lambda: codistributed(np.zeros(3), "2dbc"), TypeError, "codistributor1d, codistributor2dbc, codistributorBlocks or codistributorChunks"),
    (lambda: codistributed(5), ValueError, "0-d"),
    (lambda: codistributed(np.array([None])), ValueError, "plain data"),
    (lambda: codistributed.build(np.zeros(3), 7), TypeError, "codistributor1d, codistributor2dbc, codistributorBlocks or"),
    (lambda: codistributed.build(np.zeros((2, 2)), codistributor1d(1, None, (3, 2))), ValueError,
     "lab 1 has \\(2, 2\\), expected \\(3, 2\\)"),
]


@pytest.mark.parametrize("call,exc,match", BAD_CONSTRUCTOR_CALLS)
def test_bad_constructor_input_at_the_client(call, exc, match):
    # At the client (and on a lab outside a block) arrays behave as on one lab: no MPI.
    with pytest.raises(exc, match=match):
        call()


def check_bad_calls(calls):
    failures = []
    for call, exc, match in calls:
        try:
            call()
        except exc:
            continue
        except Exception as other:  # pragma: no cover - reported below
            failures.append(f"{call}: {type(other).__name__}: {other}")
            continue
        failures.append(f"{call}: no error")
    return failures


def test_bad_constructor_input_on_labs(pools):
    calls = [c for c in BAD_CONSTRUCTOR_CALLS if "1 labs" not in c[2] and "holds 2" not in c[2]
             and "lab 1 has" not in c[2]]
    calls += [(lambda: codistributed.zeros(4, 4, codistributor1d(1, [2, 2])), ValueError, "4 labs"),
              (lambda: codistributed.zeros(4, 4, codistributor2dbc([3, 1])), ValueError, "holds 3")]
    assert run(pools(4), check_bad_calls, calls) == [[]] * 4
    # an error raised by every lab reaches the client as one SpmdError naming labs 1-4
    with pytest.raises(SpmdError, match=r"^Error detected on labs 1-4:[\s\S]*ValueError: codistributed.zeros: sizes must be >= 0"):
        with spmd(pool=pools(4)):
            Z = codistributed.zeros(-1, 3)


# --------------------------------------------------------------------------- reading
def test_properties_astype_copy_and_helpers(pools):
    P = pools(3)
    A = np.arange(30.0).reshape(5, 6)
    with spmd(pool=P):
        D = codistributed(A, codistributor1d(1))
        E = D.astype(np.int16)
        C = D.copy()
        getLocalPart(C)[...] = -1  # a copy: D is unchanged
        facts = (E.dtype == np.int16, np.array_equal(gather(E), A.astype(np.int16)),
                 np.array_equal(gather(D), A), bool((gather(C) == -1).all()),
                 D.shape, D.ndim, D.size, len(D), D.nbytes)
        gi_axis = globalIndices(D, axis=0)
        gi_default = globalIndices(D)
        gi_other = globalIndices(getCodistributor(D), 1, 3)
    for k in range(1, 4):
        assert facts[k] == (True, True, True, True, (5, 6), 2, 30, 5, 240)
        np.testing.assert_array_equal(gi_axis[k], gi_default[k])
        np.testing.assert_array_equal(gi_other[k], [4])
    np.testing.assert_array_equal(gi_axis[1], [0, 1])
    with pytest.raises(SpmdError, match=r"labs 1-3[\s\S]*labs are numbered 1..3 as in MATLAB"):
        with spmd(pool=P):
            bad = globalIndices(D, 1, 4)
    with pytest.raises(SpmdError, match=r"labs 1-3[\s\S]*dimensions are numbered from 1"):
        with spmd(pool=P):
            bad = globalIndices(D, 0)
    with pytest.raises(SpmdError, match=r"labs 1-3[\s\S]*needs dim"):
        with spmd(pool=P):
            bad = globalIndices(codistributed.zeros(4, 4, codistributor2dbc([1, 3])))
    with pytest.raises(SpmdError, match=r"labs 1-3[\s\S]*TypeError: getLocalPart needs a codistributed"):
        with spmd(pool=P):
            bad = getLocalPart(A)


def test_globalindices_of_incomplete_codistributor_is_an_error():
    with pytest.raises(ValueError, match="complete"):
        globalIndices(codistributor1d(2), 2, 1)
    with pytest.raises(TypeError, match="codistributor"):
        globalIndices(np.zeros(3), 1)
    c = codistributor2dbc([2, 2], 3, gsize=(8, 8))
    np.testing.assert_array_equal(globalIndices(c, 1, 3), [3, 4, 5])
    np.testing.assert_array_equal(globalIndices(c, 2, 3, axis=None), [0, 1, 2, 6, 7])
    with pytest.raises(ValueError, match="pass lab="):
        globalIndices(c, 1)


def test_codistributed_travels_to_the_client_as_distributed_and_back(pools):
    P = pools(2)
    with spmd(pool=P):
        D = codistributed.ones(3, 4)
        k = labindex()
    assert type(D).__name__ == "distributed" and D.shape == (3, 4)
    assert type(k).__name__ == "Composite"
    with spmd(pool=P):
        same = iscodistributed(D) and getLocalPart(D).shape == (3, 2)
    assert list(same) == [True, True]


def test_single_lab_mode_at_the_client():
    A = np.arange(20).reshape(4, 5)
    D = codistributed(A, codistributor2dbc([1, 1], 2))
    assert np.array_equal(gather(D), A) and np.array_equal(gather(D, 1), A)
    E = redistribute(D, codistributor1d(1))
    assert np.array_equal(getLocalPart(E), A)
    assert repr(D).startswith("This lab stores blocks of size 2 of D: rows [0:4], columns [0:5].")
    assert D._spmdlab_summary()[:4] == ("codist", (4, 5), "int64", repr(getCodistributor(D)))
    with pytest.raises(ValueError, match="labs are numbered 1..1"):
        gather(D, 2)
