"""The tree fan-out (``SPMDLAB_TREE``, issue 22) on real lab pools: blocks reach the labs
through lab 1's MPI broadcast and their replies come back in lab 1's gather, with output
streamed, errors, stalls, a dead leader and large requests handled as without it."""
from __future__ import annotations

import os
import sys
import time

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import Composite, LabDiedError, SpmdError, gplus, labBarrier, labindex, spmd
from spmdlab.protocol import tree

cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def tree3():
    pool = spmdlab.Pool(3, tree=True)
    yield pool
    pool.close()


def test_a_block_its_output_and_composites_go_through_lab_1(tree3, capsys):
    n = 10
    with spmd(pool=tree3):
        x = labindex() * n
        print("lab says", labindex())
        total = gplus(x)
    assert [x[k] for k in (1, 2, 3)] == [10, 20, 30] and total[3] == 60
    out = capsys.readouterr().out
    assert all(f"Lab {k}: lab says {k}" in out for k in (1, 2, 3))
    c = Composite(pool=tree3)
    c[2] = "two"
    with spmd(pool=tree3):
        y = c if labindex() == 2 else None
    assert y[2] == "two" and y[1] is None
    with spmd(2, pool=tree3):
        z = spmdlab.numlabs()
    assert z[2] == 2 and not z.exist(3)
    assert tree3.stale_replies == 0 and tree3._owing == {}


def test_a_blocks_output_is_all_in_before_the_block_returns(tree3):
    """Output goes on each lab's own connection and the reply through lab 1's gather: the
    block must not return before every line its labs printed is in (the pmode grid
    example's ticks once came out under the next command)."""
    for _ in range(5):
        seen: list = []
        outcome = spmdlab.client.execute.run_block(
            tree3, source="for k in range(200 * labindex()):\n    print('tick', k)\n",
            inputs={"labindex": labindex}, sink=lambda lab, stream, text: seen.append((lab, text)))
        assert set(outcome.replies) == {1, 2, 3}
        for lab in (1, 2, 3):
            lines = "".join(text for k, text in seen if k == lab).splitlines()
            assert lines == [f"tick {k}" for k in range(200 * lab)], f"lab {lab}: {len(lines)} lines"


def test_an_error_comes_straight_from_its_lab_and_stops_the_others(tree3):
    with pytest.raises(SpmdError) as info:
        with spmd(pool=tree3):
            if labindex() == 2:
                raise ValueError("only on lab 2")
            gplus(1)
    text = str(info.value)
    assert text.startswith("Error detected on lab 2:") and "ValueError: only on lab 2" in text
    assert "lab 1: waiting in gop(add)" in text and "lab 3: waiting in gop(add)" in text
    with spmd(pool=tree3):
        w = gplus(labindex())
    assert w[1] == 6 and tree3.stale_replies == 0


def test_a_collective_some_labs_skip_is_an_error_naming_the_finished_labs(tree3):
    with pytest.raises(SpmdError) as info:
        with spmd(pool=tree3):
            if labindex() != 1:
                labBarrier()
    assert "lab 1 finished the block while labs 2 and 3 wait in" in str(info.value)
    with spmd(pool=tree3):
        v = labindex()
    assert v[3] == 3


def test_a_request_too_large_to_broadcast_goes_to_each_lab(tree3):
    big = np.arange(tree.MAX_FANOUT // 8 + 10, dtype=np.float64)
    with spmd(pool=tree3):
        s = float(big.sum()) + labindex()
    assert s[3] == float(big.sum()) + 3


def test_the_leader_dying_is_reported_and_a_fresh_pool_follows():
    pool = spmdlab.Pool(3, tree=True)
    start = time.monotonic()
    with pytest.raises(LabDiedError) as info:
        with spmd(pool=pool):
            if labindex() == 1:
                os._exit(7)
            labBarrier()
    assert time.monotonic() - start < 5
    assert str(info.value).startswith("Lab 1 died (exit status 7).")
    with pytest.warns(RuntimeWarning, match="were lost"):
        with spmd(pool=pool):
            k = labindex()
    assert k[2] == 2
    pool.close()
