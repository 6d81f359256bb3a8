"""Dense linear algebra, QR side: TSQR, Householder QR on 2dbc, lstsq, SVD of tall-skinny matrices,
norm, trace, triu, tril; compared with numpy/scipy on the gathered matrix.

The first part is pure math without MPI (simulated labs for TSQR; the public functions
on one lab at the client, where codistributed arrays behave as on a pool of one): a
fast loop. The second runs lab-side suites on real pools of 1-4 labs (one spmd block
per pool and suite; failures collected per lab and asserted at the client), then
errors, the client ``distributed`` path and memory.
"""
from __future__ import annotations

import re
import sys

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import codistributed, codistributor1d, codistributor2dbc, distributed, gather, spmd_run
from spmdlab.arrays import linalg as LA
from spmdlab.arrays.linalg import householder as HH
from spmdlab.arrays.linalg import tsqr as TS

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # lab-side suites travel by value
pytestmark = pytest.mark.timeout(300)

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def rand(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        A = A + 1j * rng.standard_normal(shape)
    return A.astype(dt)


def tol(dt, n):
    """LAPACK-style: 30 * n * eps (relative)."""
    return 30 * max(n, 1) * np.finfo(np.dtype(dt).char.lower() if np.dtype(dt).kind == "f"
                                     else {8: np.float32, 16: np.float64}[np.dtype(dt).itemsize]).eps


# --------------------------------------------------------------------------- pure math (no MPI)
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("counts", [[7, 6, 0, 10], [23], [3, 3, 3, 3, 3, 3, 3, 2], [1, 0, 22]])
@pytest.mark.parametrize("chunk", [None, 5, 2])
def test_tsqr_math_simulated_labs(dt, counts, chunk):
    """TSQR over simulated labs; ``chunk``: each lab's block by the sequential TSQR over
    row chunks (5 rows: chunks taller than n; 2: shorter, so chunk triangles are 2 x n)."""
    n = 4
    m = sum(counts)
    A = rand((m, n), dt)
    offs = np.cumsum([0] + counts)
    ks = [min(c, n) for c in counts]
    locs = [TS.local_factor(A[offs[i]:offs[i + 1]], chunk) for i in range(len(counts))]
    h2, tau2, R = TS.combine(np.vstack([loc.R for loc in locs]))
    facs = [TS.Factor(loc, counts, ks, h2, tau2, R) for loc in locs]
    Q = np.vstack([TS.local_q(f, i + 1, np.eye(n, dtype=dt)) for i, f in enumerate(facs)])
    t = tol(dt, m) * np.linalg.norm(A)
    assert np.abs(Q @ R - A).max() < t
    assert np.abs(Q.conj().T @ Q - np.eye(n)).max() < tol(dt, m)
    assert np.allclose(np.abs(R), np.abs(np.linalg.qr(A.astype(np.complex128))[1]), atol=t)
    Qc = np.vstack([TS.local_q_complete(f, i + 1) for i, f in enumerate(facs)])
    assert Qc.shape == (m, m) and np.abs(Qc.conj().T @ Qc - np.eye(m)).max() < tol(dt, m)
    B = rand((m, 2), dt, 1)
    tops = [TS.local_qh(loc, B[offs[i]:offs[i + 1]]) for i, loc in enumerate(locs)]
    c = TS.stacked_qh(facs[0], np.vstack([tp[0] for tp in tops]))
    x = np.linalg.solve(R, c[:n])
    want, wres = np.linalg.lstsq(A.astype(np.complex128), B, rcond=None)[:2]
    assert np.abs(x - want).max() < 1e3 * tol(dt, m)
    res = sum((np.abs(tp[1]) ** 2).sum(axis=0) for tp in tops) + (np.abs(c[n:]) ** 2).sum(axis=0)
    assert np.allclose(res, wres, rtol=1e3 * tol(dt, m))


@pytest.mark.parametrize("dt", DTYPES)
def test_larft_is_compact_wy(dt):
    A = rand((9, 4), dt)
    h, tau = TS.geqrf(A)
    V = np.tril(h, -1) + np.eye(9, 4)
    T = HH.larft(V, tau)
    Q = np.eye(9, dtype=dt)
    for i in range(4):
        Q = Q @ (np.eye(9, dtype=dt) - tau[i] * np.outer(V[:, i], V[:, i].conj()))
    assert np.abs(Q - (np.eye(9) - V @ T @ V.conj().T)).max() < tol(dt, 9)


@pytest.mark.parametrize("shape", [(11, 7), (7, 11), (9, 9), (1, 1), (20, 2), (2, 20)])
@pytest.mark.parametrize("dt", DTYPES)
def test_one_lab_at_the_client(shape, dt):
    """The public functions on codistributed arrays at the client (a pool of one)."""
    A = rand(shape, dt)
    m, n = shape
    t = tol(dt, max(shape)) * max(1.0, np.linalg.norm(A))
    for layout in (codistributor1d(1), codistributor2dbc([1, 1], 3)):
        D = codistributed(A, layout)
        Q, R = np.linalg.qr(D)
        assert np.abs(gather(Q) @ gather(R) - A).max() < t
        Qf, Rf = LA.qr(D)
        assert gather(Qf).shape == (m, m) and np.abs(gather(Qf) @ gather(Rf) - A).max() < t
        h, tau = np.linalg.qr(D, mode="raw")
        hw, tw = np.linalg.qr(A, mode="raw")
        assert np.abs(gather(h) - hw).max() < t and np.abs(tau - tw).max() < t
        assert np.allclose(np.linalg.svd(D, compute_uv=False), np.linalg.svd(A, compute_uv=False), atol=t)
        for o in (None, "fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"):
            got = np.linalg.norm(D, o)
            assert np.ndim(got) == 0 and np.isclose(got, np.linalg.norm(A, o), rtol=tol(dt, m * n))
        assert np.isclose(np.trace(D, 1), np.trace(A, 1), rtol=tol(dt, m))
        assert np.allclose(np.linalg.svdvals(D), np.linalg.svdvals(A), atol=t)
        assert np.isclose(np.linalg.matrix_norm(D), np.linalg.matrix_norm(A), rtol=tol(dt, m * n))
        assert np.isclose(np.linalg.vector_norm(D, ord=3), np.linalg.vector_norm(A, ord=3), rtol=tol(dt, m * n))
        assert np.isclose(np.linalg.trace(D), np.linalg.trace(A), rtol=tol(dt, m))
        assert np.array_equal(gather(np.triu(D, -1)), np.triu(A, -1))
        assert np.array_equal(gather(LA.tril(D, 2)), np.tril(A, 2))
        b = rand((m,), dt, 3)
        x, res, rank, s = np.linalg.lstsq(D, b)
        xw, resw, rankw, sw = np.linalg.lstsq(A, b)
        assert rank == rankw and np.allclose(gather(x), xw, atol=1e3 * t) and res.shape == resw.shape


# --------------------------------------------------------------------------- lab-side suites
def _layouts(shape, n):
    out = [("1d rows", codistributor1d(1)), ("1d cols", codistributor1d(2)),
           ("1d rows all-on-last", codistributor1d(1, [0] * (n - 1) + [shape[0]])),
           ("2dbc b2", codistributor2dbc(None, 2)), ("2dbc [1,p] b3", codistributor2dbc([1, n], 3)),
           ("2dbc [p,1] b2 col", codistributor2dbc([n, 1], 2, "col"))]
    if n == 4:
        out.append(("2dbc [2,2] b2", codistributor2dbc([2, 2], 2)))
    return out


class Checker:
    def __init__(self):
        self.bad, self.count = [], 0

    def ok(self, label, cond, msg=""):
        self.count += 1
        if not cond:
            self.bad.append(f"{label}: {msg}")

    def raises(self, label, exc, pattern, fn):
        self.count += 1
        try:
            fn()
        except exc as e:
            if not re.search(pattern, str(e)):
                self.bad.append(f"{label}: message {str(e)!r} does not match {pattern!r}")
        except Exception as e:
            self.bad.append(f"{label}: expected {exc.__name__}, got {type(e).__name__}: {e}")
        else:
            self.bad.append(f"{label}: nothing raised")


def qr_suite(shapes, dtypes):
    from spmdlab import numlabs

    ck = Checker()
    n_labs = numlabs()
    for shape in shapes:
        m, n = shape
        k = min(shape)
        for dt in dtypes:
            A = rand(shape, dt, m * 31 + n)
            nrm = max(1.0, np.linalg.norm(A))
            t = tol(dt, max(shape))
            Rw = np.linalg.qr(A.astype(np.complex128), mode="r")
            for name, lay in _layouts(shape, n_labs):
                lab = f"{shape} {np.dtype(dt).name} {name}"
                D = codistributed(A, lay)
                Q, R = np.linalg.qr(D)
                Qg, Rg = gather(Q), gather(R)
                ck.ok(lab + " reduced shapes", Qg.shape == (m, k) and Rg.shape == (k, n), f"{Qg.shape} {Rg.shape}")
                ck.ok(lab + " QR=A", np.abs(Qg @ Rg - A).max() <= t * nrm, np.abs(Qg @ Rg - A).max())
                ck.ok(lab + " Q'Q=I", np.abs(Qg.conj().T @ Qg - np.eye(k)).max() <= t)
                ck.ok(lab + " R triu", np.array_equal(Rg, np.triu(Rg)))
                ck.ok(lab + " |R|", np.allclose(np.abs(Rg), np.abs(Rw), atol=t * nrm), "R differs beyond signs")
                ck.ok(lab + " dtype", Qg.dtype == np.dtype(dt) and Rg.dtype == np.dtype(dt), Qg.dtype)
                Qc, Rc = LA.qr(D)
                Qcg, Rcg = gather(Qc), gather(Rc)
                ck.ok(lab + " full shapes", Qcg.shape == (m, m) and Rcg.shape == (m, n))
                ck.ok(lab + " full QR=A", np.abs(Qcg @ Rcg - A).max() <= t * nrm)
                ck.ok(lab + " full Q'Q=I", np.abs(Qcg.conj().T @ Qcg - np.eye(m)).max() <= t)
                Re = gather(LA.qr(D, "econ", nargout=1))
                ck.ok(lab + " econ R", np.allclose(np.abs(Re), np.abs(Rw), atol=t * nrm))
                h, tau = np.linalg.qr(D, mode="raw")
                hw, tw = np.linalg.qr(A, mode="raw")
                ck.ok(lab + " raw", np.abs(gather(h) - hw).max() <= t * nrm and np.abs(tau - tw).max() <= t * 10,
                      f"{np.abs(gather(h) - hw).max()} {np.abs(tau - tw).max()}")
    return ck.bad, ck.count


def ls_suite(dtypes):
    from spmdlab import numlabs

    ck = Checker()
    p = numlabs()
    for dt in dtypes:
        for shape in [(8 * p + 3, 5), (4 * p, 4), (3, 4 * p + 1)]:
            m, n = shape
            A = rand(shape, dt, 7)
            t = tol(dt, max(shape)) * 1e2
            for name, lay in _layouts(shape, p):
                lab = f"lstsq {shape} {np.dtype(dt).name} {name}"
                D = codistributed(A, lay)
                for bshape in [(m,), (m, 3)]:
                    b = rand(bshape, dt, 8)
                    for B in (b, codistributed(b)):
                        x, res, rank, s = np.linalg.lstsq(D, B, rcond=None)
                        xw, resw, rankw, sw = np.linalg.lstsq(A, b, rcond=None)
                        xg = gather(x)
                        ck.ok(lab + " x", xg.shape == xw.shape and np.abs(xg - xw).max() <= t * max(1, np.abs(xw).max()),
                              f"{xg.shape} vs {xw.shape}")
                        ck.ok(lab + " rank", rank == rankw, f"{rank} {rankw}")
                        ck.ok(lab + " s", np.allclose(s, sw, rtol=t, atol=t * sw[0]))
                        ck.ok(lab + " residuals", res.shape == resw.shape and np.allclose(res, resw, rtol=t * 10, atol=t),
                              f"{res} {resw}")
        # rank deficient tall-skinny: numpy's minimum-norm solution
        m, n = 6 * p, 4
        A = np.round(4 * rand((m, n), dt, 9))  # small integers: the dependence is exact
        A[:, 3] = A[:, 0] + A[:, 1]
        b = rand((m,), dt, 10)
        D = codistributed(A, codistributor1d(1))
        x, res, rank, s = np.linalg.lstsq(D, b)
        xw, resw, rankw, sw = np.linalg.lstsq(A, b)
        ck.ok(f"rank-deficient {np.dtype(dt).name}", rank == rankw == 3 and res.size == 0 and
              np.abs(gather(x) - xw).max() <= 1e3 * tol(dt, m) * max(1, np.abs(xw).max()), f"{rank} {gather(x)} {xw}")
        # general shape through the 2dbc Householder path (x only), and its rank check
        for shape in [(3 * p + 2, 3 * p), (5, 5), (3 * p, 3 * p + 2)]:
            m, n = shape
            A = rand(shape, dt, 11)
            b = rand((m, 2), dt, 12)
            for name, lay in _layouts(shape, p):
                D = codistributed(A, lay)
                x = gather(LA.lstsq(D, b, full_output=False))
                xw = np.linalg.lstsq(A, b, rcond=None)[0]
                ck.ok(f"lstsq x-only {shape} {np.dtype(dt).name} {name}",
                      np.abs(x - xw).max() <= 1e3 * tol(dt, m) * max(1, np.abs(xw).max()), f"{x} {xw}")
            if m >= n:
                A[:, 1] = A[:, 0]
            else:
                A[1, :] = A[0, :]
            D = codistributed(A, codistributor2dbc(None, 2))
            if m < p * n and n < p * m:  # not tall-skinny: the 2dbc path, no column pivoting
                ck.raises(f"lstsq rank-deficient 2dbc {shape}", np.linalg.LinAlgError, "Rank deficient",
                          lambda: LA.lstsq(D, b, full_output=False))
    return ck.bad, ck.count


def svd_norm_suite(dtypes):
    from spmdlab import numlabs

    ck = Checker()
    p = numlabs()
    for dt in dtypes:
        for shape in [(7 * p + 2, 3), (3, 7 * p + 2), (p, 1), (1, p)]:
            m, n = shape
            A = rand(shape, dt, 13)
            t = tol(dt, max(shape)) * 10
            sw = np.linalg.svd(A, compute_uv=False)
            for name, lay in _layouts(shape, p):
                lab = f"svd {shape} {np.dtype(dt).name} {name}"
                D = codistributed(A, lay)
                s = np.linalg.svd(D, compute_uv=False)
                ck.ok(lab + " s", np.allclose(s, sw, atol=t * sw[0]), f"{s} {sw}")
                ck.ok(lab + " MATLAB s", np.allclose(LA.svd(D), sw, atol=t * sw[0]))
                for full in (False, True):
                    U, S, Vh = np.linalg.svd(D, full_matrices=full)
                    Ug = gather(U) if isinstance(U, codistributed) else U
                    Vg = gather(Vh) if isinstance(Vh, codistributed) else Vh
                    Uw, Sw, Vw = np.linalg.svd(A, full_matrices=full)
                    kk = min(shape)
                    ck.ok(lab + f" shapes full={full}", Ug.shape == Uw.shape and Vg.shape == Vw.shape,
                          f"{Ug.shape} {Vg.shape}")
                    ck.ok(lab + f" USV=A full={full}", np.abs((Ug[:, :kk] * S) @ Vg[:kk] - A).max() <= t * sw[0])
                    ck.ok(lab + f" U'U full={full}", np.abs(Ug.conj().T @ Ug - np.eye(Ug.shape[1])).max() <= t)
                    ck.ok(lab + f" VV' full={full}", np.abs(Vg @ Vg.conj().T - np.eye(Vg.shape[0])).max() <= t)
                U, S, V = LA.svd(D, "econ", nargout=3)
                Ug = gather(U) if isinstance(U, codistributed) else U
                Vg = gather(V) if isinstance(V, codistributed) else V
                ck.ok(lab + " MATLAB econ", np.abs(Ug @ S @ Vg.conj().T - A).max() <= t * sw[0])
        for shape in [(6, 5), (5, 6), (13, 1), (1, 13), (2, 2)]:
            m, n = shape
            A = rand(shape, dt, 14)
            rt = np.finfo(np.linalg.norm(A).dtype).eps * 50 * m * n
            for name, lay in _layouts(shape, p):
                lab = f"norm {shape} {np.dtype(dt).name} {name}"
                D = codistributed(A, lay)
                ords = [None, "fro", 1, -1, np.inf, -np.inf]
                if m >= p * n or n >= p * m:
                    ords += [2, -2, "nuc"]
                for o in ords:
                    got, want = np.linalg.norm(D, o), np.linalg.norm(A, o)
                    ck.ok(f"{lab} ord={o}", np.isclose(got, want, rtol=rt) and np.asarray(got).dtype == want.dtype
                          and np.ndim(got) == 0, f"{got!r} {want!r}")
                ck.ok(lab + " keepdims", np.linalg.norm(D, keepdims=True).shape == (1, 1))
                if min(shape) == 1:
                    ck.ok(lab + " MATLAB vector", np.isclose(LA.norm(D, 3), np.linalg.norm(A.ravel(), 3), rtol=rt))
                for k in (-1, 0, 2):
                    ck.ok(f"{lab} triu {k}", np.array_equal(gather(np.triu(D, k)), np.triu(A, k)))
                    ck.ok(f"{lab} tril {k}", np.array_equal(gather(LA.tril(D, k)), np.tril(A, k)))
                    tr = np.trace(D, k)
                    ck.ok(f"{lab} trace {k}", np.isclose(tr, np.trace(A, k), rtol=rt) and np.ndim(tr) == 0, repr(tr))
                ck.ok(lab + " triu layout", np.triu(D).__class__ is codistributed and
                      spmdlab.getCodistributor(np.triu(D)) == spmdlab.getCodistributor(D))
        v = rand((5 * p + 1,), dt, 15)
        for lay in (codistributor1d(1), codistributor1d(1, [0] * (p - 1) + [5 * p + 1])):
            V = codistributed(v, lay)
            for o in (None, 2, 1, 0, np.inf, -np.inf, 3, 0.5):
                ck.ok(f"vector norm {o} {np.dtype(dt).name}",
                      np.isclose(np.linalg.norm(V, o), np.linalg.norm(v, o), rtol=1e-5 if dt in (np.float32, np.complex64) else 1e-12))
        I = np.arange(12).reshape(3, 4)
        ck.ok("trace int", np.trace(codistributed(I, codistributor2dbc(None, 1))) == np.trace(I) and
              np.trace(codistributed(I)).dtype == np.trace(I).dtype)
        ck.ok("norm int", np.isclose(np.linalg.norm(codistributed(I), 1), np.linalg.norm(I, 1)))
    return ck.bad, ck.count


def error_suite():
    from spmdlab import numlabs

    ck = Checker()
    p = numlabs()
    D = codistributed(rand((4 * p, 4 * p), np.float64), codistributor2dbc(None, 2))
    if p > 1:
        ck.raises("lstsq square full", NotImplementedError, r"lstsq.*tall-skinny", lambda: np.linalg.lstsq(D, np.ones(4 * p)))
    ck.raises("MATLAB eig(A, B)", NotImplementedError, r"generalized", lambda: LA.eig(D, D))
    ck.raises("qr mode", ValueError, "Unrecognized mode 'xx'", lambda: np.linalg.qr(D, mode="xx"))
    ck.raises("qr pivoting", NotImplementedError, "column pivoting", lambda: LA.qr(D, "vector"))
    ck.raises("qr 1-D", np.linalg.LinAlgError, "at least two-dimensional",
              lambda: np.linalg.qr(codistributed(np.ones(5))))
    ck.raises("float16", TypeError, "float16 is unsupported in linalg",
              lambda: np.linalg.qr(codistributed(np.ones((4, 2), np.float16))))
    T = codistributed(rand((8 * p, 3), np.float64), codistributor1d(1))
    ck.raises("lstsq sizes", np.linalg.LinAlgError, "Incompatible dimensions",
              lambda: np.linalg.lstsq(T, np.ones(8 * p + 1)))
    ck.raises("norm ord", ValueError, "Invalid norm order for matrices", lambda: np.linalg.norm(T, 3))
    ck.raises("norm axis", NotImplementedError, "axis", lambda: np.linalg.norm(T, axis=0))
    Iq, Ir = np.linalg.qr(codistributed(np.arange(8 * p * 3).reshape(8 * p, 3)))
    ck.ok("int input becomes float64", Iq.dtype == np.float64 and Ir.dtype == np.float64)
    X = np.ones((8 * p, 3))
    X[:, 2] = np.nan
    ck.raises("NaN svd on every lab", np.linalg.LinAlgError, "converge",
              lambda: np.linalg.svd(codistributed(X, codistributor1d(1)), compute_uv=False))
    return ck.bad, ck.count


def _run(pools, suite, *args, sizes=(1, 2, 3, 4)):
    total = 0
    for n in sizes:
        res = list(spmd_run(suite, *args, pool=pools(n), timeout=250))
        failures = [f"{n} labs, lab {lab}: {msg}" for lab, (bad, _) in enumerate(res, 1) for msg in bad]
        assert not failures, "\n".join(failures[:30]) + f"\n({len(failures)} failures)"
        total += res[0][1]
    return total


@pytest.mark.parametrize("dtypes", [(np.float64, np.complex64), (np.float32, np.complex128)])
def test_qr_all_layouts(pools, dtypes):
    shapes = [(13, 3), (9, 9), (5, 11), (1, 1)]  # (13, 3) is tall-skinny up to 4 labs
    assert _run(pools, qr_suite, shapes, dtypes) > 100


def test_lstsq(pools):
    assert _run(pools, ls_suite, DTYPES) > 100


def test_svd_norm_trace_triu(pools):
    assert _run(pools, svd_norm_suite, DTYPES) > 100


def test_errors_on_every_lab(pools):
    _run(pools, error_suite)


def test_client_distributed(pools):
    """np.linalg names and MATLAB names on a client ``distributed``."""
    pool = pools(2)
    A = rand((40, 3), np.float64, 5)
    D = distributed(A, codistributor1d(1), pool=pool)
    Q, R = np.linalg.qr(D)
    assert isinstance(Q, distributed) and np.allclose(gather(Q) @ gather(R), A)
    assert np.allclose(np.linalg.svd(D, compute_uv=False), np.linalg.svd(A, compute_uv=False))
    assert np.isclose(np.linalg.norm(D, 1), np.linalg.norm(A, 1))
    assert np.isclose(spmdlab.norm(D, "fro"), np.linalg.norm(A))
    Qf, Rf = spmdlab.qr(D)
    assert gather(Qf).shape == (40, 40) and np.allclose(gather(Qf) @ gather(Rf), A)
    b = rand((40,), np.float64, 6)
    x = np.linalg.lstsq(D, b)[0]
    assert np.allclose(gather(x), np.linalg.lstsq(A, b)[0])
    assert np.array_equal(gather(spmdlab.triu(D)), np.triu(A))
    w, V = np.linalg.eig(distributed(np.eye(4), pool=pool))  # issue 27: no longer an error
    assert np.allclose(w, 1) and isinstance(V, distributed)


# --------------------------------------------------------------------------- memory
def _mem_tsqr(which):
    import tracemalloc

    from spmdlab.arrays import linalg as la

    tracemalloc.start()
    m, n = 40000, 40
    D = codistributed.randn(m, n, codist=codistributor1d(1), seed=3)
    local = spmdlab.getLocalPart(D).nbytes
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    if which == "r":
        out = np.linalg.qr(D, mode="r")
    elif which == "s":
        out = np.linalg.svd(D, compute_uv=False)
    else:
        out = np.linalg.qr(D)
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    del out, la
    return peak / local, local, m * n * 8


@pytest.mark.parametrize("which,bound", [("r", 1.3), ("s", 1.3), ("reduced", 3.3)])
def test_tsqr_memory_local_part_plus_small_buffers(pools, which, bound):
    """qr(A, 'r') and svd(A, compute_uv=False) allocate the Householder copy of the local
    part plus numlabs x n x n; the reduced Q adds its own local part and one temporary."""
    for ratio, local, full in spmd_run(_mem_tsqr, which, pool=pools(4), timeout=120):
        assert ratio < bound, (ratio, local, full)
        assert ratio * local < 0.9 * full


def _mem_2dbc():
    import tracemalloc

    tracemalloc.start()
    N = 1200
    D = codistributed.randn(N, N, codist=codistributor2dbc([2, 2], 64), seed=4)
    local = spmdlab.getLocalPart(D).nbytes
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    R = np.linalg.qr(D, mode="r")
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    del R
    return peak, local, N * 64 * 8, N * N * 8


def test_householder_2dbc_memory(pools):
    """A lab holds its part (a factored copy, R) plus panel-sized buffers."""
    for peak, local, panel, full in spmd_run(_mem_2dbc, pool=pools(4), timeout=120):
        assert peak < 2.2 * local + 4 * panel, (peak / local, local, panel)
        assert peak < 0.75 * full
