"""Composite at the client: indexing, assignment, existence, repr, freeing lab values."""
import gc

import numpy as np
import pytest

from spmdlab import Composite, NoDataError, SpmdError, exist, labindex, spmd

pytestmark = pytest.mark.timeout(120)


def test_empty_composite_set_get_exist_len_iter(pool4):
    c = Composite(pool=pool4)
    assert len(c) == 4
    assert not exist(c)
    c[2] = {"a": 1}
    c[1] = np.arange(3.0)
    assert exist(c) and exist(c, 2) and not c.exist(3)
    assert c[2] == {"a": 1}
    np.testing.assert_array_equal(c[1], [0.0, 1.0, 2.0])
    with pytest.raises(NoDataError, match="Composite element 3 is not defined: lab 3 has no data"):
        c[3]
    c[3] = 3
    c[4] = "four"
    assert list(c)[2:] == [3, "four"]


def test_composite_n_and_bad_indices(pool4):
    c = Composite(2, pool=pool4)
    assert len(c) == 2
    with pytest.raises(ValueError, match="labs are numbered 1..2 as in MATLAB"):
        c[3] = 1
    with pytest.raises(ValueError, match="labs are numbered 1..2 as in MATLAB"):
        c[0]
    with pytest.raises(TypeError, match="integer lab number"):
        c["x"]
    with pytest.raises(ValueError, match="1..4 elements"):
        Composite(5, pool=pool4)


def test_repr_is_matlab_like(pool4):
    with spmd(pool=pool4):
        if labindex() == 2:
            m = np.zeros((4, 4))
        elif labindex() == 3:
            m = 5
        elif labindex() == 4:
            m = [1, 2]
    assert repr(m) == ("Composite with 4 elements:\n"
                       "Lab 1: No data\n"
                       "Lab 2: class = float64, size = (4, 4)\n"
                       "Lab 3: class = int, value = 5\n"
                       "Lab 4: class = list")


def test_lab_values_freed_when_last_reference_goes(pool4):
    with spmd(pool=pool4):
        big = np.ones(1000) * labindex()
    key = big._key
    from spmdlab.protocol.messages import Get, Reply

    assert pool4.request(2, Get(key)).kind == "value"
    del big
    gc.collect()
    with spmd(pool=pool4):  # frees travel with the next command
        pass
    reply = pool4.request(2, Get(key))
    assert reply == Reply("missing", 2, reply.epoch, key)


def test_composite_of_closed_pool_reports_loss():
    import spmdlab

    pool = spmdlab.Pool(2)
    c = Composite(pool=pool)
    c[1] = 1
    pool.close()
    with pytest.raises(SpmdError, match="values were lost"):
        c[1]


def test_composite_is_not_a_truth_value(pool4):
    c = Composite(pool=pool4)
    with pytest.raises(TypeError, match="index it"):
        bool(c)
