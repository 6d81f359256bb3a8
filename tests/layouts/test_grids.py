"""Process grids (spmdlab.layouts.grids) and codistributor2dbc on them with rectangular
blocks: pure index math, no MPI, checked exhaustively against a brute-force owner map."""
import itertools

import numpy as np
import pytest

from spmdlab.layouts.codistributor import codistributor2dbc
from spmdlab.layouts.grids import Grid, make_grid, near_square, pool_blocks


def brute_owner(m, n, mb, nb, r, c, orient):
    """Grid-local lab (1-based) of every element, straight from ScaLAPACK's definition."""
    out = np.zeros((m, n), dtype=np.int64)
    for i, j in itertools.product(range(m), range(n)):
        pr, pc = (i // mb) % r, (j // nb) % c
        out[i, j] = (pr * c + pc if orient == "row" else pc * r + pr) + 1
    return out


# --------------------------------------------------------------------------- grids
@pytest.mark.parametrize("n, want", [(1, (1, 1)), (2, (1, 2)), (4, (2, 2)), (6, (2, 3)), (7, (1, 7)),
                                     (8, (2, 4)), (9, (3, 3)), (12, (3, 4))])
def test_near_square_rows_at_most_columns(n, want):
    assert near_square(n) == want


def test_default_grid_is_near_square_on_all_labs():
    g = make_grid(numlabs=6)
    assert (g.nprow, g.npcol, g.labs) == (2, 3, (1, 2, 3, 4, 5, 6))
    assert g.is_full(6)


def test_one_size_given_the_other_follows():
    assert make_grid(1, numlabs=4).LabGrid == [1, 4]
    assert make_grid(None, 1, numlabs=4).LabGrid == [4, 1]
    assert make_grid(2, labs=[4, 3], numlabs=4).LabGrid == [2, 1]


def test_two_by_one_on_four_labs():
    g = make_grid(2, 1, labs=[3, 4], numlabs=4)
    assert not g.is_full(4)
    assert [g.rank_of(k) for k in (1, 2, 3, 4)] == [None, None, 1, 2]
    assert [g.coords(k) for k in (1, 2, 3, 4)] == [None, None, (0, 0), (1, 0)]
    assert g.lab_matrix().tolist() == [[3], [4]]
    assert make_grid(2, 1, numlabs=4).labs == (1, 2)  # BLACS' first processes


def test_column_orientation_places_labs_down_columns():
    g = make_grid(2, 2, [5, 6, 7, 8], numlabs=8, orientation="col")
    assert g.lab_matrix().tolist() == [[5, 7], [6, 8]]
    assert g.lab_at(1, 0) == 6 and g.coords(7) == (0, 1)


@pytest.mark.parametrize("kwargs, message", [
    (dict(nprow=3, npcol=3), "grid 3x3 needs 9 labs but the pool has 4"),
    (dict(nprow=2, npcol=1, labs=[1, 1]), "lab 1 appears twice in labs (positions 1 and 2)"),
    (dict(labs=[2, 5]), "lab 5 in labs is not in the pool: labs are numbered 1..4"),
    (dict(nprow=2, npcol=2, labs=[1, 2]), "grid 2x2 holds 4 labs but labs lists 2"),
    (dict(nprow=3), "a grid with 3 rows cannot hold 4 labs"),
    (dict(nprow=0, npcol=2), "nprow must be a positive integer, got 0"),
    (dict(labs=[]), "labs is empty"),
    (dict(orientation="diag"), "orientation must be 'row' or 'col'"),
])
def test_bad_grids_say_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError) as e:
        make_grid(numlabs=4, **kwargs)
    assert message in str(e.value)


def test_grid_equality_and_pickle_without_communicator():
    import pickle

    g = make_grid(2, 1, [3, 4], numlabs=4)
    g.comm = object()
    h = pickle.loads(pickle.dumps(g))
    assert h == g and h.comm is None and hash(h) == hash(g)
    assert g != make_grid(2, 1, [4, 3], numlabs=4)


# --------------------------------------------------------------------------- rectangular blocks
def test_block_size_int_or_pair():
    c = codistributor2dbc([2, 3], (2, 5))
    assert c.BlockSize == (2, 5) and c.BlockSizes == (2, 5)
    sq = codistributor2dbc([2, 3], 4)
    assert sq.BlockSize == 4 and sq.BlockSizes == (4, 4)
    assert codistributor2dbc().BlockSize == 64  # MATLAB's default kept (pbdBASE's is 4x4)
    assert codistributor2dbc([2, 3], (3, 3)) == codistributor2dbc([2, 3], 3)


@pytest.mark.parametrize("bs, err", [((0, 2), ValueError), ((2,), TypeError), ("ab", TypeError),
                                     ((2, 2.5), TypeError)])
def test_bad_block_sizes(bs, err):
    with pytest.raises(err, match="blocksize"):
        codistributor2dbc([1, 2], bs)


