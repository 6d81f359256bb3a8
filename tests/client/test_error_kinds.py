"""An error every lab raised with one of numpy's exception types reaches the client as an
``SpmdError`` that is also of that type: ``except IndexError`` around ``D[idx]`` works as
around ``X[idx]`` (issue 21: bad input raises as numpy raises it)."""
import pickle

import numpy as np
import pytest

import spmdlab
from spmdlab import SpmdError, distributed, spmd
from spmdlab.errors import RemoteError, shared_kind

pytestmark = pytest.mark.timeout(120)


def _remote(exc: BaseException) -> RemoteError:
    return RemoteError(type(exc).__name__, str(exc), "", pickle.dumps(exc))


def test_out_of_range_indices_at_the_client_raise_numpys_index_error(pools):
    pool = pools(3, current=True)
    X = np.arange(60.0).reshape(12, 5)
    D = distributed(X)
    for bad in ([0, 100], np.array([3, -13]), (slice(None), [9])):
        with pytest.raises(IndexError) as numpys:
            X[bad]
        with pytest.raises(IndexError) as ours:
            D[bad]
        assert isinstance(ours.value, SpmdError)
        assert str(numpys.value) in str(ours.value), (str(numpys.value), str(ours.value))
    with pytest.raises(IndexError):
        D[[20]] = 1.0
    assert np.array_equal(spmdlab.gather(D[[0, 11]]), X[[0, 11]])  # the pool is still usable
    assert pool.numlabs == 3


def test_numpys_value_type_and_linalg_errors_at_the_client(pools):
    pools(3, current=True)
    D = distributed(np.ones((4, 4)))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        np.linalg.solve(D, distributed(np.ones(4)))
    with pytest.raises(ValueError) as numpys:
        np.concatenate([np.ones((4, 4)), np.ones((4, 3))], axis=0)
    with pytest.raises(ValueError) as ours:
        np.concatenate([D, distributed(np.ones((4, 3)))], axis=0)
    assert str(numpys.value) in str(ours.value)


def test_a_block_whose_labs_all_raise_one_type_is_also_that_type(pools):
    pool = pools(2)
    with pytest.raises(ValueError, match="bad value") as info:
        with spmd(pool=pool):
            raise ValueError("bad value")
    assert isinstance(info.value, SpmdError) and type(info.value).__name__ == "SpmdError"
    assert "Error detected on labs 1 and 2" in str(info.value)
    with pytest.raises(SpmdError) as mixed:
        with spmd(pool=pool):
            from spmdlab import labindex
            raise (ValueError if labindex() == 1 else IndexError)("two kinds")
    assert not isinstance(mixed.value, (ValueError, IndexError))


@pytest.mark.nompi
def test_the_shared_kind_is_the_most_specific_one():
    assert shared_kind({1: _remote(IndexError("a")), 2: _remote(IndexError("b"))}) is IndexError
    assert shared_kind({1: _remote(np.linalg.LinAlgError("a"))}) is np.linalg.LinAlgError
    assert shared_kind({1: _remote(np.linalg.LinAlgError("a")), 2: _remote(ValueError("b"))}) is ValueError
    assert shared_kind({1: _remote(KeyError("a"))}) is LookupError  # KeyError's str() is a repr
    assert shared_kind({1: _remote(IndexError("a")), 2: _remote(TypeError("b"))}) is None
    assert shared_kind({1: _remote(RuntimeError("a"))}) is None
    assert shared_kind({1: RemoteError("Mine", "defined in the block")}) is None  # no pickle: text only
    err = SpmdError.from_lab_errors({1: _remote(IndexError("a"))})
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is SpmdError and str(again) == str(err)
