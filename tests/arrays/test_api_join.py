"""Joining and removing (issue 21): concatenate, stack, hstack, vstack, column_stack,
append, delete, insert, repeat, tile, and MATLAB's cat/horzcat/vertcat, on every layout
kind, against numpy on gathered arrays; numpy's errors on every lab; hypothesis
differential tests (tests/support/fuzz.py)."""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest
from support import fuzz

import spmdlab
from spmdlab import (
    SpmdError,
    codistributed,
    codistributor1d,
    codistributor2dbc,
    codistributorBlocks,
    codistributorChunks,
    distributed,
    gather,
    numlabs,
    spmd,
)

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the suites run on the labs
pytestmark = pytest.mark.timeout(600)
SIZES = (1, 2, 3)


# --------------------------------------------------------------------------- lab side
def layouts(shape):
    """One layout of each kind for ``shape`` on this block's labs: 1d on every dimension
    (default, uneven, with labs holding nothing), 2dbc, blocks, chunks, halo."""
    n = numlabs()
    out = []
    for d in range(len(shape)):
        out.append(codistributor1d(d + 1))
        part = [0] * n
        part[-1] = shape[d]  # every lab but the last holds nothing
        out.append(codistributor1d(d + 1, part))
        if n > 1:
            part = [shape[d] - shape[d] // 2] + [shape[d] // 2] + [0] * (n - 2)
            out.append(codistributor1d(d + 1, part))
    if len(shape) == 2:
        out += [codistributor2dbc(None, 2), codistributor2dbc(None, 64)]
    out.append(codistributorBlocks((2,) * len(shape), "cyclicrow", shape))
    starts = np.concatenate(([0], np.cumsum(codistributor1d.defaultPartition(shape[0], n))))
    rest = (slice(None),) * (len(shape) - 1)
    out.append(codistributorChunks({k: [(slice(max(0, int(starts[k - 1]) - 1), min(shape[0], int(starts[k]) + 1)),)
                                        + rest] for k in range(1, n + 1)}, shape))
    out.append(codistributor1d(1, None, shape, halo=1))
    return out


def outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except NotImplementedError as exc:
        return "unsupported", exc
    except Exception as exc:
        return "error", exc


def differs(got, want):
    if want[0] != got[0] or (want[0] == "error" and type(want[1]) is not type(got[1])):
        return f"numpy {want[0]} {want[1]!r}, codistributed {got[0]} {got[1]!r}"
    if want[0] != "ok":
        return ""
    w, g = want[1], got[1]
    if not isinstance(g, codistributed):
        return f"expected a codistributed array, got {type(g).__name__}"
    G = gather(g)
    if G.shape != w.shape or G.dtype != w.dtype:
        return f"shape/dtype {G.shape} {G.dtype} != numpy's {w.shape} {w.dtype}"
    if not np.array_equal(G, w, equal_nan=w.dtype.kind in "fc"):
        return f"values {G!r} != numpy's {w!r}"
    return ""


def compare(cases):
    """``cases``: (label, fn, numpy args, codistributed args); the differences, and the count."""
    bad = []
    for label, fn, want_args, got_args in cases:
        why = differs(outcome(fn, *got_args), outcome(fn, *want_args))
        if why:
            bad.append(f"{label}: {why}")
    return bad, len(cases)


JOINS = {
    "concatenate0": lambda a, b: np.concatenate([a, b]),
    "concatenate1": lambda a, b: np.concatenate([a, b, a], axis=1),
    "concatenate-1": lambda a, b: np.concatenate((b, a), axis=-1),
    "concatenateNone": lambda a, b: np.concatenate([a, b], axis=None),
    "concatenate_dtype": lambda a, b: np.concatenate([a, b], dtype=np.float32, casting="unsafe"),
    "concatenate_bad_axis": lambda a, b: np.concatenate([a, b], axis=3),
    "concatenate_bad_cast": lambda a, b: np.concatenate([a, b], dtype=np.int8),
    "stack": lambda a, b: np.stack([a, b]),
    "stack1": lambda a, b: np.stack([a, b], axis=1),
    "stack-1": lambda a, b: np.stack([a, b], axis=-1),
    "hstack": lambda a, b: np.hstack([a, b]),
    "vstack": lambda a, b: np.vstack([a, b]),
    "column_stack": lambda a, b: np.column_stack([a, b]),
    "append": lambda a, b: np.append(a, b),
    "append0": lambda a, b: np.append(a, b, axis=0),
}

REMOVES = {
    "delete0": lambda a: np.delete(a, 1, axis=0),
    "delete_list1": lambda a: np.delete(a, [0, 2, 2], axis=1),
    "delete_slice": lambda a: np.delete(a, slice(None, None, 2), axis=0),
    "delete_mask": lambda a: np.delete(a, np.arange(a.shape[1]) % 2 == 0, axis=1),
    "delete_flat": lambda a: np.delete(a, [0, 5, 7]),
    "delete_oob": lambda a: np.delete(a, 99, axis=0),
    "delete_bad_axis": lambda a: np.delete(a, 0, axis=5),
    "insert_scalar": lambda a: np.insert(a, 2, 9, axis=0),
    "insert_row": lambda a: np.insert(a, 1, np.arange(a.shape[1]), axis=0),
    "insert_col_list": lambda a: np.insert(a, [0, 3, 3], [[7], [8], [9], [1], [2], [3], [4]][:a.shape[0]], axis=1),
    "insert_flat": lambda a: np.insert(a, [1, 4], [5, 6]),
    "insert_slice": lambda a: np.insert(a, slice(0, 2), -1, axis=1),
    "insert_oob": lambda a: np.insert(a, 99, 0, axis=1),
    "repeat": lambda a: np.repeat(a, 2),
    "repeat0": lambda a: np.repeat(a, 3, axis=0),
    "repeat_each": lambda a: np.repeat(a, np.arange(a.shape[1]) % 3, axis=1),
    "repeat_neg": lambda a: np.repeat(a, -1, axis=0),
    "repeat_mismatch": lambda a: np.repeat(a, [1, 2], axis=0),
    "tile": lambda a: np.tile(a, 2),
    "tile2": lambda a: np.tile(a, (2, 3)),
    "tile3": lambda a: np.tile(a, (2, 1, 2)),
    "tile_neg": lambda a: np.tile(a, -1),
}


def join_suite(shape, dtype_b):
    X = np.arange(np.prod(shape), dtype=float).reshape(shape) - 3
    Y = (np.arange(np.prod(shape)).reshape(shape) % 3).astype(dtype_b)
    cases = []
    for k, c in enumerate(layouts(shape)):
        D = codistributed(X, c)
        E = codistributed(Y, layouts(shape)[-1 - k])
        for name, fn in JOINS.items():
            cases.append((f"{name} {c!r}", fn, (X, Y), (D, E)))
            cases.append((f"{name} {c!r} with numpy", fn, (X, Y), (D, Y)))
            cases.append((f"{name} numpy with {c!r}", fn, (Y, X), (Y, D)))
        for name, fn in REMOVES.items():
            cases.append((f"{name} {c!r}", fn, (X,), (D,)))
    return compare(cases)


def each_pool(pools, suite, *args):
    for n in SIZES:
        with spmd(pool=pools(n), timeout=300):
            bad, count = suite(*args)
        failures = [f"{n} labs, lab {lab}: {msg}" for lab, msgs in enumerate(bad, start=1) for msg in msgs]
        assert not failures, "\n".join(failures[:30]) + f"\n... {len(failures)} failures"
        assert count[1] > 0


# --------------------------------------------------------------------------- tests
def test_concatenate_of_two_codistributed_arrays(pools):
    """The report: np.concatenate([D, D]) raised NotImplementedError."""
    with spmd(pool=pools(2), timeout=120):
        D = codistributed(np.arange(12.0).reshape(6, 2))
        C = gather(np.concatenate([D, D]))
    assert np.array_equal(C[1], np.concatenate([np.arange(12.0).reshape(6, 2)] * 2))


@pytest.mark.parametrize("shape", [(7, 5), (4, 3), (0, 3)])
def test_joins_and_removals_on_every_layout(pools, shape):
    each_pool(pools, join_suite, shape, np.int16)


def test_joins_promote_like_numpy(pools):
    each_pool(pools, join_suite, (5, 4), np.complex64)


def test_join_results_keep_a_layout(pools):
    with spmd(pool=pools(3), timeout=120):
        D = codistributed(np.ones((6, 4)), codistributor1d(2))
        a = np.concatenate([D, D]).codistributor                # joined across: 1d kept
        b = np.concatenate([D, D], axis=1).codistributor        # joined along: 1d on it
        B = codistributed(np.ones((6, 4)), codistributor2dbc([1, 3], 2))
        c = np.concatenate([B, B], axis=1).codistributor        # 2dbc kept
    assert a[1].Dimension == 2 and a[1].Partition == [2, 1, 1]
    assert b[1].Dimension == 2 and b[1].Partition == [3, 3, 2]
    assert isinstance(c[1], codistributor2dbc) and c[1].LabGrid == [1, 3] and c[1].BlockSize == 2


def test_concatenate_of_mismatched_shapes_fails_on_every_lab(pools):
    pool = pools(3)
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool, timeout=60):
            D = codistributed(np.ones((4, 5)))
            C = np.concatenate([D, codistributed(np.ones((4, 6)))])
    text = str(info.value)
    assert text.startswith("Error detected on labs 1-3"), text
    assert "ValueError" in text and "along dimension 1, the array at index 0 has size 5" in text, text
    with spmd(pool=pool, timeout=60):  # the pool stays usable
        ok = gather(np.delete(codistributed(np.arange(6)), 0)).sum()
    assert ok[1] == 15


