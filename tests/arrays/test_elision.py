"""Temporary elision: an operator may write into an operand only when nothing can see it.

A wrong in-place write is far worse than an allocation, so most of these tests are of
the "must not" kind: named operands, views, transposes, operands reached through C code
(operator.add, functools.reduce, sum, object arrays), dtype changes, other layouts.
The first part checks the recognition itself with a stand-in class (no numpy, no MPI);
the rest checks codistributed arrays at the client and on real pools against numpy.
"""
from __future__ import annotations

import functools
import operator
import sys

import numpy as np
import pytest

from spmdlab import numlabs, spmd
from spmdlab.arrays import elementwise as ew
from spmdlab.arrays import elision
from spmdlab.codistributed import codistributed, gather, getLocalPart
from spmdlab.layouts.codistributor import codistributor1d, codistributor2dbc

pytestmark = pytest.mark.timeout(120)

SUPPORTED = sys.implementation.name == "cpython" and (3, 11) <= sys.version_info[:2] < (3, 14)


# --------------------------------------------------------------------------- recognition
class P:
    """``*`` makes a new P (a producer); ``+ - ~`` report is_temporary's verdict."""

    def __mul__(self, other):
        r = P()
        elision.note_result(r)
        return r

    __rmul__ = __mul__

    def __add__(self, other):
        # is_temporary must be called from the operator method itself
        left = elision.is_temporary(self, "left")
        right = isinstance(other, P) and elision.is_temporary(other, "right")
        return left or right

    def __radd__(self, other):
        return elision.is_temporary(self, "right")

    def __neg__(self):
        return elision.is_temporary(self, "unary")

    def __invert__(self):
        return elision.is_temporary(self, "unary")


class Keeping(P):
    kept: list = []

    def __mul__(self, other):
        r = Keeping()
        elision.note_result(r)
        Keeping.kept.append(r)
        return r


def make():
    return P() * 1


@pytest.mark.nompi
def test_interpreter_support_matches_the_version_gate():
    assert elision.enabled() == SUPPORTED


# (pytest rewrites assert statements into code that names every subexpression, so the
# expressions under test are evaluated in plain statements first)
@pytest.mark.nompi
@pytest.mark.skipif(not SUPPORTED, reason="elision is off on this interpreter")
def test_unnamed_results_of_operators_are_temporaries():
    def nested():
        return 3 + (P() * 1)

    class Body:
        v = (P() * 1) + 1

    scope: dict = {"P": P}
    exec("r = (P() * 1) + 1", scope)  # spmd blocks and pmode run exec'ed code
    seen = {
        "left": (P() * 1) + 1,
        "right": 1 + (P() * 1),
        "negative": -(P() * 1),
        "invert": ~(P() * 1),
        "lambda": (lambda: (P() * 2) + 1)(),
        "generator": all((P() * k) + 1 for k in range(3)),
        "comprehension": [(P() * k) + 1 for k in range(2)] == [True, True],
        "nested function": nested(),
        "class body": Body.v,
        "exec": scope["r"],
        "both temporaries": (P() * 1) + (P() * 1),  # the right one is the latest result
    }
    assert [k for k, v in seen.items() if v is not True] == []


@pytest.mark.nompi
@pytest.mark.skipif(not SUPPORTED, reason="elision is off on this interpreter")
def test_anything_that_may_be_seen_elsewhere_is_not_a_temporary():
    x = P() * 1
    holder = [P() * 1]
    obj = type("O", (), {})()
    obj.a = P() * 1
    flag = False
    z = P() * 1
    z += 1  # an in-place instruction falls back to __add__: never a temporary
    seen = {
        "named left": x + 1,
        "named right": 1 + x,
        "named unary": -x,
        "subscript": holder[0] + 1,
        "attribute": obj.a + 1,
        "call result": make() + 1,  # not produced by an operator instruction
        "walrus": (y := P() * 1) + 1,
        "jump between": (x if flag else P() * 1) + 1,
        "operator.add": operator.add(P() * 1, 1),
        "functools.reduce": functools.reduce(operator.add, [P() * 1, 1]),
        "explicit dunder": (P() * 1).__add__(1),
        "producer keeps a reference": (Keeping() * 1) + 1,
        "producer keeps, unary": -(Keeping() * 1),
        "augmented": z,
        "sum": sum([P() * 1], 0),  # sum calls + from C
    }
    Keeping.kept.clear()
    assert y is not None
    assert [k for k, v in seen.items() if v is not False] == []


@pytest.mark.nompi
def test_nothing_is_a_temporary_where_elision_is_off(monkeypatch):
    monkeypatch.setattr(elision, "_expected_refs", None)
    seen = [(P() * 1) + 1, 1 + (P() * 1)]
    assert seen == [False, False]


