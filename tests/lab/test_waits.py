"""The labs' wait policies (lab/waits.py): whichever a pool uses, a wait ends at once when
another lab fails, on a timeout and on Ctrl-C's abort, and the pool stays usable; the
default picks MPI's blocking wait only with a core for every lab."""
import sys
import time

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import SpmdError, SpmdTimeoutError, codistributed, gplus, labBarrier, labindex, labReceive, spmd, spmd_run

cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.timeout(180)


def _policy() -> tuple:
    from spmdlab.lab import waits

    return waits._wake_comm is not None, waits.SPIN_SECONDS, waits.YIELD_SECONDS


@pytest.fixture(scope="module", params=["block", "yield", "poll"])
def policy_pool(request):
    mp = pytest.MonkeyPatch()
    mp.setenv("SPMDLAB_WAIT", request.param)
    pool = spmdlab.Pool(2)
    mp.undo()
    yield request.param, pool
    pool.close()


def test_the_pool_uses_the_policy_asked_for(policy_pool):
    name, pool = policy_pool
    blocking, spin, yielding = spmd_run(_policy, pool=pool)[1]
    assert blocking == (name == "block")
    if name == "poll":
        assert (spin, yielding) == (0.0, 0.002)
    if name == "yield":
        assert (spin, yielding) == (5e-5, 0.05)


@pytest.mark.parametrize("wait", ["labReceive()", "gplus(1)", "labBarrier()", "D.sum()"])
def test_another_labs_error_ends_the_wait_at_once(policy_pool, wait):
    _, pool = policy_pool
    start = time.monotonic()
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool):
            D = codistributed.ones((1000,))
            if labindex() == 2:
                time.sleep(0.3)
                raise ValueError("lab 2 failed")
            if wait == "labReceive()":
                labReceive()
            elif wait == "gplus(1)":
                gplus(1)
            elif wait == "labBarrier()":
                labBarrier()
            else:
                D.sum()
    assert time.monotonic() - start < 10
    assert "lab 2 failed" in str(info.value)
    with spmd(pool=pool):
        total = gplus(labindex())
        s = codistributed.ones((1000,)).sum()
    assert total[1] == 3 and s[1] == 1000.0


def test_a_timeout_ends_a_wait_and_names_it(policy_pool):
    _, pool = policy_pool
    start = time.monotonic()
    with pytest.raises(SpmdTimeoutError) as info:
        with spmd(pool=pool, timeout=1):
            if labindex() == 1:
                gplus(1)
            else:
                time.sleep(30)
    assert time.monotonic() - start < 8
    assert "lab 1: waiting in gop(add)" in str(info.value)
    with spmd(pool=pool):
        total = gplus(labindex())
    assert total[1] == 3


def test_waits_after_many_aborts_still_deliver_right_values(policy_pool):
    """Wake-up messages left over from aborts must never end a later wait early."""
    _, pool = policy_pool
    for _ in range(3):
        with pytest.raises(SpmdError):
            with spmd(pool=pool):
                if labindex() == 1:
                    raise ValueError("x")
                labBarrier()
    with spmd(pool=pool):
        x = np.arange(10.0) * labindex()
        y = gplus(x)
        ok = bool(np.array_equal(y, np.arange(10.0) * 3))
        for _ in range(50):
            labBarrier()
    assert ok[1] and ok[2]


@pytest.mark.nompi
def test_the_wait_policy_is_read_by_settings_and_checked(monkeypatch):
    from spmdlab import settings
    from spmdlab.errors import PoolError
    monkeypatch.delenv("SPMDLAB_WAIT", raising=False)
    assert settings.wait_policy("poll") == "poll"
    monkeypatch.setenv("SPMDLAB_WAIT", " Block ")
    assert settings.wait_policy("poll") == "block"
    monkeypatch.setenv("SPMDLAB_WAIT", "sleepy")
    with pytest.raises(PoolError, match="SPMDLAB_WAIT must be one of poll, block, auto, yield, spin; got 'sleepy'"):
        settings.wait_policy("poll")
