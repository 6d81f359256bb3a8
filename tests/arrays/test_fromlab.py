"""``codistributed(X, lab, codist)`` / ``codistributed(X, codist, from_lab=lab)``: an
array only one lab holds, distributed with one Scatterv from it, on real pools, in every
layout kind (1d, 2dbc, blocks, halos, chunk maps), checked against numpy on the array."""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest
from support.layouts import every_kind

from spmdlab import (
    SpmdError,
    codistributed,
    codistributor1d,
    gather,
    getCodistributor,
    getLocalPart,
    labindex,
    numlabs,
    spmd_run,
)
from spmdlab.layouts.regions import product_index

pytestmark = pytest.mark.timeout(240)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def from_lab_case(shape: tuple, holder: int) -> str:
    """Only ``holder`` has X; the others pass None. Every layout, both spellings."""
    n = numlabs()
    X = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 1.5 - 3
    mine = X if labindex() == holder else None
    for name, c in every_kind(shape, n).items():
        for D in (codistributed(mine, c, from_lab=holder), codistributed(mine, holder, c)):
            assert D.shape == X.shape and D.dtype == X.dtype, name
            layout = getCodistributor(D)
            want = codistributed(X, c)  # the replicated path: the reference layout and parts
            assert layout == getCodistributor(want), f"{name}: {layout!r}"
            parts = getLocalPart(D)
            parts = list(parts) if isinstance(parts, list) else [parts]
            for p, sel in zip(parts, layout.chunkSelections(labindex(), n)):
                assert np.array_equal(p, X[product_index(sel)]), f"{name}: lab {labindex()} stores {p}"
                assert p.flags.writeable and p.base is None or not np.shares_memory(p, X), name
            assert np.array_equal(gather(D), X), name
    # MATLAB's two-argument form: the default codistributor
    D = codistributed(mine, holder)
    assert getCodistributor(D) == getCodistributor(codistributed(X))
    # dtypes and byte orders travel as they are
    for dt in ("<i4", ">f8", "complex64", "bool", "U3"):
        Y = np.arange(12).reshape(3, 4).astype(dt)
        E = codistributed(Y if labindex() == holder else None, holder, codistributor1d(2))
        assert E.dtype == Y.dtype and np.array_equal(gather(E), Y), dt
    # empty arrays
    E = codistributed(np.zeros((0, 5)) if labindex() == holder else None, holder)
    assert E.shape == (0, 5) and gather(E).shape == (0, 5)
    return "ok"


@pytest.mark.parametrize("labs", [1, 2, 3, 4])
def test_from_lab_distributes_the_holders_array_in_every_layout(pools, labs):
    for holder in sorted({1, labs}):
        r = spmd_run(from_lab_case, (7, 5), holder, pool=pools(labs), timeout=200)
        assert list(r) == ["ok"] * labs
    r = spmd_run(from_lab_case, (11,), labs, pool=pools(labs), timeout=200)
    assert list(r) == ["ok"] * labs


def none_elsewhere() -> str:
    X = np.ones((4, 6)) if labindex() == 1 else None
    return codistributed(X, codistributor1d(1))


def test_none_on_other_labs_names_from_lab(pools):
    """Without from_lab, None on the other labs was 'arrays of dtype object cannot be
    codistributed': the error now says which labs have no X and what to use."""
    with pytest.raises(SpmdError) as info:
        spmd_run(none_elsewhere, pool=pools(3), timeout=60)
    text = str(info.value)
    assert "X is None on this lab" in text and "from_lab=k" in text and "labs 2, 3" in text
    assert "dtype object" not in text


def bad(case: str):
    X = np.ones((4, 6)) if labindex() == 2 else None
    if case == "lab-too-big":
        return codistributed(X, 5, codistributor1d())
    if case == "labs-differ":
        return codistributed(X, codistributor1d(), from_lab=labindex() % 2 + 1)
    if case == "object":
        return codistributed(np.array([None, 1], dtype=object) if labindex() == 2 else None, 2)
    if case == "codist-differs":
        return codistributed(X, 2, codistributor1d(labindex() % 2 + 1))
    if case == "both":
        return codistributed(X, 2, codistributor1d(), from_lab=2)
    if case == "partition":
        return codistributed(X, codistributor1d(1, [1, 1]), from_lab=2)
    raise AssertionError(case)


@pytest.mark.parametrize("case,message", [
    ("lab-too-big", "labs are numbered 1..4 as in MATLAB"),
    ("labs-differ", "every lab must name the same lab holding X; got lab 1: 2, lab 2: 1"),
    ("object", "arrays of dtype object cannot be codistributed"),
    ("codist-differs", "use the same codistributor on every lab"),
    ("both", "give the lab once"),
    ("partition", "partition has 2 entries but there are 4 labs (on lab 2)"),
])
def test_bad_input_is_one_error_on_every_lab(pools, case, message):
    pool = pools(4)
    with pytest.raises(SpmdError) as info:
        spmd_run(bad, case, pool=pool, timeout=60)
    text = str(info.value)
    assert message in text, text
    assert "Error detected on labs 1-4" in text, text
    assert list(spmd_run(lambda: labindex(), pool=pool)) == [1, 2, 3, 4]  # the pool is fine
