"""Sparse codistributed matrices (issue 25): every operation against scipy.sparse on the
gathered matrix, by rows and by columns, uneven partitions and labs holding nothing,
float32/float64/complex128, at 1-5 labs; a hypothesis differential over random cases;
the bytes ``S @ x`` moves (only ghost entries); the client's ``distributed(S)``; bad input.
"""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spmdlab
from spmdlab import SpmdError, codistributed, codistributor1d, codistributor2dbc, distributed, gather, spmd

pytestmark = pytest.mark.timeout(300)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def random_matrix(m, n, density, dtype, seed):
    rng = np.random.default_rng(seed)
    A = sp.random_array((m, n), density=density, rng=rng, format="csr", dtype=np.float64)
    if np.dtype(dtype).kind == "c":
        A = A + 1j * sp.random_array((m, n), density=density, rng=rng, format="csr")
    return sp.csr_array(A.astype(dtype))


def partition_for(kind, size, n):
    """Uneven partitions, with labs holding nothing: 'default', 'first-empty', 'last-all'."""
    if kind == "default" or n == 1:
        return None
    if kind == "first-empty":
        rest = codistributor1d.defaultPartition(size, n - 1)
        return [0] + rest
    return [0] * (n - 1) + [size]


def close(a, b, dtype):
    tol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol * (1 + np.abs(b).max(initial=0)))


