"""Dagger.jl's ``AutoBlocks()`` and CuPy's ``make_2d_index_map`` (labs for devices):
the index math against the seeds' own documented examples, without MPI."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab import AutoBlocks, codistributorBlocks, codistributorChunks, make_2d_index_map


def eq(a, b) -> None:
    assert np.array_equal(np.asarray(a), np.asarray(b)), f"{a} != {b}"


# --------------------------------------------------------------------------- CuPy
def test_cupy_docs_example_with_labs_for_devices():
    """CuPy's docstring: ``make_2d_index_map([0, 2, 4], [0, 3, 5], [[{0}, {1}], [{2}, {0, 1}]])``;
    device d is lab d + 1."""
    got = make_2d_index_map([0, 2, 4], [0, 3, 5], [[{1}, {2}], [{3}, {1, 2}]])
    assert got == {
        1: [(slice(0, 2, None), slice(0, 3, None)), (slice(2, 4, None), slice(3, 5, None))],
        2: [(slice(0, 2, None), slice(3, 5, None)), (slice(2, 4, None), slice(3, 5, None))],
        3: [(slice(2, 4, None), slice(0, 3, None))],
    }
    assert list(got) == [1, 2, 3]  # CuPy's order: keys by first block, blocks row by row
    c = codistributorChunks(got, (4, 5)).complete((4, 5), 3)
    assert c.ownerOf((3, 4), 3) == 1 and c.holders((3, 4), 3) == [1, 2]
    assert c.chunkSelections(3, 3) == [(slice(2, 4), slice(0, 3))]


def test_one_lab_per_block_and_plain_numbers():
    m = make_2d_index_map([0, 3, 6], [0, 2, 4, 6], [[1, 2, 3], [4, {1}, [2, 3]]])
    assert m[1] == [(slice(0, 3), slice(0, 2)), (slice(3, 6), slice(2, 4))]
    assert m[4] == [(slice(3, 6), slice(0, 2))]
    assert m[3] == [(slice(0, 3), slice(4, 6)), (slice(3, 6), slice(4, 6))]
    c = codistributorChunks(m, (6, 6)).complete((6, 6), 4)
    owners = np.array([[c.ownerOf((i, j), 4) for j in range(6)] for i in range(6)])
    eq(owners[::3, ::2], [[1, 2, 3], [4, 1, 2]])


@pytest.mark.parametrize("args,error,message", [
    (([0, 2], [0, 2], [[{0}]]), ValueError, "labs are numbered from 1 as in MATLAB (CuPy's device 0 is lab 1)"),
    (([0, 2, 4], [0, 2], [[{1}]]), ValueError, "devices must be a 2x1 list of lists"),
    (([0, 3, 2], [0, 2], [[1], [2]]), ValueError, "i_partitions must be non-negative and non-decreasing"),
    (([0], [0, 2], []), ValueError, "i_partitions needs at least two boundaries"),
    (([0, 2], [0, 1.5], [[1]]), TypeError, "j_partitions must hold integers"),
    (([0, 2], [0, 2], [["a"]]), TypeError, "devices[0][0] must hold lab numbers"),
    ((3, [0, 2], [[1]]), TypeError, "i_partitions must be a list of block boundaries"),
])
def test_bad_index_maps_say_what_is_wrong(args, error, message):
    with pytest.raises(error) as info:
        make_2d_index_map(*args)
    assert message in str(info.value)


# --------------------------------------------------------------------------- Dagger
def test_dagger_docs_autoblocks_100x100_on_7():
    """Dagger's docs: ``rand(AutoBlocks(), 100, 100)`` with 7 processors is
    "DMatrix{Float64}(100, 100) with 1x7 partitions of size 100x15"."""
    c = AutoBlocks().complete((100, 100), 7)
    assert isinstance(c, codistributorBlocks) and c.BlockSize == (100, 15)
    assert c.partitions_text() == "with 1×7 partitions of size 100×15"
    eq(c.BlockOwners, [[1, 2, 3, 4, 5, 6, 7]])
    assert c.localShape(7, 7) == (100, 10)


def test_autoblocks_one_partition_per_lab_in_any_dimension():
    v = AutoBlocks().complete((10,), 4)  # cld(10, 4) = 3: 4 partitions of 3, 3, 3, 1
    assert v.BlockSize == (3,) and v.localShape(4, 4) == (1,)
    eq(v.BlockOwners, [1, 2, 3, 4])
    few = AutoBlocks().complete((3,), 4)  # 3 elements on 4 labs: lab 4 holds nothing
    assert few.localShape(4, 4) == (0,)
    cube = AutoBlocks().complete((2, 3, 9), 4)
    assert cube.BlockSize == (2, 3, 3)
    eq(cube.BlockOwners[0, 0], [1, 2, 3])
    assert not cube.isChunked(4) and cube.localShape(4, 4) == (2, 3, 0)
    assert AutoBlocks().complete((0, 5), 2).BlockSize == (1, 3)


def test_autoblocks_is_a_layout_argument():
    a = AutoBlocks()
    assert a == AutoBlocks() and repr(a) == "AutoBlocks()" and not a.isComplete()
    with pytest.raises(ValueError, match="AutoBlocks\\(\\) chooses its block size"):
        a.BlockSize
    with pytest.raises(ValueError, match="AutoBlocks cannot distribute a 0-d array"):
        a.complete((), 2)
