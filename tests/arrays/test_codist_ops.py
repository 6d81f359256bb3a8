"""numpy semantics of codistributed arrays on real pools of 1-4 labs.

Each test runs one spmd block per pool; inside it, suite functions build codistributed
arrays from replicated numpy arrays in many layouts, apply the operation, gather, and
compare with numpy on the same data. Failures are collected per lab (a Composite of
lists) and asserted at the client, so one block checks hundreds of cases.
"""
from __future__ import annotations

import re
import time
import zlib

import numpy as np
import pytest

import spmdlab
from spmdlab import SpmdError, labBroadcast, numlabs, spmd
from spmdlab.codistributed import codistributed, gather, getLocalPart
from spmdlab.layouts.codistributor import codistributor1d, codistributor2dbc

# Each test runs one block of ~1000 checks on each of 4 pools: on a loaded 2-core machine
# (load 17) one block took over 100 s and the four up to 520 s, with nothing hung.
pytestmark = pytest.mark.timeout(900)

SIZES = (1, 2, 3, 4)


@pytest.fixture(scope="module")
def pools(pools):
    """A pool of each size in SIZES (conftest's ``pools`` starts and closes them)."""
    return {n: pools(n) for n in SIZES}


def each_pool(pools, suite, *args):
    """Run ``suite(*args)`` (a lab-side check returning failures and a count) on every lab
    of each pool; fail with the mismatches, else return the number of checks on lab 1."""
    total = 0
    for n, pool in pools.items():
        with spmd(pool=pool, timeout=300):
            bad, count = suite(*args)
        failures = [f"{n} labs, lab {lab}: {msg}" for lab, msgs in enumerate(bad, start=1) for msg in msgs]
        assert not failures, "\n".join(failures[:40]) + (f"\n... {len(failures)} failures" if len(failures) > 40 else "")
        total += count[1]
    return total


# --------------------------------------------------------------------------- lab side
class Checker:
    """Collects mismatches between codistributed results and numpy (runs on a lab)."""

    def __init__(self):
        self.bad = []
        self.count = 0

    def fail(self, label, msg):
        self.bad.append(f"{label}: {msg}")

    def eq(self, label, got, want, rtol=1e-9, atol=1e-12):
        """got (codistributed or scalar) must equal numpy's want (array or scalar)."""
        self.count += 1
        if isinstance(want, tuple):
            if not isinstance(got, tuple) or len(got) != len(want):
                self.fail(label, f"expected a tuple of {len(want)}, got {type(got).__name__}")
                return
            for k, (g, w) in enumerate(zip(got, want)):
                self.eq(f"{label}[{k}]", g, w, rtol, atol)
            return
        want_arr = isinstance(want, np.ndarray) and want.ndim > 0
        if want_arr:
            if not isinstance(got, codistributed):
                self.fail(label, f"expected a codistributed array, got {type(got).__name__}")
                return
            g = gather(got)
            if getLocalPart(got).shape != got._codist.localShape(spmdlab.labindex(), numlabs()):
                self.fail(label, f"local part {getLocalPart(got).shape} does not match the layout {got._codist}")
        else:
            if isinstance(got, codistributed):
                self.fail(label, "expected a replicated scalar, got a codistributed array")
                return
            g = got
            # (a 0-d array is reshaped: labBroadcast returns it 1-D on the source lab)
            first = np.reshape(labBroadcast(1, np.asarray(got)), np.shape(got))
            if not np.array_equal(np.asarray(first), np.asarray(got), equal_nan=np.asarray(got).dtype.kind in "fc"):
                self.fail(label, f"scalar differs between labs: {got!r} vs lab 1 {first!r}")
        g = np.asarray(g)
        w = np.asarray(want)
        if g.shape != w.shape:
            self.fail(label, f"shape {g.shape} != numpy {w.shape}")
            return
        if g.dtype != w.dtype:
            self.fail(label, f"dtype {g.dtype} != numpy {w.dtype}")
            return
        if w.dtype.kind in "fc":
            ok = np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(g, w)
        if not ok:
            self.fail(label, f"values differ:\n got {g!r}\nwant {w!r}")

    def raises(self, label, exc, pattern, fn):
        self.count += 1
        try:
            fn()
        except exc as e:
            if not re.search(pattern, str(e)):
                self.fail(label, f"{type(e).__name__} message {str(e)!r} does not match {pattern!r}")
        except Exception as e:
            self.fail(label, f"expected {exc.__name__}, got {type(e).__name__}: {e}")
        else:
            self.fail(label, f"expected {exc.__name__}, nothing raised")

    def result(self):
        return self.bad, self.count


def layouts(shape, n, full=True):
    """(name, codistributor) pairs covering 1-D layouts on every dim, uneven partitions
    and 2dbc with several grids, block sizes and orientations."""
    nd = len(shape)
    out = [(f"1d dim{d}", codistributor1d(d)) for d in range(1, nd + 1)]
    out.append(("1d dim1 all-on-last", codistributor1d(1, [0] * (n - 1) + [shape[0]])))
    if nd == 2:
        out.append(("2dbc b1", codistributor2dbc(None, 1)))
        out.append(("2dbc b2", codistributor2dbc(None, 2)))
        if full:
            out.append(("2dbc b3 col", codistributor2dbc(None, 3, "col")))
            out.append(("2dbc [1,n] b2", codistributor2dbc([1, n], 2)))
            out.append(("2dbc [n,1] b1 col", codistributor2dbc([n, 1], 1, "col")))
            if n == 4:
                out.append(("2dbc [2,2] b2 col", codistributor2dbc([2, 2], 2, "col")))
    return out


