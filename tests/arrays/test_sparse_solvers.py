"""Krylov solvers on sparse codistributed matrices (issue 25): each solver's solution,
flag, iteration count (within 2) and residual history against scipy.sparse.linalg's
same method on the same problem, at 1, 2 and 5 labs, with uneven partitions and a lab
holding no rows, float32/float64/complex128; MATLAB's flags; bad input raised as one
error on every lab, the pool usable after.
"""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import spmdlab
from spmdlab import SpmdError, codistributed, codistributor1d, gather

pytestmark = pytest.mark.timeout(300)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def poisson(k):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    return sp.csr_array(sp.kron(T, sp.eye(k)) + sp.kron(sp.eye(k), T))


def problem(kind, dtype, k=8):
    A = poisson(k)
    n = A.shape[0]
    if kind == "nonsym":
        A = A + 0.4 * sp.diags([1.0, -1.0], [-1, 1], shape=(n, n))
    if np.dtype(dtype).kind == "c":
        U = sp.diags([1.0], [1], shape=(n, n))
        A = A + (0.05j if kind == "spd" else 0.3j) * (U - U.T)
    A = sp.csr_array(A.astype(dtype))
    b = (np.sin(np.arange(n) + 1.0) + (0.5j * np.cos(np.arange(n)) if np.dtype(dtype).kind == "c" else 0)).astype(dtype)
    return A, b


def scipy_run(method, A, b, tol, maxit, M=None, restart=None):
    """x, info, iterations and per-iteration residual norms of scipy's method."""
    hist = []
    if method == "pcg":
        x, info = spla.cg(A, b, rtol=tol, maxiter=maxit, M=M, callback=lambda xk: hist.append(np.linalg.norm(b - A @ xk)))
    elif method == "gmres":
        x, info = spla.gmres(A, b, rtol=tol, restart=restart, maxiter=maxit, M=M, callback_type="pr_norm",
                             callback=lambda r: hist.append(r * np.linalg.norm(b)))
    elif method == "minres":
        x, info = spla.minres(A, b, rtol=tol, maxiter=maxit, M=M, callback=lambda xk: hist.append(np.linalg.norm(b - A @ xk)))
    else:
        fn = {"bicgstab": spla.bicgstab, "bicg": spla.bicg, "cgs": spla.cgs}[method]
        x, info = fn(A, b, rtol=tol, maxiter=maxit, M=M, callback=lambda xk: hist.append(np.linalg.norm(b - A @ xk)))
    return x, info, len(hist), np.array(hist)


def solver_suite(pkind):
    """On the labs: every solver on every dtype, compared with scipy (differences listed)."""
    from spmdlab.arrays import sparse as spk

    nl = spmdlab.numlabs()
    bad = []
    for dtype in ("float32", "float64", "complex128"):
        single = dtype == "float32"
        tol = 1e-5 if single else 1e-9
        for method, kind in (("pcg", "spd"), ("minres", "spd"), ("gmres", "nonsym"), ("bicgstab", "nonsym"),
                             ("bicg", "nonsym"), ("cgs", "nonsym")):
            if method == "minres" and dtype == "complex128":
                continue  # scipy's minres is for real symmetric problems
            A, b = problem(kind, dtype)
            n = A.shape[0]
            part = None if pkind == "default" or nl == 1 else [0] + codistributor1d.defaultPartition(n, nl - 1)
            S = codistributed(A, codistributor1d(1, part, A.shape))
            for precond in (None, "jacobi"):
                if method == "gmres" and precond:
                    continue  # scipy's gmres residuals are preconditioned ones; checked apart
                M = spk.jacobi(S) if precond else None
                Ms = spla.LinearOperator(A.shape, matvec=lambda r, d=A.diagonal(): r / d,
                                         rmatvec=lambda r, d=A.diagonal(): r / d.conj(), dtype=A.dtype) \
                    if precond else None
                if method == "gmres":
                    x, flag, relres, it, resvec = spk.gmres(S, b, 20, tol, 20)
                    xs, info, its, hist = scipy_run(method, A, b, tol, 20, restart=20)
                    it = (it[0] - 1) * 20 + it[1]
                else:
                    x, flag, relres, it, resvec = getattr(spk, method)(S, b, tol, 400, M)
                    xs, info, its, hist = scipy_run(method, A, b, tol, 400, Ms)
                case = (dtype, method, precond)
                x = gather(x)
                err = np.linalg.norm(x - xs) / np.linalg.norm(xs)
                if flag != 0 or info != 0:
                    bad.append(f"{case}: flag {flag}, scipy info {info}")
                if err > (1e-3 if single else 1e-6):
                    bad.append(f"{case}: solution differs by {err:.2e}")
                true_rel = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
                if not abs(true_rel - relres) <= (1e-4 if single else 1e-8) + 1e-2 * relres or relres > tol:
                    bad.append(f"{case}: relres {relres:.3e}, true {true_rel:.3e}")
                # scipy's minres stops on norm(r) / (norm(A) norm(x) + norm(b)), looser than
                # MATLAB's norm(r) <= tol norm(b): in single precision it stops a few steps early
                if abs(np.ceil(it) - its) > 2 and not (single and method == "minres"):
                    bad.append(f"{case}: {it} iterations, scipy {its}")
                if method == "bicgstab":
                    resvec = resvec[2::2]  # the full iterations
                else:
                    resvec = resvec[1:]
                k = min(len(resvec), len(hist), 8)
                if not single and not np.allclose(resvec[:k], hist[:k], rtol=1e-6, atol=1e-12 * np.linalg.norm(b)):
                    bad.append(f"{case}: residuals {resvec[:k]} vs scipy {hist[:k]}")
    return bad


