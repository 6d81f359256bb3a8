"""Unit tests for spmdlab.layouts.codistributor: pure index math, no MPI."""
import itertools
import math
import random

import numpy as np
import pytest

from spmdlab.layouts.codistributor import codistributor, codistributor1d, codistributor2dbc
from spmdlab.layouts.plan import Transfer, transfer_plan, transfer_regions
from spmdlab.layouts.regions import sel_array

NUMLABS = range(1, 9)
SHAPES_ND = [(0,), (1,), (3,), (7,), (17,), (1, 1), (1, 10), (10, 1), (4, 10), (3, 0), (0, 5),
             (2, 3), (9, 13), (4, 5, 1), (2, 3, 4), (1, 1, 6), (5, 1, 1, 2)]
SHAPES_2D = [(0, 0), (0, 4), (1, 1), (1, 9), (7, 1), (2, 3), (8, 8), (9, 13), (16, 5), (11, 11)]


# --------------------------------------------------------------------------- helpers
def grids(n):
    return [[r, n // r] for r in range(1, n + 1) if n % r == 0]


def random_partition(rng, total, n):
    """A random split of `total` into n non-negative parts (zeros likely)."""
    cuts = sorted(rng.randint(0, total) for _ in range(n - 1))
    bounds = [0] + cuts + [total]
    return [b - a for a, b in zip(bounds, bounds[1:])]


def random_layout(rng, shape, n):
    if len(shape) == 2 and rng.random() < 0.5:
        return codistributor2dbc(rng.choice(grids(n)), rng.randint(1, 5),
                                 rng.choice(["row", "col"]), shape)
    dim = rng.randint(1, len(shape))
    part = random_partition(rng, shape[dim - 1], n) if rng.random() < 0.7 else None
    return codistributor1d(dim, part, shape)


def eq(a, b):
    """Fast exact array comparison for the hot loops (shape and values)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and np.array_equal(a, b), (a, b)


def check_layout(c, shape, n):
    """Every invariant of a layout: exact cover, maps inverse, consistent helpers."""
    c = c.complete(shape, n)
    assert c.isComplete()
    A = np.arange(math.prod(shape)).reshape(shape)
    count = np.zeros(shape, dtype=int)
    B = np.full(shape, -1)
    locals_ = {}
    for lab in range(1, n + 1):
        ix = c.localIndices(lab, n)
        assert len(ix) == len(shape)
        assert c.localShape(lab, n) == tuple(len(a) for a in ix)
        sel = c.localSelection(lab, n)
        for d, (s, a) in enumerate(zip(sel, ix)):
            eq(sel_array(s), a)
            if isinstance(s, slice):
                assert s.step is None
            elif isinstance(c, codistributor1d):
                raise AssertionError("a 1-D layout must select with slices only")
        for d, a in enumerate(ix):
            assert a.dtype == np.int64
            eq(c.globalIndices(d + 1, lab, n), a)
            eq(c.globalIndices(lab=lab, numlabs=n, axis=d), a)
            assert np.all(np.diff(a) > 0)  # increasing: local order follows global order
        L = A[np.ix_(*ix)]
        locals_[lab] = L
        count[np.ix_(*ix)] += 1
        B[np.ix_(*ix)] = L
        if isinstance(c, codistributor1d):
            eq(A[c.localSlices(lab, n)], L)
        assert c.describe_slice(lab, n).startswith("This lab stores ")
    assert np.all(count == 1), "lab regions must cover the array exactly once"
    eq(B, A)
    if A.size == 0:
        return
    # vectorised global -> local -> global round trip over every element
    G = tuple(np.indices(shape).reshape(len(shape), -1))
    owner, loc = c.globalToLocal(G, n)
    eq(c.ownerOf(G, n), owner)
    for lab in range(1, n + 1):
        m = owner == lab
        assert m.sum() == locals_[lab].size
        if not m.any():
            continue
        li = tuple(np.broadcast_to(x, m.shape)[m] for x in loc)
        eq(locals_[lab][li], A.reshape(-1)[m])
        back = c.localToGlobal(lab, li, n)
        for d in range(len(shape)):
            eq(np.broadcast_to(back[d], li[0].shape), G[d][m])
    # scalar paths return plain ints
    g = tuple(s - 1 for s in shape)
    lab, l = c.globalToLocal(g, n)
    assert type(lab) is int and all(type(x) is int for x in l)
    assert c.ownerOf(g, n) == lab
    assert c.localToGlobal(lab, l, n) == g


# --------------------------------------------------------------------------- static helpers
@pytest.mark.parametrize("n, labs, expected", [
    (10, 4, [3, 3, 2, 2]), (2, 4, [1, 1, 0, 0]), (0, 3, [0, 0, 0]), (8, 4, [2, 2, 2, 2]),
    (1000, 4, [250] * 4), (7, 1, [7]), (5, 8, [1, 1, 1, 1, 1, 0, 0, 0]),
])
def test_default_partition_values(n, labs, expected):
    assert codistributor1d.defaultPartition(n, labs) == expected


def test_default_partition_properties():
    for labs in NUMLABS:
        for n in range(0, 40):
            p = codistributor1d.defaultPartition(n, labs)
            assert len(p) == labs and sum(p) == n
            assert p == sorted(p, reverse=True) and max(p) - min(p) <= 1
            assert all(type(x) is int for x in p)


@pytest.mark.parametrize("n, expected", [
    (1, [1, 1]), (2, [1, 2]), (3, [1, 3]), (4, [2, 2]), (5, [1, 5]), (6, [2, 3]), (7, [1, 7]),
    (8, [2, 4]), (9, [3, 3]), (12, [3, 4]), (16, [4, 4]), (18, [3, 6]),
])
def test_default_labgrid_values(n, expected):
    assert codistributor2dbc.defaultLabGrid(n) == expected


def test_default_labgrid_properties():
    for n in range(1, 100):
        r, c = codistributor2dbc.defaultLabGrid(n)
        assert r * c == n and r <= c
        assert all(n % d for d in range(r + 1, math.isqrt(n) + 1))


@pytest.mark.parametrize("gsize, dim", [
    ((1, 10), 2), ((10, 1), 1), ((80, 1000), 2), ((4, 5, 1), 2), ((1, 1), 2), ((1, 1, 1), 3),
    ((7,), 1), ((1,), 1), ((0, 1), 1), ((5, 0), 2), ((3, 4, 5), 3),
])
def test_default_dimension(gsize, dim):
    assert codistributor1d.defaultDimension(gsize) == dim
    assert codistributor1d(gsize=gsize).Dimension == dim
    assert codistributor1d().complete(gsize, 3).Dimension == dim


# --------------------------------------------------------------------------- DESIGN examples
def test_design_80x1000_on_4_labs():
    c = codistributor1d().complete((80, 1000), 4)
    assert c.Dimension == 2 and c.Partition == [250] * 4 and c.GlobalSize == (80, 1000)
    for k in range(1, 5):
        cols = c.globalIndices(2, k, 4)
        np.testing.assert_array_equal(cols, np.arange(250 * (k - 1), 250 * k))
        np.testing.assert_array_equal(c.globalIndices(1, k, 4), np.arange(80))
        assert c.localShape(k, 4) == (80, 250)
        assert c.localSlices(k, 4) == (slice(0, 80), slice(250 * (k - 1), 250 * k))
    assert c.describe_slice(1, 4) == "This lab stores D[:, 0:250]."
    assert c.describe_slice(4, 4, name="A") == "This lab stores A[:, 750:1000]."
    assert repr(c) == ("codistributor1d(Dimension=2, Partition=[250, 250, 250, 250], "
                       "GlobalSize=(80, 1000))")


def test_design_4x10_partition():
    c = codistributor1d().complete((4, 10), 4)
    assert c.Dimension == 2 and c.Partition == [3, 3, 2, 2]
    assert [c.localShape(k, 4) for k in range(1, 5)] == [(4, 3), (4, 3), (4, 2), (4, 2)]


def test_design_8x8_2dbc():
    c = codistributor2dbc([2, 2], 3).complete((8, 8), 4)
    assert [c.localShape(k, 4) for k in range(1, 5)] == [(5, 5), (5, 3), (3, 5), (3, 3)]
    np.testing.assert_array_equal(c.globalIndices(1, 1, 4), [0, 1, 2, 6, 7])
    np.testing.assert_array_equal(c.globalIndices(2, 2, 4), [3, 4, 5])
    np.testing.assert_array_equal(c.globalIndices(1, 3, 4), [3, 4, 5])
    assert c.describe_slice(1, 4) == ("This lab stores blocks of size 3 of D: "
                                      "rows [0:3, 6:8], columns [0:3, 6:8].")
    assert c.describe_slice(4, 4) == ("This lab stores blocks of size 3 of D: "
                                      "rows [3:6], columns [3:6].")
    assert repr(c) == ("codistributor2dbc(LabGrid=[2, 2], BlockSize=3, Orientation='row', "
                       "GlobalSize=(8, 8))")
    # column orientation swaps labs 2 and 3
    cc = codistributor2dbc([2, 2], 3, "col").complete((8, 8), 4)
    assert [cc.localShape(k, 4) for k in range(1, 5)] == [(5, 5), (3, 5), (5, 3), (3, 3)]


@pytest.mark.parametrize("shape", [(10 ** 6,), (1, 10 ** 6)])
@pytest.mark.parametrize("n", [4, 5])
def test_design_million_vector(shape, n):
    c = codistributor1d().complete(shape, n)
    assert c.Dimension == len(shape)
    per = 10 ** 6 // n
    for k in range(1, n + 1):
        g = c.globalIndices(c.Dimension, k, n)
        assert (g[0], g[-1], len(g)) == (per * (k - 1), per * k - 1, per)
        assert c.ownerOf(per * (k - 1), n) == k and c.ownerOf(per * k - 1, n) == k


def test_scalapack_formula_2dbc():
    c = codistributor2dbc([3, 2], 4, gsize=(50, 30)).complete((50, 30), 6)
    i = np.arange(50)
    for lab in range(1, 7):
        pr, pc = c.gridCoords(lab, 6)
        assert lab == pr * 2 + pc + 1
        rows = c.globalIndices(1, lab, 6)
        np.testing.assert_array_equal(rows, i[(i // 4) % 3 == pr])
        np.testing.assert_array_equal(c.globalToLocal((rows, 0), 6)[1][0],
                                      (rows // 12) * 4 + rows % 4)


# --------------------------------------------------------------------------- exhaustive layouts
@pytest.mark.parametrize("n", NUMLABS)
def test_exhaustive_1d(n):
    rng = random.Random(n)
    for shape in SHAPES_ND:
        for dim in [None] + list(range(1, len(shape) + 1)):
            check_layout(codistributor1d(dim), shape, n)
            if dim is not None:
                for _ in range(3):
                    part = random_partition(rng, shape[dim - 1], n)
                    check_layout(codistributor1d(dim, part), shape, n)
                    check_layout(codistributor1d(axis=dim - 1, partition=part, gsize=shape), shape, n)


@pytest.mark.parametrize("n", NUMLABS)
def test_exhaustive_2dbc(n):
    for shape in SHAPES_2D:
        for grid, bs, orient in itertools.product(grids(n) + [None], [1, 2, 3, 64], ["row", "col"]):
            check_layout(codistributor2dbc(grid, bs, orient), shape, n)


def test_1d_partition_with_zeros_and_along_dim_index():
    c = codistributor1d(1, [0, 3, 0, 2, 0], (5, 2)).complete((5, 2), 5)
    assert [c.localShape(k, 5) for k in range(1, 6)] == [(0, 2), (3, 2), (0, 2), (2, 2), (0, 2)]
    np.testing.assert_array_equal(c.ownerOf(np.arange(5), 5), [2, 2, 2, 4, 4])
    lab, loc = c.globalToLocal(np.arange(5), 5)
    np.testing.assert_array_equal(loc, [0, 1, 2, 0, 1])
    np.testing.assert_array_equal(c.localToGlobal(lab, loc, 5), np.arange(5))
    assert c.ownerOf(-1, 5) == 4 and c.globalToLocal(-1, 5) == (4, 1)
    assert c.describe_slice(1, 5) == "This lab stores D[0:0, :] (nothing: the range is empty)."
    assert codistributor1d(gsize=(7,)).describe_slice(2, 3) == "This lab stores D[3:5]."
    assert codistributor1d(3).complete((2, 2, 4), 2).describe_slice(2, 2) == \
        "This lab stores D[:, :, 2:4]."


def test_1d_tuple_indices_and_vector_labs():
    c = codistributor1d(1).complete((6, 4), 3)
    assert c.globalToLocal((-1, -1), 3) == (3, (1, 3))
    assert c.ownerOf((np.array([0, 5]), 0), 3).tolist() == [1, 3]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 2 with size 4"):
        c.globalToLocal((0, 4), 3)
    g = c.localToGlobal(np.array([1, 2, 3]), np.array([1, 0, 1]), 3)
    assert g.tolist() == [1, 2, 5]
    assert c.localToGlobal(np.array([1, 3]), (np.array([0, 1]), 2), 3)[0].tolist() == [0, 5]
    with pytest.raises(TypeError, match="indices must be integers"):
        c.localToGlobal(1, 0.5, 3)
    with pytest.raises(TypeError, match="indices must be integers"):
        codistributor2dbc().complete((3, 3), 1).localToGlobal(1, (0.5, 0), 1)
    with pytest.raises(ValueError, match="labs are numbered 1..3"):
        c.localToGlobal(np.array([1, 4]), np.array([0, 0]), 3)


def test_2dbc_describe_long_and_empty():
    c = codistributor2dbc([1, 2], 2).complete((3, 40), 2)
    assert c.describe_slice(1, 2) == ("This lab stores blocks of size 2 of D: rows [0:3], "
                                      "columns [0:2, 4:6, ..., 36:38] (10 blocks).")
    e = codistributor2dbc([2, 1], 4).complete((3, 3), 2)
    assert e.localShape(2, 2) == (0, 3)
    assert "rows []" in e.describe_slice(2, 2)


# --------------------------------------------------------------------------- objects
def test_properties_and_completion():
    c = codistributor1d()
    assert (c.Dimension, c.Partition, c.GlobalSize) == (None, None, None)
    assert not c.isComplete()
    d = c.complete((6, 4), 3)
    assert (c.Dimension, c.Partition) == (None, None)  # complete returns a copy
    assert d.isComplete() and d.complete((6, 4), 3) == d
    assert codistributor1d(1).Dimension == 1 and not codistributor1d(1).isComplete()
    assert codistributor1d(gsize=[6, 4]).GlobalSize == (6, 4)
    assert codistributor1d(1, [2, 2], (4, 4)).isComplete()
    assert codistributor1d(codistributor1d.unsetDimension, codistributor1d.unsetPartition,
                           (3, 5)).Dimension == 2
    p = d.Partition
    p.append(99)
    assert d.Partition == [2, 1, 1]  # defensive copy

    b = codistributor2dbc()
    assert (b.LabGrid, b.BlockSize, b.Orientation, b.GlobalSize) == (None, 64, "row", None)
    assert not b.isComplete()
    bc = b.complete((10, 10), 6)
    assert bc.LabGrid == [2, 3] and bc.isComplete() and b.LabGrid is None
    assert codistributor2dbc([1, 1], gsize=(2, 2)).isComplete()
    assert codistributor2dbc(orientation="COL").Orientation == "col"


def test_axis_equivalence_and_negative_axis():
    assert codistributor1d(axis=1) == codistributor1d(2)
    assert codistributor1d(axis=-1, gsize=(3, 4)).Dimension == 2
    c = codistributor1d(axis=-2)
    assert c.Dimension is None and "axis=-2" in repr(c)
    assert c.complete((3, 4, 5), 2).Dimension == 2
    g = codistributor1d().complete((3, 4), 2)
    np.testing.assert_array_equal(g.globalIndices(lab=1, numlabs=2, axis=-1), [0, 1])
    np.testing.assert_array_equal(g.globalIndices(lab=2, numlabs=2), [2, 3])  # default: Dimension


def test_equality_hash_repr():
    a = codistributor1d(2, [5, 5], (3, 10))
    assert a == codistributor1d(2, [5, 5], (3, 10)) == codistributor1d(axis=1, partition=(5, 5), gsize=[3, 10])
    assert a != codistributor1d(2, [6, 4], (3, 10)) and a != codistributor1d(2)
    assert len({a, codistributor1d(2, [5, 5], (3, 10))}) == 1
    assert a != codistributor2dbc() and a != "x"
    assert repr(codistributor1d()) == "codistributor1d(Dimension=None, Partition=None, GlobalSize=None)"
    b = codistributor2dbc([2, 2], 3)
    assert b == codistributor2dbc([2, 2], 3, "row") and b != codistributor2dbc([2, 2], 3, "col")
    assert b != codistributor2dbc([2, 2], 4) and hash(b) == hash(codistributor2dbc((2, 2), 3))
    assert repr(codistributor2dbc()) == ("codistributor2dbc(LabGrid=None, BlockSize=64, "
                                         "Orientation='row', GlobalSize=None)")


def test_factory():
    assert codistributor() == codistributor1d()
    assert codistributor("1d", 2, [1, 1], (2, 2)) == codistributor1d(2, [1, 1], (2, 2))
    assert codistributor("1d", axis=0) == codistributor1d(1)
    assert codistributor("2dbc", [2, 2], 3) == codistributor2dbc([2, 2], 3)
    assert isinstance(codistributor("2DBC"), codistributor2dbc)
    with pytest.raises(ValueError, match="unknown codistributor kind 'cyclic'"):
        codistributor("cyclic")


def test_incomplete_with_gsize_completes_implicitly():
    c = codistributor1d(gsize=(10,))
    assert c.localShape(1, 4) == (3,)
    b = codistributor2dbc(blocksize=2, gsize=(5, 5))
    assert b.localShape(1, 4) == (3, 3)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("dim", [0, -1, -5])
def test_bad_dim(dim):
    with pytest.raises(ValueError, match=r"dimensions are numbered from 1 as in MATLAB \(or use axis= for 0-based\)"):
        codistributor1d(dim)


def test_bad_dim_other():
    with pytest.raises(TypeError, match="not both"):
        codistributor1d(1, axis=0)
    with pytest.raises(TypeError, match="integer"):
        codistributor1d(1.5)
    with pytest.raises(TypeError, match="integer"):
        codistributor1d(True)
    with pytest.raises(ValueError, match=r"dimension 3 is out of range for a 2-D array"):
        codistributor1d(3, gsize=(4, 5))
    with pytest.raises(ValueError, match=r"dimension 3 is out of range for a 2-D array: dimensions are numbered 1..2"):
        codistributor1d(3).complete((4, 5), 2)
    with pytest.raises(ValueError, match=r"axis -3 is out of bounds for array of dimension 2"):
        codistributor1d(axis=-3).complete((4, 5), 2)
    c = codistributor1d().complete((4, 5), 2)
    with pytest.raises(ValueError, match="dimension 3 is out of range"):
        c.globalIndices(3, 1, 2)
    with pytest.raises(ValueError, match="numbered from 1"):
        c.globalIndices(0, 1, 2)
    with pytest.raises(TypeError, match="not both"):
        c.globalIndices(1, 1, 2, axis=0)
    with pytest.raises(TypeError, match="dimension is needed"):
        codistributor2dbc().complete((4, 4), 1).globalIndices(lab=1, numlabs=1)
    with pytest.raises(ValueError, match="0-d"):
        codistributor1d().complete((), 2)
    with pytest.raises(ValueError, match="0-d"):
        codistributor1d(gsize=())


def test_bad_partition():
    with pytest.raises(ValueError, match=r"partition \[3, 3, 3\] sums to 9 but dimension 2 has size 10"):
        codistributor1d(2, [3, 3, 3]).complete((4, 10), 3)
    with pytest.raises(ValueError, match=r"partition \[3, 3, 3\] sums to 9 but dimension 2 has size 10"):
        codistributor1d(2, [3, 3, 3], (4, 10))
    with pytest.raises(ValueError, match="partition has 3 entries but there are 4 labs"):
        codistributor1d(2, [3, 3, 4]).complete((4, 10), 4)
    with pytest.raises(ValueError, match="non-negative integers"):
        codistributor1d(1, [3, -1])
    with pytest.raises(ValueError, match="non-negative integers"):
        codistributor1d(1, [1.5, 1.5])
    with pytest.raises(ValueError, match="partition for 2 labs but numlabs is 3"):
        codistributor1d(1, [1, 1], (2,)).localShape(1, 3)


def test_bad_gsize_and_incomplete():
    with pytest.raises(ValueError, match="non-negative integers"):
        codistributor1d(gsize=(3, -1))
    with pytest.raises(ValueError, match=r"codistributor is for global size \(4, 4\) but the array has size \(4, 5\)"):
        codistributor1d(gsize=(4, 4)).complete((4, 5), 2)
    with pytest.raises(ValueError, match="not complete"):
        codistributor1d(1).localShape(1, 2)
    with pytest.raises(ValueError, match="not complete"):
        codistributor2dbc().localShape(1, 2)
    with pytest.raises(ValueError, match="numlabs must be a positive integer"):
        codistributor1d().complete((3,), 0)


def test_bad_2dbc():
    with pytest.raises(ValueError, match=r"labgrid \[2, 3\] holds 6 labs but there are 4 labs"):
        codistributor2dbc([2, 3]).complete((8, 8), 4)
    with pytest.raises(ValueError, match=r"labgrid \[2, 2\] holds 4 labs but numlabs is 2"):
        codistributor2dbc([2, 2], gsize=(8, 8)).localShape(1, 2)
    for grid in ([0, 2], [2], [1, 2, 3], [2, -1], [1.0, 2]):
        with pytest.raises(ValueError, match="labgrid must be two positive integers"):
            codistributor2dbc(grid)
    with pytest.raises(ValueError, match=r"2-D arrays only; got a 3-D size \(2, 3, 4\)"):
        codistributor2dbc(gsize=(2, 3, 4))
    with pytest.raises(ValueError, match=r"2-D arrays only; got a 1-D size \(8,\)"):
        codistributor2dbc().complete((8,), 1)
    with pytest.raises(ValueError, match="orientation must be 'row' or 'col', got 'diag'"):
        codistributor2dbc(orientation="diag")
    with pytest.raises(ValueError, match="blocksize must be >= 1, got 0"):
        codistributor2dbc(blocksize=0)
    with pytest.raises(TypeError, match="blocksize must be an integer"):
        codistributor2dbc(blocksize=2.5)
    c = codistributor2dbc([2, 2], 3).complete((8, 8), 4)
    with pytest.raises(ValueError, match=r"\(row, col\) index tuple"):
        c.ownerOf(3, 4)
    with pytest.raises(IndexError, match="local index 4 is out of bounds for dimension 1"):
        c.localToGlobal(3, (4, 0), 4)


@pytest.mark.parametrize("lab", [0, 5, -1, 1.0, True])
def test_bad_lab_numbers(lab):
    c1 = codistributor1d().complete((8, 8), 4)
    c2 = codistributor2dbc().complete((8, 8), 4)
    msg = "labs are numbered 1..4 as in MATLAB"
    for call in (lambda: c1.localShape(lab, 4), lambda: c1.globalIndices(1, lab, 4),
                 lambda: c1.localSlices(lab, 4), lambda: c1.describe_slice(lab, 4),
                 lambda: c1.localToGlobal(lab, 0, 4), lambda: c2.localShape(lab, 4),
                 lambda: c2.globalIndices(1, lab, 4), lambda: c2.gridCoords(lab, 4),
                 lambda: c2.localToGlobal(lab, (0, 0), 4), lambda: c2.describe_slice(lab, 4),
                 lambda: transfer_plan(c1, c2, 4, lab=lab)):
        with pytest.raises(ValueError, match=msg):
            call()


def test_out_of_bounds_global_index():
    c = codistributor1d().complete((4, 10), 4)
    with pytest.raises(IndexError, match="index 10 is out of bounds for dimension 2 with size 10"):
        c.ownerOf(10, 4)
    with pytest.raises(IndexError, match="index -11 is out of bounds"):
        c.globalToLocal((0, np.array([1, -11])), 4)
    with pytest.raises(IndexError, match="out of bounds"):
        codistributor2dbc().complete((3, 3), 1).ownerOf((0, 3), 1)
    with pytest.raises(IndexError, match="local index"):
        c.localToGlobal(4, 2, 4)
    with pytest.raises(ValueError, match="index tuple has 1 entries but the array is 2-D"):
        c.ownerOf((1,), 4)
    with pytest.raises(TypeError, match="indices must be integers"):
        c.ownerOf(1.5, 4)


# --------------------------------------------------------------------------- transfer plans
def simulate(src, dst, shape, n):
    """Run the plan in pure numpy; return the destination local parts."""
    A = np.arange(math.prod(shape)).reshape(shape)
    src, dst = src.complete(shape, n), dst.complete(shape, n)
    src_local = [A[np.ix_(*src.localIndices(k, n))] for k in range(1, n + 1)]
    dst_local = [np.full(dst.localShape(k, n), -1) for k in range(1, n + 1)]
    written = [np.zeros(dst.localShape(k, n), dtype=int) for k in range(1, n + 1)]
    plan = transfer_plan(src, dst, n)
    assert len(plan) == n and all(len(row) == n for row in plan)
    moved = 0
    for s, d in itertools.product(range(n), range(n)):
        t = plan[s][d]
        assert isinstance(t, Transfer) and (t.src_lab, t.dst_lab) == (s + 1, d + 1)
        chunk = src_local[s][np.ix_(*t.src_index)]           # sender side
        assert chunk.shape == t.shape and chunk.size == t.size
        np.testing.assert_array_equal(chunk, A[np.ix_(*t.global_index)])
        dst_local[d][np.ix_(*t.dst_index)] = chunk           # receiver side
        written[d][np.ix_(*t.dst_index)] += 1
        moved += t.size
    assert moved == A.size
    regions = transfer_regions(src, dst, n)
    for s, d in itertools.product(range(n), range(n)):
        r, t = regions[s][d], plan[s][d]
        assert r.shape == t.shape
        for field in ("src_index", "dst_index", "global_index"):
            for a, b in zip(getattr(r, field), getattr(t, field)):
                eq(sel_array(a), b)
        if isinstance(src, codistributor1d) and isinstance(dst, codistributor1d):
            assert all(isinstance(x, slice) for x in r.src_index + r.dst_index + r.global_index)
    for k in range(n):
        assert np.all(written[k] == 1)
        np.testing.assert_array_equal(dst_local[k], A[np.ix_(*dst.localIndices(k + 1, n))])
    return plan


@pytest.mark.parametrize("n", NUMLABS)
def test_transfer_plan_random_layouts(n):
    rng = random.Random(1000 + n)
    shapes = SHAPES_ND + SHAPES_2D + [(6, 7, 3)]
    for _ in range(60):
        shape = rng.choice(shapes)
        simulate(random_layout(rng, shape, n), random_layout(rng, shape, n), shape, n)


def test_transfer_plan_lab_restriction_and_gsize():
    src, dst = codistributor1d(1), codistributor2dbc([2, 2], 2)
    full = transfer_plan(src, dst, 4, (9, 7))
    part = transfer_plan(src, dst, 4, (9, 7), lab=3)
    for s, d in itertools.product(range(4), range(4)):
        if 3 in (s + 1, d + 1):
            for a, b in zip(part[s][d][2:], full[s][d][2:]):
                for x, y in zip(a, b):
                    np.testing.assert_array_equal(x, y)
        else:
            assert part[s][d] is None
    # the GlobalSize of one side completes the other
    assert transfer_plan(codistributor1d(gsize=(4, 4)), codistributor1d(1), 2)[0][1].size == 4
    with pytest.raises(ValueError, match="needs a global size"):
        transfer_plan(codistributor1d(), codistributor1d(), 2)
    with pytest.raises(ValueError, match="global size"):
        transfer_plan(codistributor1d(gsize=(4, 4)), codistributor1d(gsize=(4, 5)), 2)


def test_local_shape_and_selection_are_arithmetic_for_huge_arrays():
    """No index array proportional to the array size: a 1e12-element 1-D layout is O(1)."""
    c = codistributor1d().complete((10 ** 12,), 4)
    assert c.localShape(2, 4) == (250_000_000_000,)
    assert c.localSelection(2, 4) == (slice(250_000_000_000, 500_000_000_000),)
    b = codistributor2dbc([2, 2], 10 ** 6).complete((3 * 10 ** 6 + 5, 10 ** 6), 4)
    assert [b.localShape(k, 4) for k in range(1, 5)] == \
        [(2 * 10 ** 6, 10 ** 6), (2 * 10 ** 6, 0), (10 ** 6 + 5, 10 ** 6), (10 ** 6 + 5, 0)]
    # a lab holding one block per dimension selects with slices
    assert b.localSelection(4, 4)[1] == slice(0, 0)
    one = codistributor2dbc([2, 2], 4).complete((8, 6), 4)
    assert one.localSelection(1, 4) == (slice(0, 4), slice(0, 4))
    assert one.localSelection(4, 4) == (slice(4, 8), slice(4, 6))


def test_transfer_plan_same_layout_is_local_copy():
    c = codistributor1d().complete((5, 9), 3)
    plan = transfer_plan(c, c, 3)
    for s, d in itertools.product(range(3), range(3)):
        assert (plan[s][d].size > 0) == (s == d)


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    pass
else:
    @settings(max_examples=150, deadline=None)
    @given(st.integers(1, 8), st.lists(st.integers(0, 9), min_size=1, max_size=3),
           st.integers(0, 2 ** 32 - 1))
    def test_transfer_plan_hypothesis(n, shape, seed):
        rng = random.Random(seed)
        shape = tuple(shape)
        simulate(random_layout(rng, shape, n), random_layout(rng, shape, n), shape, n)


# --------------------------------------------------------------------------- halos and the layout protocol
def test_protocol_defaults_1d_and_2dbc():
    from support.layout_checks import check_protocol

    for c, shape, n in [(codistributor1d(1, [2, 0, 3]), (5, 2), 3), (codistributor1d(), (4, 10), 4),
                        (codistributor2dbc([2, 2], 3), (8, 8), 4), (codistributor2dbc([1, 3], 2, "col"), (3, 0), 3)]:
        d, *_ = check_protocol(c, shape, n)
        assert d.NumLabs == n and d.Halo == 0 and not d.isChunked(n)
        for lab in range(1, n + 1):
            sel = d.localSelection(lab, n)
            assert len(d.chunkSelections(lab, n)) == 1
            [(k, g, loc)] = d.ownedPieces(lab, n)
            assert k == 0 and g is not None and loc == tuple(slice(0, s) for s in d.localShape(lab, n))
            assert all((a is b) or np.array_equal(a, b) for a, b in zip(g, sel))
    assert codistributor1d().NumLabs is None and codistributor1d(1, [1, 1]).NumLabs is None
    assert codistributor2dbc([2, 2]).NumLabs is None and codistributor2dbc([2, 2], gsize=(3, 3)).NumLabs == 4


@pytest.mark.parametrize("n", range(1, 6))
def test_exhaustive_1d_halo(n):
    from support.layout_checks import check_protocol

    rng = random.Random(100 + n)
    for shape in SHAPES_ND:
        for dim in range(1, len(shape) + 1):
            for w in (1, 2, 3):
                part = random_partition(rng, shape[dim - 1], n) if rng.random() < 0.7 else None
                c, owner, stored, _ = check_protocol(codistributor1d(dim, part, halo=w), shape, n)
                plain = codistributor1d(dim, c.Partition).complete(shape, n)
                assert c.Halo == w and c.Partition == plain.Partition
                size = shape[dim - 1]
                starts = np.concatenate(([0], np.cumsum(c.Partition)))
                want = np.zeros(shape, dtype=int)
                for lab in range(1, n + 1):
                    lo, hi = int(starts[lab - 1]), int(starts[lab])
                    s0, s1 = (lo, hi) if lo == hi else (max(0, lo - w), min(size, hi + w))
                    sl = c.localSlices(lab, n)
                    assert sl[dim - 1] == slice(s0, s1) and c.localSelection(lab, n) == sl
                    assert c.localShape(lab, n)[dim - 1] == s1 - s0
                    np.testing.assert_array_equal(c.globalIndices(dim, lab, n), np.arange(s0, s1))
                    [(k, g, loc)] = c.ownedPieces(lab, n)
                    assert g[dim - 1] == slice(lo, hi) and loc[dim - 1] == slice(lo - s0, hi - s0)
                    want[sl] += 1
                np.testing.assert_array_equal(stored, want)
                if 0 in shape:
                    continue
                G = tuple(np.indices(shape).reshape(len(shape), -1))
                lab, loc = c.globalToLocal(G, n)
                np.testing.assert_array_equal(lab, plain.ownerOf(G, n))
                back = c.localToGlobal(lab, loc, n)
                for d in range(len(shape)):
                    np.testing.assert_array_equal(back[d], G[d])
                A = np.arange(math.prod(shape)).reshape(shape)
                for k in range(1, n + 1):
                    m = lab == k
                    part_k = A[c.localSlices(k, n)]
                    np.testing.assert_array_equal(part_k[tuple(x[m] for x in loc)], A.reshape(-1)[m])


def test_1d_halo_object_and_text():
    c = codistributor1d(2, [3, 0, 3, 2], (4, 8), halo=1)
    assert c.Halo == 1 and c.complete((4, 8), 4).Halo == 1
    assert repr(c) == "codistributor1d(Dimension=2, Partition=[3, 0, 3, 2], GlobalSize=(4, 8), Halo=1)"
    assert c != codistributor1d(2, [3, 0, 3, 2], (4, 8)) and c == codistributor1d(2, [3, 0, 3, 2], (4, 8), halo=1)
    assert hash(codistributor1d(2, [4, 4], (4, 8), halo=0)) == hash(codistributor1d(2, [4, 4], (4, 8)))
    assert codistributor1d(2, [4, 4], (4, 8))._key() == (2, None, (4, 4), (4, 8))  # as before halos
    assert [c.localSlices(k, 4)[1] for k in range(1, 5)] == [slice(0, 4), slice(3, 3), slice(2, 7), slice(5, 8)]
    assert c.describe_slice(1, 4) == "This lab stores D[:, 0:4] with 1 halo cell on each interior side."
    assert c.describe_slice(2, 4) == "This lab stores D[:, 3:3] (nothing: the range is empty)."
    assert codistributor1d(1, [5], (5,), halo=2).describe_slice(1, 1) == "This lab stores D[0:5]."
    assert codistributor1d(1, [3, 3], (6,), halo=2).describe_slice(2, 2) == \
        "This lab stores D[1:6] with 2 halo cells on each interior side."
    assert c.ownerOf((0, 3), 4) == 3 and c.globalToLocal((0, 3), 4) == (3, (0, 1))
    assert c.localToGlobal(3, (1, 0), 4) == (1, 2)
    with pytest.raises(IndexError, match="out of bounds for the part of lab 4"):
        c.localToGlobal(4, 3, 4)
    assert codistributor("1d", 1, halo=2).Halo == 2 and codistributor1d(halo=1).complete((5,), 2).Halo == 1
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(ValueError, match=r"^halo must be a non-negative integer, got"):
            codistributor1d(1, halo=bad)
