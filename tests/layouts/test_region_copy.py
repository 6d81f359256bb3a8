"""Region copies between local parts (pure numpy, no MPI): every way of copying must
equal numpy's ``dst[np.ix_(*di)] = src[np.ix_(*si)]``."""
import numpy as np
import pytest

from spmdlab.layouts.codistributor import codistributor1d, codistributor2dbc
from spmdlab.layouts.plan import transfer_regions
from spmdlab.layouts.regions import RegionCopy, copy_region, run_groups


def _random_case(rng):
    nd = int(rng.integers(1, 4))
    sshape = tuple(int(x) for x in rng.integers(1, 9, nd))
    dshape = tuple(int(x) for x in rng.integers(1, 9, nd))
    si, di = [], []
    for d in range(nd):
        k = int(rng.integers(0, min(sshape[d], dshape[d]) + 1))
        si.append(np.sort(rng.choice(sshape[d], k, replace=False)))
        di.append(np.sort(rng.choice(dshape[d], k, replace=False)))
    return sshape, dshape, si, di


@pytest.mark.parametrize("seed", range(4))
def test_random_selections_match_numpy(seed):
    rng = np.random.default_rng(seed)
    for _ in range(500):
        sshape, dshape, si, di = _random_case(rng)
        src = rng.random(sshape)
        dst = rng.random(dshape)
        expected = dst.copy()
        expected[np.ix_(*di)] = src[np.ix_(*si)]
        copy_region(dst, di, src, si)
        np.testing.assert_array_equal(dst, expected)


def test_strided_arrays_and_slices():
    rng = np.random.default_rng(7)
    src = np.asfortranarray(rng.random((9, 7)))
    dst = rng.random((6, 10, 2))[..., 1]  # not contiguous
    expected = dst.copy()
    expected[np.ix_([0, 1, 4, 5], np.arange(2, 7))] = src[np.ix_([1, 2, 5, 6], np.arange(0, 5))]
    copy_region(dst, [np.array([0, 1, 4, 5]), slice(2, 7)], src, [np.array([1, 2, 5, 6]), slice(0, 5)])
    np.testing.assert_array_equal(dst, expected)


def test_block_cyclic_runs_form_one_group_plus_the_short_block():
    runs = [(0, 64, 0, 64), (128, 192, 64, 128), (256, 320, 128, 192), (384, 400, 192, 208)]
    assert run_groups(runs) == [(3, 64, 0, 128, 0, 64), (1, 16, 384, 0, 192, 0)]
    assert run_groups([]) == []


def test_irregular_selections_fall_back_to_fancy_indexing():
    rng = np.random.default_rng(3)
    idx = np.sort(rng.choice(80000, 30000, replace=False))  # thousands of irregular runs
    copy = RegionCopy([np.arange(30000)], [idx], (30000,), (80000,))
    assert copy.combos is None
    src = rng.random(80000)
    dst = np.zeros(30000)
    copy.run(dst, src)
    np.testing.assert_array_equal(dst, src[idx])


@pytest.mark.parametrize("numlabs", [1, 2, 3, 4, 5])
def test_redistribution_plans_rebuild_the_array(numlabs):
    """1d columns -> 2dbc -> 1d rows through the plans' region copies, for uneven sizes."""
    G = np.arange(37 * 23, dtype=float).reshape(37, 23)
    layouts = [codistributor1d(2), codistributor2dbc(None, 4), codistributor1d(1)]
    layouts = [c.complete(G.shape, numlabs) if hasattr(c, "complete") else c for c in layouts]
    parts = [G[np.ix_(*[np.r_[s] if isinstance(s, slice) else s
                        for s in layouts[0].localSelection(k, numlabs)])] for k in range(1, numlabs + 1)]
    for src, dst in zip(layouts, layouts[1:]):
        plan = transfer_regions(src, dst, numlabs)
        new = [np.full(dst.localShape(k, numlabs), np.nan) for k in range(1, numlabs + 1)]
        for a in range(numlabs):
            for b in range(numlabs):
                t = plan[a][b]
                if t.size:
                    copy_region(new[b], t.dst_index, parts[a], t.src_index)
        for k in range(1, numlabs + 1):
            sel = dst.localSelection(k, numlabs)
            expected = G[np.ix_(*[np.arange(s.start, s.stop) if isinstance(s, slice) else s for s in sel])]
            np.testing.assert_array_equal(new[k - 1], expected)
        parts = new
