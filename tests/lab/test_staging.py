"""``redistribute`` through the staging window the labs of one machine share, and
without it (``SPMDLAB_STAGING_MB``): same results, bounded memory, no hang on errors."""
import math
import time

import numpy as np
import pytest
from support.redistribute_checks import check_redistribute

import spmdlab
from spmdlab import (
    SpmdError,
    codistributed,
    codistributor1d,
    codistributor2dbc,
    gather,
    getLocalPart,
    labindex,
    redistribute,
    settings,
    spmd,
    spmd_run,
)

pytestmark = pytest.mark.timeout(120)


def _round64(n: int) -> int:
    return 64 * math.ceil(n / 64)


def _segment(old: int, labs: int) -> int:
    """A segment's bytes: the chunks' offsets (one int64 per lab, whole cache lines), and
    room for the lab's whole old part."""
    return _round64(8 * labs) + _round64(old)


def _moved_and_staged(shape, src, dst):
    """On a lab: redistribute ``arange(shape)`` from ``src`` to ``dst``; return whether the
    result is right, the old part's bytes and this lab's staging segment's bytes."""
    from spmdlab.lab import comm

    A = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    D = codistributed(A, src)
    E = redistribute(D, dst)
    return bool(np.array_equal(gather(E), A)), getLocalPart(D).nbytes, comm.staging_bytes()


def test_one_machine_moves_through_staging_that_holds_one_old_part():
    pool = spmdlab.Pool(4)
    try:
        first = list(spmd_run(_moved_and_staged, (60, 100), codistributor1d(2),
                              codistributor2dbc([2, 2], 8), pool=pool))
        assert all(ok for ok, _, _ in first)
        assert [staged for _, _, staged in first] == [_segment(old, 4) for _, old, _ in first]
        # a smaller array reuses the window; a bigger one grows it
        smaller = list(spmd_run(_moved_and_staged, (30, 20), codistributor2dbc([2, 2], 3),
                                codistributor1d(1), pool=pool))
        assert all(ok for ok, _, _ in smaller)
        assert [s for _, _, s in smaller] == [s for _, _, s in first]
        bigger = list(spmd_run(_moved_and_staged, (120, 100), codistributor1d(1),
                               codistributor1d(2), pool=pool))
        assert all(ok for ok, _, _ in bigger)
        assert [s for _, _, s in bigger] == [_segment(old, 4) for _, old, _ in bigger]
        # a block on labs 1-2 has its own communicator, and its own window
        with spmd(2, pool=pool):
            ok2, old2, staged2 = _moved_and_staged((9, 31), codistributor1d(2), codistributor2dbc())
        assert [ok2[1], ok2[2]] == [True, True] and staged2[1] == _segment(old2[1], 2)
    finally:
        pool.close()


def test_without_staging_alltoallv_gives_the_same_results():
    pool = spmdlab.Pool(3, staging_mb=0)
    try:
        pairs = list(spmd_run(check_redistribute, [(7, 5), (13, 17), (2, 3, 4), (5,)], pool=pool))
        assert len(set(pairs)) == 1 and pairs[0] > 50
        staged = list(spmd_run(_moved_and_staged, (40, 30), None, codistributor2dbc(), pool=pool))
        assert [(ok, s) for ok, _, s in staged] == [(True, 0)] * 3
    finally:
        pool.close()


def test_parts_over_the_limit_take_alltoallv():
    pool = spmdlab.Pool(2, staging_mb=0.01)  # 10 KiB per lab
    try:
        small = list(spmd_run(_moved_and_staged, (20, 30), None, codistributor2dbc([1, 2], 4), pool=pool))
        assert all(ok for ok, _, _ in small) and all(0 < s <= 10 * 1024 for _, _, s in small)
        big = list(spmd_run(_moved_and_staged, (100, 40), None, codistributor2dbc([1, 2], 4), pool=pool))
        assert all(ok for ok, _, _ in big)
        assert [s for _, _, s in big] == [s for _, _, s in small]  # not grown past the limit
    finally:
        pool.close()


def test_a_lab_failing_before_redistribute_does_not_hang_the_others():
    pool = spmdlab.Pool(4)
    try:
        for when in ("before the window exists", "with the window made"):
            start = time.monotonic()
            with pytest.raises(SpmdError) as info:
                with spmd(pool=pool, timeout=60):
                    D = codistributed(np.ones((64, 64)))
                    if labindex() == 3:
                        raise ValueError("lab 3 stops here")
                    redistribute(D, codistributor2dbc())
            assert time.monotonic() - start < 8, when
            assert list(info.value.errors) == [3] and "lab 3 stops here" in str(info.value)
            # the pool's communicator is renewed (and its window freed) before the next block
            again = list(spmd_run(_moved_and_staged, (64, 64), None, codistributor2dbc(), pool=pool))
            assert all(ok and staged > 0 for ok, _, staged in again)
    finally:
        pool.close()


def test_staging_setting_is_checked():
    assert settings.load(staging_mb=0).staging_mb == 0
    with pytest.raises(ValueError, match="staging_mb"):
        settings.load(staging_mb=-1)
    with pytest.raises(ValueError, match="staging_mb"):
        spmdlab.Pool(2, staging_mb=float("nan"))
