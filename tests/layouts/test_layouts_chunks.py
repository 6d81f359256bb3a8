"""codistributorChunks (CuPy's index_map): pure index math, no MPI."""
import itertools
import random

import numpy as np
import pytest
from support.layout_checks import check_protocol, eq

from spmdlab import codistributor, codistributorBlocks, codistributorChunks
from spmdlab.layouts.chunks import subtract_box

S = slice


# --------------------------------------------------------------------------- reference
def boxes_in_order(index_map, shape):
    """[(lab, (starts, stops))] of every chunk, lab 1's first, resolved as numpy resolves slices."""
    out = []
    for lab in sorted(index_map):
        chunks = index_map[lab]
        chunks = [chunks] if isinstance(chunks, (tuple, slice)) else chunks
        for ch in chunks:
            ch = (ch,) if isinstance(ch, slice) else ch
            r = [s.indices(m)[:2] for s, m in zip(ch, shape)]
            out.append((lab, (tuple(a for a, _ in r), tuple(max(a, b) for a, b in r))))
    return out


def ref_owner_and_holders(index_map, shape):
    owner = np.zeros(shape, dtype=np.int64)
    holders = np.zeros(shape + (max(index_map, default=0) + 1,), dtype=bool)
    grids = np.indices(shape)
    for lab, (lo, hi) in boxes_in_order(index_map, shape):
        inside = np.ones(shape, dtype=bool)
        for d in range(len(shape)):
            inside &= (grids[d] >= lo[d]) & (grids[d] < hi[d])
        owner[inside & (owner == 0)] = lab
        holders[..., lab] |= inside
    return owner, holders


def random_map(rng, shape, n):
    """A random covering chunk map: a random grid of cells dealt to random labs, plus some
    random overlapping boxes, slices written in numpy's other forms (None, negative)."""
    cuts = [sorted({0, m, *(rng.randint(0, m) for _ in range(rng.randint(0, 2)))}) for m in shape]
    m: dict = {}
    for cell in itertools.product(*[list(zip(c[:-1], c[1:])) for c in cuts]):
        m.setdefault(rng.randint(1, n), []).append(cell)
    for _ in range(rng.randint(1, 3)):
        box = []
        for size in shape:
            a = rng.randint(0, size)
            box.append((a, rng.randint(a, size)))
        chunks = m.setdefault(rng.randint(1, n), [])
        chunks.insert(rng.randint(0, len(chunks)), tuple(box))

    def written(a, b, size):
        form = rng.randint(0, 3)
        if form == 1:
            return S(a - size if a < size else a, b - size if 0 < b < size else b)
        if form == 2:
            return S(None if a == 0 else a, None if b == size else b)
        return S(a, b)

    for lab in m:
        m[lab] = [tuple(written(a, b, size) for (a, b), size in zip(ch, shape)) for ch in m[lab]]
        rng.shuffle(m[lab])
    return m


