"""Indexing codistributed arrays by arrays (issue 21): ``D[[0, 5, 9]]``, ``D[idx]``,
``D[:, idx]``, boolean masks of a whole axis, numpy's mixed basic/advanced rules, the
same forms on the left of ``=``, ``np.take``, ``np.flatnonzero``, ``np.argwhere`` and
MATLAB's ``find`` on dense arrays; compared exactly with numpy on gathered arrays, on
real pools, every layout kind; plus the collective errors and a differential fuzz.
"""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest
from support import fuzz

from spmdlab import spmd

pytestmark = pytest.mark.timeout(900)

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the lab-side checks travel by value


def test_list_index_reproduces_the_reported_fault(pools):
    """The reported fault: ``D[[0, 5, 9]]`` raised NotImplementedError."""
    pool = pools(2)
    with spmd(pool=pool, timeout=120):
        from spmdlab import codistributed, gather
        X = np.arange(12.0)
        got = gather(codistributed(X)[[0, 5, 9]])
    assert np.array_equal(got[1], np.arange(12.0)[[0, 5, 9]])


# --------------------------------------------------------------------------- lab side
def layouts(shape, n):
    """Every layout kind for ``shape`` on n labs: 1d on each dimension (default, uneven
    with labs holding nothing), 2dbc, blocks, chunks with overlaps, halo."""
    from spmdlab import codistributor1d, codistributor2dbc, codistributorBlocks, codistributorChunks
    out = []
    for d in range(1, len(shape) + 1):
        out.append(codistributor1d(d))
        m = shape[d - 1]
        part = [0] * n
        part[-1] = m - m // 2
        part[0] += m // 2
        out.append(codistributor1d(d, part))  # labs 2..n-1 hold nothing
        out.append(codistributor1d(d, None, shape, halo=1))
    if len(shape) == 2:
        out += [codistributor2dbc(None, 2), codistributor2dbc(None, 64)]
    out.append(codistributorBlocks((2,) * len(shape), "cyclicrow", shape))
    starts = np.concatenate(([0], np.cumsum(codistributor1d.defaultPartition(shape[0], n))))
    rest = (slice(None),) * (len(shape) - 1)
    out.append(codistributorChunks({k: [(slice(max(0, int(starts[k - 1]) - 1), min(shape[0], int(starts[k]) + 1)),)
                                        + rest] for k in range(1, n + 1)}, shape))
    return out


def outcome(fn):
    try:
        return "ok", fn()
    except NotImplementedError:
        raise
    except Exception as exc:
        return "error", exc


def compare(bad, label, got, want):
    from spmdlab import codistributed, gather
    if want[0] == "error" or got[0] == "error":
        if want[0] != got[0] or type(want[1]) is not type(got[1]):
            bad.append(f"{label}: numpy {want[0]} {want[1]!r}, codistributed {got[0]} {got[1]!r}")
        return
    w, g = want[1], got[1]
    if isinstance(w, np.ndarray) and w.ndim:
        if not isinstance(g, codistributed):
            bad.append(f"{label}: expected a codistributed array, got {type(g).__name__}")
            return
        g = gather(g)
    g = np.asarray(g)
    if g.shape != w.shape or g.dtype != w.dtype or not np.array_equal(g, w, equal_nan=w.dtype.kind == "f"):
        bad.append(f"{label}: got {g!r} ({g.dtype}), numpy {w!r} ({w.dtype})")


def get_keys(shape, C):
    """Index keys for an array of ``shape``; ``C(x)``: x codistributed (default layout)."""
    G0 = shape[0]
    rows = np.array([0, G0 - 1, 1, -1, 0])
    mask = np.arange(G0) % 3 != 1
    keys = [[0, G0 - 1, 1], rows, [], [-G0, G0 - 1], rows.reshape(1, 5), np.array([[1, 0], [0, 1]]),
            mask, list(mask), C(rows), C(np.array([1, 1, 0])), C(mask), (rows,), (Ellipsis, [0, -1]),
            ([G0, 0],), ([-G0 - 1],), np.array([0.0]), mask[:-1]]
    if len(shape) >= 2:
        G1 = shape[1]
        cols = np.array([G1 - 1, 0, 0, 1])
        keys += [(slice(None), cols), (Ellipsis, cols), (rows[:4], cols), (mask, slice(1, None)),
                 (mask, [0, -1]), (slice(None, None, -1), cols), (rows, slice(None, None, 2)), (rows, 1),
                 (1, cols), (C(rows[:4]), C(cols)), (C(mask), 0), (slice(None), C(cols)), (rows[:, None], cols),
                 (rows[:3], [0, 1]), (slice(1, 3), C(np.arange(G1) % 2 == 0))]
    if len(shape) == 3:
        G2 = shape[2]
        keys += [(rows, slice(None), [0, G2 - 1, 0, 1, 0]), (slice(None), [0, 1], [G2 - 1, 0]),
                 (rows, 1, slice(None)), (1, slice(None), [0, -1]), (np.ones(shape[:2], bool),),
                 (Ellipsis, np.arange(G2) > 0), (C(np.ones(shape[:2], bool)), slice(None)),
                 (rows.reshape(5, 1), [0, 1], 0)]
    return keys


