"""Shapes (issue 21): *_like keeping the layout, copyto, reshape/ravel/flatten with
order='F', diagonal, swapaxes, moveaxis, squeeze/expand_dims on any axis, flip, roll;
on every layout kind against numpy on gathered arrays, numpy's errors, hypothesis."""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest
from support import fuzz
from support.layouts import every_kind

from spmdlab import (
    SpmdError,
    codistributed,
    codistributor1d,
    codistributorBlocks,
    distributed,
    gather,
    getCodistributor,
    getLocalPart,
    numlabs,
    spmd,
)

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the suites run on the labs
pytestmark = pytest.mark.timeout(600)
SIZES = (1, 2, 3)


# --------------------------------------------------------------------------- lab side
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
    if isinstance(w, np.ndarray) and w.ndim == 0:
        return "" if np.array_equal(np.asarray(g), w) and np.asarray(g).dtype == w.dtype else f"{g!r} != {w!r}"
    if not isinstance(g, codistributed):
        return f"expected a codistributed array, got {type(g).__name__}"
    G = gather(g)
    if G.shape != w.shape or G.dtype != w.dtype:
        return f"shape/dtype {G.shape} {G.dtype} != numpy's {w.shape} {w.dtype}"
    if not np.array_equal(G, w, equal_nan=w.dtype.kind in "fc"):
        return f"values {G!r} != numpy's {w!r}"
    return ""


def _copied(X, src, **kw):
    Y = X.copy()
    r = np.copyto(Y, src, **kw)
    return Y if r is None else "copyto returned a value"


def _zeros_with(X, fn):
    Y = np.zeros_like(X)
    fn(Y)
    return Y


SHAPE_OPS = {
    "reshapeF": lambda a: a.reshape((a.shape[1], a.shape[0]) + a.shape[2:], order="F"),
    "reshapeF-1": lambda a: np.reshape(a, (-1,), order="F"),
    "ravelF": lambda a: a.ravel("F"),
    "np_ravelF": lambda a: np.ravel(a, order="F"),
    "flattenF": lambda a: a.flatten("F"),
    "ravelA": lambda a: a.ravel("A"),
    "reshape_badorder": lambda a: a.reshape(-1, order="Q"),
    "diagonal": lambda a: np.diagonal(a),
    "diagonal1": lambda a: np.diagonal(a, 1),
    "diagonal-2": lambda a: np.diagonal(a, -2),
    "diagonal_axes": lambda a: np.diagonal(a, 1, axis1=-1, axis2=0),
    "diagonal_same": lambda a: np.diagonal(a, 0, 1, 1),
    "swapaxes": lambda a: np.swapaxes(a, 0, -1),
    "swapaxes_bad": lambda a: np.swapaxes(a, 0, 7),
    "moveaxis": lambda a: np.moveaxis(a, 0, -1),
    "moveaxis2": lambda a: np.moveaxis(a, [0, 1], [-1, 0]),
    "moveaxis_bad": lambda a: np.moveaxis(a, [0, 0], [1, 2]),
    "expand0": lambda a: np.expand_dims(a, 0),
    "expand_last": lambda a: np.expand_dims(a, -1),
    "expand_tuple": lambda a: np.expand_dims(a, (0, 2, -1)),
    "expand_dup": lambda a: np.expand_dims(a, (1, 1)),
    "expand_bad": lambda a: np.expand_dims(a, 9),
    "squeeze_tuple": lambda a: np.squeeze(np.expand_dims(a, (0, 2)), axis=(0, 2)),
    "squeeze_bad": lambda a: np.squeeze(a, axis=0),
    "flip": lambda a: np.flip(a),
    "flip0": lambda a: np.flip(a, 0),
    "flip_tuple": lambda a: np.flip(a, (0, -1)),
    "flip_bad": lambda a: np.flip(a, 5),
    "roll": lambda a: np.roll(a, 3),
    "roll_neg0": lambda a: np.roll(a, -2, axis=0),
    "roll_tuple": lambda a: np.roll(a, (1, -4), axis=(0, 1)),
    "roll_same_axis": lambda a: np.roll(a, (1, 2), axis=(0, 0)),
    "roll_broadcast": lambda a: np.roll(a, 2, axis=(0, 1)),
    "roll_bad": lambda a: np.roll(a, (1, 2), axis=(0, 1, 2)),
    "empty_like_shape": lambda a: np.empty_like(a, shape=(0, 3)),
    "zeros_like": lambda a: np.zeros_like(a),
    "zeros_like_dtype": lambda a: np.zeros_like(a, dtype=np.int8),
    "ones_like": lambda a: np.ones_like(a, dtype=complex),
    "ones_like_shape": lambda a: np.ones_like(a, shape=(3, 2, 2)),
    "ones_like_shape0d": lambda a: np.ones_like(a, shape=()),
    "full_like": lambda a: np.full_like(a, 7.5),
    "full_like_int": lambda a: np.full_like(a, 7.5, dtype=np.int32),
    "full_like_nan": lambda a: np.full_like(a, np.nan),
    "copyto": lambda a: _copied(a, np.arange(a.shape[-1])),
    "copyto_scalar": lambda a: _copied(a, 4),
    "copyto_where": lambda a: _copied(a, -1.0, where=np.arange(a.shape[-1]) % 2 == 0),
    "copyto_int_bad": lambda a: _copied(a, 1j),
    "copyto_unsafe": lambda a: _copied(a, 1.5 + 1j, casting="unsafe"),
    "copyto_shape_bad": lambda a: _copied(a, np.ones(a.shape[-1] + 1)),
    "copyto_into_like": lambda a: _zeros_with(a, lambda Y: np.copyto(Y, a + 1)),
}


