"""Lab messaging on real pools, checked against numpy: both MATLAB name families."""
import numpy as np
import pytest

import spmdlab
from spmdlab import (
    gcat,
    gop,
    gplus,
    labBarrier,
    labBroadcast,
    labindex,
    labProbe,
    labReceive,
    labSend,
    labSendReceive,
    numlabs,
    spmd,
)

pytestmark = pytest.mark.timeout(120)


def test_send_receive_arrays_objects_tags_any_source(pool4):
    with spmd(pool=pool4):
        if labindex() == 1:
            labSend(np.arange(12, dtype=np.int32).reshape(3, 4), 2, tag=5)
            labSend({"k": [1, 2]}, [3, 4])
            got = None
        elif labindex() == 2:
            got = labReceive(1, 5)
        else:
            got = labReceive(return_info=True)
    np.testing.assert_array_equal(got[2], np.arange(12, dtype=np.int32).reshape(3, 4))
    assert got[2].dtype == np.int32 and got[2].flags.writeable
    assert got[3] == ({"k": [1, 2]}, 1, 0) and got[4] == ({"k": [1, 2]}, 1, 0)


def test_receive_by_tag_out_of_order(pool2):
    with spmd(pool=pool2):
        if labindex() == 1:
            labSend("first", 2, tag=1)
            labSend("second", 2, tag=2)
            r = None
        else:
            r = (labReceive(1, 2), labReceive(1, 1))
    assert r[2] == ("second", "first")


def test_send_receive_ring_and_noncontiguous(pool4):
    with spmd(pool=pool4):
        n = numlabs()
        right = labindex() % n + 1
        left = (labindex() - 2) % n + 1
        data = np.arange(20.0).reshape(4, 5)[:, ::2] * labindex()
        got = labSendReceive(right, left, data)
    for lab in range(1, 5):
        left = (lab - 2) % 4 + 1
        np.testing.assert_array_equal(got[lab], np.arange(20.0).reshape(4, 5)[:, ::2] * left)


def test_broadcast_barrier_probe(pool4):
    with spmd(pool=pool4):
        b = labBroadcast(3, np.linspace(0, 1, 5) if labindex() == 3 else None)
        o = labBroadcast(1, ("obj", labindex()) if labindex() == 1 else None)
        labBarrier()
        if labindex() == 4:
            labSend(1, 1, tag=9)
        labBarrier()
        p = labProbe(4, 9) if labindex() == 1 else labProbe()
        info = labProbe(return_info=True) if labindex() == 1 else None
        if labindex() == 1:
            labReceive(4, 9)
        q = labProbe()
    for lab in range(1, 5):
        np.testing.assert_array_equal(b[lab], np.linspace(0, 1, 5))
        assert o[lab] == ("obj", 1)
        assert q[lab] is False
    assert p[1] is True and p[2] is False
    assert info[1] == (True, 4, 9)


def test_reductions_against_numpy(pool4):
    rng = np.random.default_rng(0)
    parts = rng.random((4, 3, 2))
    with spmd(pool=pool4):
        mine = parts[labindex() - 1]
        s = gplus(mine)
        s1 = gplus(mine, 1)
        m = gop(np.maximum, mine)
        c = gop(lambda a, b: a + [b[0]], [labindex()])
        n = gplus(labindex())
        mx = gop(max, labindex(), targetlab=2)
    for lab in range(1, 5):
        np.testing.assert_allclose(s[lab], parts.sum(axis=0))
        np.testing.assert_array_equal(m[lab], parts.max(axis=0))
        assert c[lab] == [1, 2, 3, 4]
        assert n[lab] == 10
    np.testing.assert_allclose(s1[1], parts.sum(axis=0))
    assert s1[2] is None and mx[2] == 4 and mx[1] is None


def test_gplus_of_mismatched_shapes_falls_back_consistently(pool2):
    with spmd(pool=pool2):
        r = gplus([labindex()])  # lists concatenate under +
    assert r[1] == [1, 2] == r[2]


def test_gcat_dims(pool4):
    with spmd(pool=pool4):
        row = gcat(labindex())
        col = gcat(np.full((2, 1), labindex()), 1)
        wide = gcat(np.full((2, 1), labindex()))
        stacked = gcat(np.arange(3) + labindex(), dim=1)
        flat = gcat(np.arange(2) * labindex(), axis=1)
        third = gcat(np.ones((2, 2)) * labindex(), 3, targetlab=1)
    blocks = [np.full((2, 1), k) for k in range(1, 5)]
    np.testing.assert_array_equal(row[1], [1, 2, 3, 4])
    np.testing.assert_array_equal(col[2], np.concatenate(blocks, axis=0))
    np.testing.assert_array_equal(wide[3], np.concatenate(blocks, axis=1))
    np.testing.assert_array_equal(stacked[4], np.stack([np.arange(3) + k for k in range(1, 5)]))
    np.testing.assert_array_equal(flat[1], np.concatenate([np.arange(2) * k for k in range(1, 5)]))
    assert third[1].shape == (2, 2, 4) and third[2] is None
    np.testing.assert_array_equal(third[1][:, :, 3], np.full((2, 2), 4.0))


def test_spmd_name_family(pool2):
    with spmd(pool=pool2):
        i = spmdlab.spmdIndex()
        n = spmdlab.spmdSize()
        if i == 1:
            spmdlab.spmdSend("x", 2)
            r = spmdlab.spmdSendReceive(2, 2, "to2")
        else:
            r = (spmdlab.spmdReceive(1), spmdlab.spmdSendReceive(1, 1, "to1"))
        b = spmdlab.spmdBroadcast(2, "b" if i == 2 else None)
        spmdlab.spmdBarrier()
        pr = spmdlab.spmdProbe()
        red = spmdlab.spmdReduce(lambda a, c: a * c, i + 1)
        plus = spmdlab.spmdPlus(i)
        cat = spmdlab.spmdCat(i)
    assert (i[2], n[2]) == (2, 2)
    assert r[1] == "to1" and r[2] == ("x", "to2")
    assert b[1] == "b" and pr[1] is False
    assert red[1] == 6 and plus[2] == 3 and list(cat[1]) == [1, 2]


@pytest.mark.parametrize("stmt, message", [
    ("labSend(1, 5)", "destination 5 does not exist: labs are numbered 1..2 as in MATLAB"),
    ("labSend(1, 0)", "destination 0 does not exist: labs are numbered 1..2 as in MATLAB"),
    ("labReceive(3)", "source 3 does not exist: labs are numbered 1..2 as in MATLAB"),
    ("labSend(1, 1, tag=-1)", "tag must be a non-negative integer"),
    ("gcat(1, 0)", "dimensions are numbered from 1 as in MATLAB"),
    ("gplus(1, targetlab=7)", "targetlab 7 does not exist"),
])
def test_bad_arguments_give_clear_errors(pool2, stmt, message):
    with pytest.raises(spmdlab.SpmdError) as info:
        with spmd(pool=pool2):
            exec(stmt, dict(vars(spmdlab)))
    text = str(info.value)
    assert text.startswith("Error detected on labs 1 and 2:")
    assert message in text
    assert "spmdlab/" not in text  # only the user's part of the traceback
    with spmd(pool=pool2):
        ok = gplus(1)
    assert ok[1] == 2
