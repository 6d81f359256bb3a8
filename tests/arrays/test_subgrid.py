"""Process grids and arrays on some labs (pbdBASE's BLACS contexts) on real pools.

The index math alone is tested without MPI in tests/layouts/test_grids.py. Here: pbdBASE's
own example (a 9x9 matrix on a 2x3 grid with 2x2 blocks), a 2x1 grid on 4 labs whose
outside labs never call the array's operations (so a collective reaching them would hang
the block: the timeout would catch it), redistribute between grids, the factorizations,
SUMMA and the FFT on a sub-grid against numpy, and bad input as one error on every lab.
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
    codistributor1d,
    codistributor2dbc,
    gather,
    getCodistributor,
    getLocalPart,
    globalIndices,
    labindex,
    numlabs,
    redistribute,
    spmd,
    spmd_run,
)

pytestmark = pytest.mark.timeout(300)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def R_matrix(m: int, n: int) -> np.ndarray:
    """R's ``matrix(1:(m*n), m)``: filled column by column."""
    return np.arange(1, m * n + 1, dtype=float).reshape((m, n), order="F")


# --------------------------------------------------------------------------- pbdBASE's example
def pbdbase_case() -> tuple:
    g = spmdlab.grid(2, 3)
    x = R_matrix(9, 9)
    D = codistributed(x, codistributor2dbc(g, (2, 2)))
    L = getLocalPart(D)
    # pbdDMAT's guide, 1-based: process (0,0) holds rows 1,2,5,6,9 and columns 1,2,7,8
    rows = {0: [1, 2, 5, 6, 9], 1: [3, 4, 7, 8]}
    cols = {0: [1, 2, 7, 8], 1: [3, 4, 9], 2: [5, 6]}
    pr, pc = g.coords(labindex())
    want = x[np.ix_(np.array(rows[pr]) - 1, np.array(cols[pc]) - 1)]
    assert np.array_equal(L, want), (labindex(), L, want)
    assert np.array_equal(gather(D), x)
    return (pr, pc), L.shape


def test_pbdbase_9x9_on_a_2x3_grid_with_2x2_blocks(pools):
    r = spmd_run(pbdbase_case, pool=pools(6), timeout=200)
    got = {r[k][0]: r[k][1] for k in range(1, 7)}
    assert got == {(0, 0): (5, 4), (0, 1): (5, 3), (0, 2): (5, 2),
                   (1, 0): (4, 4), (1, 1): (4, 3), (1, 2): (4, 2)}


# --------------------------------------------------------------------------- ready-made grids
def contexts_case() -> tuple:
    n = numlabs()
    full, row, col = spmdlab.grid(), spmdlab.rowgrid(), spmdlab.colgrid()
    A = np.arange(30.0).reshape(5, 6)
    out = []
    for g in (full, row, col):
        D = codistributed(A, codistributor2dbc(g, (2, 3)))
        assert type(D) is codistributed  # a grid on the whole pool: an ordinary array
        assert np.array_equal(gather(D * 2), A * 2)
        out.append((g.context, g.LabGrid))
    assert spmdlab.grid(context=1) == row and row.labs == tuple(range(1, n + 1))
    # rectangular blocks on the whole pool: transpose, SUMMA and the factorizations
    M = np.random.default_rng(1).random((11, 11)) + 11 * np.eye(11)
    R = codistributed(M, codistributor2dbc(full, (2, 3)))
    assert np.array_equal(gather(R.T), M.T) and getCodistributor(R.T).BlockSizes == (3, 2)
    assert np.allclose(gather(R @ R), M @ M)
    assert np.allclose(gather(np.linalg.solve(R, np.ones(11))), np.linalg.solve(M, np.ones(11)))
    assert np.allclose(gather(spmdlab.chol(R @ R.T)), np.linalg.cholesky(M @ M.T).T)
    return tuple(out)


def test_ready_made_grids_are_pbdbase_contexts_0_1_2(pools):
    r = spmd_run(contexts_case, pool=pools(4), timeout=200)
    assert r[1] == ((0, [2, 2]), (1, [1, 4]), (2, [4, 1]))