def shape_suite(shape):
    X = np.arange(np.prod(shape), dtype=float).reshape(shape) - 3
    bad, count = [], 0
    for c in every_kind(shape, numlabs()).values():
        D = codistributed(X, c)
        for name, fn in SHAPE_OPS.items():
            count += 1
            why = differs(outcome(fn, D), outcome(fn, X))
            if why:
                bad.append(f"{name} {c!r}: {why}")
    return bad, count


def like_keeps_layout():
    """*_like of every layout kind: the same codistributor, local parts of the same shapes."""
    bad = []
    for c in every_kind((6, 5), numlabs()).values():
        D = codistributed(np.ones((6, 5)), c)
        for fn in (np.empty_like, np.zeros_like, np.ones_like, lambda a: np.full_like(a, 2, dtype=np.int8)):
            Z = fn(D)
            if getCodistributor(Z) != getCodistributor(D):
                bad.append(f"{fn} {c!r}: layout {getCodistributor(Z)!r}")
            parts = getLocalPart(Z) if isinstance(getLocalPart(Z), list) else [getLocalPart(Z)]
            mine = getLocalPart(D) if isinstance(getLocalPart(D), list) else [getLocalPart(D)]
            if [p.shape for p in parts] != [p.shape for p in mine]:
                bad.append(f"{fn} {c!r}: parts {[p.shape for p in parts]}")
    return bad, 1


def each_pool(pools, suite, *args):
    for n in SIZES:
        with spmd(pool=pools(n), timeout=300):
            bad, count = suite(*args)
        failures = [f"{n} labs, lab {lab}: {msg}" for lab, msgs in enumerate(bad, start=1) for msg in msgs]
        assert not failures, "\n".join(failures[:30]) + f"\n... {len(failures)} failures"
        assert count[1] > 0


# --------------------------------------------------------------------------- tests
def test_ravel_order_F_was_not_supported(pools):
    """The report: reshape/ravel with order='F' (MATLAB's D(:)) raised NotImplementedError."""
    X = np.arange(12.0).reshape(3, 4)
    with spmd(pool=pools(2), timeout=120):
        r = gather(codistributed(X).ravel(order="F"))
    assert np.array_equal(r[1], X.ravel(order="F"))


@pytest.mark.parametrize("shape", [(6, 5), (4, 4), (3, 7, 2), (0, 4)])
def test_shape_functions_on_every_layout(pools, shape):
    each_pool(pools, shape_suite, shape)


def test_like_constructors_keep_the_layout(pools):
    each_pool(pools, like_keeps_layout)


