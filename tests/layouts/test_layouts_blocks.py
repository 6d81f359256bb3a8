"""codistributorBlocks (Dagger.jl's Blocks + assignment): pure index math, no MPI."""
import itertools
import math
import random

import numpy as np
import pytest
from support.layout_checks import check_protocol, eq, sel_array

from spmdlab import codistributor, codistributor1d, codistributor2dbc, codistributorBlocks

NAMES = ["blockrow", "blockcol", "cyclicrow", "cycliccol"]


# --------------------------------------------------------------------------- reference
def ref_owners(assignment, shape, bs, n) -> np.ndarray:
    """Owner of every block, computed independently of the library."""
    nb = tuple(-(-m // b) for m, b in zip(shape, bs))
    idx = np.indices(nb, dtype=np.int64)
    if isinstance(assignment, str):
        d = 0 if assignment.endswith("row") else 1
        if assignment.startswith("cyclic"):
            return idx[d] % n + 1
        counts = [nb[d] // n + (k < nb[d] % n) for k in range(n)]
        return np.searchsorted(np.cumsum(counts), idx[d], side="right") + 1
    A = np.asarray(assignment)
    return A[tuple(idx[d] % A.shape[d] for d in range(len(nb)))]


def ref_check(assignment, shape, bs, n):
    """The layout against the reference: owners, grids, chunk order, halo-free parts."""
    c, owner, stored, parts = check_protocol(codistributorBlocks(bs, assignment), shape, n)
    ref = ref_owners(assignment, shape, bs, n)
    eq(c.BlockOwners, ref)
    if owner.size:
        elems = np.indices(shape)
        eq(owner, ref[tuple(elems[d] // bs[d] for d in range(len(shape)))])
    assert np.all(stored == 1)  # no halo: every element stored once
    chunked = False
    for lab in range(1, n + 1):
        blocks = np.argwhere(ref == lab)
        proj = [np.unique(blocks[:, d]) for d in range(len(shape))]
        if len(blocks) and len(blocks) != math.prod(len(p) for p in proj):
            chunked = True
    assert c.isChunked(n) == chunked
    for lab in range(1, n + 1):
        blocks = np.argwhere(ref == lab)
        sels = c.chunkSelections(lab, n)
        if chunked:
            want = [tuple(slice(i * b, min(m, (i + 1) * b)) for i, b, m in zip(blk, bs, shape)) for blk in blocks]
            assert sels == want
        elif len(blocks):
            for d, s in enumerate(c.localSelection(lab, n)):
                elems = np.unique((blocks[:, d][:, None] * bs[d] + np.arange(bs[d])).ravel())
                eq(sel_array(s), elems[elems < shape[d]])
                assert isinstance(s, slice) == (elems.size == 0 or np.all(np.diff(elems) == 1))
        else:
            assert 0 in c.localShape(lab, n)
    return c


def random_assignment(rng, ndim, n):
    shape = tuple(rng.randint(1, 3) for _ in range(ndim))
    return np.array([rng.randint(1, n) for _ in range(math.prod(shape))]).reshape(shape)


# --------------------------------------------------------------------------- Dagger's examples
def test_dagger_blockrow_7x11():
    c = codistributorBlocks((1, 2), "blockrow").complete((7, 11), 4)
    assert c.BlockOwners.shape == (7, 6)
    eq(c.BlockOwners, np.repeat([[1], [1], [2], [2], [3], [3], [4]], 6, axis=1))
    assert not c.isChunked(4)
    assert [c.localSelection(k, 4) for k in range(1, 5)] == [
        (slice(0, 2), slice(0, 11)), (slice(2, 4), slice(0, 11)), (slice(4, 6), slice(0, 11)),
        (slice(6, 7), slice(0, 11))]


def test_dagger_blockcol_7x11():
    c = codistributorBlocks((2, 2), "blockcol").complete((7, 11), 4)
    eq(c.BlockOwners, np.repeat([[1, 1, 2, 2, 3, 4]], 4, axis=0))
    assert c.localSelection(1, 4) == (slice(0, 7), slice(0, 4))
    assert c.localSelection(4, 4) == (slice(0, 7), slice(10, 11))


def test_dagger_cyclicrow_and_cycliccol_7x11():
    c = codistributorBlocks((1, 2), "cyclicrow").complete((7, 11), 4)
    eq(c.BlockOwners[:, 0], [1, 2, 3, 4, 1, 2, 3])
    eq(c.BlockOwners, np.repeat(c.BlockOwners[:, :1], 6, axis=1))
    eq(c.localSelection(1, 4)[0], [0, 4])
    assert c.localSelection(4, 4) == (slice(3, 4), slice(0, 11))
    c = codistributorBlocks((2, 2), "cycliccol").complete((7, 11), 4)
    eq(c.BlockOwners, np.repeat([[1, 2, 3, 4, 1, 2]], 4, axis=0))
    eq(c.globalIndices(2, 1, 4), [0, 1, 8, 9])
    eq(c.globalIndices(2, 3, 4), [4, 5])


def test_dagger_assignment_array_7x11():
    c = codistributorBlocks((2, 2), [[2, 1], [4, 3]]).complete((7, 11), 4)
    eq(c.BlockOwners, [[2, 1, 2, 1, 2, 1], [4, 3, 4, 3, 4, 3], [2, 1, 2, 1, 2, 1], [4, 3, 4, 3, 4, 3]])
    assert not c.isChunked(4)
    eq(c.globalIndices(1, 2, 4), [0, 1, 4, 5])
    eq(c.globalIndices(2, 2, 4), [0, 1, 4, 5, 8, 9])
    assert c.localShape(3, 4) == (3, 5)
    assert c.describe_slice(1, 4) == ("This lab stores blocks of size 2x2 of D: rows [0:2, 4:6], "
                                      "columns [2:4, 6:8, 10:11].")
    ref_check([[2, 1], [4, 3]], (7, 11), (2, 2), 4)


def test_dagger_vector_15():
    v = {name: codistributorBlocks(3, name).complete((15,), 4) for name in ("blockrow", "cyclicrow")}
    eq(v["blockrow"].BlockOwners, [1, 1, 2, 3, 4])
    eq(v["cyclicrow"].BlockOwners, [1, 2, 3, 4, 1])
    a = codistributorBlocks(3, [2, 3, 1, 4]).complete((15,), 4)
    eq(a.BlockOwners, [2, 3, 1, 4, 2])
    assert not a.isChunked(4)  # in 1-D every set of blocks is a grid
    eq(a.localSelection(2, 4)[0], [0, 1, 2, 12, 13, 14])
    assert a.localSelection(1, 4) == (slice(6, 9),)
    assert a.describe_slice(2, 4) == "This lab stores blocks of size 3 of D: elements [0:3, 12:15]."



def test_dagger_vector_15_blockcol_and_cycliccol():
    """Dagger's ``vd = distribute(v, Blocks(3), :blockcol)`` (and ``:cycliccol``) on
    ``v = ones(15)`` with 4 workers: a vector's column blocks are its only blocks."""
    col = codistributorBlocks(3, "blockcol").complete((15,), 4)
    cyc = codistributorBlocks(3, "cycliccol").complete((15,), 4)
    eq(col.BlockOwners, [1, 1, 2, 3, 4])
    eq(cyc.BlockOwners, [1, 2, 3, 4, 1])
    assert col.localSelection(1, 4) == (slice(0, 6),) and col.localSelection(4, 4) == (slice(12, 15),)
    eq(cyc.localSelection(1, 4)[0], [0, 1, 2, 12, 13, 14])
    for c, rule in ((col, "blockrow"), (cyc, "cyclicrow")):  # the same layouts as the row rules
        row = codistributorBlocks(3, rule).complete((15,), 4)
        for lab in range(1, 5):
            eq(c.globalIndices(1, lab, 4), row.globalIndices(1, lab, 4))
    assert col.ownerOf(7, 4) == 2 and cyc.ownerOf(13, 4) == 1
    assert col.partitions_text() == "with 5 partitions of size 3"


def test_dagger_partitions_text():
    """Dagger's display: ``DMatrix{Float64}(100, 100) with 2x2 partitions of size 50x50``."""
    assert codistributorBlocks((50, 50)).complete((100, 100), 4).partitions_text() == \
        "with 2×2 partitions of size 50×50"
    assert codistributorBlocks((10, 50)).complete((100, 500), 6).partitions_text() == \
        "with 10×10 partitions of size 10×50"
    assert codistributorBlocks(64).complete((3, 100), 2).partitions_text() == "with 1×2 partitions of size 3×64"


def test_dagger_cube_5x5x5():
    M = np.stack([np.array([[1, 2], [3, 4]]), np.array([[4, 3], [2, 1]])], axis=2)  # Julia's cat(..., dims=3)
    c = codistributorBlocks((2, 2, 2), M).complete((5, 5, 5), 4)
    assert c.BlockOwners.shape == (3, 3, 3)
    eq(c.BlockOwners[:, :, 0], [[1, 2, 1], [3, 4, 3], [1, 2, 1]])
    eq(c.BlockOwners[:, :, 1], [[4, 3, 4], [2, 1, 2], [4, 3, 4]])
    assert c.isChunked(4)  # lab 1 sits at (0,0,0) and (1,1,1): not a grid
    assert len(c.chunkSelections(1, 4)) == 9 and len(c.chunkSelections(2, 4)) == 6
    assert c.chunkSelections(1, 4)[:2] == [(slice(0, 2), slice(0, 2), slice(0, 2)),
                                           (slice(0, 2), slice(0, 2), slice(4, 5))]
    assert c.describe_slice(1, 4) == ("This lab stores 9 blocks of D: [0:2, 0:2, 0:2], [0:2, 0:2, 4:5], ..., "
                                      "[4:5, 4:5, 4:5].")
    ref_check(M, (5, 5, 5), (2, 2, 2), 4)
    for name in NAMES:
        ref_check(name, (5, 5, 5), (2, 2, 2), 4)
        assert not codistributorBlocks(2, name).complete((5, 5, 5), 4).isChunked(4)


# --------------------------------------------------------------------------- exhaustive
@pytest.mark.parametrize("n", range(1, 6))
def test_exhaustive_1d(n):
    rng = random.Random(n)
    for m in range(10):
        for b in range(1, 5):
            for a in ["blockrow", "cyclicrow", random_assignment(rng, 1, n), random_assignment(rng, 1, n)]:
                ref_check(a, (m,), (b,), n)


@pytest.mark.parametrize("n", range(1, 6))
def test_exhaustive_2d(n):
    rng = random.Random(10 + n)
    for rows, cols in itertools.product(range(10), repeat=2):
        if (rows + cols + n) % 2:
            continue  # half of the size pairs (every size 0..9 in each dimension), another half for the next n
        bs = (rng.randint(1, 4), rng.randint(1, 4))
        for a in NAMES + [random_assignment(rng, 2, n)]:
            ref_check(a, (rows, cols), bs, n)


@pytest.mark.parametrize("n", range(1, 6))
def test_exhaustive_3d(n):
    rng = random.Random(20 + n)
    for _ in range(40):
        shape = tuple(rng.randint(0, 5) for _ in range(3))
        bs = tuple(rng.randint(1, 3) for _ in range(3))
        a = rng.choice(NAMES + [random_assignment(rng, 3, n)] * 2)
        ref_check(a, shape, bs, n)


@pytest.mark.parametrize("n", range(1, 7))
def test_2dbc_is_as_blocks(n):
    grids = [[r, n // r] for r in range(1, n + 1) if n % r == 0]
    for shape in [(0, 3), (1, 1), (3, 3), (7, 11), (9, 13), (16, 5), (4, 0)]:
        for grid, b, orient in itertools.product(grids, [1, 2, 3, 64], ["row", "col"]):
            d = codistributor2dbc(grid, b, orient).complete(shape, n)
            blocks = d.asBlocks()
            assert blocks.BlockSize == (b, b) and blocks.GlobalSize == shape
            c = blocks.complete(shape, n)
            assert not c.isChunked(n)
            for lab in range(1, n + 1):
                for x, y in zip(d.localSelection(lab, n), c.localSelection(lab, n)):
                    assert type(x) is type(y)
                    eq(sel_array(x), sel_array(y))
                assert d.localShape(lab, n) == c.localShape(lab, n)
            if 0 not in shape:
                G = tuple(np.indices(shape).reshape(2, -1))
                eq(d.ownerOf(G, n), c.ownerOf(G, n))
                lab, loc = d.globalToLocal(G, n)
                lab2, loc2 = c.globalToLocal(G, n)
                eq(lab, lab2)
                eq(loc[0], loc2[0])
                eq(loc[1], loc2[1])
    assert codistributor2dbc([2, 2], 3, "col").asBlocks().Assignment.tolist() == [[1, 3], [2, 4]]
    with pytest.raises(ValueError, match="asBlocks needs the LabGrid"):
        codistributor2dbc().asBlocks()


def test_global_to_local_round_trip():
    for a, shape, bs, n in [("cyclicrow", (7, 5), (2, 2), 3), ([[2, 1], [4, 3]], (7, 11), (2, 2), 4),
                            ("blockcol", (3, 9, 2), (1, 2, 1), 2), ([1, 2, 1, 3], (20,), (3,), 3)]:
        c = codistributorBlocks(bs, a).complete(shape, n)
        A = np.arange(math.prod(shape)).reshape(shape)
        G = tuple(np.indices(shape).reshape(len(shape), -1))
        lab, loc = c.globalToLocal(G, n)
        eq(lab, c.ownerOf(G, n))
        for k in range(1, n + 1):
            m = lab == k
            part = A[np.ix_(*c.localIndices(k, n))]
            eq(part[tuple(x[m] for x in loc)], A.reshape(-1)[m])
            back = c.localToGlobal(k, tuple(x[m] for x in loc), n)
            for d in range(len(shape)):
                eq(back[d], G[d][m])
        g = tuple(s - 1 for s in shape)
        k, li = c.globalToLocal(g, n)
        assert type(k) is int and all(type(x) is int for x in li)
        assert c.localToGlobal(k, li, n) == g
    with pytest.raises(IndexError, match="local index 5 is out of bounds for dimension 1 of lab 1's part with size 4"):
        codistributorBlocks(2, "cyclicrow").complete((7, 3), 2).localToGlobal(1, (5, 0), 2)
    c = codistributorBlocks((2, 2, 2), np.arange(1, 9).reshape(2, 2, 2) % 3 + 1).complete((5, 5, 5), 3)
    assert c.isChunked(3)
    with pytest.raises(ValueError, match="globalToLocal: the local part of this codistributorBlocks layout"):
        c.globalToLocal((0, 0, 0), 3)


# --------------------------------------------------------------------------- halo
@pytest.mark.parametrize("n", range(1, 5))
def test_halo_boxes(n):
    rng = random.Random(30 + n)
    for shape in [(0,), (7,), (10,), (0, 4), (7, 5), (9, 9), (4, 5, 3)]:
        for w in (1, 2):
            for _ in range(4):
                bs = tuple(rng.randint(1, 4) for _ in shape)
                name = rng.choice(["blockrow"] + (["blockcol"] if len(shape) > 1 else []))
                plain = codistributorBlocks(bs, name).complete(shape, n)
                c, owner, stored, parts = check_protocol(codistributorBlocks(bs, name, halo=w), shape, n)
                assert c.Halo == w and "Halo=" in repr(c)
                eq(c.BlockOwners, plain.BlockOwners)
                want = np.zeros(shape, dtype=np.int64)
                for lab in range(1, n + 1):
                    own = plain.localSelection(lab, n)
                    got = c.localSelection(lab, n)
                    if 0 in plain.localShape(lab, n):
                        assert got == own
                        continue
                    box = tuple(slice(max(0, s.start - w), min(m, s.stop + w)) for s, m in zip(own, shape))
                    assert got == box
                    want[box] += 1
                    [(k, g, loc)] = c.ownedPieces(lab, n)
                    assert g == own and all(x.start == o.start - b.start for x, o, b in zip(loc, own, box))
                eq(stored, want)


def test_halo_text_and_errors():
    c = codistributorBlocks(2, "blockrow", halo=1).complete((7, 5), 3)
    assert c.localSelection(2, 3) == (slice(3, 7), slice(0, 5))
    assert c.describe_slice(2, 3) == "This lab stores D[3:7, :] with 1 halo cell on each interior side."
    assert codistributorBlocks(2, "blockrow", halo=2).complete((7, 5), 1).describe_slice(1, 1) == "This lab stores D[:, :]."
    with pytest.raises(ValueError, match=r"halo=1 needs every lab's blocks to form one box \(contiguous along "
                                         r"every dimension\), but lab 1's do not"):
        codistributorBlocks(2, "cyclicrow", halo=1).complete((8, 4), 2)
    with pytest.raises(ValueError, match="halo=1 needs every lab's blocks to form one box"):
        codistributorBlocks((2, 2, 2), np.indices((2, 2, 2)).sum(axis=0) % 2 + 1, halo=1).complete((4, 4, 4), 2)
    assert codistributorBlocks(2, "cyclicrow", halo=1).complete((4, 4), 2).Halo == 1  # one block each: boxes
    with pytest.raises(ValueError, match="halo must be a non-negative integer, got -1"):
        codistributorBlocks(2, halo=-1)
    with pytest.raises(ValueError, match="halo must be a non-negative integer, got 1.5"):
        codistributorBlocks(2, halo=1.5)


# --------------------------------------------------------------------------- objects
def test_properties_equality_repr_factory():
    c = codistributorBlocks(2, "CyclicRow")
    assert (c.BlockSize, c.Assignment, c.GlobalSize, c.Halo, c.NumLabs, c.BlockOwners) == \
        ((2,), "cyclicrow", None, 0, None, None)
    assert not c.isComplete()
    assert codistributorBlocks(2, gsize=(3, 4)).BlockSize == (2, 2)
    assert codistributorBlocks(2, [[1, 2]]).BlockSize == (2, 2)
    d = c.complete((6, 4), 3)
    assert d.isComplete() and d.NumLabs == 3 and d.BlockSize == (2, 2) and c.NumLabs is None
    assert repr(d) == "codistributorBlocks(BlockSize=(2, 2), Assignment='cyclicrow', GlobalSize=(6, 4), NumLabs=3)"
    arr = [[2, 1], [4, 3]]
    e = codistributorBlocks((2, 2), arr)
    assert repr(e) == "codistributorBlocks(BlockSize=(2, 2), Assignment=[[2, 1], [4, 3]], GlobalSize=None, NumLabs=None)"
    got = e.Assignment
    got[0, 0] = 9
    eq(e.Assignment, arr)  # a copy
    owners = d.BlockOwners
    owners[0, 0] = 9
    assert d.BlockOwners[0, 0] == 1
    assert codistributorBlocks((2, 2), arr) == e and hash(codistributorBlocks((2, 2), np.array(arr))) == hash(e)
    assert codistributorBlocks(2, arr) == e  # 2 means 2 in every dimension
    assert e != codistributorBlocks((2, 2), [[1, 2], [4, 3]]) and e != codistributorBlocks((2, 1), arr)
    assert c != codistributorBlocks(2) and c != codistributor1d() and c != "x"
    assert d != c.complete((6, 4), 2) and d == c.complete((6, 4), 3)
    assert codistributorBlocks(2, halo=1) != codistributorBlocks(2)
    assert codistributor("blocks", 2, "cyclicrow") == c
    assert codistributor("BLOCKS", (2, 2), arr) == e
    c4 = codistributorBlocks(2, gsize=(5, 5))
    assert c4.localShape(1, 2) == (4, 5)  # completes on use, as the other layouts
    with pytest.raises(ValueError, match=r"codistributorBlocks is not complete \(GlobalSize unknown\)"):
        codistributorBlocks(2).localShape(1, 2)
    assert codistributorBlocks(1, "blockrow").complete((3,), 5).localShape(5, 5) == (0,)
    assert codistributorBlocks(2, [[3]]).complete((3, 3), 3).localShape(1, 3) == (0, 0)  # absent lab


def test_bad_input_messages():
    with pytest.raises(ValueError, match=r"^block size must be >= 1, got 0 in dimension 2$"):
        codistributorBlocks((2, 0))
    with pytest.raises(ValueError, match=r"^block size must be >= 1, got 0$"):
        codistributorBlocks(0)
    with pytest.raises(TypeError, match=r"^block size must be an integer or a sequence of integers, got 1.5$"):
        codistributorBlocks(1.5)
    with pytest.raises(TypeError, match="block size must be an integer or a sequence of integers"):
        codistributorBlocks((2, 1.5))
    with pytest.raises(ValueError, match=r"^unknown assignment 'diagonal': use 'blockrow', 'blockcol', 'cyclicrow', "
                                         r"'cycliccol' or an integer array of lab numbers$"):
        codistributorBlocks(2, "diagonal")
    with pytest.raises(TypeError, match="or an integer array of lab numbers, got"):
        codistributorBlocks(2, [[1.0, 2.0]])
    with pytest.raises(TypeError, match="or an integer array of lab numbers, got"):
        codistributorBlocks(2, [True, False])
    with pytest.raises(ValueError, match=r"an assignment array needs at least one lab number in every dimension, got shape \(\)"):
        codistributorBlocks(2, 3)
    with pytest.raises(ValueError, match=r"got shape \(0,\)"):
        codistributorBlocks(2, np.zeros(0, dtype=int))
    with pytest.raises(ValueError, match=r"^assignment lab 5 does not exist: labs are numbered 1..4 as in MATLAB$"):
        codistributorBlocks(2, [[1, 5], [2, 3]]).complete((4, 4), 4)
    with pytest.raises(ValueError, match=r"^assignment lab 0 does not exist: labs are numbered 1..4 as in MATLAB$"):
        codistributorBlocks(2, [[1, 0]]).complete((4, 4), 4)
    with pytest.raises(ValueError, match=r"the assignment array is 1-D but the array is 2-D"):
        codistributorBlocks(2, [1, 2]).complete((4, 4), 2)
    with pytest.raises(ValueError, match=r"block size \(2, 2\) has 2 entries but the array is 3-D"):
        codistributorBlocks((2, 2), gsize=(3, 3, 3))
    with pytest.raises(ValueError, match=r"codistributor is for global size \(4, 4\) but the array has size \(4, 5\)"):
        codistributorBlocks(2, gsize=(4, 4)).complete((4, 5), 2)
    with pytest.raises(ValueError, match="cannot distribute a 0-d array"):
        codistributorBlocks(2).complete((), 2)
    with pytest.raises(ValueError, match="numlabs must be a positive integer"):
        codistributorBlocks(2).complete((3,), 0)
    c = codistributorBlocks(2, "cyclicrow").complete((4, 4), 2)
    with pytest.raises(ValueError, match="lab 3 does not exist: labs are numbered 1..2 as in MATLAB"):
        c.chunkSelections(3, 2)
    with pytest.raises(TypeError, match="dimension is needed"):
        c.globalIndices(lab=1, numlabs=2)
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 2 with size 4"):
        c.ownerOf((0, 4), 2)
    with pytest.raises(ValueError, match="index tuple has 1 entries but the array is 2-D"):
        c.ownerOf(0, 2)