# --------------------------------------------------------------------------- a 2x1 grid on 4 labs
def two_by_one_case() -> str:
    lab = labindex()
    g = spmdlab.grid(2, 1, labs=[3, 4])
    A = R_matrix(7, 5)
    D = codistributed(A, codistributor2dbc(g, (2, 3)))
    if lab in (1, 2):
        assert not D.holds and getLocalPart(D).size == 0 and D.shape == (7, 5)
        assert globalIndices(D, 1).size == 0 and globalIndices(D, 1, lab=3).tolist() == [0, 1, 4, 5]
        assert "outside" in repr(D)
        return "outside"
    # only labs 3 and 4 get here: an operation needing labs 1 or 2 would hang (timeout)
    rows = [0, 1, 4, 5] if lab == 3 else [2, 3, 6]
    assert np.array_equal(getLocalPart(D), A[rows, :]), getLocalPart(D)
    assert getCodistributor(D).Grid == g and getCodistributor(D).BlockSize == (2, 3)
    assert globalIndices(D, 1).tolist() == rows and globalIndices(D, 2, lab=7 - lab).tolist() == [0, 1, 2, 3, 4]
    assert globalIndices(D, 1, lab=4).tolist() == [2, 3, 6]
    assert np.array_equal(gather(D * 2 + 1), A * 2 + 1)
    G4 = gather(D, 4)  # to lab 4 of the pool only
    assert np.array_equal(G4, A) if lab == 4 else G4.size == 0
    assert np.isclose(D.sum(), A.sum()) and np.allclose(gather(np.sum(D, axis=0)), A.sum(axis=0))
    assert np.array_equal(gather(D[1:6, 2:4]), A[1:6, 2:4])
    assert np.array_equal(gather(D.T), A.T)
    E = D.copy()
    E[0, 0] = -1
    assert gather(E)[0, 0] == -1 and gather(D)[0, 0] == A[0, 0]
    return "inside"


def test_a_2x1_grid_on_4_labs_outside_labs_hold_nothing_and_do_nothing(pools):
    r = spmd_run(two_by_one_case, pool=pools(4), timeout=200)
    assert [r[k] for k in range(1, 5)] == ["outside", "outside", "inside", "inside"]


def all_labs_call_case() -> tuple:
    """Every lab calls the operations: outside labs get empty-handed arrays at once."""
    g = spmdlab.grid(2, 1, labs=[2, 4])
    A = R_matrix(6, 4)
    D = codistributed(A, codistributor2dbc(g, 2))
    E = np.sqrt(D) @ D.T + 1
    s = D.sum()
    G = gather(E)
    if not D.holds:
        assert not E.holds and G is None and isinstance(s, type(D)) and not s.holds
        return ("outside",)
    assert np.allclose(G, np.sqrt(A) @ A.T + 1) and np.isclose(s, A.sum())
    return ("inside",)


def test_operations_called_on_every_lab(pools):
    r = spmd_run(all_labs_call_case, pool=pools(4), timeout=200)
    assert [r[k][0] for k in range(1, 5)] == ["outside", "inside", "outside", "inside"]


# --------------------------------------------------------------------------- redistribute
def redistribute_case() -> str:
    lab = labindex()
    g1 = spmdlab.grid(2, 1, labs=[1, 2])
    g2 = spmdlab.grid(1, 2, labs=[4, 3])
    A = np.arange(99.0).reshape(9, 11)
    D = codistributed(A, codistributor2dbc(g1, (2, 3)))
    E = redistribute(D, codistributor2dbc(g2, (3, 2)))
    assert E.holds == (lab in (3, 4)) and D.holds == (lab in (1, 2))
    if E.holds:
        assert np.array_equal(gather(E), A)
        c = getCodistributor(E)
        rank = g2.rank_of(lab)
        assert np.array_equal(getLocalPart(E), A[np.ix_(*c.localIndices(rank, 2))])
    F = redistribute(E, codistributor1d(2))  # back to the whole pool
    assert type(F) is codistributed and np.array_equal(gather(F), A)
    G = codistributed(F, codistributor2dbc(g1, 4))  # whole pool to a grid
    assert G.holds == (lab in (1, 2))
    if G.holds:
        assert np.array_equal(gather(G), A)
    H = redistribute(D.sum(axis=1))  # a 1-D result on a grid, to the whole pool
    assert type(H) is codistributed and np.allclose(gather(H), A.sum(axis=1))
    K = redistribute(D.T, codistributor2dbc(g2, 2))  # a transpose: the grid's labs as a 1x2 grid
    if K.holds:
        assert np.array_equal(gather(K), A.T)
    return "ok"