def test_copyto_writes_into_halo_blocks_and_chunks(pools):
    """copyto writes every stored copy: halo cells and chunk overlaps included."""
    with spmd(pool=pools(3), timeout=120):
        X = np.arange(30.0).reshape(6, 5)
        H = codistributed(np.zeros((6, 5)), codistributor1d(1, None, (6, 5), halo=1))
        np.copyto(H, X)
        B = codistributed(np.zeros((6, 5)), codistributorBlocks((2, 2), "cyclicrow", (6, 5)))
        np.copyto(B, X, where=X > 10)
        blocks = gather(B)
        L = getLocalPart(H)
    want = np.where(np.arange(30.0).reshape(6, 5) > 10, np.arange(30.0).reshape(6, 5), 0)
    assert np.array_equal(blocks[1], want)
    X = np.arange(30.0).reshape(6, 5)
    assert np.array_equal(L[1], X[0:3]) and np.array_equal(L[2], X[1:5]) and np.array_equal(L[3], X[3:6])


def test_bad_axis_fails_on_every_lab(pools):
    pool = pools(3)
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool, timeout=60):
            F = np.flip(codistributed(np.ones((4, 5))), axis=2)
    text = str(info.value)
    assert text.startswith("Error detected on labs 1-3"), text
    assert "AxisError" in text and "axis 2 is out of bounds for array of dimension 2" in text, text


def test_at_the_client_through_distributed(pools):
    pool = pools(2, current=True)
    X = np.arange(24.0).reshape(4, 6)
    D = distributed(X, pool=pool)
    assert np.array_equal(gather(D.ravel(order="F")), X.ravel(order="F"))
    assert np.array_equal(gather(D.reshape(6, 4, order="F")), X.reshape(6, 4, order="F"))
    assert np.array_equal(gather(np.flip(D, 0)), np.flip(X, 0))
    assert np.array_equal(gather(np.roll(D, 5)), np.roll(X, 5))
    assert np.array_equal(gather(np.diagonal(D, 1)), np.diagonal(X, 1))
    assert np.array_equal(gather(np.moveaxis(D, 0, 1)), X.T)
    assert np.array_equal(gather(np.expand_dims(D, (0, 3))), np.expand_dims(X, (0, 3)))
    Z = np.zeros_like(D)
    assert isinstance(Z, distributed) and Z.dtype == X.dtype
    np.copyto(Z, X, where=X > 5)
    assert np.array_equal(gather(Z), np.where(X > 5, X, 0))
    with pytest.raises(SpmdError, match="AxisError"):
        np.swapaxes(D, 0, 2)


# --------------------------------------------------------------------------- hypothesis
def _ax(X, c, k=0):
    return c["picks"][k][1] % X.ndim


def _copy_into(X, c):
    Y = np.zeros_like(X)
    np.copyto(Y, X, where=(np.arange(X.shape[-1]) % 2 == 1))
    return Y


OPS = {
    "zeros_like": (lambda X, c: np.zeros_like(X), "biufc", 0),
    "full_like": (lambda X, c: np.full_like(X, 3, dtype=np.float32), "biufc", 0),
    "copyto_where": (_copy_into, "biufc", 0),
    "reshapeF": (lambda X, c: X.reshape(X.shape[::-1], order="F"), "biufc", 0),
    "ravelF": (lambda X, c: X.ravel(order="F"), "biufc", 0),
    "diagonal": (lambda X, c: np.diagonal(X, c["picks"][0][2] - 6) if X.ndim > 1 else X, "biufc", 0),
    "swapaxes": (lambda X, c: np.swapaxes(X, _ax(X, c), -1), "biufc", 0),
    "moveaxis": (lambda X, c: np.moveaxis(X, _ax(X, c), 0), "biufc", 0),
    "expand_dims": (lambda X, c: np.expand_dims(X, (0, _ax(X, c) + 1)), "biufc", 0),
    "squeeze_axis": (lambda X, c: np.squeeze(X, axis=tuple(e for e, s in enumerate(X.shape) if s == 1)), "biufc", 0),
    "flip": (lambda X, c: np.flip(X, _ax(X, c)), "biufc", 0),
    "flip_all": (lambda X, c: np.flip(X), "biufc", 0),
    "roll": (lambda X, c: np.roll(X, c["picks"][0][2] - 6, axis=_ax(X, c)), "biufc", 0),
    "roll_flat": (lambda X, c: np.roll(X, c["picks"][0][2] - 6), "biufc", 0),
}


test_shapes_agree_with_numpy = fuzz.on_every_layout(OPS, nans=True)
test_shapes_agree_with_numpy_at_the_client = fuzz.at_the_client(OPS, nans=True)
