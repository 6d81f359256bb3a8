"""Dense linear algebra, LU/Cholesky side: solve, mldivide, mrdivide, lu, chol,
inv, det, slogdet on real pools of 1, 2 and 4 labs over 2dbc grids 1x1, 1x2, 2x1, 2x2,
1x4, 4x1, compared with numpy/scipy on the gathered matrix with the issue's backward
error ||Ax - b|| / (||A|| ||x|| n eps) <= 30.

The tests marked ``nompi`` need no pool and no MPI: the index math of ``grid.py``, the
in-place GEMM on strided views, and the algorithms at the client (a pool of one lab).
"""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import (
    chol,
    codistributed,
    codistributor1d,
    codistributor2dbc,
    det,
    distributed,
    gather,
    inv,
    lu,
    mldivide,
    mrdivide,
    solve_triangular,
)
from spmdlab.arrays.blas import gemm
from spmdlab.arrays.linalg import SINGULAR_WARNING
from spmdlab.arrays.linalg.grid import ProcessGrid, g2l, l2g, local_before, numroc, to_2dbc

pytestmark = pytest.mark.timeout(240)
nompi = pytest.mark.nompi
cloudpickle.register_pickle_by_value(sys.modules[__name__])

GRIDS = {1: [[1, 1]], 2: [[1, 2], [2, 1]], 4: [[2, 2], [1, 4], [4, 1]]}
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# (n, block size): 1x1; n not a multiple of the block; n below grid x block; several panels
SIZES = [(1, 4), (13, 4), (5, 4), (40, 8)]