@pytest.mark.parametrize("nlabs,pkind", [(1, "default"), (2, "empty-first"), (2, "default"), (5, "empty-first")])
def test_solvers_match_scipy(pools, nlabs, pkind):
    for bad in spmdlab.spmd_run(solver_suite, pkind, pool=pools(nlabs), timeout=280):
        assert bad == []


def preconditioner_suite():
    from spmdlab.arrays import sparse as spk

    out = {}
    A, b = problem("spd", "float64", 12)
    S = codistributed(A, codistributor1d(1))
    x, flag, relres, it0, _ = spk.pcg(S, b, 1e-8, 500)
    out["none"] = (flag, it0)
    for name, M in (("jacobi", spk.jacobi(S)), ("ilu", spk.ilu(S)), ("ichol", spk.ichol(S))):
        x, flag, relres, it, _ = spk.pcg(S, b, 1e-8, 500, M)
        out[name] = (flag, it, float(np.linalg.norm(b - A @ gather(x)) / np.linalg.norm(b)))
    x, flag, relres, it, _ = spk.gmres(S, b, 10, 1e-8, 50, spk.ilu(S))
    out["gmres-ilu"] = (flag, it, float(np.linalg.norm(b - A @ gather(x)) / np.linalg.norm(b)))
    x, flag, relres, it, _ = spk.bicgstab(S, b, 1e-8, 500, spk.ilu(S))
    out["bicgstab-ilu"] = (flag, it, float(np.linalg.norm(b - A @ gather(x)) / np.linalg.norm(b)))
    # a function as A and as M (MATLAB's function handles), a dense codistributed A
    x, flag, relres, it, _ = spk.pcg(lambda v: S @ v, b, 1e-8, 500, lambda r: r)
    out["afun"] = (flag, it, it0)
    x, flag, relres, it, _ = spk.pcg(codistributed(A.toarray()), b, 1e-8, 500)
    out["dense"] = (flag, it, it0)
    # rectangular least squares (lsqr) against scipy
    R = sp.csr_array(sp.random_array((60, 25), density=0.2, rng=np.random.default_rng(2)) + sp.eye(60, 25))
    rb = np.cos(np.arange(60.0))
    x, flag, relres, it, _ = spk.lsqr(codistributed(R, codistributor1d(1)), rb, 1e-10, 200)
    xs = spla.lsqr(R, rb, atol=1e-12, btol=1e-12)[0]
    out["lsqr"] = (flag, float(np.linalg.norm(gather(x) - xs) / np.linalg.norm(xs)))
    # MATLAB's flag 1: maxit reached, x the best iterate
    x, flag, relres, it, resvec = spk.pcg(S, b, 1e-12, 3)
    out["maxit"] = (flag, it, len(resvec))
    return out


@pytest.mark.parametrize("nlabs", [1, 3])
def test_preconditioners_and_operator_forms(pools, nlabs):
    for out in spmdlab.spmd_run(preconditioner_suite, pool=pools(nlabs), timeout=200):
        assert out["none"][0] == 0
        for name in ("jacobi", "ilu", "ichol", "gmres-ilu", "bicgstab-ilu"):
            assert out[name][0] == 0 and out[name][-1] < 1e-7, (name, out[name])
        assert out["ilu"][1] < out["none"][1] and out["ichol"][1] < out["none"][1]
        assert out["afun"][0] == 0 and abs(out["afun"][1] - out["afun"][2]) <= 2
        assert out["dense"][0] == 0 and abs(out["dense"][1] - out["dense"][2]) <= 2
        assert out["lsqr"][0] == 0 and out["lsqr"][1] < 1e-6
        assert out["maxit"] == (1, 3, 4)


def test_non_spd_matrix_gives_matlab_flag_4_and_a_nan_preconditioner_flag_2(pools):
    def go():
        from spmdlab.arrays import sparse as spk

        A, b = problem("spd", "float64")
        S = codistributed(A, codistributor1d(1))
        return (spk.pcg(-S, b, 1e-8, 100)[1], spk.pcg(S, b, 1e-8, 100, lambda r: r * np.nan)[1],
                spk.bicgstab(S, b, 1e-8, 100, lambda r: r * np.nan)[1])

    assert list(spmdlab.spmd_run(go, pool=pools(2), timeout=60)) == [(4, 2, 2)] * 2


