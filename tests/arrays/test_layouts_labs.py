"""The extended layouts on real pools: halos, Dagger.jl's blocks, CuPy's chunk maps and
modes, checked against numpy on the whole array at 1-5 labs.

Every case builds the same array on each lab, lays it out, and checks on every lab what
it stores (halo cells and overlaps included) and what each operation gives, against
numpy on the array itself. The index math alone is tested without MPI in
test_layouts_blocks.py, test_layouts_chunks.py and test_codistributor.py.
"""
from __future__ import annotations

import math
import sys

import cloudpickle
import numpy as np
import pytest

from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    codistributorBlocks,
    codistributorChunks,
    gather,
    getCodistributor,
    getLocalPart,
    globalIndices,
    labindex,
    numlabs,
    redistribute,
    spmd_run,
)
from spmdlab.layouts.regions import product_index

pytestmark = pytest.mark.timeout(240)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SHAPES = {"1d": (15,), "2d": (7, 11), "3d": (5, 5, 5)}


def layouts(shape: tuple, n: int) -> dict:
    """Every new layout of an array of ``shape`` on n labs, by name."""
    nd = len(shape)
    part = codistributor1d.defaultPartition(shape[0], n)
    out = {
        "halo1": codistributor1d(1, None, shape, halo=1),
        "halo2-uneven": codistributor1d(nd, ([shape[-1]] + [0] * (n - 1)) if n < 3 else
                                        [0, shape[-1] - (n - 2)] + [1] * (n - 2), shape, halo=2),
        "blockrow": codistributorBlocks((1,) + (2,) * (nd - 1), "blockrow", shape),
        "cyclicrow": codistributorBlocks((2,) * nd, "cyclicrow", shape),
        "blockrow-halo": codistributorBlocks((1,) + shape[1:], "blockrow", shape, halo=1),
    }
    if nd >= 2:
        grid = codistributor2dbc.defaultLabGrid(n)
        out["blockcol"] = codistributorBlocks((2,) * nd, "blockcol", shape)
        out["cycliccol"] = codistributorBlocks((3, 2) + (2,) * (nd - 2), "cycliccol", shape)
        out["assign-grid"] = codistributorBlocks((2, 3) + (2,) * (nd - 2),
                                                 np.arange(1, n + 1).reshape(grid + [1] * (nd - 2)), shape)
        off = [[1, 2], [2, 1]] if n >= 2 else [[1]]
        out["assign-offgrid"] = codistributorBlocks((2, 3) + (2,) * (nd - 2),
                                                    np.array(off).reshape(np.shape(off) + (1,) * (nd - 2)), shape)
    # a chunk map with overlaps: lab k's rows grown by one each side, plus one more chunk on lab 1
    starts = np.concatenate(([0], np.cumsum(part)))
    rest = (slice(None),) * (nd - 1)
    imap = {k: [(slice(max(0, int(starts[k - 1]) - 1), min(shape[0], int(starts[k]) + 1)),) + rest]
            for k in range(1, n + 1)}
    imap[1].append((slice(0, 2),) + tuple(slice(1, min(4, s)) for s in shape[1:]))
    out["chunks-overlap"] = codistributorChunks(imap, shape)
    # several disjoint chunks per lab: 2n strips along the last dimension, lab k the k-th from each end
    m = shape[-1]
    edges = [round(i * m / (2 * n)) for i in range(2 * n + 1)]
    strip = lambda i: (slice(None),) * (nd - 1) + (slice(edges[i], edges[i + 1]),)
    out["chunks-multi"] = codistributorChunks({k: [strip(k - 1), strip(2 * n - k)] for k in range(1, n + 1)}, shape)
    return out


def stored_parts(D) -> list:
    local = getLocalPart(D)
    return list(local) if isinstance(local, list) else [local]


def stored_sels(c, lab, n) -> list:
    return c.chunkSelections(lab, n)


def check_stored(D, expected: np.ndarray, what: str) -> None:
    """Every array this lab stores of D (halo cells, overlaps) holds ``expected`` there."""
    lab, n = labindex(), numlabs()
    c = getCodistributor(D)
    sels = stored_sels(c, lab, n)
    parts = stored_parts(D)
    assert len(parts) == len(sels), f"{what}: {len(parts)} stored arrays, layout says {len(sels)}"
    for p, sel in zip(parts, sels):
        want = expected[product_index(sel)]
        assert p.shape == want.shape, f"{what}: stored shape {p.shape}, expected {want.shape}"
        assert np.allclose(p, want, equal_nan=True), f"{what}: lab {lab} stores {p}, expected {want}"


def same(a, b, what: str) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    assert np.allclose(a, b), f"{what}: {a} != {b}"


