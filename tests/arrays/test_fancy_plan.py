"""No-MPI tests of indexing by arrays: the inspector's owner/offset arithmetic against
each layout's own ``localSelection`` on every lab, and numpy's rules for reading a key
(where the broadcast dimensions go, booleans, ellipsis, errors)."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab.arrays.fancy import parse
from spmdlab.arrays.scatter import owners_offsets
from spmdlab.layouts.codistributor import codistributor1d, codistributor2dbc

pytestmark = pytest.mark.nompi


def _layouts(shape, n):
    out = [codistributor1d(d).complete(shape, n) for d in range(1, len(shape) + 1)]
    part = [0] * n
    part[-1] = shape[0]
    out.append(codistributor1d(1, part, shape))  # every lab but the last holds nothing
    if len(shape) == 2:
        out += [codistributor2dbc(None, b).complete(shape, n) for b in (1, 2, 3)]
        out.append(codistributor2dbc(None, 2, "col").complete(shape, n))
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("shape", [(11,), (7, 5), (3, 4, 5)])
def test_owner_and_offset_name_the_element_in_the_owners_part(n, shape):
    X = np.arange(np.prod(shape)).reshape(shape)
    rng = np.random.default_rng(n)
    coords = [rng.integers(0, s, size=50) for s in shape]
    for c in _layouts(shape, n):
        owner, off, shift = owners_offsets(c, shape, coords, n)
        off = off - shift[owner]
        parts = [X[np.ix_(*[np.arange(s)[sel] if isinstance(sel, slice) else sel
                            for s, sel in zip(shape, c.localSelection(q, n))])] for q in range(1, n + 1)]
        got = np.array([parts[o].reshape(-1)[f] for o, f in zip(owner, off)])
        assert np.array_equal(got, X[tuple(coords)]), c


def test_owner_math_broadcasts_coordinates():
    shape = (6, 4)
    c = codistributor1d(1).complete(shape, 3)
    rows = np.array([5, 0, 3]).reshape(3, 1)
    cols = np.array([0, 3]).reshape(1, 2)
    owner, off, shift = owners_offsets(c, shape, [rows, cols], 3)
    assert owner.tolist() == [2, 2, 0, 0, 1, 1]
    assert (off - shift[owner]).tolist() == [4, 7, 0, 3, 4, 7]


@pytest.mark.parametrize("key, R, oB", [
    (([0, 1],), (2, 4, 5), 0),
    ((slice(None), [0, 1]), (3, 2, 5), 1),
    ((Ellipsis, [0, 1]), (3, 4, 2), 2),
    (([0, 1], slice(None), [1, 2]), (2, 4), 0),      # separated by a slice: first
    ((slice(None), [0, 1], [1, 2]), (3, 2), 1),      # adjacent: in place
    ((1, slice(None), [1, 2]), (2, 4), 0),           # an int counts as an index array
    ((slice(None), 1, [[1], [2]]), (3, 2, 1), 1),
    ((np.ones((3, 4), bool),), (12, 5), 0),
    ((slice(None), np.arange(4) > 1), (3, 2, 5), 1),
])
def test_key_reads_as_numpy_does(key, R, oB):
    X = np.zeros((3, 4, 5))
    F = parse(key, X.shape, "t")
    assert F.R == X[key].shape == R
    assert F.oB == oB


@pytest.mark.parametrize("key, error", [
    (([0, 1, 2], [0, 1]), "shape mismatch: indexing arrays could not be broadcast together with shapes (3,) (2,)"),
    ((np.ones(4, bool),), "boolean index did not match indexed array along axis 0; size of axis is 3"),
    (([0], [0], [0], [0]), "too many indices for array: array is 3-dimensional, but 4 were indexed"),
    ((np.array([0.5]),), "arrays used as indices must be of integer (or boolean) type"),
    (([0], Ellipsis, Ellipsis), "an index can only have a single ellipsis"),
])
def test_bad_keys_raise_numpys_index_error(key, error):
    X = np.zeros((3, 4, 5))
    with pytest.raises(IndexError) as numpy_error:
        X[key]
    with pytest.raises(IndexError) as ours:
        parse(key, X.shape, "t")
    assert error in str(ours.value) and error in str(numpy_error.value)