def test_matlab_cat_horzcat_vertcat(pools):
    with spmd(pool=pools(2), timeout=120):
        A = codistributed(np.arange(6.0).reshape(2, 3))
        c3 = gather(spmdlab.cat(3, A, A))
        c1 = gather(spmdlab.cat(1, A, np.ones((1, 3))))
        h = gather(spmdlab.horzcat(A, A))
        v = gather(spmdlab.vertcat(A, A))
        hv = gather(spmdlab.horzcat(codistributed(np.arange(3)), np.arange(2)))
        vv = gather(spmdlab.vertcat(codistributed(np.arange(3)), np.arange(3)))
    X = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(c3[1], np.stack([X, X], axis=2))
    assert np.array_equal(c1[1], np.vstack([X, np.ones((1, 3))]))
    assert np.array_equal(h[2], np.hstack([X, X])) and np.array_equal(v[2], np.vstack([X, X]))
    assert np.array_equal(hv[1], [0, 1, 2, 0, 1]) and np.array_equal(vv[1], [[0, 1, 2], [0, 1, 2]])


def test_delete_is_numpy_delete_not_the_pool_delete(pools):
    """``spmdlab.delete`` deletes Composites; ``np.delete`` reaches the arrays through
    ``__array_function__`` whatever is imported."""
    from spmdlab import delete  # noqa: F401  (the name exists beside np.delete)
    with spmd(pool=pools(2), timeout=60):
        r = gather(np.delete(codistributed(np.arange(10)), [0, 9]))
    assert np.array_equal(r[1], np.arange(1, 9))


