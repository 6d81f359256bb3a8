"""Modes, halo updates, bad input and the client on the extended layouts, on real pools.

CuPy's modes: partial values on overlapping chunks combined by sum/max/min/prod
(``changeMode``, and automatically before any operation that needs the values);
``updateHalos`` refreshing halo cells from their owners with messages between
neighbours only; clear errors on every lab for bad layouts; ``distributed`` arrays in
the new layouts at the client.
"""
from __future__ import annotations

import re
import sys

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import (
    SpmdError,
    changeMode,
    codistributed,
    codistributor1d,
    codistributorBlocks,
    codistributorChunks,
    distributed,
    gather,
    getCodistributor,
    getLocalPart,
    gplus,
    labindex,
    numlabs,
    redistribute,
    spmd_run,
    updateHalos,
)
from spmdlab.layouts.moves import lab_moves
from spmdlab.layouts.regions import product_index

pytestmark = pytest.mark.timeout(180)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

COMBINE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def overlapping_map(shape: tuple, n: int) -> dict:
    """Lab k: rows of its default share grown by two each side, and lab n the whole array too."""
    part = codistributor1d.defaultPartition(shape[0], n)
    starts = np.concatenate(([0], np.cumsum(part))).astype(int)
    imap = {k: [(slice(max(0, starts[k - 1] - 2), min(shape[0], starts[k] + 2)), slice(None))]
            for k in range(1, n + 1)}
    imap[n].append((slice(None), slice(None)))
    return imap


def partial(k: int, j: int, sel: tuple, shape: tuple) -> np.ndarray:
    """The partial value lab k holds in its chunk j (deterministic, so every lab can
    work out the combined array)."""
    g = np.arange(np.prod(shape), dtype=float).reshape(shape)[product_index(sel)]
    return 1.0 + 0.25 * k + 0.125 * j + (g % 7) * 0.5


def combined(imap: dict, shape: tuple, mode: str) -> np.ndarray:
    out = None
    for k, chunks in imap.items():
        for j, sl in enumerate(chunks):
            full = np.full(shape, np.nan)
            full[sl] = partial(k, j, sl, shape)
            out = full if out is None else np.where(np.isnan(out), full,
                                                    np.where(np.isnan(full), out, COMBINE[mode](out, full)))
    return out


def modes_case(mode: str) -> str:
    n, lab = numlabs(), labindex()
    shape = (9, 4)
    imap = overlapping_map(shape, n)
    c = codistributorChunks(imap, shape)
    sels = c.chunkSelections(lab, n)
    L = [partial(lab, j, sel, shape) for j, sel in enumerate(sels)]
    D = codistributed.build(L, c, mode=mode)
    assert D.mode == mode
    want = combined(imap, shape, mode)
    R = changeMode(D, "replica")
    assert R.mode == "replica" and D.mode == mode
    for p, sel in zip(getLocalPart(R), sels):
        assert np.allclose(p, want[product_index(sel)]), f"{mode}: lab {lab} holds {p}"
    assert np.allclose(gather(D), want)
    assert np.allclose(gather(D * 2), want * 2), "an operation converts to replica first"
    assert np.isclose(D.sum(), want.sum())
    assert np.allclose(gather(redistribute(D, codistributor1d())), want)
    # replica -> mode -> replica gives the values back; the other copies hold the identity
    M = changeMode(R, mode)
    assert M.mode == mode
    assert np.allclose(gather(changeMode(M, "replica")), want)
    assert np.allclose(gather(M), want)
    return "ok"


@pytest.mark.parametrize("labs", [1, 2, 3, 4])
@pytest.mark.parametrize("mode", ["sum", "max", "min", "prod"])
def test_modes_combine_overlapping_partial_values(pools, labs, mode):
    r = spmd_run(modes_case, mode, pool=pools(labs), timeout=100)
    assert [r[k] for k in range(1, labs + 1)] == ["ok"] * labs


def histogram_case() -> tuple:
    """Each lab counts its own samples into the whole histogram; the sum mode adds them."""
    n, lab = numlabs(), labindex()
    samples = np.random.default_rng(lab).integers(0, 20, size=1000)
    mine = np.bincount(samples, minlength=20).astype(np.int64)
    c = codistributorChunks({k: [(slice(None),)] for k in range(1, n + 1)}, (20,))
    H = codistributed.build([mine], c, mode="sum")
    total = gplus(mine)
    R = changeMode(H, "replica")
    K = codistributed(H)  # a copy keeps the mode
    return bool(np.array_equal(getLocalPart(R)[0], total)), bool(np.array_equal(gather(H), total)), \
        int(H.sum()), str(R.dtype), K.mode, bool(np.array_equal(gather(K), total))