def check_get(n):
    from spmdlab import codistributed, redistribute
    bad = []
    count = 0
    for shape in [(12,), (6, 7), (4, 5, 3)]:
        X = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 1.5 - 7
        for lay in layouts(shape, n):
            D = codistributed(X, lay)
            for i, key in enumerate(get_keys(shape, lambda x: redistribute(codistributed(x), None)
                                            if False else codistributed(x))):
                nk = tuple(gather_key(k) for k in key) if isinstance(key, tuple) else gather_key(key)
                want = outcome(lambda: X[nk])
                got = outcome(lambda: D[key])
                compare(bad, f"{shape} {lay!r} key {i} {nk!r}", got, want)
                count += 1
    return bad, count


def gather_key(k):
    from spmdlab import codistributed, gather
    return gather(k) if isinstance(k, codistributed) else k


def test_get_by_arrays_on_every_layout(pools):
    for n in (1, 2, 3):
        with spmd(pool=pools(n), timeout=600):
            bad, count = check_get(n)
        msgs = sorted({m for lab in range(1, n + 1) for m in bad[lab]})
        assert msgs == [], f"{n} labs, {len(msgs)}:\n" + "\n".join(m[:300] for m in msgs[:30])
        assert count[1] > 300


def set_cases(shape):
    """(key, value kind) pairs; value kinds: 'scalar', 'array' (of the selection's shape),
    'codist' (the same, codistributed), 'row' (broadcasting), 'iadd' (``D[key] += 1``)."""
    G0 = shape[0]
    rows = np.array([0, G0 - 1, 1, -1, 0])  # repeated: the last write wins, as in numpy
    mask = np.arange(G0) % 3 != 1
    cases = [([0, G0 - 1, 1], "scalar"), (rows, "array"), (rows, "codist"), ([], "scalar"), (mask, "array"),
             (mask, "iadd"), ("Cmask", "iadd"), ("Crows", "array"), ("Crows", "codist"), (rows, "iadd"),
             ([G0], "scalar"), (rows, "wrong")]
    if len(shape) >= 2:
        G1 = shape[1]
        cols = np.array([G1 - 1, 0, 0, 1])
        cases += [((slice(None), cols), "array"), ((slice(None), cols), "codist"), ((slice(None), cols), "row"),
                  ((Ellipsis, cols), "iadd"), ((rows[:4], cols), "array"), ((mask, slice(1, None)), "scalar"),
                  ((rows, 1), "codist"), ((rows[:, None], cols), "array"), (("Cmask", slice(None)), "codist"),
                  ((np.array([[0, 0], [1, 1]]), np.array([[0, 1], [1, 0]]) * 0), "array")]
    if len(shape) == 3:
        cases += [((rows, slice(None), [0, 1, 0, 1, 0]), "array"), ((slice(None), [0, 1], [1, 0]), "codist"),
                  ((np.ones(shape[:2], bool),), "array")]
    return cases