# --------------------------------------------------------------------------- no MPI
@nompi
@pytest.mark.parametrize("m", [0, 1, 7, 64, 100, 129])
@pytest.mark.parametrize("nb", [1, 3, 64])
@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_index_maps_agree_with_the_codistributor(m, nb, p):
    c = codistributor2dbc([p, 1], nb, "row", (m, 1))
    total = 0
    for ip in range(p):
        rows = c.globalIndices(1, ip + 1, p)
        assert numroc(m, nb, ip, p) == rows.size
        total += rows.size
        np.testing.assert_array_equal(l2g(np.arange(rows.size), nb, ip, p), rows)
        owner, local = g2l(rows, nb, p)
        assert np.all(owner == ip) and np.array_equal(local, np.arange(rows.size))
        for g in range(0, m + 1, max(1, m // 7)):
            assert local_before(g, nb, ip, p) == int(np.count_nonzero(rows < g))
    assert total == m


@nompi
@pytest.mark.parametrize("grid,orientation", [([2, 3], "row"), ([2, 3], "col"), ([1, 4], "row"),
                                              ([4, 1], "col")])
def test_process_grid_matches_the_layout(grid, orientation):
    n = grid[0] * grid[1]
    c = codistributor2dbc(grid, 3, orientation, (17, 11))
    seen = set()
    for lab in range(1, n + 1):
        G = ProcessGrid(c, lab, n)
        assert (G.myrow, G.mycol) == c.gridCoords(lab, n)
        assert G.lab_at(G.myrow, G.mycol) == lab
        assert (G.mloc, G.nloc) == c.localShape(lab, n)
        np.testing.assert_array_equal(G.global_rows(), c.globalIndices(1, lab, n))
        np.testing.assert_array_equal(G.global_cols(), c.globalIndices(2, lab, n))
        seen.add((G.myrow, G.mycol))
    assert len(seen) == n


@nompi
@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_in_place_on_strided_views(dtype):
    rng = np.random.default_rng(0)
    for corder in "CF":
        for aorder in "CF":
            big = np.asarray(rng.standard_normal((30, 40)), dtype=dtype, order=corder)
            before = big.copy()
            C = big[3:20, 5:33]
            A = np.asarray(rng.standard_normal((17, 9)), dtype=dtype, order=aorder)
            B = np.asarray(rng.standard_normal((20, 28)), dtype=dtype)[2:11]
            want = C - A @ B
            gemm(-1.0, A, B, 1.0, C)
            tol = 1e-4 if np.dtype(dtype).itemsize <= 8 and dtype != np.float64 else 1e-10
            np.testing.assert_allclose(C, want, rtol=tol, atol=tol)
            outside = np.ones(big.shape, bool)
            outside[3:20, 5:33] = False
            np.testing.assert_array_equal(big[outside], before[outside])  # nothing else written


def backward_error(A, x, b):
    A, x, b = (np.asarray(v, dtype=np.complex128) for v in (A, x, b))
    n = max(A.shape[0], 1)
    eps = np.finfo(np.result_type(np.asarray(A).real.dtype, np.float32)).eps
    den = np.linalg.norm(A, 1) * np.linalg.norm(x.reshape(x.shape[0], -1), 1) * n * eps
    return np.linalg.norm((A @ x - b).reshape(A.shape[0], -1), 1) / den if den else 0.0


@nompi
@pytest.mark.parametrize("dtype", DTYPES)
def test_at_the_client_one_lab(dtype):
    """At the client the same code runs as on a pool of one lab (no MPI)."""
    rng = np.random.default_rng(1)
    A = rng.standard_normal((9, 9)).astype(dtype)
    b = rng.standard_normal(9).astype(dtype)
    D = codistributed(A, codistributor2dbc([1, 1], 4))
    x = gather(np.linalg.solve(D, b))
    eps = np.finfo(dtype).eps
    assert backward_error(A, x, b) * np.finfo(np.complex128).eps / eps <= 30
    L, U, P = (gather(t) for t in lu(D))
    np.testing.assert_allclose(P @ A, L @ U, atol=100 * eps * np.abs(A).max())


# --------------------------------------------------------------------------- lab-side suites
def suite(grids, sizes, dtypes):
    """Every function on every grid/size/dtype; returns the failures (runs on each lab)."""

    import numpy as np

    from spmdlab import chol, codistributed, codistributor2dbc, det, gather, inv, lu, mldivide

    bad = []
    rng = np.random.default_rng(5)

    def berr(M, x, rhs, eps):
        M, x, rhs = (np.asarray(v, dtype=np.complex128) for v in (M, x, rhs))
        x2, r2 = x.reshape(x.shape[0], -1), rhs.reshape(rhs.shape[0], -1)
        den = np.linalg.norm(M, 1) * np.linalg.norm(x2, 1) * M.shape[0] * eps
        return np.linalg.norm(M @ x2 - r2, 1) / den if den else 0.0

    for grid in grids:
        for n, nb in sizes:
            for dt in dtypes:
                dt = np.dtype(dt)
                eps = np.finfo(dt).eps
                A = rng.standard_normal((n, n))
                b = rng.standard_normal((n, 3))
                if dt.kind == "c":
                    A = A + 1j * rng.standard_normal((n, n))
                    b = b + 1j * rng.standard_normal((n, 3))
                A, b = A.astype(dt), b.astype(dt)
                c = codistributor2dbc(grid, nb)
                D = codistributed(A, c)
                tag = f"grid {grid} n={n} nb={nb} {dt}"

                def check(label, value, limit=30.0):
                    if not (value <= limit):
                        bad.append(f"{tag} {label}: {value}")

                x = gather(np.linalg.solve(D, b))
                check("np.linalg.solve", berr(A, x, b, eps))
                if x.dtype != dt:
                    bad.append(f"{tag} solve dtype {x.dtype}")
                x = gather(mldivide(D, codistributed(b, codistributor1d(1))))
                check("mldivide 1d rhs", berr(A, x, b, eps))
                x = gather(mldivide(D, b[:, 0]))
                check("mldivide vector", berr(A, x, b[:, 0], eps))
                if x.shape != (n,):
                    bad.append(f"{tag} vector solution shape {x.shape}")
                x = gather(mrdivide(b.T, D))
                check("mrdivide", berr(A.T, x.T, b, eps))
                L, U, P = (gather(t) for t in lu(D))
                scale = np.abs(A).max() * n * eps
                check("lu P A = L U", np.abs(P @ A - L @ U).max() / scale)
                if np.any(np.triu(L, 1)) or np.any(np.tril(U, -1)) or np.any(np.diag(L) != 1):
                    bad.append(f"{tag} lu: L/U not triangular")
                L2, U2, p = lu(D, "vector")
                check("lu vector", np.abs(A[p] - gather(L2) @ gather(U2)).max() / scale)
                # the pivots are partial pivoting's: |L| <= 1 (complex: <= sqrt 2, as
                # LAPACK's izamax compares |re| + |im|)
                check("lu |L| bound", np.abs(L).max(), (1.5 if dt.kind == "c" else 1) + 10 * eps)
                S = A @ A.conj().T + n * np.eye(n, dtype=dt)
                DS = codistributed(S, c)
                Ss = np.abs(S).max() * n * eps
                R = gather(chol(DS))
                check("chol R^H R = A", np.abs(R.conj().T @ R - S).max() / Ss)
                if np.any(np.tril(R, -1)):
                    bad.append(f"{tag} chol not upper")
                Lc = gather(chol(DS, "lower"))
                check("chol lower", np.abs(Lc @ Lc.conj().T - S).max() / Ss)
                Ln = gather(np.linalg.cholesky(DS))
                check("np.linalg.cholesky = numpy", np.abs(Ln - np.linalg.cholesky(S)).max() / Ss)
                x = gather(mldivide(DS, b))  # Hermitian, positive diagonal: Cholesky path
                check("mldivide Hermitian", berr(S, x, b, eps))
                T = np.triu(A) + n * np.eye(n, dtype=dt)
                x = gather(mldivide(codistributed(T, c), b))  # triangular: substitution
                check("mldivide triangular", berr(T, x, b, eps))
                x = gather(solve_triangular(codistributed(T.T, c), b, lower=True))
                check("solve_triangular lower", berr(T.T, x, b, eps))
                Ai = gather(inv(D))
                check("inv", np.abs(Ai @ A - np.eye(n)).max() / (np.linalg.cond(A) * n * eps))
                Ai2 = gather(np.linalg.inv(D))
                check("np.linalg.inv", np.abs(Ai2 - Ai).max() / (np.abs(Ai).max() * n * eps + 1e-300))
                d, d0 = det(D), np.linalg.det(A.astype(np.complex128))
                if abs(d0) < np.finfo(dt).max / 100:
                    check("det", abs(d - d0) / abs(d0), 1e3 * n * eps)
                elif not np.isinf(abs(d)):
                    bad.append(f"{tag} det {d}: numpy's is {d0}, beyond {dt}")
                s, l = np.linalg.slogdet(D)
                s0, l0 = np.linalg.slogdet(A.astype(np.complex128))
                check("slogdet sign", abs(s - s0), 1e3 * n * eps)
                check("slogdet log", abs(l - l0) / max(1.0, abs(l0)), 1e3 * n * eps)
                if np.asarray(d).dtype != dt:
                    bad.append(f"{tag} det dtype {np.asarray(d).dtype}")
    return bad


def run_suite(pools, nlabs, grids, sizes=SIZES, dtypes=DTYPES):
    pool = pools(nlabs)
    results = spmdlab.spmd_run(suite, grids, sizes, dtypes, pool=pool, timeout=200)
    failures = [f"lab {k}: {m}" for k, msgs in enumerate(results, 1) for m in msgs]
    assert not failures, "\n".join(failures[:30])


def test_one_lab(pools):
    run_suite(pools, 1, GRIDS[1])


@pytest.mark.parametrize("grid", GRIDS[2], ids=lambda g: f"{g[0]}x{g[1]}")
def test_two_labs(pools, grid):
    run_suite(pools, 2, [grid])


@pytest.mark.parametrize("grid", GRIDS[4], ids=lambda g: f"{g[0]}x{g[1]}")
def test_four_labs(pools, grid):
    run_suite(pools, 4, [grid], sizes=[(1, 4), (5, 4), (23, 4)])


def test_several_panels_and_one_lab_per_block(pools):
    """n = 70 with block 2 on 2x2: 35 panels, pivots crossing grid rows at every step."""
    run_suite(pools, 4, [[2, 2]], sizes=[(70, 2)], dtypes=[np.float64, np.complex64])


# --------------------------------------------------------------------------- bad input
def singular_suite(grid):
    import warnings as _w

    import numpy as np

    from spmdlab import codistributed, codistributor2dbc, det, inv, mldivide

    out = []
    A = np.arange(36.0).reshape(6, 6)  # rank 2: a zero pivot appears at step 3
    A[:, 4] = 0  # exactly singular whatever rounding does
    D = codistributed(A, codistributor2dbc(grid, 2))
    for fn in (np.linalg.solve, lambda a, b: np.linalg.inv(a)):
        try:
            fn(D, np.ones(6))
            out.append("no error")
        except np.linalg.LinAlgError as e:
            out.append(str(e))
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        x = mldivide(D, np.ones(6))
        Ai = inv(D)
    out.append([str(w.message) for w in caught])
    out.append(bool(np.all(np.isfinite(getattr(x, "_local", np.zeros(0))))))
    out.append(float(det(D)))
    out.append(tuple(float(v) for v in np.linalg.slogdet(D)))
    return out


@pytest.mark.parametrize("nlabs,grid", [(1, [1, 1]), (2, [2, 1]), (4, [2, 2])])
def test_singular_matrix_is_reported_on_every_lab(pools, nlabs, grid):
    results = spmdlab.spmd_run(singular_suite, grid, pool=pools(nlabs), timeout=60)
    assert len(results) == nlabs
    for r in results:
        assert r[0] == "Singular matrix" and r[1] == "Singular matrix", r
        assert r[2] == [SINGULAR_WARNING, SINGULAR_WARNING], r
        assert r[4] == 0.0 and r[5] == (0.0, -np.inf), r


def test_uncaught_singular_error_names_every_lab_and_does_not_hang(pools):
    pool = pools(4)
    A = np.ones((8, 8))

    def go(A):
        return np.linalg.solve(codistributed(A, codistributor2dbc([2, 2], 2)), np.ones(8))

    with pytest.raises(spmdlab.SpmdError) as info:
        spmdlab.spmd_run(go, A, pool=pool, timeout=60)
    text = str(info.value)
    assert "LinAlgError" in text and "Singular matrix" in text and "labs 1-4" in text


def test_chol_names_the_failing_leading_minor(pools):
    def go():
        import numpy as np

        from spmdlab import chol, codistributed, codistributor2dbc

        A = np.eye(9) * 4.0
        A[6, 6] = -1.0  # the leading minor of order 7 is not positive definite
        out = []
        for fn in (lambda D: chol(D), lambda D: np.linalg.cholesky(D), lambda D: chol(D, "lower")):
            try:
                fn(codistributed(A, codistributor2dbc([2, 2], 2)))
                out.append("no error")
            except np.linalg.LinAlgError as e:
                out.append(str(e))
        return out

    for r in spmdlab.spmd_run(go, pool=pools(4), timeout=60):
        assert all("order 7" in m for m in r), r
        assert "positive definite" in r[0]


def test_clear_errors_for_bad_shapes_and_types(pools):
    def go():
        import numpy as np

        from spmdlab import chol, codistributed, codistributor2dbc, det, inv, lu, mldivide

        c = codistributor2dbc([1, 2], 2)
        R = codistributed(np.ones((4, 6)), c)
        S = codistributed(np.eye(4) * 2, c)
        out = {}
        cases = {
            "solve non-square": lambda: np.linalg.solve(R, np.ones(4)),
            "inv non-square": lambda: inv(R),
            "det non-square": lambda: det(R),
            "chol non-square": lambda: chol(R),
            "mismatch": lambda: mldivide(S, np.ones(5)),
            "float16": lambda: np.linalg.solve(codistributed(np.eye(4, dtype=np.float16), c), np.ones(4)),
            "lu option": lambda: lu(S, "bogus"),
        }
        for k, f in cases.items():
            try:
                f()
                out[k] = "no error"
            except Exception as e:
                out[k] = f"{type(e).__name__}: {e}"
        x = np.linalg.solve(codistributed(np.eye(4, dtype=np.int64) * 2, c), np.ones(4, dtype=np.int32))
        out["int"] = (str(x.dtype), gather_all(x))
        return out

    def gather_all(x):
        from spmdlab import gather

        return gather(x).tolist()

    for r in spmdlab.spmd_run(go, pool=pools(2), timeout=60):
        assert r["solve non-square"].startswith("LinAlgError") and "square" in r["solve non-square"]
        for k in ("inv non-square", "det non-square", "chol non-square"):
            assert "square" in r[k], r[k]
        assert r["mismatch"].startswith("ValueError") and "4 rows" in r["mismatch"], r["mismatch"]
        assert r["float16"].startswith("TypeError") and "float16" in r["float16"]
        assert r["lu option"].startswith("ValueError")
        assert r["int"] == ("float64", [0.5] * 4)


# --------------------------------------------------------------------------- the client
def test_client_distributed_and_numpy_names(pools):
    pool = pools(2)
    rng = np.random.default_rng(7)
    A = rng.standard_normal((30, 30))
    b = rng.standard_normal(30)
    with spmdlab.spmd(pool=pool):
        pass
    D = distributed(A, codistributor2dbc([2, 1], 4), pool=pool)
    x = mldivide(D, b)
    assert isinstance(x, distributed)
    assert backward_error(A, gather(x), b) <= 30
    x = np.linalg.solve(D, b)
    assert isinstance(x, distributed) and backward_error(A, gather(x), b) <= 30
    L, U, P = lu(D)
    np.testing.assert_allclose(gather(P) @ A, gather(L) @ gather(U), atol=1e-12)
    S = A @ A.T + 30 * np.eye(30)
    R = gather(chol(distributed(S, pool=pool)))  # a 1-D layout, redistributed internally
    np.testing.assert_allclose(R.T @ R, S, rtol=1e-12, atol=1e-10)
    assert np.isclose(det(D), np.linalg.det(A))
    np.testing.assert_allclose(gather(inv(D)), np.linalg.inv(A), atol=1e-10)


def test_one_d_inputs_are_redistributed_to_2dbc(pools):
    def go():
        import numpy as np

        from spmdlab import codistributed, gather, getCodistributor

        A = np.random.default_rng(2).standard_normal((20, 20))
        D = codistributed(A, codistributor1d(2))
        x = np.linalg.solve(D, np.ones(20))
        E = to_2dbc(D, "t")
        return (type(getCodistributor(E)).__name__, getCodistributor(E).LabGrid,
                float(np.abs(A @ gather(x) - 1).max()))

    for kind, grid, err in spmdlab.spmd_run(go, pool=pools(4), timeout=60):
        assert kind == "codistributor2dbc" and grid == [2, 2] and err < 1e-10


# --------------------------------------------------------------------------- memory
def test_a_lab_holds_its_part_plus_panel_buffers(pools):
    """tracemalloc on the labs: LU + solve of N = 2400 on a 2x2 grid, block 64. A lab's
    part is N^2/4; the factorization copies it once (the input stays intact) and adds
    panel-sized buffers (N x 64: the gathered panel, its broadcast, the U block row,
    the swapped rows); it never holds anything near the whole matrix (N^2)."""
    N, nb = 2400, 64

    def go(N, nb):
        import tracemalloc

        import numpy as np

        from spmdlab import codistributed, codistributor2dbc

        D = codistributed.rand(N, N, codist=codistributor2dbc([2, 2], nb), seed=3)
        b = np.ones(N)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        np.linalg.solve(D, b)
        peak = tracemalloc.get_traced_memory()[1] - before
        tracemalloc.stop()
        return peak

    full, part, panel = N * N * 8, N * N * 8 / 4, N * nb * 8
    for peak in spmdlab.spmd_run(go, N, nb, pool=pools(4), timeout=120):
        assert peak <= part + 8 * panel, (peak / full, peak / part, peak / panel)
        assert peak < 0.5 * full


def test_mldivide_of_a_non_square_matrix_is_least_squares(pools):
    def go():
        import numpy as np

        from spmdlab import codistributed, codistributor2dbc, gather, mldivide

        rng = np.random.default_rng(4)
        A = rng.standard_normal((30, 7))
        b = rng.standard_normal(30)
        x = gather(mldivide(codistributed(A, codistributor2dbc([2, 1], 4)), b))
        return float(np.abs(x - np.linalg.lstsq(A, b, rcond=None)[0]).max())

    for err in spmdlab.spmd_run(go, pool=pools(2), timeout=60):
        assert err < 1e-10


def test_an_error_on_one_lab_mid_factorization_aborts_the_others_and_the_pool_recovers(pools):
    """Lab 2 fails before joining: the others wait in the grid's interruptible waits (the
    communicators' creation or a panel broadcast) and are aborted, never stuck; the pool's
    communicators are renewed (grid communicators freed) and the next solve works."""
    pool = pools(4)

    def go(fail_on):
        import numpy as np

        from spmdlab import codistributed, codistributor2dbc, gather, labindex

        A = np.random.default_rng(1).standard_normal((40, 40)) + 40 * np.eye(40)
        D = codistributed(A, codistributor2dbc([2, 2], 4))
        if labindex() == fail_on:
            raise RuntimeError("lab failed on purpose")
        x = gather(np.linalg.solve(D, np.ones(40)))
        return float(np.abs(A @ x - 1).max())

    with pytest.raises(spmdlab.SpmdError) as info:
        spmdlab.spmd_run(go, 2, pool=pool, timeout=60)
    assert "lab failed on purpose" in str(info.value)
    for err in spmdlab.spmd_run(go, 0, pool=pool, timeout=60):
        assert err < 1e-10