def test_partial_histograms_in_sum_mode(pools):
    r = spmd_run(histogram_case, pool=pools(4), timeout=60)
    for k in range(1, 5):
        assert r[k] == (True, True, 4000, "int64", "sum", True)


def halos_case(dim: int, w: int) -> dict:
    n, lab = numlabs(), labindex()
    shape = (10, 9)
    c = codistributor1d(dim, None, shape, halo=w)
    X = np.arange(90.0).reshape(shape)
    D = codistributed(X, c)
    L = getLocalPart(D)
    (k, own, local), = c.ownedPieces(lab, n)
    L[product_index(local)] += 1000 * lab  # change only the cells this lab owns
    Y = gather(D)  # the owners' values
    updateHalos(D)
    stored = c.localSelection(lab, n)
    ok = bool(np.array_equal(getLocalPart(D), Y[product_index(stored)]))
    talks = [b for b, moves in enumerate(lab_moves(c, c, n, lab, False, True).sends, start=1) if moves]
    return {"ok": ok, "talks": talks, "shape": L.shape}


@pytest.mark.parametrize("labs", [1, 2, 3, 5])
@pytest.mark.parametrize("dim,w", [(1, 1), (2, 1), (1, 2)])
def test_update_halos_refreshes_from_the_owners_and_talks_to_neighbours_only(pools, labs, dim, w):
    r = spmd_run(halos_case, dim, w, pool=pools(labs), timeout=60)
    for lab in range(1, labs + 1):
        assert r[lab]["ok"]
        neighbours = [b for b in (lab - 1, lab + 1) if 1 <= b <= labs]
        assert r[lab]["talks"] == neighbours
    if labs == 3 and (dim, w) == (1, 1):  # rows [0:4], [4:7], [7:10] with one halo row inside
        assert [r[k]["shape"] for k in (1, 2, 3)] == [(5, 9), (5, 9), (4, 9)]


def block_halos_case() -> bool:
    """A 2-D board on a 2x2 grid of labs, one cell of halo all round (corners included)."""
    n, lab = numlabs(), labindex()
    c = codistributorBlocks((4, 5), np.array([[1, 2], [3, 4]]), (8, 10), halo=1)
    X = np.arange(80.0).reshape(8, 10)
    D = codistributed(X, c)
    L = getLocalPart(D)
    (k, own, local), = c.ownedPieces(lab, n)
    L[product_index(local)] *= -1
    updateHalos(D)
    return bool(np.array_equal(getLocalPart(D), (-X)[product_index(c.localSelection(lab, n))]))


def test_update_halos_of_a_block_layout_fills_edges_and_corners(pools):
    r = spmd_run(block_halos_case, pool=pools(4), timeout=60)
    assert [r[k] for k in range(1, 5)] == [True] * 4


# --------------------------------------------------------------------------- bad input
BAD = [
    ("codistributed.zeros(7, 11, codistributorBlocks((2, 2), np.array([[1, 5]])))",
     r"ValueError.*lab 5.*labs are numbered 1\.\.4 as in MATLAB"),
    ("codistributorBlocks((2, 0), 'blockrow')", r"ValueError.*block size must be >= 1"),
    ("codistributed.zeros((10,), codistributorChunks({1: [slice(0, 4)], 2: [slice(5, 10)]}))",
     r"ValueError: index 4 is in no chunk of the index map"),
    ("codistributed.zeros((10,), codistributorChunks({1: [slice(0, 12)]}))", r"ValueError.*out of bounds"),
    ("changeMode(codistributed.zeros(10), 'avg')", r"ValueError.*mode must be one of 'replica', 'sum'"),
    ("codistributed.build([np.zeros(3)], codistributorChunks({k: [slice(0, 3)] for k in range(1, 5)}, (3,)), "
     "mode='mean')", r"ValueError.*mode must be one of"),
    ("updateHalos(codistributed.build([np.zeros(3)], codistributorChunks({k: [slice(0, 3)] for k in range(1, 5)}, "
     "(3,)), mode='sum'))", r"ValueError.*'sum' mode"),
    ("codistributed.build([np.zeros(3)], codistributorChunks({k: [slice(0, 3)] + ([slice(0, 1)] if k == 4 and "
     "labindex() == 2 else []) for k in range(1, 5)}, (3,)), mode='sum')",
     r"ValueError.*use the same codistributor on every lab"),
    ("codistributed.build([np.zeros(3 if labindex() != 2 else 4)], "
     "codistributorChunks({k: [slice(0, 3)] for k in range(1, 5)}, (3,)))", r"ValueError.*lab 2 has local part"),
]


