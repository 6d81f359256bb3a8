"""Issue 27: eigh/eigvalsh, eig/eigvals, svd of any shape, pinv, matrix_rank, cond of
codistributed matrices, compared with numpy/scipy on the gathered matrix.

First the pieces without MPI (the reductions on one lab at the client, the split of the
spectrum, xLASQ1); then lab-side suites on real pools of 1-5 labs (one spmd block per
pool and suite, failures collected per lab and asserted at the client): every layout
kind, grids 1 x p, p x 1 and 2 x 2, block sizes that do not divide n and n smaller than
grid x block, the four LAPACK dtypes, clustered and repeated eigenvalues, rank-deficient
matrices; errors on every lab; the client ``distributed`` path; memory per lab.
"""
from __future__ import annotations

import re
import sys

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import codistributed, codistributor1d, codistributor2dbc, distributed, gather, spmd_run
from spmdlab.arrays.linalg import bidiag as BD
from spmdlab.arrays.linalg import eigh as EH
from spmdlab.arrays.linalg.grid import ProcessGrid

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # lab-side suites travel by value
pytestmark = pytest.mark.timeout(400)

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def rand(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        A = A + 1j * rng.standard_normal(shape)
    return A.astype(dt)


class Checker:
    """Checks on one lab, failures collected (asserted at the client)."""

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


def eps(dt):
    return float(np.finfo(np.dtype(dt).char.lower() if np.dtype(dt).kind == "f"
                          else {8: np.float32, 16: np.float64}[np.dtype(dt).itemsize]).eps)


def tol(dt, n):
    """Backward-stable scale: 30 n eps (times a norm of A where it applies)."""
    return 30 * max(n, 1) * eps(dt)


def hermitian(A, uplo="L"):
    """The Hermitian matrix numpy's eigh reads from A's ``uplo`` triangle."""
    T = np.tril(A, -1) if uplo == "L" else np.triu(A, 1)
    return T + T.conj().T + np.diag(A.diagonal().real)


def clustered(n, dt, seed=0):
    """A Hermitian matrix with repeated and tightly clustered eigenvalues."""
    rng = np.random.default_rng(seed)
    w = np.repeat(np.arange(1, n // 3 + 2, dtype=float), 3)[:n]
    w[: n // 4] += 1e-10 * np.arange(n // 4)
    Z = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if np.dtype(dt).kind == "c" else 0)
    Q = np.linalg.qr(Z)[0]
    return ((Q * w) @ Q.conj().T).astype(dt)


def rank_deficient(m, n, r, dt, seed=0):
    return (rand((m, r), dt, seed) @ rand((r, n), dt, seed + 1)).astype(dt)


# --------------------------------------------------------------------------- no MPI
def test_shares_keep_clusters_whole():
    w = np.array([0, 1, 2, 3, 3, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], float)
    cuts = EH._shares(w, 2)
    assert cuts[0] == 0 and cuts[-1] == 16
    assert w[cuts[1]] - w[cuts[1] - 1] > 0  # never between equal eigenvalues
    assert EH._shares(np.array([1, 1, 1, 1 + 1e-9, 2, 2, 2.0]), 3) == [0, 4, 4, 7]
    assert EH._shares(np.ones(5), 2) == [0, 5, 5]
    for n, p in ((1, 3), (5, 5), (2, 4), (100, 3)):
        c = EH._shares(np.sort(np.random.default_rng(n).standard_normal(n)), p)
        assert len(c) == p + 1 and c[0] == 0 and c[-1] == n and all(np.diff(c) >= 0)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_lasq1_singular_values_of_a_bidiagonal(dt):
    rng = np.random.default_rng(0)
    for n in (1, 2, 17):
        d, e = rng.standard_normal(n).astype(dt), rng.standard_normal(n - 1).astype(dt)
        B = np.diag(d) + np.diag(e, 1)
        assert np.allclose(BD.lasq1(d, e), np.linalg.svd(B.astype(np.float64), compute_uv=False),
                           rtol=0, atol=tol(dt, n) * max(1, np.abs(B).max()))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("m,n,nb", [(7, 7, 3), (12, 9, 4), (5, 5, 64)])
def test_bidiagonal_reduction_one_lab(dt, m, n, nb):
    A = rand((m, n), dt, 3)
    c = codistributor2dbc([1, 1], nb, "row", (m, n))
    g = ProcessGrid(c)
    bd = BD.gebrd(np.array(A), g, "t")
    Q = np.eye(m, dtype=dt)
    BD.apply_q(bd, Q)
    P = np.eye(n, dtype=dt)
    BD.apply_p(bd, P, ProcessGrid(codistributor2dbc([1, 1], nb, "row", (n, n))))
    B = np.zeros((m, n))
    B[range(n), range(n)] = bd.d
    B[range(n - 1), range(1, n)] = bd.e
    t = tol(dt, m) * np.abs(A).max()
    assert np.abs(Q @ B @ P.conj().T - A).max() < t
    assert np.abs(Q.conj().T @ Q - np.eye(m)).max() < tol(dt, m)


@pytest.mark.parametrize("dt", DTYPES)
def test_one_lab_at_the_client(dt):
    """The numpy names on codistributed arrays at the client (a pool of one)."""
    n = 11
    A = rand((n, n), dt, 1)
    D = codistributed(A, codistributor2dbc([1, 1], 4, "row", (n, n)))
    H = hermitian(A)
    w, V = np.linalg.eigh(D)
    V = gather(V)
    nrm = np.abs(H).max()
    assert np.abs(w - np.linalg.eigvalsh(H)).max() < tol(dt, n) * nrm
    assert np.abs(H @ V - V * w).max() < tol(dt, n) * nrm
    assert np.abs(np.linalg.svd(D, compute_uv=False) - np.linalg.svd(A, compute_uv=False)).max() < tol(dt, n) * nrm
    w2 = np.linalg.eigvals(D)
    assert w2.dtype == np.linalg.eigvals(A).dtype


# --------------------------------------------------------------------------- lab-side suites
def _layouts(n, p):
    out = [("2dbc [1,p] b3", codistributor2dbc([1, p], 3)), ("2dbc [p,1] b2 col", codistributor2dbc([p, 1], 2, "col")),
           ("2dbc default b64 (n < grid x block)", codistributor2dbc(None, 64)), ("1d cols", codistributor1d(2))]
    if p == 4:
        out.append(("2dbc [2,2] b2", codistributor2dbc([2, 2], 2)))
    return out


def _check_eigh(ck, label, A, D, dt, uplo="L"):
    n = A.shape[0]
    H = hermitian(A, uplo)
    nrm = max(np.abs(H).max(), 1)
    want = np.linalg.eigvalsh(H.astype(np.complex128))
    w, V = np.linalg.eigh(D, UPLO=uplo)
    ck.ok(label + " eigh type", isinstance(w, np.ndarray) and w.dtype == np.linalg.eigvalsh(H).dtype
          and isinstance(V, codistributed) and isinstance(spmdlab.getCodistributor(V), codistributor2dbc))
    ck.ok(label + " eigh values", np.abs(w - want).max() <= tol(dt, n) * nrm, f"{np.abs(w - want).max()}")
    Vg = gather(V)
    ck.ok(label + " eigh residual", np.abs(H @ Vg - Vg * w).max() <= tol(dt, n) * nrm)
    # MRRR on each lab's share: orthogonality O(n eps) with a constant near LAPACK's 30
    ck.ok(label + " eigh orthogonal", np.abs(Vg.conj().T @ Vg - np.eye(n)).max() <= 4 * tol(dt, n),
          f"{np.abs(Vg.conj().T @ Vg - np.eye(n)).max()}")
    wv = np.linalg.eigvalsh(D, UPLO=uplo)
    ck.ok(label + " eigvalsh", np.abs(wv - want).max() <= tol(dt, n) * nrm)


def _check_svd(ck, label, A, D, dt, full_rank=True):
    m, n = A.shape
    k = min(m, n)
    nrm = max(np.abs(A).max(), 1)
    want = np.linalg.svd(A.astype(np.complex128), compute_uv=False)
    s = np.linalg.svd(D, compute_uv=False)
    ck.ok(label + " svd values", s.shape == (k,) and np.abs(s - want).max() <= tol(dt, max(m, n)) * nrm * np.sqrt(k))
    for full in (True, False):
        U, s2, Vh = np.linalg.svd(D, full_matrices=full)
        Ug, Vg = gather(U), gather(Vh)
        shapes = ((m, m), (n, n)) if full else ((m, k), (k, n))
        ck.ok(f"{label} svd shapes full={full}", (Ug.shape, Vg.shape) == shapes, f"{Ug.shape} {Vg.shape}")
        t = tol(dt, max(m, n)) * nrm * np.sqrt(k)
        ck.ok(f"{label} svd reconstruct full={full}", np.abs((Ug[:, :k] * s2) @ Vg[:k] - A).max() <= t)
        if full_rank:
            ck.ok(f"{label} svd U orthogonal full={full}",
                  np.abs(Ug.conj().T @ Ug - np.eye(Ug.shape[1])).max() <= tol(dt, max(m, n)))
            ck.ok(f"{label} svd V orthogonal full={full}",
                  np.abs(Vg @ Vg.conj().T - np.eye(Vg.shape[0])).max() <= tol(dt, max(m, n)))


def _check_eig(ck, label, A, D, dt):
    n = A.shape[0]
    nrm = max(np.abs(A).max(), 1)
    want = np.linalg.eigvals(A.astype(np.complex128))
    w = np.linalg.eigvals(D)
    ck.ok(label + " eigvals dtype", w.dtype == np.linalg.eigvals(A).dtype, f"{w.dtype}")
    near = np.abs(w[:, None] - want[None, :]).min(axis=1).max() if n else 0
    ck.ok(label + " eigvals", near <= 1e3 * tol(dt, n) * nrm, f"{near}")
    w2, V = np.linalg.eig(D)
    Vg = gather(V)
    ck.ok(label + " eig residual", np.abs(A @ Vg - Vg * w2).max() <= 1e2 * tol(dt, n) * nrm)
    ck.ok(label + " eig unit vectors", np.abs(np.linalg.norm(Vg, axis=0) - 1).max() <= tol(dt, n))


def eig_suite(dtypes, sizes):
    from spmdlab import numlabs

    ck = Checker()
    p = numlabs()
    for dt in dtypes:
        for n in sizes:
            A = rand((n, n), dt, n)
            for name, layout in _layouts(n, p):
                D = codistributed(A, layout)
                lab = f"{np.dtype(dt).name} n={n} {name}"
                _check_eigh(ck, lab, A, D, dt)
                _check_eig(ck, lab, A, D, dt)
                _check_svd(ck, lab, A, D, dt)
            D = codistributed(A, codistributor2dbc(None, 2))
            _check_eigh(ck, f"{np.dtype(dt).name} n={n} UPLO=U", A, D, dt, "U")
            C = clustered(n, dt)
            _check_eigh(ck, f"{np.dtype(dt).name} n={n} clustered", C, codistributed(C, codistributor2dbc(None, 3)), dt)
    return ck.bad, ck.count


def svd_suite(dtypes):
    from spmdlab import numlabs

    ck = Checker()
    p = numlabs()
    for dt in dtypes:
        for m, n in ((13, 9), (6, 11), (9, 9)):
            A = rand((m, n), dt, m + n)
            for name, layout in _layouts(max(m, n), p):
                _check_svd(ck, f"{np.dtype(dt).name} {m}x{n} {name}", A, codistributed(A, layout), dt)
            R = rank_deficient(m, n, 3, dt)
            DR = codistributed(R, codistributor2dbc(None, 2))
            _check_svd(ck, f"{np.dtype(dt).name} {m}x{n} rank 3", R, DR, dt, full_rank=False)
            ck.ok(f"{m}x{n} matrix_rank", np.linalg.matrix_rank(DR) == np.linalg.matrix_rank(R) == 3)
            ck.ok(f"{m}x{n} matrix_rank tol", np.linalg.matrix_rank(DR, tol=0.5) == np.linalg.matrix_rank(R, tol=0.5))
            ck.ok(f"{m}x{n} MATLAB rank", spmdlab.rank(DR) == 3)
            t = 1e3 * tol(dt, max(m, n)) * max(1, np.abs(np.linalg.pinv(R, rtol=None)).max())
            ck.ok(f"{m}x{n} pinv rtol=None", np.abs(gather(np.linalg.pinv(DR, rtol=None)) - np.linalg.pinv(R, rtol=None)).max() <= t)
            ck.ok(f"{m}x{n} MATLAB pinv", np.abs(gather(spmdlab.pinv(DR)) - np.linalg.pinv(R, rtol=None)).max() <= t)
            P = gather(np.linalg.pinv(codistributed(A, codistributor2dbc(None, 4)), rcond=1e-3))
            ck.ok(f"{m}x{n} pinv rcond", np.abs(P - np.linalg.pinv(A, rcond=1e-3)).max() <= 1e2 * tol(dt, max(m, n)))
        A = rand((7, 7), dt, 1)
        D = codistributed(A, codistributor2dbc(None, 2))
        for pp in (None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"):
            r = np.linalg.cond(D, pp)
            ck.ok(f"cond p={pp}", abs(r / np.linalg.cond(A, pp) - 1) <= 1e2 * tol(dt, 7), f"{r} {np.linalg.cond(A, pp)}")
        ck.ok("MATLAB cond", abs(spmdlab.cond(D) / np.linalg.cond(A) - 1) <= 1e2 * tol(dt, 7))
        ck.ok("MATLAB cond 1", abs(spmdlab.cond(D, 1) / np.linalg.cond(A, 1) - 1) <= 1e2 * tol(dt, 7))
        ck.ok("cond singular", np.linalg.cond(codistributed(np.zeros((4, 4), dt)), 1) == np.inf)
    return ck.bad, ck.count


def matlab_suite():
    ck = Checker()
    n = 10
    A = rand((n, n), np.float64, 2)
    D = codistributed(A, codistributor2dbc(None, 3))
    e = spmdlab.eig(D)
    ck.ok("eig values", np.allclose(np.sort_complex(e), np.sort_complex(np.linalg.eigvals(A))))
    V, Dm = spmdlab.eig(D, nargout=2)
    ck.ok("eig V D", isinstance(Dm, codistributed) and np.allclose(A @ gather(V), gather(V) @ gather(Dm)))
    S = A + A.T
    DS = codistributed(S, codistributor2dbc(None, 3))
    e = spmdlab.eig(DS)
    ck.ok("eig Hermitian: real ascending", e.dtype == np.float64 and np.allclose(e, np.linalg.eigvalsh(S)))
    V, Dm = spmdlab.eig(DS, nargout=2)
    Vg = gather(V)
    ck.ok("eig Hermitian V orthonormal", np.allclose(Vg.T @ Vg, np.eye(n)) and np.allclose(S @ Vg, Vg @ gather(Dm)))
    s = spmdlab.svd(D)
    ck.ok("svd values", np.allclose(s, np.linalg.svd(A, compute_uv=False)))
    B = rand((12, 8), np.float64, 3)
    DB = codistributed(B, codistributor2dbc(None, 3))
    for opt in ((), ("econ",)):
        U, Sm, V = spmdlab.svd(DB, *opt, nargout=3)
        Ug, Sg, Vg = gather(U), gather(Sm), gather(V)
        ck.ok(f"svd{opt} shapes", (Ug.shape, Sg.shape, Vg.shape) == (((12, 12), (12, 8), (8, 8)) if not opt
                                                                     else ((12, 8), (8, 8), (8, 8))))
        ck.ok(f"svd{opt} U S V'", np.allclose(Ug @ Sg @ Vg.T, B))
    ck.ok("numpy svdvals", not hasattr(np.linalg, "svdvals")
          or np.allclose(np.linalg.svdvals(D), np.linalg.svd(A, compute_uv=False)))
    ck.ok("norm 2 square", np.isclose(np.linalg.norm(D, 2), np.linalg.norm(A, 2)))
    return ck.bad, ck.count


def error_suite():
    from spmdlab import numlabs

    ck = Checker()
    p = numlabs()
    n = 3 * p + 1
    for bad in (np.nan, np.inf):
        A = rand((n, n), np.float64)
        A[n - 1, n - 2] = bad  # on the last lab's part only
        D = codistributed(A, codistributor2dbc(None, 2))
        S = codistributed(A + A.T, codistributor2dbc(None, 2))
        ck.raises(f"eigh {bad}", np.linalg.LinAlgError, "^Eigenvalues did not converge$", lambda: np.linalg.eigh(S))
        ck.raises(f"eigvalsh {bad}", np.linalg.LinAlgError, "^Eigenvalues did not converge$", lambda: np.linalg.eigvalsh(S))
        ck.raises(f"eig {bad}", np.linalg.LinAlgError, "^Array must not contain infs or NaNs$", lambda: np.linalg.eig(D))
        ck.raises(f"eigvals {bad}", np.linalg.LinAlgError, "infs or NaNs", lambda: np.linalg.eigvals(D))
        ck.raises(f"svd {bad}", np.linalg.LinAlgError, "^SVD did not converge$", lambda: np.linalg.svd(D))
        ck.raises(f"svd values {bad}", np.linalg.LinAlgError, "SVD did not converge", lambda: np.linalg.svd(D, compute_uv=False))
    R = codistributed(rand((n, n + 2), np.float64), codistributor2dbc(None, 2))
    ck.raises("eigh non-square", np.linalg.LinAlgError, "must be square", lambda: np.linalg.eigh(R))
    ck.raises("eig non-square", np.linalg.LinAlgError, "must be square", lambda: np.linalg.eig(R))
    ck.raises("eigh UPLO", ValueError, "UPLO", lambda: np.linalg.eigh(codistributed(np.eye(n)), UPLO="X"))
    ck.raises("MATLAB eig(A, B)", NotImplementedError, "generalized", lambda: spmdlab.eig(R, R))
    ck.raises("pinv rtol and rcond", ValueError, "can't be both set",
              lambda: np.linalg.pinv(R, rcond=0.1, rtol=0.1))
    ok = np.allclose(np.linalg.eigvalsh(codistributed(np.eye(n), codistributor2dbc(None, 2))), 1)
    ck.ok("pool usable after errors", ok)
    return ck.bad, ck.count


def _run(pools, suite, *args, sizes=(1, 2, 4)):
    total = 0
    for n in sizes:
        res = list(spmd_run(suite, *args, pool=pools(n), timeout=350))
        failures = [f"{n} labs, lab {lab}: {msg}" for lab, (bad, _) in enumerate(res, 1) for msg in bad]
        assert not failures, "\n".join(failures[:30]) + f"\n({len(failures)} failures)"
        total += res[0][1]
    return total


@pytest.mark.parametrize("dtypes", [(np.float64, np.complex64), (np.float32, np.complex128)])
def test_eig_eigh_svd_all_layouts(pools, dtypes):
    assert _run(pools, eig_suite, dtypes, (1, 5, 9)) > 300


def test_eig_eigh_three_and_five_labs(pools):
    assert _run(pools, eig_suite, (np.float64,), (7, 12), sizes=(3, 5)) > 50


def test_svd_pinv_rank_cond(pools):
    assert _run(pools, svd_suite, DTYPES, sizes=(1, 2, 3)) > 100


def test_matlab_names(pools):
    _run(pools, matlab_suite, sizes=(1, 2, 4))


def test_errors_on_every_lab(pools):
    _run(pools, error_suite, sizes=(1, 2, 3))


def test_client_distributed(pools):
    """numpy's and MATLAB's names on a client ``distributed``: the call runs on the labs."""
    pool = pools(2)
    A = rand((10, 10), np.float64, 5)
    S = A + A.T
    DS = distributed(S, codistributor2dbc(None, 3), pool=pool)
    w, V = np.linalg.eigh(DS)
    assert isinstance(V, distributed) and np.allclose(w, np.linalg.eigvalsh(S))
    assert np.allclose(S @ gather(V), gather(V) * w)
    assert np.allclose(np.linalg.eigvalsh(DS), np.linalg.eigvalsh(S))
    D = distributed(A, codistributor1d(2), pool=pool)
    assert np.allclose(np.sort_complex(np.linalg.eigvals(D)), np.sort_complex(np.linalg.eigvals(A)))
    U, s, Vh = np.linalg.svd(D)
    assert np.allclose((gather(U) * s) @ gather(Vh), A)
    assert np.allclose(gather(np.linalg.pinv(D)), np.linalg.pinv(A))
    assert np.linalg.matrix_rank(D) == 10 and np.isclose(np.linalg.cond(D), np.linalg.cond(A))
    assert np.allclose(np.sort_complex(spmdlab.eig(D)), np.sort_complex(np.linalg.eigvals(A)))
    Vm, Dm = spmdlab.eig(DS, nargout=2)
    assert np.allclose(S @ gather(Vm), gather(Vm) @ gather(Dm))
    assert spmdlab.rank(D) == 10 and np.isclose(spmdlab.cond(D), np.linalg.cond(A))


# --------------------------------------------------------------------------- memory
def _mem(op):
    import tracemalloc

    fn = {"eigh": np.linalg.eigh, "eigvalsh": np.linalg.eigvalsh, "svd": np.linalg.svd,
          "svdvals": lambda x: np.linalg.svd(x, compute_uv=False), "eig": np.linalg.eig}[op]
    N, nb = 960, 16
    fn(codistributed.randn(40, 40, codist=codistributor2dbc([2, 2], nb), seed=3))  # imports, communicators
    D = codistributed.randn(N, N, codist=codistributor2dbc([2, 2], nb), seed=4)
    if op in ("eigh", "eigvalsh"):
        D = D + D.T
    local = spmdlab.getLocalPart(D).nbytes
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    out = fn(D)
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    del out
    return peak, local, N * nb * 8, N * N * 8


@pytest.mark.parametrize("op,parts", [("eigvalsh", 3), ("svdvals", 3), ("eigh", 6), ("svd", 8), ("eig", 6)])
def test_memory_local_part_plus_panels(pools, op, parts):
    """A lab holds its part, a few copies of it (the work copy, the mirrored triangle,
    the vectors and their redistribution; complex eigenvectors of a real matrix count
    twice) and O(N nb) panels.
    ``eig`` keeps the n x n Hessenberg problem, ``svd`` the bidiagonal's n x n singular
    vectors on lab 1 (the README says so): the other labs are held to the bound."""
    res = list(spmd_run(_mem, op, pool=pools(4), timeout=200))
    for lab, (peak, local, panel, full) in enumerate(res, 1):
        if op in ("eig", "svd") and lab == 1:
            assert peak < 8 * full
            continue
        assert peak < parts * local + 12 * panel, (lab, peak / local, local, panel)
