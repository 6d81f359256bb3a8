"""The io package's pure index math (issue 26): runs, boxes, rounds, chunk alignment,
the shortest stretch of file bytes, and which layouts a file fits. No MPI."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab import codistributor1d, codistributor2dbc, codistributorBlocks, codistributorChunks
from spmdlab.arrays.io.plan import aligned, boxes, check_layout_fits, min_run_bytes, rounds, runs

pytestmark = pytest.mark.nompi


def test_runs_of_slices_and_index_arrays():
    assert [list(x) for x in runs(slice(2, 5))] == [[2], [3]]
    assert [list(x) for x in runs(slice(4, 4))] == [[], []]
    assert [list(x) for x in runs(np.array([0, 1, 2, 6, 7, 9]))] == [[0, 6, 9], [3, 2, 1]]


def test_boxes_cover_a_2dbc_part_once_with_its_local_positions():
    c = codistributor2dbc([2, 2], 2, "row", (7, 5))
    A = np.arange(35).reshape(7, 5)
    sel = c.localSelection(1, 4)
    part = A[np.ix_(sel[0], sel[1])]
    rebuilt = np.zeros_like(part)
    count = 0
    for g, lo in boxes(sel):
        rebuilt[lo] = A[g]
        count += A[g].size
    assert np.array_equal(rebuilt, part) and count == part.size


def test_boxes_map_owned_pieces_inside_a_halo_part():
    c = codistributor1d(1, [3, 4], (7,), halo=1)
    (k, g, lo), = c.ownedPieces(2, 2)
    assert list(boxes(g, lo)) == [((slice(3, 7),), (slice(1, 5),))]


def test_rounds_are_the_most_arrays_any_lab_has():
    cm = codistributorChunks({1: [(slice(0, 2),), (slice(2, 4),), (slice(4, 6),)], 2: [(slice(0, 6),)], 3: []})
    cm = cm.complete((6,), 3)
    assert rounds(cm, 3, "stored") == 3
    assert rounds(cm, 3, "owned") == 3
    assert rounds(codistributor1d(1, [0, 6, 0], (6,)), 3) == 1


def test_alignment_to_a_chunk_grid():
    assert aligned(codistributor1d(1, [4, 4, 2], (10, 3)), 3, (4, 3))
    assert aligned(codistributor1d(1, [4, 4, 2], (10, 3)), 3, (2, 2))
    assert not aligned(codistributor1d(1, [3, 3, 4], (10, 3)), 3, (4, 3))
    assert aligned(codistributor2dbc([1, 2], 3, "row", (7, 8)), 2, (3, 3))
    assert aligned(codistributorBlocks((2, 3), "cyclicrow").complete((5, 7), 2), 2, (2, 3))


def test_the_shortest_stretch_of_file_bytes():
    rows = codistributor1d(1, [2, 3], (5, 4))
    assert min_run_bytes(rows, 2, 8) == 2 * 4 * 8  # whole rows: one stretch per lab
    cols = codistributor1d(2, [1, 3], (5, 4))
    assert min_run_bytes(cols, 2, 8) == 8  # one column: one element per stretch
    assert min_run_bytes(cols, 2, 8, fortran=True) == 5 * 8
    assert min_run_bytes(codistributor1d(1, [0, 5], (5, 4)), 2, 8) == 5 * 4 * 8


@pytest.mark.parametrize("codist, shape, message", [
    (codistributor2dbc(), (3, 4, 5), "codistributor2dbc lays out 2-D arrays only"),
    (codistributor1d(3), (3, 4), r"codistributor1d\(3\) needs that many dimensions"),
    (codistributor1d(1, [2, 2], (4, 4)), (3, 4), r"holds shape \(3, 4\) but the codistributor is for shape \(4, 4\)"),
    (codistributor1d(), (), "0-d array"),
])
def test_layouts_that_do_not_fit_the_file(codist, shape, message):
    import re

    assert re.search(message, check_layout_fits(codist, shape, 2, "f.npy"))
    assert check_layout_fits(codistributor1d(1), (3, 4), 2, "f.npy") is None