@pytest.mark.parametrize("code,message", BAD)
def test_bad_input_is_one_clear_error_on_every_lab_and_the_pool_lives(pools, code, message):
    pool = pools(4)
    body = ("import numpy as np\n"
            "from spmdlab import *\n"
            f"x = {code}\n")
    with pytest.raises(SpmdError) as info:
        spmdlab.spmd_run(lambda: exec(body, {}), pool=pool, timeout=60)
    text = str(info.value)
    # Every lab makes the same check; a lab that gets there later may be stopped by the
    # first one's error first. A check one lab alone can fail is combined: all report it.
    assert text.startswith("Error detected on labs 1-4" if "labindex()" in code else "Error detected on lab"), text
    assert re.search(message, text, re.S), text
    assert [spmd_run(labindex, pool=pool, timeout=30)[k] for k in range(1, 5)] == [1, 2, 3, 4]


# --------------------------------------------------------------------------- at the client
def test_distributed_arrays_in_the_new_layouts_at_the_client(pools):
    pool = pools(3)
    X = np.arange(77.0).reshape(7, 11)
    for c in (codistributorBlocks((2, 3), "cycliccol"), codistributor1d(1, None, None, halo=1),
              codistributorChunks({1: [(slice(0, 4), slice(None))], 2: [(slice(3, 7), slice(None))],
                                   3: [(slice(0, 2), slice(0, 3)), (slice(5, 7), slice(2, 11))]})):
        D = distributed(X, c, pool=pool)
        assert np.array_equal(gather(D), X)
        assert np.array_equal(gather(D * 2 + 1), X * 2 + 1)
        assert np.isclose(float(gather(D.sum())), X.sum())
        assert np.array_equal(gather(D.redistribute(codistributor1d(2))), X)
        page = D._repr_html_()  # the notebook display: every lab's part and the picture
        assert "<svg" in page and "Lab 3" in page
        if isinstance(c, codistributorChunks):
            assert "2 chunks: [0:2, 0:3], [5:7, 2:11]" in page


def halo_then_fail() -> None:
    D = codistributed.zeros((40, 3), codistributor1d(1, None, (40, 3), halo=1))
    updateHalos(D)
    if labindex() == 1:
        raise RuntimeError("lab 1 stops before the second refresh")
    updateHalos(D)  # the others wait here for lab 1, until the abort ends the wait


def halo_after() -> bool:
    D = codistributed(np.arange(120.0).reshape(40, 3), codistributor1d(1, None, (40, 3), halo=1))
    getLocalPart(D)[...] += labindex()  # halo cells too: with this lab's number, not their owner's
    changed = gather(D)  # each element from its owner
    updateHalos(D)
    c = getCodistributor(D)
    return bool(np.array_equal(getLocalPart(D), changed[product_index(c.localSelection(labindex(), numlabs()))]))


def test_an_error_while_others_wait_in_update_halos_leaves_the_pool_usable(pools):
    pool = pools(4)
    with pytest.raises(SpmdError, match=r"Error detected on lab 1[\s\S]*RuntimeError: lab 1 stops[\s\S]*updateHalos"):
        spmd_run(halo_then_fail, pool=pool, timeout=60)
    r = spmd_run(halo_after, pool=pool, timeout=60)
    assert [r[k] for k in range(1, 5)] == [True] * 4