@pytest.mark.parametrize("r, c", [(1, 1), (1, 3), (2, 1), (2, 3), (3, 2)])
@pytest.mark.parametrize("orient", ["row", "col"])
def test_rectangular_blocks_exhaustive(r, c, orient):
    """Every lab's indices, shape, owners and local/global maps agree with the definition,
    for every small shape and block pair."""
    n = r * c
    for m, k, mb, nb in itertools.product(range(0, 8), range(0, 7), range(1, 5), range(1, 4)):
        codist = codistributor2dbc([r, c], (mb, nb), orient, (m, k))
        owner = brute_owner(m, k, mb, nb, r, c, orient)
        seen = np.zeros((m, k), dtype=np.int64)
        for lab in range(1, n + 1):
            rows, cols = codist.localIndices(lab, n)
            assert codist.localShape(lab, n) == (len(rows), len(cols))
            assert list(rows) == sorted(rows) and list(cols) == sorted(cols)
            if len(rows) and len(cols):
                assert np.all(owner[np.ix_(rows, cols)] == lab)
                seen[np.ix_(rows, cols)] += 1
                li, lj = np.meshgrid(np.arange(len(rows)), np.arange(len(cols)), indexing="ij")
                gi, gj = codist.localToGlobal(lab, (li, lj), n)
                assert np.array_equal(gi, rows[li]) and np.array_equal(gj, cols[lj])
        if m and k:
            assert np.all(seen == 1)
            ii, jj = np.indices((m, k))
            assert np.array_equal(codist.ownerOf((ii, jj), n), owner)
            lab, (li, lj) = codist.globalToLocal((ii, jj), n)
            assert np.array_equal(lab, owner)
            for i, j in [(0, 0), (m - 1, k - 1), (m // 2, k // 3)]:
                L = int(lab[i, j])
                assert codist.localToGlobal(L, (int(li[i, j]), int(lj[i, j])), n) == (i, j)


def test_as_blocks_keeps_rectangular_blocks():
    c = codistributor2dbc([2, 2], (3, 1), "row", (7, 5))
    b = c.asBlocks().complete((7, 5), 4)
    for lab in range(1, 5):
        assert all(np.array_equal(x, y) for x, y in zip(c.localIndices(lab, 4), b.localIndices(lab, 4)))


# --------------------------------------------------------------------------- pbdBASE's example
def test_pbdbase_9x9_on_2x3_grid_with_2x2_blocks():
    """pbdDMAT's guide: a 9x9 matrix on a 2x3 grid with bldim 2x2. Process (0,0) holds
    rows 1,2,5,6,9 and columns 1,2,7,8 (1-based): 5x4; (0,1) 5x3; (0,2) 5x2; (1,0) 4x4;
    (1,1) 4x3; (1,2) 4x2."""
    g = make_grid(2, 3, numlabs=6)
    c = codistributor2dbc(g, (2, 2)).complete((9, 9), 6)
    want = {(0, 0): (5, 4), (0, 1): (5, 3), (0, 2): (5, 2), (1, 0): (4, 4), (1, 1): (4, 3), (1, 2): (4, 2)}
    for lab in range(1, 7):
        assert c.localShape(lab, 6) == want[g.coords(lab)]
    rows, cols = c.localIndices(1, 6)
    assert (rows + 1).tolist() == [1, 2, 5, 6, 9] and (cols + 1).tolist() == [1, 2, 7, 8]
    rows, cols = c.localIndices(6, 6)
    assert (rows + 1).tolist() == [3, 4, 7, 8] and (cols + 1).tolist() == [5, 6]


# --------------------------------------------------------------------------- sub-grids
def test_codistributor_on_a_grid_numbers_labs_inside_it():
    g = make_grid(2, 1, [3, 4], numlabs=4)
    c = codistributor2dbc(g, (2, 3)).complete((5, 4), 4)
    assert c.Grid is g and c.LabGrid == [2, 1] and c.NumLabs == 2
    assert c.Orientation == "row"
    assert "Labs=[3, 4]" in repr(c)
    assert c != codistributor2dbc([2, 1], (2, 3), "row", (5, 4))


def test_grid_outside_the_pool_and_conflicting_orientation():
    g = make_grid(2, 1, [3, 4], numlabs=4)
    with pytest.raises(ValueError, match="uses lab 4 but there are 2 labs"):
        codistributor2dbc(g, 2).complete((4, 4), 2)
    with pytest.raises(ValueError, match="differs from the grid's"):
        codistributor2dbc(g, 2, "col")


@pytest.mark.parametrize("pool", [4, 5, 6])
def test_pool_view_matches_grid_layout_exhaustively(pool):
    """The pool-wide view of a layout on any grid of the pool's labs gives each member the
    indices the grid layout gives its rank, and nothing to the others."""
    labsets = [p for k in range(1, pool + 1) for p in itertools.permutations(range(1, pool + 1), k)]
    for labs in labsets[::7]:
        for r, c in [(a, len(labs) // a) for a in range(1, len(labs) + 1) if len(labs) % a == 0]:
            for orient, mb, nb, m, k in [("row", 2, 1, 7, 5), ("col", 1, 3, 6, 8), ("row", 3, 3, 4, 9)]:
                g = Grid(r, c, labs, orient)
                codist = codistributor2dbc(g, (mb, nb)).complete((m, k), pool)
                view = pool_blocks(codist, pool)
                for lab in range(1, pool + 1):
                    got = view.localIndices(lab, pool)
                    rank = g.rank_of(lab)
                    if rank is None:
                        assert view.localShape(lab, pool) in ((0, 0), (0, k), (m, 0)) or 0 in view.localShape(lab, pool)
                        continue
                    want = codist.localIndices(rank, len(labs))
                    assert all(np.array_equal(x, y) for x, y in zip(got, want)), (labs, r, c, lab)