def check_case(m, n, density, dtype, dim, pkind, seed):
    """On the labs: build S from a replicated scipy matrix, run every operation, compare
    with scipy on the gathered matrix; the list of differences (empty when all agree)."""
    from spmdlab.arrays import sparse as spk
    from spmdlab.arrays.sparse.ops import find, nonzeros

    nl = spmdlab.numlabs()
    A = random_matrix(m, n, density, dtype, seed)
    B = random_matrix(m, n, density, dtype, seed + 1)
    C = random_matrix(n, 4, 0.5, dtype, seed + 2)
    part = partition_for(pkind, (m, n)[dim - 1], nl)
    S = codistributed(A, codistributor1d(dim, part, (m, n)))
    T = codistributed(B, codistributor1d(3 - dim, None, (m, n)))  # the other layout
    R = codistributed(C, codistributor1d(1))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(dtype)
    xl = rng.standard_normal(m).astype(dtype)
    X = rng.standard_normal((n, 3)).astype(dtype)
    D = rng.standard_normal((m, n)).astype(dtype)
    xd = codistributed(x)
    bad = []

    def check(name, got, want):
        if sp.issparse(want):
            want = want.toarray()
        if sp.issparse(got):
            got = got.toarray()
        if not close(got, want, dtype):
            bad.append(f"{name}: got {np.asarray(got)!r:.200} want {np.asarray(want)!r:.200}")

    check("gather", gather(S), A)
    check("getLocalPart type", sp.issparse(spmdlab.getLocalPart(S)), True)
    check("S @ x", gather(S @ x), A @ x)
    check("S @ xd", gather(S @ xd), A @ x)
    check("S @ X", gather(S @ X), A @ X)
    check("S @ Xd", gather(S @ codistributed(X, codistributor1d(1))), A @ X)
    check("x @ S", gather(xl @ S), xl @ A)
    check("S.T", gather(S.T), A.T)
    check("S.H", gather(S.H), A.conj().T)
    check("S.T @ xl", gather(S.T @ xl), A.T @ xl)
    check("S + T", gather(S + T), A + B)
    check("S - T", gather(S - T), A - B)
    check("2 * S", gather(2 * S), 2 * A)
    check("S / 2", gather(S / 2), A / 2)
    check("-S", gather(-S), -A)
    check("S .* D", gather(S.multiply(D)), A.multiply(D))
    check("S .* Dd", gather(S * codistributed(D)), A.multiply(D))
    check("S .* T", gather(S.multiply(T)), A.multiply(B))
    check("abs", gather(abs(S)), abs(A))
    check("np.abs", gather(np.abs(S)), abs(A))
    check("sum", S.sum(), A.sum())
    check("sum 0", gather(S.sum(axis=0)), A.sum(axis=0))
    check("sum 1", gather(S.sum(axis=1)), A.sum(axis=1))
    check("np.sum 1", gather(np.sum(S, axis=1)), A.sum(axis=1))
    for k in (-2, 0, 1):
        check(f"diag {k}", gather(S.diagonal(k)), A.diagonal(k))
        check(f"tril {k}", gather(np.tril(S, k)), sp.tril(A, k))
        check(f"triu {k}", gather(np.triu(S, k)), sp.triu(A, k))
    for o in (1, np.inf, "fro"):
        check(f"norm {o}", np.linalg.norm(S, o), sp.linalg.norm(A, o) if A.nnz else 0.0)
    check("nnz", S.nnz, A.nnz)
    check("nnz()", spk.nnz(S), A.nnz)
    i, j, v = find(S)
    gi, gj, gv = gather(i), gather(j), gather(v)
    order = np.lexsort((gj, gi))
    Ac = sp.coo_array(A)
    Ac.sum_duplicates()
    want = np.lexsort((Ac.col, Ac.row))
    check("find i", gi[order], Ac.row[want])
    check("find j", gj[order], Ac.col[want])
    check("find v", gv[order], Ac.data[want])
    check("nonzeros", np.sort_complex(gather(nonzeros(S))), np.sort_complex(Ac.data[Ac.data != 0]))
    check("full", gather(spk.full(S)), A.toarray())
    check("toarray layout", spmdlab.getCodistributor(S.toarray()) == S.codistributor, True)
    check("S[a:b, :]", gather(S[1:m - 1, :]), A[1:m - 1, :])
    check("S[:, a:b]", gather(S[:, 1:n:2]), A[:, 1:n:2])
    check("S[i, :]", gather(S[m // 2, :]), A[[m // 2], :])
    check("S[:, j]", gather(S[:, n // 2]), A[:, [n // 2]])
    check("S @ R", gather(S @ R), A @ C)
    check("redistribute", gather(spmdlab.redistribute(S, codistributor1d(3 - dim))), A)
    check("redistribute layout", spmdlab.redistribute(S, codistributor1d(3 - dim)).codistributor.Dimension, 3 - dim)
    check("sparse(full(S))", gather(spk.sparse(S.toarray())), A)
    i2, j2 = np.array([0, m - 1, 0]), np.array([0, n - 1, 0])
    v2 = np.array([1, 2, 3], dtype=dtype)
    want2 = sp.coo_array((v2, (i2, j2)), shape=(m, n))
    check("sparse(i, j, v)", gather(spk.sparse(i2, j2, v2, m, n)), want2)
    check("sparse(id, jd, vd)", gather(spk.sparse(codistributed(i2), codistributed(j2), codistributed(v2), m, n,
                                                  codist=codistributor1d(dim))), want2)
    check("sparse(m, n)", gather(spk.sparse(m, n)), np.zeros((m, n)))
    check("issparse", spk.issparse(S), True)
    return bad


CASES = [(7, 7, 0.4), (9, 5, 0.3), (4, 11, 0.5)]


@pytest.mark.parametrize("nlabs", [1, 2, 3, 5])
def test_every_operation_matches_scipy(pools, nlabs):
    def suite():
        failures = []
        for m, n, d in CASES:
            for dtype in ("float32", "float64", "complex128"):
                for dim in (1, 2):
                    for pkind in ("default", "first-empty", "last-all"):
                        try:
                            bad = check_case(m, n, d, dtype, dim, pkind, m * n)
                        except Exception as exc:
                            bad = [f"raised {type(exc).__name__}: {exc}"]
                        failures += [f"{(m, n, dtype, dim, pkind)} {b}" for b in bad]
        return failures

    for failures in spmdlab.spmd_run(suite, pool=pools(nlabs), timeout=280):
        assert failures == []


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(m=st.integers(1, 12), n=st.integers(1, 12), density=st.sampled_from([0.0, 0.2, 0.6, 1.0]),
       dtype=st.sampled_from(["float32", "float64", "complex128"]), dim=st.sampled_from([1, 2]),
       pkind=st.sampled_from(["default", "first-empty", "last-all"]), seed=st.integers(0, 1000))
def test_differential_random_cases(pools, m, n, density, dtype, dim, pkind, seed):
    for failures in spmdlab.spmd_run(check_case, m, n, density, dtype, dim, pkind, seed, pool=pools(3), timeout=120):
        assert failures == []


@pytest.mark.nompi
def test_at_the_client_one_lab():
    assert check_case(6, 5, 0.5, "float64", 1, "default", 3) == []
    assert check_case(5, 6, 0.5, "complex128", 2, "default", 4) == []


# --------------------------------------------------------------------------- constructors
def constructors():
    from spmdlab.arrays import sparse as spk

    out = []
    n = 10
    B = np.arange(3 * n, dtype=float).reshape(n, 3) + 1
    for m, k in ((10, 10), (12, 10), (8, 10)):
        S = codistributed.spdiags(B[:min(m, k) if m < k else k], [-1, 0, 2], m, k, codistributor1d(1))
        ref = sp.spdiags(B[:k].T, [-1, 0, 2], m, k) if m >= k else None
        got = gather(S)
        if ref is not None:
            out.append(np.allclose(got.toarray(), ref.toarray()))
        else:  # m < n: B's row is the row index (MATLAB)
            want = np.zeros((m, k))
            for c, d in enumerate([-1, 0, 2]):
                for i in range(m):
                    if 0 <= i + d < k:
                        want[i, i + d] = B[i, c]
            out.append(np.allclose(got.toarray(), want))
    out.append(np.array_equal(gather(codistributed.speye(5, 7)).toarray(), np.eye(5, 7)))
    out.append(np.array_equal(gather(spk.speye(6, codist=codistributor1d(1))).toarray(), np.eye(6)))
    R = codistributed.sprand(30, 20, 0.1, seed=4)
    G = gather(R)
    out.append(G.shape == (30, 20) and 0 < G.nnz <= 60 and G.data.min() >= 0 and G.data.max() < 1)
    out.append(np.array_equal(gather(codistributed.sprand(30, 20, 0.1, seed=4)).toarray(), G.toarray()))
    N = gather(codistributed.sprandn(30, 20, 0.2, codistributor1d(1), seed=5))
    out.append(N.nnz > 0 and N.data.min() < 0)
    T = sp.diags([-1, 2, -1], [-1, 0, 1], shape=(4, 4))
    K = spk.kron(T, sp.eye(3), codist=codistributor1d(1))
    out.append(np.allclose(gather(K).toarray(), sp.kron(T, sp.eye(3)).toarray()))
    K2 = spk.kron(sp.eye(3), T)
    out.append(np.allclose(gather(K2).toarray(), sp.kron(sp.eye(3), T).toarray()))
    L = spmdlab.getLocalPart(K)
    Bd = codistributed.build(L, codistributor1d(1))
    out.append(np.allclose(gather(Bd).toarray(), sp.kron(T, sp.eye(3)).toarray()))
    return out


@pytest.mark.parametrize("nlabs", [1, 3])
def test_constructors(pools, nlabs):
    for r in spmdlab.spmd_run(constructors, pool=pools(nlabs), timeout=120):
        assert all(r), r


# --------------------------------------------------------------------------- bytes moved
def count_bytes(n):
    from spmdlab.arrays.sparse import STATS

    lab, nl = spmdlab.labindex(), spmdlab.numlabs()
    A = sp.diags([1.0, -1, 4, -1, 1], [-7, -1, 0, 1, 7], shape=(n, n), format="csr")
    A = A + sp.random_array((n, n), density=0.02, rng=np.random.default_rng(1), format="csr")
    S = codistributed(A, codistributor1d(1))
    x = codistributed(np.arange(n, dtype=float), codistributor1d(1, S.partition, (n,)))
    o = np.concatenate(([0], np.cumsum(S.partition)))
    # what this lab must send: for every other lab p, the distinct columns p's rows
    # touch that this lab owns
    want = 0
    for p in range(nl):
        if p + 1 == lab:
            continue
        cols = np.unique(A[o[p]:o[p + 1]].indices)
        want += int(((cols >= o[lab - 1]) & (cols < o[lab])).sum()) * 8
    before = STATS["bytes_sent"]
    y = S @ x
    first = STATS["bytes_sent"] - before
    y = S @ x
    second = STATS["bytes_sent"] - before - first
    return first, second, want, np.allclose(gather(y), A @ np.arange(n, dtype=float))


def test_s_at_x_moves_only_the_ghost_entries(pools):
    n = 200
    results = spmdlab.spmd_run(count_bytes, n, pool=pools(4), timeout=60)
    for first, second, want, ok in results:
        assert ok
        assert first == second == want
        assert want < n * 8  # far less than the vector each lab would get from a gather
    assert sum(r[2] for r in results) > 0


def banded_products(k):
    """On a lab: the 2-D Laplacian of a k x k grid (float32) times real and complex
    vectors and matrices, and how many rows of the off-diagonal block the product visits."""
    from spmdlab.arrays.sparse.exchange import ghost_plan
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    A = sp.csr_array(sp.kron(T, sp.eye(k)) + sp.kron(sp.eye(k), T), dtype=np.float32)
    n = k * k
    S = codistributed(A, codistributor1d(1))
    rng = np.random.default_rng(3)
    x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    X = rng.standard_normal((n, 3))
    got = [gather(S @ codistributed(x)), gather(S @ codistributed(x.real.astype(np.float32))),
           gather(S @ codistributed(X, codistributor1d(1)))]
    want = [A @ x, A @ x.real.astype(np.float32), A @ X]
    ok = [bool(np.allclose(g, w, rtol=1e-5, atol=1e-5)) for g, w in zip(got, want)]
    plan = ghost_plan(S, np.cumsum([0] + list(S.partition)), "test")
    rows, _ = plan.compressed(plan.blocks(np.dtype(np.complex128))[1])
    return ok, None if rows is None else rows.tolist(), int(plan.off.shape[0])


def test_the_off_diagonal_block_visits_only_its_rows_with_ghosts(pools):
    # PETSc's compressed rows: a lab of a banded matrix has ghost entries in its first
    # and last grid row only, and the product must not pass over the others
    k = 12
    results = spmdlab.spmd_run(banded_products, k, pool=pools(3), timeout=120)
    for lab, (ok, rows, m) in enumerate(results, start=1):
        assert ok == [True, True, True], (lab, ok)
        assert m == k * k // 3
        edges = ([] if lab == 1 else list(range(k))) + ([] if lab == 3 else list(range(m - k, m)))
        assert rows == edges, (lab, rows)


# --------------------------------------------------------------------------- the client
def test_distributed_sparse_at_the_client(pools):
    pool = pools(3)
    A = random_matrix(9, 7, 0.4, "float64", 3)
    D = distributed(A, pool=pool)
    assert type(D).__name__ == "distributedSparse"
    G = gather(D)
    assert sp.issparse(G) and np.allclose(G.toarray(), A.toarray())
    x = np.arange(7.0)
    assert np.allclose(gather(D @ x), A @ x)
    assert "nnz" in repr(D) and "per lab" in repr(D)
    R = distributed(A, codistributor1d(1), pool=pool)
    assert np.allclose(gather(R.T).toarray(), A.T.toarray())
    E = distributed.speye(4, pool=pool)
    assert np.array_equal(gather(E).toarray(), np.eye(4))
    with spmd(pool=pool):
        F = D * 2  # a sparse codistributed matrix on every lab comes back as a handle
        kind = type(F).__name__
    assert type(F).__name__ == "distributedSparse" and kind[1] == "SparseCodist"
    assert np.allclose(gather(F).toarray(), 2 * A.toarray())


# --------------------------------------------------------------------------- bad input
def test_bad_input_is_one_clear_error_and_the_pool_stays_usable(pools):
    pool = pools(3)
    A = random_matrix(6, 6, 0.5, "float64", 1)
    with pytest.raises(ValueError, match=r"by rows \(codistributor1d\(1\)\) or by columns"):
        distributed(A, codistributor2dbc(), pool=pool)
    cases = [
        (lambda: codistributed(A, codistributor2dbc()), r"distributed by rows .* or by columns"),
        (lambda: codistributed(A, codistributor1d(1, None, (6, 6), halo=1)), r"without halos"),
        (lambda: codistributed(A, codistributor1d(1)) @ np.ones(5), r"inner dimensions differ"),
        (lambda: codistributed(A) + codistributed(random_matrix(6, 5, 0.5, "float64", 1)), r"shapes differ"),
        (lambda: codistributed(A if spmdlab.labindex() == 1 else 2 * A), r"same matrix on every lab"),
        (lambda: codistributed.build(sp.csr_array((spmdlab.labindex(), 6)), codistributor1d(1, None, (6, 6))),
         r"lab 1 has \(1, 6\), expected"),
    ]
    for make, message in cases:
        with pytest.raises(SpmdError, match=message) as info:
            spmdlab.spmd_run(make, pool=pool, timeout=60)
        assert set(info.value.errors) == {1, 2, 3}, (message, info.value.errors)
    assert list(spmdlab.spmd_run(lambda: spmdlab.labindex(), pool=pool, timeout=30)) == [1, 2, 3]


# --------------------------------------------------------------------------- memory
def held_bytes(root):
    """The bytes of the numpy arrays reachable from ``root`` (each buffer counted once),
    walking only containers, the matrix, its plan and scipy.sparse arrays."""
    import gc

    from spmdlab.arrays.sparse.exchange import GhostPlan
    from spmdlab.arrays.sparse.matrix import SparseBase

    seen, buffers, todo = set(), {}, [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            base = obj
            while isinstance(base.base, np.ndarray):
                base = base.base
            buffers[id(base)] = base.nbytes
        elif isinstance(obj, (dict, list, tuple, SparseBase, GhostPlan)) or sp.issparse(obj):
            todo.extend(gc.get_referents(obj))
    return sum(buffers.values())


def memory_of_a_lab(n):
    from spmdlab.arrays.sparse import exchange

    A = random_matrix(n, n, 0.02, "float64", 5) + sp.eye_array(n, format="csr")
    S = codistributed(A, codistributor1d(1))
    x = codistributed(np.ones(n))
    for _ in range(3):
        S @ x
    local = A[slice(*S.range_of())]
    share = local.data.nbytes + local.indices.nbytes + local.indptr.nbytes
    plan = next(v for k, v in S._cache.items() if k[0] == "ghosts")
    assert isinstance(plan, exchange.GhostPlan)
    rows = local.shape[0]
    extra = (plan.nghost * 8 * 2  # the ghost columns and the ghost buffer
             + plan.send_index.size * 8 * 2  # which entries to send and the send buffer
             + (rows + 1) * local.indptr.itemsize)  # the second block's row pointers
    ok = np.allclose(gather(S @ x), A @ np.ones(n)) and sp.issparse(spmdlab.getLocalPart(S))
    return held_bytes(S), share, extra, ok


def test_a_lab_stores_its_share_of_the_matrix_once(pools):
    """Issue 25: memory per lab <= its share of the matrix, its ghosts and a few vector parts."""
    for held, share, extra, ok in spmdlab.spmd_run(memory_of_a_lab, 3000, pool=pools(2), timeout=120):
        assert ok
        assert held <= share + extra, (held, share, extra)
        assert extra < share / 4  # the bound is the share itself, not twice it


# --------------------------------------------------------------------------- what it is
def what_it_is():
    from spmdlab import iscodistributed

    A = random_matrix(8, 6, 0.5, "float64", 2)
    S = codistributed(A, codistributor1d(1, [0, 5, 3], (8, 6)))
    whole = gather(S, 2)
    differ = abs(whole - A).nnz if whole.shape == A.shape else 0
    return iscodistributed(S), sp.issparse(whole), whole.shape, differ, repr(S)


def test_iscodistributed_gather_to_one_lab_and_the_lab_display(pools):
    pool = pools(3)
    results = list(spmdlab.spmd_run(what_it_is, pool=pool, timeout=60))
    A = random_matrix(8, 6, 0.5, "float64", 2)
    for lab, (isc, issparse, shape, differ, text) in enumerate(results, start=1):
        assert isc and issparse
        assert shape == ((8, 6) if lab == 2 else (0, 0)) and differ == 0
        assert "sparse codistributed 8x6 float64" in text and "nnz on this lab" in text
    assert f"nnz on this lab: {A[5:8].nnz}," in results[2][4]
    assert "S[0:0, :]" in results[0][4] and "density on this lab: -" in results[0][4]
    D = distributed(A, pool=pool)
    assert spmdlab.isdistributed(D)


def test_a_block_on_another_number_of_labs_is_refused_on_every_lab(pools):
    pool = pools(3)
    A = random_matrix(6, 6, 0.5, "float64", 1)
    x = np.ones(6)
    with spmd(pool=pool, timeout=60):
        S = codistributed(A, codistributor1d(1))
        warm = spmdlab.pcg(S, x)  # the solver modules imported on every lab: the labs then fail together
    for step, message in [(lambda S: S @ x, r"S @ x: the matrix is distributed over 3 labs but this block runs on 2"),
                          (lambda S: spmdlab.pcg(S, x), r"pcg: the matrix is distributed over 3 labs"),
                          (lambda S: gather(S), r"gather\(S\): the matrix is distributed over 3 labs")]:
        with pytest.raises(SpmdError, match=message) as info:
            with spmd(2, pool=pool, timeout=60):
                step(S)
        # the check is local and alike on every lab; which labs the report names depends
        # on how soon each lab gets there (the pool stops the others after the first error)
        assert set(info.value.errors) <= {1, 2} and info.value.errors, str(info.value)
    with spmd(pool=pool, timeout=60):
        y = S @ x
    assert np.allclose(gather(y), A @ x)


def dense_nnz():
    from spmdlab.arrays import sparse as spk

    A = np.zeros((7, 5))
    A[::2, 1] = 3.0
    A[6, 4] = -1.0
    layouts = [codistributor1d(1), codistributor1d(2), codistributor2dbc(), codistributor1d(1, halo=1)]
    return [spk.nnz(codistributed(A, c)) for c in layouts] + [spk.nnz(A), spk.nnz(sp.csr_array(A))]


def test_nnz_of_a_dense_codistributed_matrix_at_the_client():
    assert dense_nnz() == [5] * 6


@pytest.mark.parametrize("nlabs", [3])
def test_nnz_of_a_dense_codistributed_matrix(pools, nlabs):
    for r in spmdlab.spmd_run(dense_nnz, pool=pools(nlabs), timeout=120):
        assert r == [5] * 6, r


def test_sparse_of_triplets_takes_the_layout_with_three_or_five_arguments():
    from spmdlab.arrays import sparse as spk

    S3 = spk.sparse([0, 2], [1, 0], [2.0, 3.0], codist=codistributor1d(1))
    S5 = spk.sparse([0, 2], [1, 0], [2.0, 3.0], 4, 3, codist=codistributor1d(1))
    assert S3.by_rows and S5.by_rows and S3.shape == (3, 2) and S5.shape == (4, 3)
    assert np.array_equal(gather(S5).toarray(), [[0, 2, 0], [0, 0, 0], [3, 0, 0], [0, 0, 0]])
    with pytest.raises(TypeError, match="sparse takes 1, 2, 3 or 5 arguments"):
        spk.sparse(1, 2, 3, 4)
