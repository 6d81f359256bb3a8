"""Differential test of the seed systems' habits on every layout kind (1d with any
partition, 2dbc, blocks, chunk maps with overlaps, halos; shapes down to zero): ``D.map``
against ``np.vectorize`` on the array, ``mT`` and ``itemsize`` against numpy's, and
``codistributed(X, 1, codist)`` (only lab 1 holding X) against X itself. Machinery in
tests/support/fuzz.py (see test_differential.py for longer runs)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from support import fuzz

from spmdlab import codistributed, gather, getCodistributor, labindex

pytestmark = pytest.mark.timeout(600)


def _map(X, f, **kwargs):
    return X.map(f, **kwargs) if isinstance(X, codistributed) else np.vectorize(f, **kwargs)(X)


def _from_lab(X):
    if not isinstance(X, codistributed):
        return X.copy()
    whole = gather(X)
    D = codistributed(whole if labindex() == 1 else None, 1, getCodistributor(X))
    return D if getCodistributor(D) == getCodistributor(X) else "another layout"


OPS = {
    "map_affine": (lambda X, c: _map(X, lambda v: v * 2 + 1), "biufc", 0),
    "map_branch": (lambda X, c: _map(X, lambda v: v / 2 if v > 0 else v), "biuf", 1e-12),
    "map_str": (lambda X, c: _map(X, lambda v: str(v)[:3]), "biu", 0),
    "mT": (lambda X, c: X.mT, "biufc", 0),
    "itemsize": (lambda X, c: X.itemsize, "biufc", 0),
    "from_lab": (lambda X, c: _from_lab(X), "biufc", 0),
}

_POSITIVE = np.vectorize(lambda v: v > 0, otypes=[np.int8])  # D.map takes np.vectorize's otypes this way
OPS["map_otypes"] = (lambda X, c: X.map(_POSITIVE) if isinstance(X, codistributed) else _POSITIVE(X), "biuf", 0)
HABITS = OPS


@pytest.mark.parametrize("n", fuzz.LABS)
def test_habits_agree_with_numpy(pools, n):
    pool = pools(n)

    @fuzz.budget()
    @given(fuzz.cases(n, HABITS))
    def check(case):
        assert fuzz.run_case(pool, case, HABITS) == [], case

    check()


@pytest.mark.nompi
@given(fuzz.cases(1, HABITS))
@fuzz.budget()
def test_habits_agree_with_numpy_at_the_client(case):
    assert fuzz.check_case(case, HABITS) == [], case