def check_set(n):
    from spmdlab import codistributed, gather
    bad = []
    count = 0
    for shape in [(12,), (6, 7), (4, 5, 3)]:
        X = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 1.5 - 7
        mask = np.arange(shape[0]) % 3 != 1
        rows = np.array([0, shape[0] - 1, 1, -1, 0])
        for lay in layouts(shape, n):
            for i, (key, kind) in enumerate(set_cases(shape)):
                def real(k, C):
                    if isinstance(k, tuple):
                        return tuple(real(x, C) for x in k)
                    if isinstance(k, str):
                        return C(mask if k == "Cmask" else rows)
                    return k
                nk, ck = real(key, lambda x: x), real(key, codistributed)
                D = codistributed(X, lay)
                Y = X.copy()
                R = outcome(lambda: Y[nk].shape)[1] if kind != "scalar" else ()
                R = R if isinstance(R, tuple) else (1,)
                value = {"scalar": lambda: 2.5, "array": lambda: np.arange(np.prod(R), dtype=float).reshape(R) + 100,
                         "row": lambda: np.arange(R[-1]) + 200.0,
                         "wrong": lambda: np.zeros(len(rows) + 1)}.get(kind, lambda: None)()

                def numpy_op():
                    if kind == "iadd":
                        Y[nk] += 1
                    elif kind == "codist":
                        Y[nk] = np.arange(np.prod(R), dtype=float).reshape(R) + 300
                    else:
                        Y[nk] = value
                    return Y

                def codist_op():
                    if kind == "iadd":
                        D[ck] += 1
                    elif kind == "codist":
                        D[ck] = codistributed(np.arange(np.prod(R), dtype=float).reshape(R) + 300)
                    else:
                        D[ck] = value
                    return D

                compare(bad, f"{shape} {lay!r} case {i} {nk!r} {kind}", outcome(codist_op), outcome(numpy_op))
                if not np.array_equal(gather(D), Y):
                    bad.append(f"{shape} {lay!r} case {i}: array after the assignment differs")
                count += 1
    return bad, count


def test_set_by_arrays_on_every_layout(pools):
    for n in (1, 2, 3):
        with spmd(pool=pools(n), timeout=600):
            bad, count = check_set(n)
        msgs = sorted({m for lab in range(1, n + 1) for m in bad[lab]})
        assert msgs == [], f"{n} labs, {len(msgs)}:\n" + "\n".join(m[:300] for m in msgs[:30])
        assert count[1] > 300


def check_functions(n):
    from spmdlab import codistributed, gather
    from spmdlab.numerics import find
    bad = []
    count = 0
    for shape in [(12,), (6, 7), (4, 5, 3), (0, 3)]:
        X = (np.arange(np.prod(shape)).reshape(shape) % 4 == 1) * np.arange(np.prod(shape)).reshape(shape) * 0.5
        size = X.size
        for lay in layouts(shape, n):
            D = codistributed(X, lay)
            idx = np.array([0, size - 1, 2, -1, 2]) % max(size, 1) if size else np.array([], dtype=int)
            cases = [("take flat", lambda A, C: np.take(A, C(idx))),
                     ("take flat list", lambda A, C: np.take(A, [0, -1] if size else [])),
                     ("take scalar", lambda A, C: np.take(A, size - 1 if size else 0)),
                     ("take wrap", lambda A, C: np.take(A, [size + 3, -size - 2], mode="wrap") if size else A),
                     ("take clip", lambda A, C: np.take(A, C(np.array([size + 3, -5])), mode="clip")),
                     ("take raise", lambda A, C: np.take(A, [size])),
                     ("take axis 0", lambda A, C: np.take(A, C(np.array([shape[0] - 1, 0, 0])) if shape[0]
                                                          else [], axis=0)),
                     ("take axis -1", lambda A, C: np.take(A, [shape[-1] - 1, 0], axis=-1)),
                     ("take axis raise", lambda A, C: np.take(A, [shape[-1]], axis=-1)),
                     ("flatnonzero", lambda A, C: np.flatnonzero(A)),
                     ("argwhere", lambda A, C: np.argwhere(A)),
                     ("nonzero", lambda A, C: np.nonzero(A)[-1])]
            for label, fn in cases:
                want = outcome(lambda: fn(X, lambda x: x))
                got = outcome(lambda: fn(D, codistributed))
                compare(bad, f"{shape} {lay!r} {label}", got, want)
                count += 1
            # MATLAB's find: column-major linear indices, 0-based
            F = X.reshape(X.shape[0], int(np.prod(X.shape[1:]))) if X.ndim > 1 else X
            DF = codistributed(F) if X.ndim > 2 else D
            lin = np.flatnonzero(F.T) if F.ndim > 1 else np.flatnonzero(F)
            compare(bad, f"{shape} {lay!r} find", outcome(lambda: find(DF)), ("ok", lin))
            compare(bad, f"{shape} {lay!r} find 2", outcome(lambda: find(DF, 2)), ("ok", lin[:2]))
            compare(bad, f"{shape} {lay!r} find last", outcome(lambda: find(DF, 2, "last")), ("ok", lin[-2:]))
            if F.ndim == 2:
                j, i = np.nonzero(F.T)
                got = find(DF, nargout=3)
                for k, (g, w) in enumerate(zip(got, (i, j, F[i, j]))):
                    compare(bad, f"{shape} {lay!r} find nargout=3 [{k}]", ("ok", g), ("ok", w))
                    if isinstance(g, codistributed) and not np.array_equal(gather(g), w):
                        bad.append("find 3")
            count += 3
    return bad, count