# --------------------------------------------------------------------------- at the client
BIG = (300, 200)  # 480 kB of float64: above numpy's 256 kB elision threshold


class CountWrites:
    """Counts the operator results written into a temporary operand (``write_into``)."""

    def __init__(self, module):
        self.module, self.count = module, 0
        self.original = module.write_into

    def __enter__(self):
        def counting(*args):
            self.count += 1
            return self.original(*args)

        self.module.write_into = counting
        return self

    def __exit__(self, *exc):
        self.module.write_into = self.original


def elided(fn):
    with CountWrites(ew) as writes:
        result = fn()
    return writes.count, result


@pytest.mark.nompi
@pytest.mark.skipif(not ew._CAN_ELIDE, reason="elision is off on this interpreter/numpy")
def test_chains_reuse_temporaries_and_match_numpy():
    rng = np.random.default_rng(1)
    X, Y = rng.random(BIG), rng.random(BIG) + 1
    I = rng.integers(-50, 50, BIG)
    D, E, DI = codistributed(X), codistributed(Y), codistributed(I)
    cases = [
        ("D*2+1", lambda: D * 2 + 1, X * 2 + 1, 1),
        ("1+D*2", lambda: 1 + D * 2, 1 + X * 2, 1),
        ("(D*2)*(E*3)", lambda: (D * 2) * (E * 3), (X * 2) * (Y * 3), 1),
        ("D*2-E/3+1", lambda: D * 2 - E / 3 + 1, X * 2 - Y / 3 + 1, 2),
        ("-(D*2)", lambda: -(D * 2), -(X * 2), 1),
        ("~(DI*2)", lambda: ~(DI * 2), ~(I * 2), 1),
        ("(D*2)**2", lambda: (D * 2) ** 2, (X * 2) ** 2, 1),
        ("2**(D*0.5)", lambda: 2 ** (D * 0.5), 2 ** (X * 0.5), 1),
        ("(DI*3)//4", lambda: (DI * 3) // 4, (I * 3) // 4, 1),
        ("(DI*3)%7", lambda: (DI * 3) % 7, (I * 3) % 7, 1),
        ("(D>0.5)&(D<0.7)", lambda: (D > 0.5) & (D < 0.7), (X > 0.5) & (X < 0.7), 0),  # COMPARE_OP
        ("D.T*2+1", lambda: D.T * 2 + 1, X.T * 2 + 1, 1),
        ("(D+0)+Y", lambda: (D + 0) + Y, (X + 0) + Y, 1),
        # the result's dtype differs from the temporary's: a new array
        ("(DI*2)/3", lambda: (DI * 2) / 3, (I * 2) / 3, 0),
        ("(DI*2)+0.5", lambda: (DI * 2) + 0.5, (I * 2) + 0.5, 0),
        ("(D*2)>1", lambda: (D * 2) > 1, (X * 2) > 1, 0),
        ("(DI*2)+D", lambda: (DI * 2) + D, (I * 2) + X, 0),
        ("(D.astype(f4)*2)+D", lambda: (D.astype(np.float32) * 2) + D, (X.astype(np.float32) * 2) + X, 0),
        # no temporary, or reached from C code
        ("D+1", lambda: D + 1, X + 1, 0),
        ("operator.add", lambda: operator.add(D * 2, 1), X * 2 + 1, 0),
        ("reduce", lambda: functools.reduce(operator.add, [D * 2, E, 1]), X * 2 + Y + 1, 0),
        ("sum", lambda: sum([D * 2, E]), X * 2 + Y, 0),
        ("np.add(D*2, 1)", lambda: np.add(D * 2, 1), X * 2 + 1, 0),
        ("abs(D*2)", lambda: abs(D * -2), abs(X * -2), 0),
        ("divmod", lambda: divmod(DI * 3, 4), divmod(I * 3, 4), 0),
    ]
    for label, fn, want, count in cases:
        n, got = elided(fn)
        assert n == count, f"{label}: {n} elisions, expected {count}"
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            g = gather(g)
            assert g.dtype == w.dtype and np.array_equal(g, w), label
    # none of the named operands changed
    assert np.array_equal(gather(D), X) and np.array_equal(gather(E), Y) and np.array_equal(gather(DI), I)


@pytest.mark.nompi
@pytest.mark.skipif(not ew._CAN_ELIDE, reason="elision is off on this interpreter/numpy")
def test_shared_or_foreign_buffers_are_never_written():
    X = np.random.default_rng(2).random(BIG)
    D = codistributed(X)
    T = D.T  # shares D's local part
    assert elided(lambda: T * 1 + 1)[0] == 1  # T * 1 is new; T itself is untouched
    assert elided(lambda: (D.T) + 1)[0] == 0
    assert np.array_equal(gather(T), X.T) and np.array_equal(gather(D), X)
    # a codistributed array whose local part someone else holds
    L = np.array(X)
    B = codistributed.build(L, codistributor1d(2))
    assert elided(lambda: B + 1)[0] == 0
    assert np.array_equal(L, X)
    # astype(copy=False) shares the local part between two arrays
    S = D.astype(np.float64, copy=False)
    assert getLocalPart(S) is getLocalPart(D)
    assert elided(lambda: S + 1)[0] == 0
    # object arrays: numpy's object loop calls + from C with the element borrowed
    holder = np.empty(2, dtype=object)
    holder[0], holder[1] = D * 2, D * 3
    n, r = elided(lambda: holder + 1)
    assert n == 0
    assert np.array_equal(gather(holder[0]), X * 2) and np.array_equal(gather(r[0]), X * 2 + 1)
    n, r = elided(lambda: (holder * 1) + 1)
    assert np.array_equal(gather(holder[0]), X * 2) and np.array_equal(gather(r[1]), X * 3 + 1)
    # a local part exported elsewhere (a view of it) keeps it from being reused
    P2 = D * 2
    view = getLocalPart(P2)[:1]
    del P2
    assert view.base is not None
    assert np.array_equal(view, (X * 2)[:1])


@pytest.mark.nompi
@pytest.mark.skipif(not ew._CAN_ELIDE, reason="elision is off on this interpreter/numpy")
def test_small_arrays_allocate_as_numpy_does():
    D = codistributed(np.ones((10, 10)))
    assert elided(lambda: D * 2 + 1)[0] == 0


# --------------------------------------------------------------------------- on real pools
@pytest.fixture(scope="module")
def pools(pools):
    """Pools of 2 and 4 labs (conftest's ``pools`` starts and closes them)."""
    return {n: pools(n) for n in (2, 4)}


def suite_layouts_on_labs():
    """Chains over many layouts with elision at every size: results equal numpy, named
    operands intact, results keep the layout the unelided operation would give."""
    import spmdlab.arrays.elementwise as ew_

    ew_._ELIDE_BYTES = 0
    writes = CountWrites(ew_).__enter__()
    bad, count = [], 0
    n = numlabs()
    rng = np.random.default_rng(5)
    try:
        for shape in [(7,), (5, 7), (8, 8), (2, 3, 4), (0, 3), (1, 1)]:
            X = rng.random(shape)
            Y = rng.random(shape) + 1
            lays = [codistributor1d(d) for d in range(1, len(shape) + 1)]
            lays.append(codistributor1d(1, [0] * (n - 1) + [shape[0]]))
            if len(shape) == 2:
                lays += [codistributor2dbc(None, 1), codistributor2dbc(None, 3, "col")]
            for cd in lays:
                for other in (cd, lays[-1]):
                    D = codistributed(X, cd)
                    E = codistributed(Y, other)
                    before = writes.count
                    results = [
                        (D * 2 + 1, X * 2 + 1, cd),
                        (1 - D * 2, 1 - X * 2, cd),
                        ((D * 2) * (E * 3), (X * 2) * (Y * 3), cd),  # right temp: only if layouts agree
                        (E / 2 + D, Y / 2 + X, other),
                        (-(E * 2) + D * 3, -(Y * 2) + X * 3, other),
                        (D.T * 2 + 1, X.T * 2 + 1, None),
                    ]
                    made = writes.count - before
                    for k, (got, want, layout) in enumerate(results):
                        count += 1
                        g = gather(got)
                        if not np.allclose(g, want) or g.shape != want.shape:
                            bad.append(f"{shape} {cd} {other} case {k}: values differ")
                        if layout is not None and got._codist != layout.complete(shape, n):
                            bad.append(f"{shape} {cd} {other} case {k}: layout {got._codist}")
                    if not np.array_equal(gather(D), X) or not np.array_equal(gather(E), Y):
                        bad.append(f"{shape} {cd} {other}: a named operand changed")
                    if made < 5:
                        bad.append(f"{shape} {cd} {other}: only {made} elisions")
    finally:
        writes.__exit__()
        ew_._ELIDE_BYTES = 256 * 1024
    return bad, count


@pytest.mark.skipif(not ew._CAN_ELIDE, reason="elision is off on this interpreter/numpy")
def test_elision_on_labs(pools):
    """(The elementwise suite with elision at every size is in test_codist_ops.)"""
    for n, pool in pools.items():
        with spmd(pool=pool, timeout=100):
            bad, count = suite_layouts_on_labs()
        msgs = [f"{n} labs, lab {lab}: {m}" for lab in range(1, n + 1) for m in bad[lab]]
        assert not msgs, "\n".join(msgs[:20])
        assert count[1] > 50