def ref_check(index_map, shape, n):
    c, owner, stored, parts = check_protocol(codistributorChunks(index_map), shape, n)
    assert c.isChunked(n)
    want_owner, holders = ref_owner_and_holders(index_map, shape)
    eq(owner, want_owner)
    eq(stored, holders.sum(axis=-1))
    boxes = boxes_in_order(index_map, shape)
    for lab in range(1, n + 1):
        mine = [box for k, box in boxes if k == lab]
        got = c.chunkSelections(lab, n)
        assert got == [tuple(S(a, b) for a, b in zip(*box)) for box in mine]
        assert c.IndexMap.get(lab, []) == got
        if not mine:
            assert c.ownedPieces(lab, n) == []
    if owner.size:
        for idx in [tuple(0 for _ in shape), tuple(s - 1 for s in shape), tuple(s // 2 for s in shape)]:
            assert c.holders(idx, n) == [k for k in range(1, holders.shape[-1]) if holders[idx + (k,)]]
    return c


# --------------------------------------------------------------------------- CuPy's examples
def test_cupy_make_2d_index_map_example():
    # make_2d_index_map([0, 2, 4], [0, 3, 5], [[{0}, {1}], [{2}, {0, 1}]]), devices 0, 1, 2 -> labs 1, 2, 3
    index_map = {1: [(S(0, 2), S(0, 3)), (S(2, 4), S(3, 5))],
                 2: [(S(0, 2), S(3, 5)), (S(2, 4), S(3, 5))],
                 3: [(S(2, 4), S(0, 3))]}
    c = ref_check(index_map, (4, 5), 3)
    eq(c.ownerOf(tuple(np.indices((4, 5))), 3), [[1, 1, 1, 2, 2], [1, 1, 1, 2, 2], [3, 3, 3, 1, 1], [3, 3, 3, 1, 1]])
    assert c.holders((3, 4), 3) == [1, 2] and c.holders((0, 0), 3) == [1]
    assert c.ownedPieces(2, 3) == [(0, (S(0, 2), S(3, 5)), (S(0, 2), S(0, 2)))]  # its overlap copy is lab 1's
    assert c.describe_slice(1, 3) == "This lab stores 2 chunks of D: [0:2, 0:3], [2:4, 3:5]."
    assert c.describe_slice(3, 3, name="A") == "This lab stores 1 chunk of A: [2:4, 0:3]."


def test_cupy_distributed_array_example():
    # CuPy's {0: [(slice(2), slice(2)), slice(None, None, 2)], 1: (slice(1, None), 2)} on a 3x3 array
    # uses a step and an integer index, which chunks (boxes) do not take:
    with pytest.raises(ValueError, match=r"^chunk 2 of lab 1, \(slice\(None, None, 2\),\), has step 2 in dimension 1: "
                                         r"chunks are boxes \(slices with step 1\)$"):
        codistributorChunks({1: [(S(2), S(2)), S(None, None, 2)], 2: (S(1, None), 2)})
    with pytest.raises(TypeError, match=r"chunk 1 of lab 2, \(slice\(1, None, None\), 2\), has 2 in dimension 2: "
                                        r"chunks are tuples of slices \(use slice\(i, i \+ 1\) for one index\)"):
        codistributorChunks({1: [(S(2), S(2))], 2: (S(1, None), 2)})
    # the same elements as boxes: rows 0 and 2 whole, [:2, :2], and column 2 of rows 1:
    index_map = {1: [(S(2), S(2)), (S(0, 1), S(None)), (S(2, 3), S(None))], 2: (S(1, None), S(2, 3))}
    c = ref_check(index_map, (3, 3), 2)
    assert c.IndexMap == {1: [(S(0, 2), S(0, 2)), (S(0, 1), S(0, 3)), (S(2, 3), S(0, 3))], 2: [(S(1, 3), S(2, 3))]}
    eq(c.ownerOf(tuple(np.indices((3, 3))), 2), [[1, 1, 1], [1, 1, 2], [1, 1, 1]])
    assert c.holders((2, 2), 2) == [1, 2]


# --------------------------------------------------------------------------- exhaustive
@pytest.mark.parametrize("n", range(1, 6))
def test_exhaustive_random_maps(n):
    rng = random.Random(n)
    for ndim in (1, 2, 3):
        for _ in range(12 if ndim < 3 else 6):
            shape = tuple(rng.randint(0, 9 if ndim < 3 else 4) for _ in range(ndim))
            ref_check(random_map(rng, shape, n), shape, n)
    for m in range(10):  # 1-D, every size: one chunk a lab in any order, single slices
        labs = list(range(1, n + 1))
        rng.shuffle(labs)
        cuts = sorted(rng.randint(0, m) for _ in range(n - 1))
        bounds = [0] + cuts + [m]
        ref_check({lab: S(a, b) for lab, a, b in zip(labs, bounds, bounds[1:])}, (m,), n)


def test_subtract_box_tiles():
    rng = random.Random(7)
    for _ in range(300):
        nd = rng.randint(1, 3)
        a = [sorted(rng.randint(0, 6) for _ in range(2)) for _ in range(nd)]
        b = [sorted(rng.randint(0, 6) for _ in range(2)) for _ in range(nd)]
        A = (tuple(x for x, _ in a), tuple(y for _, y in a))
        B = (tuple(x for x, _ in b), tuple(y for _, y in b))
        want = np.zeros((6,) * nd, dtype=int)
        want[tuple(S(x, y) for x, y in a)] = 1
        want[tuple(S(x, y) for x, y in b)] = 0
        got = np.zeros((6,) * nd, dtype=int)
        for lo, hi in subtract_box(A, B):
            got[tuple(S(x, y) for x, y in zip(lo, hi))] += 1
        eq(got, want)


# --------------------------------------------------------------------------- objects
def test_properties_equality_repr_factory():
    m = {2: [(S(0, 2),), S(2, None)], 1: []}
    c = codistributorChunks(m)
    assert (c.GlobalSize, c.NumLabs, c.Halo) == (None, None, 0) and not c.isComplete()
    assert c.IndexMap == {1: [], 2: [(S(0, 2),), (S(2, None),)]}  # as given until the size is known
    d = c.complete((5,), 3)
    assert d.isComplete() and d.NumLabs == 3 and d.GlobalSize == (5,) and c.NumLabs is None
    assert d.IndexMap == {1: [], 2: [(S(0, 2),), (S(2, 5),)]}
    assert d.chunkSelections(1, 3) == [] and d.chunkSelections(3, 3) == [] and d.ownedPieces(3, 3) == []
    assert d.describe_slice(1, 3) == "This lab stores nothing of D (the index map gives it no chunk)."
    assert repr(d) == "codistributorChunks(IndexMap={1: [], 2: [(slice(0, 2),), (slice(2, 5),)]}, GlobalSize=(5,), NumLabs=3)"
    assert d == codistributorChunks({1: [], 2: [S(0, 2), S(-3, 5)]}, (5,)).complete((5,), 3)
    assert hash(d) == hash(codistributorChunks({2: [S(0, 2), S(2, 5)], 1: []}).complete((5,), 3))
    assert d != codistributorChunks({2: [S(0, 2), S(2, 5)]}).complete((5,), 3)  # lab 1 listed or not
    assert d != c.complete((5,), 2) and d != codistributorBlocks(2) and d != "x"
    assert codistributor("chunks", m) == c and codistributor("CHUNKS", m, (5,)) == codistributorChunks(m, (5,))
    with pytest.raises(ValueError, match=r"unknown codistributor kind 'cyclic': use '1d', '2dbc', 'blocks' or 'chunks'"):
        codistributor("cyclic")
    g = codistributorChunks({1: S(0, 4)}, gsize=4)
    assert g.chunkSelections(1, 2) == [(S(0, 4),)]  # completes on use
    many = codistributorChunks({1: [S(k, k + 1) for k in range(6)]}).complete((6,), 1)
    assert many.describe_slice(1, 1) == "This lab stores 6 chunks of D: [0:1], [1:2], ..., [5:6]."
    assert many.isChunked(1) and len(many.ownedPieces(1, 1)) == 6


def test_chunked_layout_has_no_single_part():
    c = codistributorChunks({1: (S(0, 2), S(0, 2))}).complete((2, 2), 1)
    msg = (r"^localShape: the local part of this codistributorChunks layout is a list of chunks, not one array; "
           r"use chunkSelections\(lab, numlabs\) for the global indices of each chunk "
           r"\(and ownedPieces\(lab, numlabs\) for the elements a lab owns\)$")
    with pytest.raises(ValueError, match=msg):
        c.localShape(1, 1)
    for what in ("localSelection", "localIndices"):
        with pytest.raises(ValueError, match=f"^{what}: the local part of this codistributorChunks layout is a list of chunks"):
            getattr(c, what)(1, 1)
    with pytest.raises(ValueError, match="^globalIndices: the local part"):
        c.globalIndices(1, 1, 1)


def test_bad_input_messages():
    with pytest.raises(ValueError, match=r"^chunk 2 of lab 3, \(slice\(0, 12\),\), runs out of bounds of dimension 1 "
                                         r"with size 10$"):
        codistributorChunks({1: S(0, 10), 3: [S(0, 3), S(0, 12)]}, (10,))
    with pytest.raises(ValueError, match=r"^chunk 1 of lab 1, \(slice\(-11, 3\),\), runs out of bounds of dimension 1 "
                                         r"with size 10$"):
        codistributorChunks({1: S(-11, 3)}).complete((10,), 1)
    with pytest.raises(ValueError, match=r"^index \(4, 7\) is in no chunk of the index map$"):
        codistributorChunks({1: [(S(0, 4), S(None)), (S(4, 10), S(0, 7))], 2: (S(5, 10), S(7, 10))}, (10, 10))
    with pytest.raises(ValueError, match=r"^index 3 is in no chunk of the index map$"):
        codistributorChunks({1: S(0, 3), 2: S(4, 6)}).complete((6,), 2)
    with pytest.raises(ValueError, match=r"^index 0 is in no chunk of the index map$"):
        codistributorChunks({}).complete((1,), 2)
    assert codistributorChunks({}).complete((0, 3), 2).chunkSelections(1, 2) == []
    with pytest.raises(ValueError, match=r"^chunk 1 of lab 2, \(slice\(0, 2\),\), has 1 dimension but the array is 2-D$"):
        codistributorChunks({2: S(0, 2)}).complete((2, 2), 2)
    with pytest.raises(ValueError, match=r"^chunk 2 of lab 1, \(slice\(0, 2\),\), has 1 dimensions but an earlier chunk has 2$"):
        codistributorChunks({1: [(S(0, 2), S(0, 2)), S(0, 2)]})
    with pytest.raises(ValueError, match=r"^index map lab 5 does not exist: labs are numbered 1..4 as in MATLAB$"):
        codistributorChunks({1: S(0, 4), 5: S(0, 1)}).complete((4,), 4)
    with pytest.raises(ValueError, match=r"^index map lab 0 does not exist: labs are numbered from 1 as in MATLAB$"):
        codistributorChunks({0: S(0, 4)})
    with pytest.raises(TypeError, match=r"^index map keys must be lab numbers \(integers\), got '1'$"):
        codistributorChunks({"1": S(0, 4)})
    with pytest.raises(TypeError, match=r"^index_map must be a dict lab -> list of chunks"):
        codistributorChunks([S(0, 4)])
    with pytest.raises(TypeError, match=r"^the chunks of lab 1 must be a list of tuples of slices"):
        codistributorChunks({1: 4})
    with pytest.raises(TypeError, match=r"^chunk 1 of lab 1 must be a tuple of slices, got \[0, 4\]$"):
        codistributorChunks({1: [[0, 4]]})
    with pytest.raises(TypeError, match=r"has a non-integer bound in dimension 1"):
        codistributorChunks({1: S(0.5, 4)})
    with pytest.raises(ValueError, match=r"codistributor is for global size \(4,\) but the array has size \(5,\)"):
        codistributorChunks({1: S(0, 4)}, (4,)).complete((5,), 1)
    with pytest.raises(ValueError, match=r"codistributorChunks is not complete \(GlobalSize unknown\)"):
        codistributorChunks({1: S(0, 4)}).chunkSelections(1, 1)
    with pytest.raises(ValueError, match="cannot distribute a 0-d array"):
        codistributorChunks({1: ()}).complete((), 1)
    c = codistributorChunks({1: S(0, 4)}).complete((4,), 2)
    with pytest.raises(ValueError, match="lab 3 does not exist: labs are numbered 1..2 as in MATLAB"):
        c.ownedPieces(3, 2)
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        c.ownerOf(4, 2)
    with pytest.raises(TypeError, match="holders takes one index"):
        c.holders(np.array([0, 1]), 2)
    assert c.ownerOf(-1, 2) == 1 and c.ownerOf(np.array([0, 3]), 2).tolist() == [1, 1]