def test_take_flatnonzero_argwhere_find(pools):
    for n in (1, 2, 3):
        with spmd(pool=pools(n), timeout=600):
            bad, count = check_functions(n)
        msgs = sorted({m for lab in range(1, n + 1) for m in bad[lab]})
        assert msgs == [], f"{n} labs, {len(msgs)}:\n" + "\n".join(m[:300] for m in msgs[:30])
        assert count[1] > 100


def check_fast_paths(n):
    """The executor's fast paths against numpy on longer vectors: a replicated index (no
    position travels; each lab reads its own requests with one clipped take), a
    codistributed one (own requests by the clipped take, the others' by owner), and
    Fortran-ordered local parts (a transpose's), which take the grouped path instead."""
    from spmdlab import codistributed, codistributor1d, gather
    bad = []
    rng = np.random.default_rng(n)
    m = 1000
    X = rng.standard_normal(m)
    edge = [0] * n
    edge[-1] = m  # every lab but the last holds nothing
    middle = codistributor1d.defaultPartition(m, n)
    if n > 2:
        middle[0] += middle[1]
        middle[1] = 0  # a lab holding nothing between two that hold something
    keys = [rng.integers(-m, m, size=3 * m), rng.integers(0, 10, size=50), rng.integers(m - 10, m, size=50),
            np.array([-m, m - 1, -1, 0, 0]), np.zeros(0, dtype=np.int64), np.arange(m)[::-1].copy()]
    for part in (None, edge, middle):
        D = codistributed(X, codistributor1d(1, part, (m,)) if part else codistributor1d(1))
        for i, idx in enumerate(keys):
            for form, key in (("replicated", idx), ("codistributed", codistributed(idx))):
                g = gather(D[key])
                if g.shape != X[idx].shape or not np.array_equal(g, X[idx]):
                    bad.append(f"partition {part} key {i} {form}")
    Y = rng.standard_normal((40, 30))
    T = codistributed(np.ascontiguousarray(Y.T)).T  # local parts are Fortran-ordered views
    rows, cols = rng.integers(-40, 40, size=200), rng.integers(-30, 30, size=200)
    for label, got, want in (("T[rows, cols]", T[rows, cols], Y[rows, cols]),
                             ("T[C(rows), C(cols)]", T[codistributed(rows), codistributed(cols)], Y[rows, cols]),
                             ("T[rows]", T[rows], Y[rows])):
        if not np.array_equal(gather(got), want):
            bad.append(label)
    return bad


def test_fast_paths_of_the_executor_agree_with_numpy(pools):
    for n in (2, 3):
        with spmd(pool=pools(n), timeout=300):
            bad = check_fast_paths(n)
        assert bad[1] == [], f"{n} labs: {bad[1]}"


def test_an_index_out_of_range_in_a_later_labs_share_is_found_first_in_c_order(pools):
    """Each lab range-checks only its share of a replicated index; the error still names
    the first bad index in C order, as numpy does, on every lab."""
    from spmdlab import SpmdError
    pool = pools(3)
    for idx, want in (([0, 1, 2, 3, 4, 45], 45), ([50, 1, 2, 3, 4, 45], 50), ([0, 1, 2, 3, -41, 45], -41)):
        with pytest.raises(SpmdError) as info:
            with spmd(pool=pool, timeout=120):
                from spmdlab import codistributed
                r = codistributed(np.arange(40.0))[idx]
        text = str(info.value)
        assert text.startswith("Error detected on labs 1-3"), text
        assert f"index {want} is out of bounds for axis 0 with size 40" in text, text


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("form", ["get", "set", "codist index", "take"])
def test_index_out_of_range_is_numpys_error_on_every_lab(pools, form):
    from spmdlab import SpmdError
    pool = pools(3)
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool, timeout=120):
            from spmdlab import codistributed
            D = codistributed(np.arange(30.0).reshape(6, 5))
            if form == "get":
                r = D[[0, 2, 6]]
            elif form == "set":
                D[:, [1, -6]] = 0.0
            elif form == "codist index":
                r = D[codistributed(np.array([0, 1, 2, 3, 4, 5, 7]))]
            else:
                r = np.take(D, [9], axis=1)
    text = str(info.value)
    assert text.startswith("Error detected on labs 1-3"), text
    assert "IndexError" in text
    want = {"get": "index 6 is out of bounds for axis 0 with size 6",
            "set": "index -6 is out of bounds for axis 1 with size 5",
            "codist index": "index 7 is out of bounds for axis 0 with size 6",
            "take": "index 9 is out of bounds for axis 1 with size 5"}[form]
    assert want in text, text
    with spmd(pool=pool, timeout=60):  # the pool is still usable
        from spmdlab import codistributed, gather
        ok = gather(codistributed(np.arange(6.0))[[5, 0]])
    assert [list(ok[k]) for k in (1, 2, 3)] == [[5.0, 0.0]] * 3


