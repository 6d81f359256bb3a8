"""The constructors from sizes on a process grid of some labs (issue 24), on real pools.

``codistributed.zeros/ones/inf/nan/true/false/eye/rand/randn/randi`` given a 2dbc layout
on a grid of some labs build the array on the grid's labs alone: the labs outside never
call them here, so a collective reaching them would hang the block (the timeout catches
it). Values against numpy on the gathered array; outside labs that do call them hold
nothing but know the shape, dtype and layout.
"""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import (
    SpmdError,
    codistributed,
    codistributor2dbc,
    gather,
    getCodistributor,
    getLocalPart,
    labindex,
    spmd_run,
)

pytestmark = pytest.mark.timeout(300)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

FILLED = [("zeros", 0.0, np.float64), ("ones", 1.0, np.float64), ("inf", np.inf, np.float64),
          ("nan", np.nan, np.float64), ("true", True, np.bool_), ("false", False, np.bool_)]


def inside_only_case(labs: list, rows: int, orient: str, blocks: tuple) -> str:
    """Only the grid's labs call the constructors: they must not need anybody else."""
    lab = labindex()
    g = spmdlab.grid(rows, len(labs) // rows, labs=labs, orientation=orient)
    if lab not in labs:
        return "outside"
    c = codistributor2dbc(g, blocks)
    shape = (7, 5)
    for name, value, dt in FILLED:
        D = getattr(codistributed, name)(*shape, c)
        assert type(D).__name__ == "SubgridArray" and D.holds, name
        want = np.full(shape, value, dtype=dt)
        got = gather(D)
        assert got.dtype == dt and np.array_equal(got, want, equal_nan=True), (name, got)
    Z = codistributed.zeros(shape, codist=c, dtype=np.int32)
    assert gather(Z).dtype == np.int32 and getCodistributor(Z).Grid == g
    rank = g.rank_of(lab)
    assert getLocalPart(Z).shape == tuple(len(i) for i in getCodistributor(Z).localIndices(rank, len(labs)))
    assert np.array_equal(gather(codistributed.eye(6, 4, c)), np.eye(6, 4))
    assert np.array_equal(gather(codistributed.eye(5, codist=c, dtype=np.float32)), np.eye(5, dtype=np.float32))
    R1, R2 = codistributed.rand(8, 6, c, seed=5), codistributed.rand(8, 6, c, seed=5)
    r = gather(R1)
    assert r.shape == (8, 6) and np.array_equal(r, gather(R2)) and ((r >= 0) & (r < 1)).all()
    assert len(np.unique(r)) == r.size  # every lab its own stream
    N = gather(codistributed.randn(30, 20, c, seed=1, dtype=np.float32))
    assert N.dtype == np.float32 and abs(float(N.mean())) < 0.2 and 0.8 < float(N.std()) < 1.2
    K = gather(codistributed.randi([3, 6], 9, 9, c, seed=2))
    assert K.dtype == np.int64 and K.min() >= 3 and K.max() <= 6 and set(np.unique(K)) == {3, 4, 5, 6}
    E = codistributed.ones(shape, c) * 2 + codistributed.eye(shape, c)  # operations on the results
    assert np.array_equal(gather(E), 2 + np.eye(*shape))
    return "inside"


@pytest.mark.parametrize("labs, rows, orient, blocks", [([1, 2], 2, "row", (2, 2)),
                                                        ([4, 2, 3], 1, "col", (3, 2))])
def test_constructors_on_a_sub_grid_equal_numpy(pools, labs, rows, orient, blocks):
    r = spmd_run(inside_only_case, labs, rows, orient, blocks, pool=pools(4), timeout=250)
    assert [r[k] for k in range(1, 5)] == ["inside" if k in labs else "outside" for k in range(1, 5)]


def every_lab_case() -> tuple:
    """Every lab calls them: outside labs hold nothing, but know the shape, dtype and layout."""
    g = spmdlab.grid(2, 1, labs=[1, 2])
    c = codistributor2dbc(g, (2, 2))
    D = codistributed.rand(5, 4, c, seed=3)
    Z = codistributed.zeros(5, 4, c, dtype=np.int16)
    facts = (D.holds, D.shape, str(D.dtype), Z.shape, str(Z.dtype), getCodistributor(Z).Grid == g)
    G = gather(Z + 1)
    return facts + (None if G is None else G.tolist(),)


def test_outside_labs_hold_nothing_but_know_the_array(pools):
    r = spmd_run(every_lab_case, pool=pools(4), timeout=200)
    ones = np.ones((5, 4), dtype=np.int16).tolist()
    for k in range(1, 5):
        assert r[k] == (k <= 2, (5, 4), "float64", (5, 4), "int16", True, ones if k <= 2 else None), (k, r[k])


def test_a_1d_constructor_on_a_grid_is_one_error_on_every_lab(pools):
    P = pools(4)
    code = "D = codistributed.colon(1, 10, codist=codistributor2dbc(spmdlab.grid(2, 1, labs=[1, 2]), 2))"
    with pytest.raises(SpmdError) as info:
        spmd_run(exec, code, {"spmdlab": spmdlab, "codistributed": codistributed,
                              "codistributor2dbc": codistributor2dbc}, pool=P, timeout=100)
    assert set(info.value.errors) == {1, 2, 3, 4} and "2-D" in str(info.value)
    assert list(spmd_run(labindex, pool=P, timeout=60)) == [1, 2, 3, 4]  # the pool stays usable


def random_case(labs: list, rows: int, orient: str, blocks: tuple, shape: tuple) -> list:
    """The constructors on one random grid against numpy; every lab checks (outside labs:
    that they hold nothing and know the shape). Returns the problems found."""
    lab = labindex()
    g = spmdlab.grid(rows, len(labs) // rows, labs=labs, orientation=orient)
    c = codistributor2dbc(g, blocks)
    made = {"zeros": (codistributed.zeros(shape, c), np.zeros(shape)),
            "ones int8": (codistributed.ones(shape, codist=c, dtype=np.int8), np.ones(shape, np.int8)),
            "eye": (codistributed.eye(shape, c), np.eye(*shape)),
            "nan": (codistributed.nan(shape, c), np.full(shape, np.nan))}
    problems = []
    for name, (D, want) in made.items():
        got = gather(D)
        holds = getattr(D, "holds", True)  # a grid of every lab in order: an ordinary array
        if D.shape != shape or np.dtype(D.dtype) != want.dtype or (lab in labs) != holds:
            problems.append(f"lab {lab}: {name} facts {D.shape} {D.dtype} {holds}")
        elif got is not None and not (got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)):
            problems.append(f"lab {lab}: {name} values")
    r = gather(codistributed.rand(shape, c, seed=4))
    if r is not None and not (r.shape == shape and ((r >= 0) & (r < 1)).all()):
        problems.append(f"lab {lab}: rand")
    spmdlab.gridexit(g)
    return problems


def test_random_grids_constructors_equal_numpy(pools):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    pool = pools(4)

    @st.composite
    def case(draw):
        labs = list(draw(st.permutations([1, 2, 3, 4])))[:draw(st.integers(1, 4))]
        rows = draw(st.sampled_from([r for r in range(1, len(labs) + 1) if len(labs) % r == 0]))
        return (labs, rows, draw(st.sampled_from(["row", "col"])), (draw(st.integers(1, 4)), draw(st.integers(1, 4))),
                (draw(st.integers(0, 9)), draw(st.integers(1, 9))))

    @settings(max_examples=8, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case())
    def check(args):
        r = spmd_run(random_case, *args, pool=pool, timeout=120)
        assert [p for k in range(1, 5) for p in r[k]] == [], args

    check()