def test_at_the_client_through_distributed(pools):
    pool = pools(2, current=True)
    X = np.arange(20.0).reshape(5, 4)
    D = distributed(X, pool=pool)
    assert np.array_equal(gather(np.concatenate([D, D])), np.concatenate([X, X]))
    assert np.array_equal(gather(np.concatenate([D, X], axis=1)), np.concatenate([X, X], axis=1))
    assert np.array_equal(gather(np.stack([D, D], axis=-1)), np.stack([X, X], axis=-1))
    assert np.array_equal(gather(np.vstack([D, X])), np.vstack([X, X]))
    assert np.array_equal(gather(np.delete(D, 1, axis=1)), np.delete(X, 1, axis=1))
    assert np.array_equal(gather(np.insert(D, 2, 7, axis=0)), np.insert(X, 2, 7, axis=0))
    assert np.array_equal(gather(np.repeat(D, 2, axis=0)), np.repeat(X, 2, axis=0))
    assert np.array_equal(gather(np.tile(D, (1, 2))), np.tile(X, (1, 2)))
    assert np.array_equal(gather(np.append(D, X)), np.append(X, X))
    assert np.array_equal(gather(spmdlab.horzcat(D, D)), np.hstack([X, X]))
    with pytest.raises(SpmdError, match="ValueError"):
        np.concatenate([D, np.ones((2, 3))])