def test_redistribute_between_grids_and_the_pool(pools):
    r = spmd_run(redistribute_case, pool=pools(4), timeout=200)
    assert [r[k] for k in range(1, 5)] == ["ok"] * 4


# --------------------------------------------------------------------------- numerics on a sub-grid
def numerics_case(labs: list, blocks: tuple) -> str:
    lab = labindex()
    g = spmdlab.grid(len(labs), 1, labs=labs) if len(labs) < 4 else spmdlab.grid(2, 2, labs=labs)
    rng = np.random.default_rng(3)
    n = 13
    A = rng.random((n, n)) + n * np.eye(n)
    S = A @ A.T
    b = rng.random((n, 2))
    c = codistributor2dbc(g, blocks)
    D, DS, B = codistributed(A, c), codistributed(S, c), codistributed(b, c)
    if lab not in labs:
        return "outside"  # never calls anything: the grid's labs need nobody else
    assert np.allclose(gather(np.linalg.solve(D, B)), np.linalg.solve(A, b))
    assert np.allclose(gather(spmdlab.mldivide(D, B)), np.linalg.solve(A, b))
    L, U, P = spmdlab.lu(D)
    assert np.allclose(gather(P) @ A, gather(L) @ gather(U))
    R = spmdlab.chol(DS)
    assert np.allclose(gather(R).T @ gather(R), S)
    Q, Rq = np.linalg.qr(D)
    assert np.allclose(gather(Q) @ gather(Rq), A)
    assert np.allclose(gather(D @ D), A @ A)
    assert np.allclose(gather(np.fft.fft2(D)), np.fft.fft2(A))
    assert np.allclose(gather(np.fft.fft(D, axis=0)), np.fft.fft(A, axis=0))
    assert np.allclose(gather(spmdlab.fft(D, None, 2)), np.fft.fft(A, axis=1))
    assert np.allclose(gather(spmdlab.ifft2(spmdlab.fft2(D))), A)
    return "ok"


@pytest.mark.parametrize("labs, blocks", [([2, 3], (2, 3)), ([4, 1, 3, 2], (3, 3))])
def test_linear_algebra_and_fft_on_a_sub_grid_equal_numpy(pools, labs, blocks):
    r = spmd_run(numerics_case, labs, blocks, pool=pools(4), timeout=250)
    assert [r[k] for k in range(1, 5)] == ["ok" if k in labs else "outside" for k in range(1, 5)]


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("code, message", [
    ("g = spmdlab.grid(3, 3)", "grid 3x3 needs 9 labs but the pool has 4"),
    ("g = spmdlab.grid(2, 1, labs=[2, 2])", "lab 2 appears twice in labs (positions 1 and 2)"),
    ("g = spmdlab.grid(1, 2, labs=[1, 5])", "lab 5 in labs is not in the pool"),
    ("g = spmdlab.grid(2, 1, labs=[labindex(), 1 + labindex() % 4])", "make the same grid on every lab"),
])
def test_bad_grids_are_one_error_on_every_lab(pools, code, message):
    P = pools(4)
    with pytest.raises(SpmdError) as info:
        spmd_run(exec, code, {"spmdlab": spmdlab, "labindex": labindex}, pool=P, timeout=100)
    assert set(info.value.errors) == {1, 2, 3, 4}
    assert message in str(info.value)
    assert list(spmd_run(labindex, pool=P, timeout=60)) == [1, 2, 3, 4]  # the pool stays usable