def run_layout_case(shape: tuple, name: str) -> str:
    """On the labs: every operation on the layout ``name`` against numpy."""
    n, lab = numlabs(), labindex()
    c = layouts(shape, n)[name]
    X = (np.arange(math.prod(shape), dtype=float).reshape(shape) % 13) * 0.5 + 1.0
    D = codistributed(X, c)
    same(gather(D), X, "gather")
    check_stored(D, X, "codistributed(X, codist)")
    if not getCodistributor(D).isChunked(n):
        L = getLocalPart(D)
        for d in range(1, len(shape) + 1):
            assert len(globalIndices(D, d)) == L.shape[d - 1], "globalIndices vs local part"
        same(L, X[np.ix_(*[globalIndices(D, d) for d in range(1, len(shape) + 1)])], "globalIndices")
    # elementwise on the same layout keeps it, halo cells and overlaps included
    E = D * 2 + 1
    assert getCodistributor(E) == getCodistributor(D)
    check_stored(E, X * 2 + 1, "D * 2 + 1")
    S = np.sin(D) + D
    check_stored(S, np.sin(X) + X, "np.sin(D) + D")
    same(gather(D > 3), X > 3, "D > 3")
    check_stored(D.clip(2, 4), np.clip(X, 2, 4), "D.clip(2, 4)")
    same(gather(np.clip(D, 2, 4)), np.clip(X, 2, 4), "np.clip(D, 2, 4)")
    same(gather(np.where(D > 3, D, 0)), np.where(X > 3, X, 0), "np.where")
    check_stored(abs(-D), X, "abs(-D)")
    check_stored((D * 1j).real, X * 0, "(D * 1j).real")
    # with an operand in the default layout: computed there, moved back
    F = codistributed(X)
    G = D + F
    assert getCodistributor(G) == getCodistributor(D)
    check_stored(G, 2 * X, "D + F")
    same(gather(F - D), 0 * X, "F - D")
    # reductions count every element once
    assert np.isclose(D.sum(), X.sum()), f"sum {D.sum()} != {X.sum()}"
    same(gather(D.sum(axis=0)), X.sum(axis=0), "sum(axis=0)")
    assert D.max() == X.max() and D.min() == X.min()
    same(gather(np.mean(D, axis=-1)), X.mean(axis=-1), "mean(axis=-1)")
    assert np.isclose(np.std(D), X.std())
    # indexing, and writes that reach every copy
    idx = tuple(s // 2 for s in shape)
    assert D[idx] == X[idx]
    same(gather(D[1:]), X[1:], "D[1:]")
    D2 = D.copy()
    D2[idx] = -5.0
    X2 = X.copy()
    X2[idx] = -5.0
    check_stored(D2, X2, "D[idx] = -5")
    D2 += 1
    check_stored(D2, X2 + 1, "D += 1")
    D2[...] = D
    check_stored(D2, X, "D2[...] = D")
    # other layouts, there and back
    for other, c2 in layouts(shape, n).items():
        R = redistribute(D, c2)
        check_stored(R, X, f"redistribute to {other}")
        same(gather(redistribute(R, c)), X, f"redistribute from {other}")
    same(gather(redistribute(D, codistributor1d())), X, "redistribute to the default")
    if len(shape) == 2:
        same(gather(redistribute(D, codistributor2dbc())), X, "redistribute to 2dbc")
        check_stored(redistribute(codistributed(X, codistributor2dbc([1, n], 2)), c), X, "2dbc to it")
        same(gather(D @ D.T), X @ X.T, "D @ D.T")
        same(gather(D.T), X.T, "D.T")
    return "ok"


CASES = [(key, name) for key in SHAPES for name in layouts(SHAPES[key], 4)]


@pytest.mark.parametrize("labs", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("key,name", CASES)
def test_every_operation_on_the_new_layouts_equals_numpy(pools, labs, key, name):
    if name not in layouts(SHAPES[key], labs):
        pytest.skip("not a layout of this many labs")
    r = spmd_run(run_layout_case, SHAPES[key], name, pool=pools(labs), timeout=200)
    assert [r[k] for k in range(1, labs + 1)] == ["ok"] * labs


def numerics_case() -> str:
    """Linear algebra and FFT take every layout (through a move to a layout they know)."""
    from spmdlab import chol, fft, mldivide

    n = numlabs()
    rng = np.random.default_rng(7)
    A = rng.random((9, 9)) + 9 * np.eye(9)
    b = rng.random(9)
    for name, c in layouts((9, 9), n).items():
        D = codistributed(A, c)
        same(gather(np.linalg.solve(D, b)), np.linalg.solve(A, b), f"solve, {name}")
        same(gather(mldivide(D, codistributed(b))), np.linalg.solve(A, b), f"mldivide, {name}")
        S = codistributed(A @ A.T, c)
        same(gather(chol(S)), np.linalg.cholesky(A @ A.T).T, f"chol, {name}")
        same(gather(np.fft.fft2(D)), np.fft.fft2(A), f"fft2, {name}")
        same(gather(fft(D, None, 2)), np.fft.fft(A, axis=1), f"fft(D, [], 2), {name}")
        assert np.isclose(np.linalg.norm(D), np.linalg.norm(A)), f"norm, {name}"
        q, r = np.linalg.qr(D)
        same(gather(q) @ gather(r), A, f"qr, {name}")
    for name, c in layouts((16,), n).items():
        v = rng.random(16)
        same(gather(np.fft.fft(codistributed(v, c))), np.fft.fft(v), f"fft of a vector, {name}")
    return "ok"


@pytest.mark.parametrize("labs", [1, 2, 4])
def test_linear_algebra_and_fft_on_the_new_layouts(pools, labs):
    r = spmd_run(numerics_case, pool=pools(labs), timeout=200)
    assert [r[k] for k in range(1, labs + 1)] == ["ok"] * labs