def random_maps_case(seed: int) -> str:
    """Random covering index maps (overlaps, several chunks per lab, labs with none) and
    random block layouts: every move between them, in every mode, equals numpy."""
    n = numlabs()
    rng = np.random.default_rng(seed)
    shape = tuple(int(x) for x in rng.integers(1, 9, size=int(rng.integers(1, 4))))

    def random_map() -> dict:
        imap: dict = {k: [] for k in range(1, n + 1)}
        for lab_ in rng.integers(1, n + 1, size=int(rng.integers(1, 4))):  # a few random boxes
            box = []
            for s in shape:
                a, b = sorted(int(v) for v in rng.integers(0, s + 1, size=2))
                box.append(slice(a, b))
            imap[int(lab_)].append(tuple(box))
        stripes = codistributor1d.defaultPartition(shape[0], n)  # and a cover of the whole array
        start = 0
        for k, size in enumerate(stripes, start=1):
            imap[k].append((slice(start, start + size),) + (slice(None),) * (len(shape) - 1))
            start += size
        for k in imap:
            rng.shuffle(imap[k])
        return imap

    X = rng.random(shape)
    layouts_ = [codistributorChunks(random_map(), shape), codistributorChunks(random_map(), shape),
                codistributorBlocks(tuple(int(b) for b in rng.integers(1, 4, size=len(shape))),
                                    rng.integers(1, n + 1, size=(2,) * len(shape)), shape),
                codistributor1d(len(shape), None, shape, halo=int(rng.integers(0, 3)))]
    for a in layouts_:
        D = codistributed(X, a)
        for b in layouts_:
            R = redistribute(D, b)
            lab = labindex()
            for part, sel in zip(getLocalPart(R) if isinstance(getLocalPart(R), list) else [getLocalPart(R)],
                                 b.complete(shape, n).chunkSelections(lab, n)):
                assert np.array_equal(part, X[product_index(sel)]), (seed, a, b)
        for mode in ("sum", "max"):
            M = changeMode(D, mode)
            assert np.allclose(gather(M), X), (seed, a, mode)
            assert np.allclose(gather(changeMode(M, "replica")), X), (seed, a, mode)
    return "ok"


@pytest.mark.parametrize("labs", [2, 3, 5])
def test_random_index_maps_and_block_layouts_move_exactly(pools, labs):
    for seed in range(12):
        r = spmd_run(random_maps_case, seed, pool=pools(labs), timeout=100)
        assert [r[k] for k in range(1, labs + 1)] == ["ok"] * labs


def astype_of_partial_sums() -> tuple:
    n = numlabs()
    c = codistributorChunks({k: [(slice(None),)] for k in range(1, n + 1)}, (3,))
    D = codistributed.build([np.full(3, 0.5)], c, mode="sum")  # each element: 0.5 * numlabs
    return gather(D.astype(np.int64)).tolist(), D.astype(np.int64).mode, D.copy().mode


def test_astype_of_a_sum_mode_array_converts_the_sum(pools):
    r = spmd_run(astype_of_partial_sums, pool=pools(4), timeout=60)
    assert r[1] == ([2, 2, 2], "replica", "sum")  # int(0.5 + 0.5 + 0.5 + 0.5), not 4 * int(0.5)


def first_exchange_with_an_idle_lab() -> list:
    """Lab 2 holds nothing, so it exchanges nothing, in a halo update and in a move."""
    c = codistributor1d(1, [5, 0, 5], (10,), halo=1)
    D = codistributed(np.arange(10.0), c)
    a = codistributorChunks({1: [slice(0, 5)], 3: [slice(5, 10)]}, (10,))
    b = codistributorChunks({1: [slice(5, 10)], 3: [slice(0, 5)]}, (10,))
    E = redistribute(codistributed(np.arange(10.0), a), b)
    total = gplus(1)  # a collective right after: every lab must be past the move
    whole = gather(E)
    updateHalos(D)
    return getLocalPart(D).tolist() + [x.tolist() for x in getLocalPart(E)] + [whole.tolist(), total]


def test_a_lab_with_nothing_to_exchange_does_not_hang_the_first_exchange():
    # a fresh pool: the first exchange of the pool makes the library's communicator
    with spmdlab.Pool(3) as pool:
        r = spmd_run(first_exchange_with_an_idle_lab, pool=pool, timeout=30)
        whole = list(range(10))
        assert [r[k] for k in (1, 2, 3)] == [[0, 1, 2, 3, 4, 5, [5, 6, 7, 8, 9], whole, 3], [whole, 3],
                                             [4, 5, 6, 7, 8, 9, [0, 1, 2, 3, 4], whole, 3]]