def test_mixed_grids_gridexit_and_recovery(pools):
    P = pools(4)
    with spmd(pool=P):
        g1 = spmdlab.grid(2, 1, labs=[1, 2])
        g2 = spmdlab.grid(2, 1, labs=[3, 4])
        X = np.ones((4, 4))
        D1 = codistributed(X, codistributor2dbc(g1, 2))
        D2 = codistributed(X, codistributor2dbc(g2, 2))
        W = codistributed(X)
    with pytest.raises(SpmdError) as info:
        with spmd(pool=P):
            Y = D1 + D2
    assert set(info.value.errors) == {1, 2, 3, 4} and "live on different grids" in str(info.value)
    with pytest.raises(SpmdError) as info:
        with spmd(pool=P):
            Y = D1 + W
    assert set(info.value.errors) == {1, 2, 3, 4} and "an array of all 4 labs" in str(info.value)
    # the grids were made before the labs recovered from those errors: a clear error, no hang
    with pytest.raises(SpmdError, match="recovered from an error"):
        with spmd(pool=P):
            Y = D1 * 2
    with spmd(pool=P):
        g = spmdlab.grid(2, 1, labs=[1, 2])
        D = codistributed(X, codistributor2dbc(g, 2))
        ok = (not D.holds) or bool(np.all(gather(D + 1) == 2))
        spmdlab.gridexit(g)
    assert list(ok) == [True] * 4
    with pytest.raises(SpmdError, match="released by gridexit") as info:
        with spmd(pool=P):
            Y = D * 2
    assert set(info.value.errors) == {1, 2, 3, 4}
    with spmd(pool=P):  # a constructor on a grid of some labs builds it there (issue 24)
        Z = codistributed.zeros(4, 4, codistributor2dbc(spmdlab.grid(2, 1, labs=[2, 3]), 2))
        zero = (not Z.holds) or bool(np.all(gather(Z) == 0))
    assert list(zero) == [True] * 4


# --------------------------------------------------------------------------- differential
def differential_case(labs: list, rows: int, orient: str, blocks: tuple, shape: tuple, target: tuple) -> list:
    """Operations on an array of a random grid against numpy; every lab checks (outside
    labs: that they hold nothing). Returns the problems found."""
    lab = labindex()
    g = spmdlab.grid(rows, len(labs) // rows, labs=labs, orientation=orient)
    A = np.arange(1.0, 1 + shape[0] * shape[1]).reshape(shape) / 7
    D = codistributed(A, codistributor2dbc(g, blocks))
    results = {
        "sin(D) * 2 - D": (np.sin(D) * 2 - D, np.sin(A) * 2 - A),
        "D.T @ D": (D.T @ D, A.T @ A),
        "sum(D, axis=0)": (np.sum(D, axis=0), A.sum(axis=0)),
        "D[1:, ::2]": (D[1:, ::2], A[1:, ::2]),
        "cumsum(D, axis=1)": (np.cumsum(D, axis=1), np.cumsum(A, axis=1)),
    }
    t_labs, t_rows, t_blocks = target
    g2 = spmdlab.grid(t_rows, len(t_labs) // t_rows, labs=t_labs)
    E = redistribute(D, codistributor2dbc(g2, t_blocks))
    problems = []
    for name, (X, want) in results.items():
        got = gather(X)
        if (lab in labs) != (got is not None) or (got is not None and not np.allclose(got, want)):
            problems.append(f"lab {lab}: {name}")
    got = gather(E)
    if (lab in t_labs) != (got is not None) or (got is not None and not np.array_equal(got, A)):
        problems.append(f"lab {lab}: redistribute")
    spmdlab.gridexit(g)
    spmdlab.gridexit(g2)
    return problems


def grid_cases():
    from hypothesis import strategies as st

    @st.composite
    def case(draw):
        def some_grid():
            labs = draw(st.permutations([1, 2, 3, 4]))[:draw(st.integers(1, 4))]
            rows = draw(st.sampled_from([r for r in range(1, len(labs) + 1) if len(labs) % r == 0]))
            return list(labs), rows
        labs, rows = some_grid()
        blocks = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
        shape = (draw(st.integers(2, 9)), draw(st.integers(1, 9)))
        t_labs, t_rows = some_grid()
        return labs, rows, draw(st.sampled_from(["row", "col"])), blocks, shape, \
            (t_labs, t_rows, (draw(st.integers(1, 4)), draw(st.integers(1, 4))))
    return case()


def test_random_grids_equal_numpy(pools):
    from hypothesis import HealthCheck, given, settings

    pool = pools(4)

    @settings(max_examples=8, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(grid_cases())
    def check(case):
        r = spmd_run(differential_case, *case, pool=pool, timeout=120)
        assert [p for k in range(1, 5) for p in r[k]] == [], case

    check()