def test_bad_input_is_one_error_on_every_lab_and_the_pool_stays_usable(pools):
    pool = pools(3)

    def case(k):
        from spmdlab.arrays import sparse as spk

        A, b = problem("spd", "float64", 4)
        S = codistributed(A, codistributor1d(1))
        if k == 0:
            spk.pcg(codistributed(sp.random_array((6, 5), density=0.5, rng=np.random.default_rng(1))), np.ones(6))
        elif k == 1:
            spk.pcg(S, np.ones(5))
        elif k == 2:
            b[3] = np.nan
            spk.gmres(S, b)
        elif k == 3:
            spk.pcg(S, b, 1e-6, 10, "jacobi")
        elif k == 4:
            spk.jacobi(codistributed(A - sp.diags(A.diagonal()), codistributor1d(1)))
        elif k == 5:
            bad = A.copy()
            bad.data[0] = np.inf
            spk.bicgstab(codistributed(bad, codistributor1d(1)), b)

    messages = [(ValueError, r"A must be square, got 6x5"), (ValueError, r"A is 16x16 but b has 5 entries"),
                (ValueError, r"NaN or Inf"), (TypeError, r"M1 must be a preconditioner"),
                (ValueError, r"zeros on its diagonal"), (ValueError, r"NaN or Inf")]
    for k, (kind, message) in enumerate(messages):
        with pytest.raises(SpmdError, match=message) as info:
            spmdlab.spmd_run(case, k, pool=pool, timeout=60)
        assert set(info.value.errors) == {1, 2, 3}
        assert {e.type_name for e in info.value.errors.values()} == {kind.__name__}
    assert list(spmdlab.spmd_run(lambda: spmdlab.labindex(), pool=pool, timeout=30)) == [1, 2, 3]


def test_solvers_at_the_client_on_a_distributed_matrix(pools):
    pool = pools(2)
    A, b = problem("spd", "float64", 10)
    D = spmdlab.distributed(A, codistributor1d(1), pool=pool)
    x, flag, relres, it, resvec = spmdlab.pcg(D, b, 1e-10, 300, spmdlab.jacobi(D))
    xs, info, its, _ = scipy_run("pcg", A, b, 1e-10, 300, spla.LinearOperator(A.shape, matvec=lambda r: r / A.diagonal()))
    assert flag == 0 and info == 0 and abs(it - its) <= 2
    assert np.allclose(gather(x), xs, rtol=1e-7)
    x, flag, relres, it, resvec = spmdlab.gmres(D, b, 10, 1e-10, 20, spmdlab.ilu(D))
    assert flag == 0 and np.allclose(gather(x), xs, rtol=1e-7)
    other = spmdlab.distributed(A, pool=pool)
    with pytest.raises(ValueError, match=r"D must be A"):
        spmdlab.pcg(D, b, 1e-10, 300, spmdlab.jacobi(other))


def lsqr_preconditioned_suite():
    """lsqr with MATLAB's right preconditioner M (n x n) against scipy's lsqr on A M^-1:
    M as a matrix, as a function M(x, 'notransp'/'transp'), as jacobi(M), and as M1 M2."""
    from spmdlab.arrays import sparse as spk

    rng = np.random.default_rng(4)
    scale = 10.0 ** rng.uniform(-3, 3, 25)  # badly scaled columns: the preconditioner undoes it
    R = sp.csr_array((sp.random_array((60, 25), density=0.2, rng=rng) + sp.eye(60, 25)) @ sp.diags_array(scale))
    b = R @ np.cos(np.arange(25.0))  # a consistent system: MATLAB's first test stops both
    d = sp.linalg.norm(R, axis=0)
    B = sp.csr_array(R @ sp.diags_array(1 / d))
    ys, istop, it_s = spla.lsqr(B, b, atol=0, btol=1e-10, conlim=1e14, iter_lim=500)[:3]
    want = ys / d
    S = codistributed(R, codistributor1d(1))
    Md = codistributed(sp.diags_array(d).tocsr(), codistributor1d(1))
    half = codistributed(sp.diags_array(np.sqrt(d)).tocsr(), codistributor1d(1))
    out = {"scipy": (istop, it_s)}
    forms = {"matrix": (Md, None), "function": (lambda v, flag: v / codistributed(d), None),
             "jacobi": (spk.jacobi(Md), None), "M1 M2": (half, half), "none": (None, None)}
    for name, (M1, M2) in forms.items():
        x, flag, relres, it, resvec = spk.lsqr(S, b, 1e-10, 500, M1, M2)
        err = float(np.linalg.norm(gather(x) - want) / np.linalg.norm(want))
        out[name] = (flag, it, err, relres)
    return out


@pytest.mark.parametrize("nlabs", [1, 3])
def test_lsqr_right_preconditioner_matches_scipy(pools, nlabs):
    for out in spmdlab.spmd_run(lsqr_preconditioned_suite, pool=pools(nlabs), timeout=200):
        it_s = out["scipy"][1]
        for name in ("matrix", "function", "jacobi", "M1 M2"):
            flag, it, err, relres = out[name]
            assert flag == 0 and abs(it - it_s) <= 2 and err < 1e-6 and relres <= 1e-10, (name, out[name], it_s)
        assert out["none"][1] > out["matrix"][1] + 5, out  # the scaling slowed the plain method