# --------------------------------------------------------------------------- hypothesis
def _other(X, c):
    """A second operand of X's shape: numpy, with values from the case's seed."""
    rng = np.random.default_rng(c["seed"])
    return rng.integers(-2, 3, size=X.shape).astype(np.int16)


def _as_like(X, Y):
    return codistributed(Y) if isinstance(X, codistributed) else Y


OPS = {
    "concat0": (lambda X, c: np.concatenate([X, X]), "biufc", 0),
    "concat_last": (lambda X, c: np.concatenate([X, _other(X, c), X], axis=-1), "biufc", 0),
    "concat_codist": (lambda X, c: np.concatenate([X, _as_like(X, _other(X, c))], axis=c["picks"][0][1] % X.ndim),
                      "biufc", 0),
    "concat_none": (lambda X, c: np.concatenate([X, X], axis=None), "biufc", 0),
    "stack": (lambda X, c: np.stack([X, _other(X, c)], axis=c["picks"][0][1] % (X.ndim + 1)), "biufc", 0),
    "hstack": (lambda X, c: np.hstack([X, X]), "biufc", 0),
    "vstack": (lambda X, c: np.vstack([_other(X, c), X]), "biufc", 0),
    "column_stack": (lambda X, c: np.column_stack([X, X]), "biufc", 0),
    "append": (lambda X, c: np.append(X, X), "biufc", 0),
    "delete": (lambda X, c: np.delete(X, c["picks"][0][1] - 3, axis=0), "biufc", 0),
    "delete_list": (lambda X, c: np.delete(X, [p[1] % 7 for p in c["picks"]], axis=-1), "biufc", 0),
    "insert": (lambda X, c: np.insert(X, c["picks"][0][2] % 6, 5, axis=c["picks"][0][1] % X.ndim), "biufc", 0),
    "insert_list": (lambda X, c: np.insert(X, [p[2] % 6 for p in c["picks"]], 1), "biufc", 0),
    "repeat": (lambda X, c: np.repeat(X, c["picks"][0][0] + 1, axis=c["picks"][0][1] % X.ndim), "biufc", 0),
    "repeat_each": (lambda X, c: np.repeat(X, np.arange(X.shape[0]) % 3, axis=0), "biufc", 0),
    "repeat_flat": (lambda X, c: np.repeat(X, 2), "biufc", 0),
    "tile": (lambda X, c: np.tile(X, tuple(p[0] + 1 for p in c["picks"])[:2]), "biufc", 0),
}


test_joins_agree_with_numpy = fuzz.on_every_layout(OPS, nans=True)
test_joins_agree_with_numpy_at_the_client = fuzz.at_the_client(OPS, nans=True)


def test_transposed_parts_take_the_same_path_on_every_lab(pools):
    """A transposed array's parts are Fortran-ordered except on a lab holding one row: the
    labs must still choose the same exchange (a contiguity test per lab would hang)."""
    with spmd(pool=pools(3), timeout=60):
        T = codistributed(np.arange(12.0).reshape(3, 4), codistributor1d(2, [3, 1, 0])).T
        C = gather(np.concatenate([T, T]))
        F = gather(np.flip(T, 0))
    X = np.arange(12.0).reshape(3, 4).T
    assert np.array_equal(C[1], np.concatenate([X, X])) and np.array_equal(F[3], np.flip(X, 0))


def test_an_index_that_differs_between_labs_is_one_error(pools):
    """np.delete(D, labindex()) along the distributed axis: the labs would build different
    results; one ValueError on every lab names it instead."""
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pools(3), timeout=60):
            R = np.delete(codistributed(np.arange(12.0)), spmdlab.labindex())
    text = str(info.value)
    assert text.startswith("Error detected on labs 1-3") and "differ between labs" in text, text