@pytest.mark.parametrize("form", ["get", "set", "mask"])
def test_replicated_index_that_differs_between_labs_is_one_error(pools, form):
    """A numpy index must be the same on every lab; lab 2's differs (same shape, same
    values in another order: a permutation drawn without a shared seed)."""
    from spmdlab import SpmdError
    pool = pools(3)
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool, timeout=120):
            from spmdlab import codistributed, labindex
            D = codistributed(np.arange(40.0))
            idx = np.arange(40)[::-1] if labindex() == 2 else np.arange(40)
            if form == "get":
                r = D[idx]
            elif form == "set":
                D[idx] = 1.0
            else:
                r = D[idx % 4 == 1]
    text = str(info.value)
    assert text.startswith("Error detected on labs 1-3"), text
    assert "ValueError" in text and "must be the same on every lab" in text and "lab 2 hold" in text, text


# --------------------------------------------------------------------------- at the client
def test_at_the_client_through_distributed(pools):
    from spmdlab import distributed, gather
    pool = pools(2)
    X = np.arange(40.0).reshape(10, 4)
    X[[1, 6], 2] = np.nan
    A = distributed(X, pool=pool)
    assert np.array_equal(gather(A[[0, 5, 9]]), X[[0, 5, 9]])
    assert np.array_equal(gather(A[:, [3, 0]]), X[:, [3, 0]])
    kept = A[~np.isnan(A).any(axis=1)]  # pbdBASE's na.exclude
    assert np.array_equal(gather(kept), X[~np.isnan(X).any(axis=1)])
    assert np.array_equal(gather(A[A > 30]), X[X > 30])
    A[[0, 0, 2]] = np.array([[1.0] * 4, [2.0] * 4, [3.0] * 4])
    A[A > 30] += 1
    Y = X.copy()
    Y[[0, 0, 2]] = np.array([[1.0] * 4, [2.0] * 4, [3.0] * 4])
    Y[Y > 30] += 1
    assert np.array_equal(gather(A), Y, equal_nan=True)
    assert np.array_equal(gather(np.take(A, [7, 1], axis=0)), np.take(Y, [7, 1], axis=0), equal_nan=True)
    assert np.array_equal(gather(np.flatnonzero(A > 35)), np.flatnonzero(Y > 35))
    assert np.array_equal(gather(np.argwhere(A > 35)), np.argwhere(Y > 35))
    from spmdlab.numerics import find
    assert np.array_equal(gather(find(A > 35)), np.flatnonzero((Y > 35).T))


# --------------------------------------------------------------------------- differential fuzz
def _rng(case, salt):
    return np.random.default_rng([case["seed"], salt])


def _idx(X, case, axis=0, salt=0):
    """Random indices (negative ones, ties) along ``axis``, the count from ``picks``."""
    m = X.shape[axis]
    k = case["picks"][axis % len(case["picks"])][1] % 7
    return _rng(case, salt).integers(-m, m, size=k) if m else np.zeros(k, dtype=np.int64)


def _mask(X, case, axis=0):
    return _rng(case, 7).random(X.shape[axis]) < 0.5


def _dist(X, a):
    """``a`` codistributed when X is (a codistributed index), else as it is."""
    from spmdlab import codistributed
    return codistributed(a) if isinstance(X, codistributed) else a


def _axis(X, case):
    return case["picks"][0][2] % X.ndim


def _slice(X, case, axis):
    _, a, b, step = case["picks"][axis]
    return slice(a % (X.shape[axis] + 1), b % (X.shape[axis] + 2), step)


def _assigned(X, key, value):
    Y = X.copy()
    Y[key] = value
    return Y


def _iadd(X, key):
    Y = X.copy()
    Y[key] += 1
    return Y