def data(shape, kind, seed=0):
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    if kind == "f":
        return (rng.integers(-6, 7, size) * 0.5 + 0.25).reshape(shape)
    if kind == "i":
        return rng.integers(-5, 6, size).reshape(shape)
    if kind == "b":
        return (rng.integers(0, 3, size) > 0).reshape(shape)
    if kind == "c":
        return (rng.integers(-3, 4, size) + 1j * rng.integers(-3, 4, size)).reshape(shape)
    if kind == "nan":
        x = (rng.integers(-6, 7, size) * 0.5).reshape(shape).astype(float)
        if size:
            x.reshape(-1)[rng.integers(0, size, max(1, size // 5))] = np.nan
        return x
    if kind == "u1":
        return rng.integers(0, 200, size).astype(np.uint8).reshape(shape)
    if kind == "f4":
        return (rng.integers(-6, 7, size) * 0.5).astype(np.float32).reshape(shape)
    raise ValueError(kind)


SHAPES_2D = [(0, 3), (1, 1), (2, 3), (3, 1), (1, 5), (5, 7), (8, 8)]
SHAPES_1D = [(0,), (1,), (3,), (10,)]
SHAPES_3D = [(2, 3, 4), (1, 4, 2)]


def suite_elementwise():
    ck = Checker()
    n = numlabs()
    for shape in SHAPES_1D + SHAPES_2D + SHAPES_3D:
        X = data(shape, "f", 1)
        Y = data(shape, "f", 2) + 10.0  # no zeros: safe divisor
        I = data(shape, "i", 3)
        J = np.where(data(shape, "i", 4) == 0, 3, data(shape, "i", 4))
        Bm = data(shape, "b", 5)
        lays = layouts(shape, n, full=len(shape) == 2 and shape in [(5, 7), (2, 3)])
        other = lays[-1][1]
        for name, cd in lays:
            L = f"{shape} {name}"
            D = codistributed(X, cd)
            E = codistributed(Y, other)  # a different layout: aligned automatically
            DI = codistributed(I, cd)
            EJ = codistributed(J, other)
            DB = codistributed(Bm, cd)
            ck.eq(f"{L} D+1", D + 1, X + 1)
            ck.eq(f"{L} 2.5-D", 2.5 - D, 2.5 - X)
            ck.eq(f"{L} D*E", D * E, X * Y)
            ck.eq(f"{L} D/E", D / E, X / Y)
            if not np.any(X == 0):
                ck.eq(f"{L} Y/D reflected numpy", Y / D, Y / X)
            ck.eq(f"{L} D//3", D // 3, X // 3)
            ck.eq(f"{L} D%E", D % E, X % Y)
            ck.eq(f"{L} D**2", D ** 2, X ** 2)
            ck.eq(f"{L} 2**DI", 2.0 ** DI, 2.0 ** I)
            ck.eq(f"{L} DI//EJ", DI // EJ, I // J)
            ck.eq(f"{L} DI%EJ", DI % EJ, I % J)
            ck.eq(f"{L} 7//EJ", 7 // EJ, 7 // J)
            ck.eq(f"{L} divmod", divmod(DI, EJ), divmod(I, J))
            ck.eq(f"{L} D==E", D == E, X == Y)
            ck.eq(f"{L} D<0", D < 0, X < 0)
            ck.eq(f"{L} D>=X", D >= Y, X >= Y)
            ck.eq(f"{L} D!=1.25", D != 0.25, X != 0.25)
            ck.eq(f"{L} D<=E", D <= E, X <= Y)
            ck.eq(f"{L} D>E", D > E, X > Y)
            ck.eq(f"{L} -D", -D, -X)
            ck.eq(f"{L} +D", +D, +X)
            ck.eq(f"{L} abs", abs(D), abs(X))
            ck.eq(f"{L} ~DB", ~DB, ~Bm)
            ck.eq(f"{L} ~DI", ~DI, ~I)
            ck.eq(f"{L} DB&D>0", DB & (D > 0), Bm & (X > 0))
            ck.eq(f"{L} DI|EJ", DI | EJ, I | J)
            ck.eq(f"{L} DI^3", DI ^ 3, I ^ 3)
            ck.eq(f"{L} DI<<1", DI << 1, I << 1)
            ck.eq(f"{L} D+Y numpy", D + Y, X + Y)
            ck.eq(f"{L} Y-D numpy reflected", Y - D, Y - X)
            ck.eq(f"{L} D*int8", D * np.int8(3), X * np.int8(3))
            ck.eq(f"{L} DI*2.5", DI * 2.5, I * 2.5)
            ck.eq(f"{L} np.sin", np.sin(D), np.sin(X))
            ck.eq(f"{L} np.add(D,1)", np.add(D, 1), np.add(X, 1))
            ck.eq(f"{L} np.maximum(D,E)", np.maximum(D, E), np.maximum(X, Y))
            ck.eq(f"{L} np.hypot(Y,D)", np.hypot(Y, D), np.hypot(Y, X))
            ck.eq(f"{L} np.add dtype", np.add(DI, 1, dtype=np.float32), np.add(I, 1, dtype=np.float32))
            ck.eq(f"{L} np.modf", np.modf(D), np.modf(X))
            ck.eq(f"{L} np.isnan", np.isnan(D), np.isnan(X))
            ck.eq(f"{L} np.where", np.where(DB, D, E), np.where(Bm, X, Y))
            ck.eq(f"{L} np.where numpy cond", np.where(Bm, 0, D), np.where(Bm, 0, X))
            ck.eq(f"{L} clip", D.clip(-1, 1), X.clip(-1, 1))
            ck.eq(f"{L} np.clip", np.clip(D, None, 0.5), np.clip(X, None, 0.5))
            ck.eq(f"{L} round", np.round(D * 1.37, 1), np.round(X * 1.37, 1))
            ck.eq(f"{L} isclose", np.isclose(D, E), np.isclose(X, Y))
            ck.eq(f"{L} astype", D.astype(np.int32) + DI, X.astype(np.int32) + I)
            ck.eq(f"{L} real/imag", (D + 2j * E).imag, (X + 2j * Y).imag)
            ck.eq(f"{L} conj", (D + 1j).conj(), (X + 1j).conj())
            ck.eq(f"{L} allclose", np.allclose(D, D + 1e-12), True)
            ck.eq(f"{L} array_equal", np.array_equal(D, X), True)
            ck.eq(f"{L} array_equal shape", np.array_equal(D, np.zeros((1,) * (len(shape) + 1))), False)
            # out= and where= (the output's layout wins)
            F = codistributed(np.zeros(shape), other)
            r = np.add(D, E, out=F)
            ck.eq(f"{L} out=", F, X + Y)
            ck.eq(f"{L} out= returns out", r is F, True)
            G = codistributed(np.full(shape, -1.0), cd)
            np.multiply(D, 2, out=G, where=DB)
            ck.eq(f"{L} where= out=", G, np.where(Bm, X * 2, -1.0))
            # in place
            H = codistributed(X, cd)
            H += 1
            H *= E
            H -= Y
            ck.eq(f"{L} in-place", H, (X + 1) * Y - Y)
            K = codistributed(I, cd)
            K //= 2
            ck.eq(f"{L} in-place //=", K, I // 2)
            ck.raises(f"{L} in-place cast", TypeError, "Cannot cast|cast", lambda: K.__iadd__(0.5))
            # broadcasting replicated arrays and smaller codistributed operands
            if len(shape) >= 2:
                row = data(shape[-1:], "f", 9) + 10.0
                ck.eq(f"{L} D+row", D + row, X + row)
                col = Y[..., :1]
                ck.eq(f"{L} D*col", D * col, X * col)
                if shape[0]:  # a smaller codistributed operand broadcasts (it is gathered)
                    ck.eq(f"{L} D-mean0", D - D.mean(axis=0), X - X.mean(axis=0))
                if shape[-1]:
                    ck.eq(f"{L} D-mean keep", D - D.mean(axis=-1, keepdims=True),
                          X - X.mean(axis=-1, keepdims=True))
                if shape[-1] == 1:
                    ck.raises(f"{L} no base", NotImplementedError, r"numpy.add: broadcasting .* not supported",
                              lambda: D + np.ones((1,) * (len(shape) - 1) + (3,)))
            if shape[-1] != 1:
                ck.raises(f"{L} bad shapes", ValueError, "could not be broadcast",
                          lambda: D + np.ones(shape[:-1] + (shape[-1] + 2,)))
            ck.raises(f"{L} out numpy", NotImplementedError, "out= must be codistributed",
                      lambda: np.add(D, 1, out=np.empty(shape)))
    # codistributed (n, 1) + (1, m): no operand has the result's shape
    A = codistributed(np.ones((4, 1)), codistributor1d(1))
    B = codistributed(np.ones((1, 5)), codistributor1d(2))
    ck.raises("outer broadcast", NotImplementedError, r"numpy.add: broadcasting codistributed \(4, 1\).*1d layout",
              lambda: A + B)
    ck.raises("ufunc method", NotImplementedError, "numpy.add.accumulate is not supported",
              lambda: np.add.accumulate(A))
    ck.raises("array function", NotImplementedError, "numpy.einsum is not supported .*1d layout",
              lambda: np.einsum("ij->ji", A))
    ck.raises("array function 2dbc", NotImplementedError, r"numpy.einsum is not supported .*2dbc layout \(LabGrid",
              lambda: np.einsum("ij->ji", codistributed(np.ones((3, 3)), codistributor2dbc())))
    ck.raises("implicit conversion", TypeError, "gather", lambda: np.asarray(A))
    ck.raises("truth value", ValueError, "ambiguous", lambda: bool(A))
    ck.eq("truth of size 1", bool(codistributed(np.array([[2.0]]))), True)
    ck.raises("float() of ndim 1", TypeError, "only 0-dimensional", lambda: float(codistributed(np.array([3.5]))))
    ck.eq("unhashable", getattr(type(A), "__hash__", None) is None, True)
    return ck.result()


REDUCTIONS = ["sum", "prod", "min", "max", "mean", "std", "var", "any", "all", "argmax", "argmin"]


def _np_reduce(name, X, **kw):
    return getattr(np, name)(X, **kw)


def suite_reductions(shapes, kinds):
    import warnings

    warnings.simplefilter("ignore", RuntimeWarning)  # empty means, ddof >= n: as numpy
    ck = Checker()
    n = numlabs()
    for shape in shapes:
        for kind in kinds:
            X = data(shape, kind, zlib.crc32(repr((shape, kind)).encode()) % 1000)
            for lname, cd in layouts(shape, n, full=shape in [(5, 7), (8, 8), (2, 3)]):
                D = codistributed(X, cd)
                L = f"{shape} {kind} {lname}"
                for name in REDUCTIONS:
                    axes = [None] + list(range(len(shape))) + [-1]
                    for ax in axes:
                        try:
                            want = _np_reduce(name, X, axis=ax)
                        except ValueError as e:  # empty min/max/argmax
                            ck.raises(f"{L} {name} axis={ax} empty", ValueError, re.escape(str(e)[:20]),
                                      lambda: getattr(D, name)(axis=ax))
                            continue
                        tol = {"rtol": 1e-6, "atol": 1e-6} if kind == "f4" else {}
                        ck.eq(f"{L} {name}(axis={ax})", getattr(D, name)(axis=ax), want, **tol)
                        ck.eq(f"{L} np.{name}(axis={ax})", _np_reduce(name, D, axis=ax), want, **tol)
                        if ax is not None and ax >= 0:
                            ck.eq(f"{L} {name}(dim={ax + 1})", getattr(D, name)(dim=ax + 1), want, **tol)
                        ck.eq(f"{L} {name}(axis={ax}, keepdims)", getattr(D, name)(axis=ax, keepdims=True),
                              _np_reduce(name, X, axis=ax, keepdims=True), **tol)
                if len(shape) >= 2 and kind in ("f", "i"):
                    for axes in [(0, 1), (0, len(shape) - 1), tuple(range(len(shape)))]:
                        axes = tuple(sorted(set(axes)))
                        for name in ("sum", "max", "mean", "var", "any"):
                            try:
                                want = _np_reduce(name, X, axis=axes)
                            except ValueError:
                                continue
                            ck.eq(f"{L} {name}(axis={axes})", getattr(D, name)(axis=axes), want)
                if kind == "f" and X.size:
                    ck.eq(f"{L} sum dtype", D.sum(axis=0, dtype=np.float32), X.sum(axis=0, dtype=np.float32), rtol=1e-5)
                    ck.eq(f"{L} std ddof", D.std(ddof=1), X.std(ddof=1))
                    ck.eq(f"{L} var axis ddof", D.var(axis=0, ddof=1), X.var(axis=0, ddof=1))
                    ck.eq(f"{L} np.add.reduce", np.add.reduce(D), np.add.reduce(X))
                    ck.eq(f"{L} np.maximum.reduce None", np.maximum.reduce(D, axis=None), np.maximum.reduce(X, axis=None))
                    ck.eq(f"{L} mean dtype", D.mean(dtype=np.float32), X.mean(dtype=np.float32), rtol=1e-5)
                if kind == "i":
                    ck.eq(f"{L} sum int8", D.astype(np.int8).sum(), X.astype(np.int8).sum())
                    ck.eq(f"{L} logical_and.reduce", np.logical_and.reduce(D, axis=0), np.logical_and.reduce(X, axis=0))
    return ck.result()


def suite_reduction_errors():
    ck = Checker()
    D = codistributed(np.arange(12.0).reshape(3, 4), codistributor2dbc(None, 1))
    ck.raises("dim 0", ValueError, r"dimensions are numbered from 1 as in MATLAB", lambda: D.sum(dim=0))
    ck.raises("dim 3", ValueError, r"dimensions are numbered 1..2", lambda: D.max(dim=3))
    ck.raises("axis 2", np.exceptions.AxisError, "out of bounds", lambda: D.sum(axis=2))
    ck.raises("dim and axis", TypeError, "not both", lambda: D.mean(axis=0, dim=1))
    ck.raises("out=", NotImplementedError, "out= is not supported", lambda: D.sum(out=np.empty(1)))
    ck.raises("where=", NotImplementedError, "where= is not supported", lambda: np.sum(D, where=D > 1))
    ck.raises("initial=", NotImplementedError, "initial= is not supported", lambda: D.max(initial=3))
    ck.raises("strings", NotImplementedError, "dtype <U1", lambda: codistributed(np.array(["a", "b"])).max())
    ck.eq("ufunc reduce all", np.logical_or.reduce(D > 10, axis=None), np.True_)
    return ck.result()


def suite_transpose():
    ck = Checker()
    n = numlabs()
    for shape in SHAPES_1D + SHAPES_2D + SHAPES_3D:
        X = data(shape, "f", 7)
        for lname, cd in layouts(shape, n):
            D = codistributed(X, cd)
            L = f"{shape} {lname}"
            ck.eq(f"{L} .T", D.T, X.T)
            ck.eq(f"{L} np.transpose", np.transpose(D), np.transpose(X))
            ck.eq(f"{L} T.T", D.T.T, X)
            ck.eq(f"{L} T + T", D.T + codistributed(X.T), X.T + X.T)
            if len(shape) == 3:
                for perm in [(0, 2, 1), (1, 0, 2), (2, 0, 1)]:
                    ck.eq(f"{L} transpose{perm}", D.transpose(perm), X.transpose(perm))
                    ck.eq(f"{L} transpose*{perm}", D.transpose(*perm), X.transpose(*perm))
            if len(shape) == 2:
                ck.eq(f"{L} T sum axis 0", D.T.sum(axis=0), X.T.sum(axis=0))
                ck.eq(f"{L} T[1:, 0]", D.T[1:, 0] if shape[1] > 0 and shape[0] > 0 else D.T.sum(),
                      X.T[1:, 0] if shape[1] > 0 and shape[0] > 0 else X.T.sum())
    ck.raises("bad axes", ValueError, "axes", lambda: codistributed(np.zeros((2, 3))).transpose(0, 0))
    return ck.result()


def suite_matmul(panel):
    import spmdlab.arrays.matmul as matmul

    matmul._SUMMA_PANEL = panel  # small panels: several SUMMA steps on small matrices
    ck = Checker()
    n = numlabs()
    cases = [((1, 1), (1, 1)), ((2, 3), (3, 1)), ((5, 7), (7, 4)), ((9, 6), (6, 11)), ((3, 0), (0, 2)),
             ((4, 4), (4, 4))]
    for sa, sb in cases:
        A = data(sa, "f", 11)
        B = data(sb, "f", 12)
        la = layouts(sa, n)
        lb = layouts(sb, n)
        for an, ac in la:
            DA = codistributed(A, ac)
            for bn, bc in lb:
                DB = codistributed(B, bc)
                ck.eq(f"{sa}@{sb} {an} @ {bn}", DA @ DB, A @ B)
            ck.eq(f"{sa}@{sb} {an} @ numpy", DA @ B, A @ B)
            ck.eq(f"{sa}@{sb} numpy @ {an}", A.T @ DA, A.T @ A)
            ck.eq(f"{sa}@{sb} np.matmul {an}", np.matmul(DA, B), np.matmul(A, B))
            ck.eq(f"{sa}@{sb} dot {an}", DA.dot(B), A.dot(B))
            ck.eq(f"{sa}@{sb} np.dot {an}", np.dot(A.T, DA), np.dot(A.T, A))
        # SUMMA between 2dbc layouts with different block sizes, and 2dbc x 1d
        if len(la) > 5:
            ck.eq(f"{sa}@{sb} 2dbc b1 @ 2dbc b3", codistributed(A, la[5][1]) @ codistributed(B, lb[6][1]), A @ B)
    # matrix-vector, vector-matrix, vector-vector
    for m, k in [(1, 1), (3, 2), (7, 5), (2, 9)]:
        A = data((m, k), "f", 21)
        x = data((k,), "f", 22)
        y = data((m,), "f", 23)
        for an, ac in layouts((m, k), n):
            DA = codistributed(A, ac)
            for xn, xc in layouts((k,), n):
                Dx = codistributed(x, xc)
                Dy = codistributed(y, layouts((m,), n)[-1][1])
                ck.eq(f"matvec {m}x{k} {an} @ {xn}", DA @ Dx, A @ x)
                ck.eq(f"vecmat {m}x{k} {an} {xn}", Dy @ DA, y @ A)
                ck.eq(f"vecvec {k} {xn}", Dx @ Dx, x @ x)
                ck.eq(f"vec numpy {k} {xn}", x @ Dx, x @ x)
            ck.eq(f"matvec {m}x{k} {an} @ numpy", DA @ x, A @ x)
            ck.eq(f"vecmat numpy {m}x{k} {an}", y @ DA, y @ A)
            ck.eq(f"matvec numpy {m}x{k} {an}", A.T @ codistributed(y), A.T @ y)
    # integer and boolean products
    Ai = data((5, 6), "i", 31)
    Bi = data((6, 3), "i", 32)
    Ab = data((5, 6), "b", 33)
    Bb = data((6, 3), "b", 34)
    for an, ac in layouts((5, 6), n):
        for bn, bc in layouts((6, 3), n)[:5]:
            ck.eq(f"int {an} @ {bn}", codistributed(Ai, ac) @ codistributed(Bi, bc), Ai @ Bi)
            ck.eq(f"bool {an} @ {bn}", codistributed(Ab, ac) @ codistributed(Bb, bc), Ab @ Bb)
        ck.eq(f"bool matvec {an}", codistributed(Ab, ac) @ codistributed(Bb[:, 0]), Ab @ Bb[:, 0])
        ck.eq(f"int/float {an}", codistributed(Ai, ac) @ Bb.astype(np.float32), Ai @ Bb.astype(np.float32))
    D = codistributed(np.ones((3, 4)))
    ck.raises("core mismatch", ValueError, "mismatch in its core dimension", lambda: D @ np.ones((3, 2)))
    ck.raises("scalar", ValueError, "scalars are not allowed", lambda: D @ 2.0)
    ck.raises("3-D", NotImplementedError, r"more than 2 dimensions.*1d layout",
              lambda: codistributed(np.ones((2, 3, 4))) @ np.ones((4, 2)))
    ck.raises("matmul kwargs", NotImplementedError, "keyword arguments",
              lambda: np.matmul(D, np.ones((4, 2)), dtype=np.float32))
    return ck.result()


def suite_indexing():
    ck = Checker()
    n = numlabs()
    for shape in [(1,), (3,), (10,), (1, 1), (2, 3), (5, 7), (8, 8), (2, 3, 4)]:
        X = data(shape, "f", 41)
        for lname, cd in layouts(shape, n):
            D = codistributed(X, cd)
            L = f"{shape} {lname}"
            nd = len(shape)
            # scalars
            for idx in [(0,) * nd, tuple(s - 1 for s in shape), tuple(-1 for _ in shape),
                        tuple(s // 2 for s in shape)]:
                ck.eq(f"{L} D{idx}", D[idx], X[idx])
            ck.eq(f"{L} D[0] ints via item", D.item(0), X.item(0))
            keys = [(slice(None),), (slice(1, None),), (slice(None, None, 2),), (slice(None, None, -1),),
                    (slice(-2, None),), (slice(5, 2),), (Ellipsis,), (0,), (-1,)]
            if nd >= 2:
                keys += [(slice(1, 3), slice(None)), (slice(None), slice(1, 3)), (slice(None), 1),
                         (1, slice(None)), (slice(None, None, -2), slice(1, None, 2)), (Ellipsis, 0),
                         (slice(0, 1), 0), (-1, slice(None, None, -1))]
            if nd == 3:
                keys += [(0, slice(None), 1), (slice(None), 2, slice(1, 3)), (Ellipsis, slice(1, 2))]
            for key in keys:
                try:
                    want = X[key]
                except IndexError:
                    continue
                got = D[key]
                ck.eq(f"{L} D[{key}]", got, want.copy() if isinstance(want, np.ndarray) else want)
                if isinstance(want, np.ndarray) and want.ndim:
                    ck.eq(f"{L} D[{key}] + 1 is usable", got + 1, want + 1)
            ck.raises(f"{L} out of bounds", IndexError, "out of bounds", lambda: D[(shape[0],) + (0,) * (nd - 1)])
            ck.raises(f"{L} too many", IndexError, "too many indices", lambda: D[(0,) * (nd + 1)])
            ck.raises(f"{L} None", NotImplementedError, r"None \(np.newaxis\) is not supported", lambda: D[None])
            ck.eq(f"{L} list", D[[0, 0]], X[[0, 0]])  # indexing by arrays: tests/arrays/test_api_indexing.py
            ck.eq(f"{L} int array", D[np.array([0, -1])], X[np.array([0, -1])])
            # assignment
            E = codistributed(X, cd)
            Y = X.copy()
            idx = tuple(s - 1 for s in shape)
            E[idx] = 42.0
            Y[idx] = 42.0
            E[(0,) * nd] = -7
            Y[(0,) * nd] = -7
            ck.eq(f"{L} set scalar", E, Y)
            E[1:] = 3.5
            Y[1:] = 3.5
            ck.eq(f"{L} set slice scalar", E, Y)
            block = data(Y[::-2].shape, "f", 43)
            E[::-2] = block
            Y[::-2] = block
            ck.eq(f"{L} set slice array", E, Y)
            if nd >= 2:
                row = data(shape[1:], "f", 44)
                E[..., 0] = Y[..., 0] = 9.0
                E[0] = row
                Y[0] = row
                ck.eq(f"{L} set row broadcast", E, Y)
                E[:, 1:] = row[1:]
                Y[:, 1:] = row[1:]
                ck.eq(f"{L} set broadcast", E, Y)
                src = data(Y[1:, ::2].shape, "f", 45)
                if src.size:  # a codistributed value in another layout
                    E[1:, ::2] = codistributed(src, layouts(src.shape, n)[-1][1])
                    Y[1:, ::2] = src
                    ck.eq(f"{L} set codistributed value", E, Y)
                ck.raises(f"{L} set bad shape", ValueError, "could not broadcast",
                          lambda: E.__setitem__((slice(None),) * nd, np.ones(shape[-1] + 1)))
            # masks: codistributed in the same or another layout, and replicated
            M = X > 0
            for mname, mk in [("same", codistributed(M, cd)), ("other", codistributed(M, layouts(shape, n)[-1][1])),
                              ("numpy", M)]:
                ck.eq(f"{L} D[mask {mname}]", D[mk], X[M])
                F = codistributed(X, cd)
                Z = X.copy()
                F[mk] = 0.0
                Z[M] = 0.0
                ck.eq(f"{L} D[mask {mname}] = 0", F, Z)
                vals = np.arange(int(M.sum()), dtype=float) * 10
                F[mk] = vals
                Z[M] = vals
                ck.eq(f"{L} D[mask {mname}] = vector", F, Z)
                F[mk] = codistributed(vals[::-1]) if vals.size else vals
                Z[M] = vals[::-1]
                ck.eq(f"{L} D[mask {mname}] = codistributed vector", F, Z)
                ck.raises(f"{L} mask bad count", ValueError, "cannot assign",
                          lambda: F.__setitem__(mk, np.arange(int(M.sum()) + 2.0)))
            if nd > 1:  # a mask of a whole axis (issue 21)
                ck.eq(f"{L} row mask", D[np.arange(shape[0]) % 2 == 0], X[np.arange(shape[0]) % 2 == 0])
            ck.raises(f"{L} mask shape", IndexError, "boolean index did not match",
                      lambda: D[np.ones(shape[0] + 1, dtype=bool)])
    return ck.result()


def suite_misc():
    """Uneven and empty local parts, first-occurrence rules, conversions, in-place @."""
    ck = Checker()
    n = numlabs()
    # everything on the last lab, or on the first: the other labs hold empty parts
    for part in ([0] * (n - 1) + [6], [6] + [0] * (n - 1)):
        D = codistributed(np.arange(6.0), codistributor1d(1, part))
        E = codistributed(np.arange(6.0))
        ck.eq(f"{part} + default", D + E, np.arange(6.0) * 2)
        ck.eq(f"{part} sum", D.sum(), np.float64(15.0))
        ck.eq(f"{part} max axis 0", D.max(axis=0), np.float64(5.0))
        ck.eq(f"{part} argmin", D.argmin(), np.intp(0))
        ck.eq(f"{part} D[2:5]", D[2:5], np.arange(2.0, 5.0))
        ck.eq(f"{part} D[::-1]", D[::-1], np.arange(6.0)[::-1])
    # ties and NaNs: numpy returns the first occurrence in C order, whatever the layout
    T = np.array([[1, 5, 5, 0], [5, 2, 5, 5], [0, 5, 1, 1]])
    Tn = np.array([[1, np.nan, 5, 0], [np.nan, 2, 5, 9], [0, 5, np.nan, 1.0]])
    for lname, cd in layouts(T.shape, n):
        for A in (T, Tn, -T, T.astype(bool), T + 1j * T[::-1]):
            D = codistributed(A, cd)
            for ax in (None, 0, 1):
                ck.eq(f"ties {lname} {A.dtype} argmax {ax}", D.argmax(axis=ax), A.argmax(axis=ax))
                ck.eq(f"ties {lname} {A.dtype} argmin {ax}", D.argmin(axis=ax), A.argmin(axis=ax))
                ck.eq(f"ties {lname} {A.dtype} max {ax}", D.max(axis=ax), A.max(axis=ax))
    # conversions and scalar protocols
    D = codistributed(np.arange(12.0).reshape(3, 4), codistributor2dbc(None, 1))
    ck.eq("item(k)", D.item(7), 7.0)
    ck.eq("item(i, j)", D.item(2, 1), 9.0)
    ck.eq("item(tuple)", D.item((1, 3)), 7.0)
    ck.raises("item size", ValueError, "size 1", lambda: D.item())
    ck.raises("float size", TypeError, "only 0-dimensional", lambda: float(D))
    ck.raises("int() of ndim 2", TypeError, "only 0-dimensional", lambda: int(codistributed(np.array([[7]]))))
    ck.eq("iteration", [float(row.sum()) for row in D], [6.0, 22.0, 38.0])
    ck.eq("len", len(D), 3)
    # in-place matmul keeps the layout of the left operand
    A = np.arange(16.0).reshape(4, 4)
    for lname, cd in layouts((4, 4), n):
        D = codistributed(A, cd)
        codist = D._codist
        D @= codistributed(A.T, codistributor1d(2))
        ck.eq(f"@= {lname}", D, A @ A.T)
        ck.eq(f"@= {lname} keeps layout", D._codist == codist, True)
    ck.raises("@= shape", ValueError, "would change the shape",
              lambda: codistributed(np.ones((2, 3))).__imatmul__(np.ones((3, 5))))
    # a mask on one layout, data on another, values from a third
    X = np.arange(20.0).reshape(4, 5)
    M = codistributed((X % 3) == 0, codistributor2dbc(None, 1))
    D = codistributed(X, codistributor1d(2))
    V = codistributed(-np.arange(7.0), codistributor1d(1, [7] + [0] * (n - 1)))
    D[M] = V
    Y = X.copy()
    Y[(X % 3) == 0] = -np.arange(7.0)
    ck.eq("mask set from third layout", D, Y)
    ck.eq("mask get 2dbc", codistributed(X, codistributor2dbc(None, 2))[M], X[(X % 3) == 0])
    return ck.result()


def suite_shape_ops():
    """reshape/ravel/flatten/squeeze, cumsum/cumprod, nonzero, fill (the client's distributed
    forwards these to the labs)."""
    ck = Checker()
    n = numlabs()
    for shape, targets in [((0, 3), [(3, 0), (-1,)]), ((1, 1), [(1,), (1, 1, 1)]), ((3,), [(3, 1), (1, 3)]),
                           ((2, 3), [(3, 2), (6,), (1, 6), (6, 1), (-1, 2)]),
                           ((5, 7), [(7, 5), (35,), (5, 7, 1), (1, 35)]),
                           ((2, 3, 4), [(4, 6), (24,), (2, 12), (-1, 3, 2)]), ((1, 4, 1), [(4,), (2, 2)])]:
        X = data(shape, "i", 51)
        for lname, cd in layouts(shape, n):
            D = codistributed(X, cd)
            L = f"{shape} {lname}"
            for t in targets:
                ck.eq(f"{L} reshape{t}", D.reshape(t), X.reshape(t))
                ck.eq(f"{L} reshape*{t}", D.reshape(*t), X.reshape(*t))
                ck.eq(f"{L} np.reshape{t}", np.reshape(D, t), np.reshape(X, t))
            ck.eq(f"{L} ravel", D.ravel(), X.ravel())
            ck.eq(f"{L} np.ravel", np.ravel(D), np.ravel(X))
            ck.eq(f"{L} flatten", D.flatten(), X.flatten())
            if X.squeeze().ndim:
                ck.eq(f"{L} squeeze", D.squeeze(), X.squeeze())
                ck.eq(f"{L} np.squeeze", np.squeeze(D), np.squeeze(X))
            for a in range(len(shape)):
                if shape[a] == 1 and len(shape) > 1:
                    ck.eq(f"{L} squeeze({a})", D.squeeze(axis=a), X.squeeze(axis=a))
            for ax in [None] + list(range(len(shape))) + [-1]:
                ck.eq(f"{L} cumsum {ax}", D.cumsum(axis=ax), X.cumsum(axis=ax))
                ck.eq(f"{L} np.cumprod {ax}", np.cumprod(D, axis=ax), np.cumprod(X, axis=ax))
            ck.eq(f"{L} cumsum f", (D * 0.5).cumsum(axis=0), (X * 0.5).cumsum(axis=0))
            ck.eq(f"{L} cumsum dtype", D.cumsum(dtype=np.float32), X.cumsum(dtype=np.float32))
            ck.eq(f"{L} cumsum bool", (D > 0).cumsum(axis=-1), (X > 0).cumsum(axis=-1))
            ck.eq(f"{L} nonzero", D.nonzero(), X.nonzero())
            ck.eq(f"{L} np.nonzero", np.nonzero(D > 1), np.nonzero(X > 1))
            F = codistributed(X, cd)
            F.fill(7)
            ck.eq(f"{L} fill", F, np.full_like(X, 7))
            ck.raises(f"{L} bad reshape", ValueError, "cannot reshape array of size",
                      lambda: D.reshape(X.size + 1))
            ck.eq(f"{L} order F", D.reshape(-1, order="F"), X.reshape(-1, order="F"))  # issue 21
            if any(s != 1 for s in shape):
                ck.raises(f"{L} squeeze non-1", ValueError, "size not equal to one",
                          lambda: D.squeeze(axis=next(a for a, s in enumerate(shape) if s != 1)))
    return ck.result()


def suite_subset_block():
    """A block on fewer labs than the pool: layouts for the block's labs work."""
    ck = Checker()
    X = np.arange(30.0).reshape(5, 6)
    for lname, cd in layouts(X.shape, numlabs()):
        D = codistributed(X, cd)
        ck.eq(f"subset {lname} sum0", D.sum(axis=0), X.sum(axis=0))
        ck.eq(f"subset {lname} matmul", D @ D.T, X @ X.T)
        ck.eq(f"subset {lname} index", D[1:4, 2], X[1:4, 2])
    return ck.result()


# --------------------------------------------------------------------------- tests
def test_elementwise_operators_ufuncs_and_broadcasting(pools):
    assert each_pool(pools, suite_elementwise) > 1000


def suite_elementwise_with_elision():
    """The whole elementwise suite with temporary elision at every size (arrays/elementwise.py)."""
    import spmdlab.arrays.elementwise as ew

    ew._ELIDE_BYTES = 0
    try:
        return suite_elementwise()
    finally:
        ew._ELIDE_BYTES = 256 * 1024


def test_elementwise_suite_with_elision_at_every_size(pools):
    import spmdlab.arrays.elementwise as ew

    if not ew._CAN_ELIDE:
        pytest.skip("elision is off on this interpreter/numpy")
    assert each_pool(pools, suite_elementwise_with_elision) > 1000


def test_reductions_float_int(pools):
    shapes = SHAPES_1D + [(0, 3), (1, 1), (2, 3), (5, 7), (3, 1)] + SHAPES_3D
    assert each_pool(pools, suite_reductions, shapes, ["f", "i"]) > 1000


def test_reductions_nan_bool_complex_small_types(pools):
    shapes = [(3,), (2, 3), (5, 7), (1, 4)]
    assert each_pool(pools, suite_reductions, shapes, ["nan", "b", "c", "u1", "f4"]) > 1000


def test_reduction_errors(pools):
    each_pool(pools, suite_reduction_errors)


def test_transpose(pools):
    each_pool(pools, suite_transpose)


@pytest.mark.parametrize("panel", [2, 256])
def test_matmul(pools, panel):
    each_pool(pools, suite_matmul, panel)


def test_indexing(pools):
    each_pool(pools, suite_indexing)


def test_uneven_ties_conversions_inplace_matmul(pools):
    each_pool(pools, suite_misc)


def test_reshape_scans_nonzero_fill(pools):
    assert each_pool(pools, suite_shape_ops) > 1000


def test_block_on_a_subset_of_the_labs(pools):
    pool = pools[4]
    for k in (2, 3):
        with spmd(k, pool=pool, timeout=100):
            bad, count = suite_subset_block()
        msgs = [m for lab in range(1, k + 1) for m in bad[lab]]
        assert not msgs, msgs[:10]
        assert all(count[lab] >= 20 for lab in range(1, k + 1))


def test_array_from_another_block_size_is_rejected_on_every_lab(pools):
    pool = pools[4]
    with spmd(pool=pool, timeout=60):
        D = codistributed(np.ones((4, 4)))
    with pytest.raises(SpmdError) as info:
        with spmd(2, pool=pool, timeout=60):
            s = D.sum()
    assert str(info.value).startswith("Error detected on labs 1 and 2"), str(info.value)
    assert "distributed over 4 labs but this block runs on 2" in str(info.value)


def test_shape_mismatch_raises_the_same_error_on_every_lab(pools):
    pool = pools[4]
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool, timeout=60):
            D = codistributed(np.ones((4, 5)))
            E = codistributed(np.ones((4, 6)), codistributor2dbc())
            F = D + E
    assert str(info.value).startswith("Error detected on labs 1-4"), str(info.value)
    assert "could not be broadcast" in str(info.value)
    with spmd(pool=pool, timeout=60):  # the pool is still usable
        ok = float(codistributed(np.ones((4, 5))).sum())
    assert list(ok) == [20.0] * 4


def test_lab_error_during_collective_ops_leaves_the_pool_usable(pools):
    """Labs waiting in a reduction / SUMMA / ring exchange are aborted when one lab fails."""
    pool = pools[4]
    for op in ("sum", "summa", "ring", "index"):
        start = time.monotonic()
        with pytest.raises(SpmdError) as info:
            with spmd(pool=pool, timeout=60):
                A = codistributed(np.ones((40, 40)), codistributor2dbc(None, 4) if op == "summa" else None)
                if spmdlab.labindex() == 2:
                    raise RuntimeError("boom on lab 2")
                if op == "sum":
                    r = A.sum(axis=1)
                elif op == "index":
                    r = A[3:30:2, 5]
                else:
                    r = A @ A
        assert "Error detected on lab 2" in str(info.value) and "boom on lab 2" in str(info.value)
        assert time.monotonic() - start < 30
        with spmd(pool=pool, timeout=60):
            A = codistributed(np.ones((40, 40)), codistributor2dbc(None, 4))
            total = float((A @ A).sum())
        assert list(total) == [40.0 ** 3] * 4


def test_client_side_single_lab_semantics():
    """At the client a codistributed array behaves as on a pool of one lab."""
    X = np.arange(12.0).reshape(3, 4)
    D = codistributed(X)
    assert float(D.sum()) == X.sum()
    assert np.array_equal(gather(D @ D.T), X @ X.T)
    assert np.array_equal(gather(D[1:, ::2]), X[1:, ::2])
    assert D[2, 3] == X[2, 3]
    assert np.array_equal(gather(np.sin(D)), np.sin(X))


UNSUPPORTED = [
    ("np.add outer broadcast", lambda D: np.add(D[:, :1], D[:1, :]), "numpy.add"),
    ("ufunc out=None", lambda D: np.modf(D, out=(None, codistributed(np.zeros((4, 6)), D._codist))), "numpy.modf"),
    ("ufunc out numpy", lambda D: np.add(D, 1, out=np.zeros((4, 6))), "numpy.add"),
    ("ufunc accumulate", lambda D: np.add.accumulate(D), "numpy.add.accumulate"),
    ("ufunc reduce subtract", lambda D: np.subtract.reduce(D), "numpy.subtract.reduce"),
    ("array function", lambda D: np.einsum("ij->ji", D), "numpy.einsum"),
    ("pow modulo", lambda D: pow(D, 2, 3), "pow"),
    ("where one argument", lambda D: np.where(D > 1), "numpy.where"),
    ("clip out numpy", lambda D: np.clip(D, 0, 1, out=np.zeros((4, 6))), "numpy.clip"),
    ("round out", lambda D: np.round(D, out=codistributed(np.zeros((4, 6)), D._codist)), "numpy.round"),
    ("dot out", lambda D: np.dot(D.T, D, out=codistributed(np.zeros((6, 6)))), "numpy.dot"),
    ("matmul stacks", lambda D: D @ codistributed(np.zeros((2, 6, 3))), "matmul"),
    ("matmul kwargs", lambda D: np.matmul(D, D.T, axes=[(0, 1), (0, 1), (0, 1)]), "numpy.matmul"),
    ("sum out", lambda D: D.sum(out=np.zeros(())), "sum"),
    ("mean where", lambda D: D.mean(where=np.ones((4, 6), bool)), "mean"),
    ("var mean=", lambda D: D.var(mean=np.zeros(())), "var"),
    ("argmax out", lambda D: D.argmax(out=np.zeros((), np.intp)), "argmax"),
    ("cumsum out", lambda D: D.cumsum(out=np.zeros(24)), "cumsum"),
    ("reshape 0-d", lambda D: D[:1, :1].reshape(()), "reshape"),
    ("index None", lambda D: D[None], "indexing"),
    ("index None beside a list", lambda D: D[None, [0, 1]], "indexing"),
    ("strings", lambda D: codistributed(np.array(["a", "b"]), None).max(), "max"),
]


@pytest.mark.parametrize("layout", ["1d", "2dbc"])
@pytest.mark.parametrize("label,call,op", UNSUPPORTED, ids=[u[0] for u in UNSUPPORTED])
def test_unsupported_operations_name_the_operation_and_layout(label, call, op, layout):
    """NotImplementedError, never a wrong answer; the message says which operation and on
    which layout (at the client, arrays behave as on one lab)."""
    D = codistributed(np.arange(24.0).reshape(4, 6), codistributor1d(1) if layout == "1d"
                      else codistributor2dbc([1, 1], 2))
    with pytest.raises(NotImplementedError) as info:
        call(D)
    text = str(info.value)
    assert op in text, text
    assert re.search(r"(1d|2dbc) layout", text), text
    assert np.array_equal(gather(D), np.arange(24.0).reshape(4, 6))