def _value(X, case, key):
    """An array of the shape X[key] would have (numpy's, read from X itself), X's dtype."""
    shape = np.shape(X[key]) if not hasattr(X[key], "shape") else tuple(X[key].shape)
    return (_rng(case, 3).integers(-3, 4, size=shape)).astype(X.dtype)


ALL = "biufc"
FUZZ_OPS = {
    "list": (lambda X, c: X[list(_idx(X, c))], ALL, 0),
    "array": (lambda X, c: X[_idx(X, c)], ALL, 0),
    "codist index": (lambda X, c: X[_dist(X, _idx(X, c))], ALL, 0),
    "on an axis": (lambda X, c: X[(slice(None),) * _axis(X, c) + (_idx(X, c, _axis(X, c)),)], ALL, 0),
    "ellipsis": (lambda X, c: X[..., _dist(X, _idx(X, c, -1))], ALL, 0),
    "2-d index": (lambda X, c: X[_idx(X, c)[:4].reshape(2, -1) if len(_idx(X, c)) >= 4 else _idx(X, c)], ALL, 0),
    "row mask": (lambda X, c: X[_mask(X, c)], ALL, 0),
    "codist row mask": (lambda X, c: X[_dist(X, _mask(X, c))], ALL, 0),
    "mask and slice": (lambda X, c: X[(_mask(X, c),) + tuple(_slice(X, c, e) for e in range(1, X.ndim))], ALL, 0),
    "na.exclude": (lambda X, c: X[~np.isnan(X).any(axis=tuple(range(1, X.ndim))) if X.ndim > 1 else ~np.isnan(X)],
                   "fc", 0),
    "separated": (lambda X, c: X[(_idx(X, c)[:2], _slice(X, c, 1), _idx(X, c, 2, 1)[:2]) if X.ndim == 3 else
                                 (_idx(X, c)[:1], _slice(X, c, 1)) if X.ndim == 2 else _idx(X, c)], ALL, 0),
    "adjacent": (lambda X, c: X[(_slice(X, c, 0), _idx(X, c, 1)[:2], _idx(X, c, 2, 1)[:2]) if X.ndim == 3 else
                                (_slice(X, c, 0), _dist(X, _idx(X, c, 1))) if X.ndim == 2 else _idx(X, c)], ALL, 0),
    "int beside array": (lambda X, c: X[(c["picks"][0][1] % max(X.shape[0], 1) - 1, _idx(X, c, 1))
                                        if X.ndim > 1 else _idx(X, c)], ALL, 0),
    "out of range": (lambda X, c: X[[X.shape[0] + c["picks"][0][1]]], ALL, 0),
    "set scalar": (lambda X, c: _assigned(X, _idx(X, c), 1), ALL, 0),
    "set array": (lambda X, c: _assigned(X, _idx(X, c), _value(X, c, _idx(X, c))), ALL, 0),
    "set codist": (lambda X, c: _assigned(X, _dist(X, _idx(X, c)), _dist(X, _value(X, c, _idx(X, c)))), ALL, 0),
    "set on an axis": (lambda X, c: _assigned(X, (slice(None),) * _axis(X, c) + (_idx(X, c, _axis(X, c)),),
                                              _value(X, c, (slice(None),) * _axis(X, c) + (_idx(X, c, _axis(X, c)),))),
                       ALL, 0),
    "set mask": (lambda X, c: _assigned(X, _dist(X, _mask(X, c)), 2), ALL, 0),
    "mask += 1": (lambda X, c: _iadd(X, _mask(X, c)), "iufc", 0),
    "take": (lambda X, c: np.take(X, _dist(X, _idx(X, c, _axis(X, c))), axis=_axis(X, c)), ALL, 0),
    "take flat": (lambda X, c: np.take(X, _rng(c, 5).integers(-X.size, max(X.size, 1), size=3)), ALL, 0),
    "flatnonzero": (lambda X, c: np.flatnonzero(X), ALL, 0),
    "argwhere": (lambda X, c: np.argwhere(X), ALL, 0),
}


# numpy against codistributed for random shapes (zero-length ones too), dtypes with NaNs and
# ties, every layout kind (labs holding nothing among them), and random keys (``FUZZ_OPS``);
# the budget of tests/support/fuzz.py (SPMDLAB_FUZZ_EXAMPLES/_LABS).
test_indexing_by_arrays_agrees_with_numpy = fuzz.on_every_layout(FUZZ_OPS, nans=True)
