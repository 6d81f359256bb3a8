"""Blocks aborted inside a factorization leave nothing behind on the labs: no request,
no panel buffer, no memory (issue 19, item 4)."""
import os
import time

import numpy as np
import pytest

from spmdlab import SpmdError, codistributed, codistributor2dbc, gather, lu, spmd

pytestmark = pytest.mark.timeout(900)

ABORTS = int(os.environ.get("SPMDLAB_TEST_ABORTS", "1000"))
N, NB = (int(x) for x in os.environ.get("SPMDLAB_TEST_LU", "256,64").split(","))


def lab_rss_mb(pool) -> dict[int, float]:
    """Resident memory of each of the pool's labs, from /proc/<pid>/status."""
    rss = {}
    for lab, pid in pool.pids.items():
        with open(f"/proc/{pid}/status") as f:
            kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        rss[lab] = kb / 1024
    return rss


def abort_inside_lu(pool, D) -> None:
    """One block in which lab 1 fails in lu's second trailing update, while the others
    are inside lu's collectives with panels in flight."""
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool):
            import spmdlab.arrays.linalg.factor as factor
            from spmdlab import labindex
            real = factor.gemm
            calls = []

            def failing_gemm(*args, **kwargs):
                calls.append(1)
                if len(calls) == 2:
                    raise RuntimeError("injected failure inside lu")
                return real(*args, **kwargs)

            if labindex() == 1:
                factor.gemm = failing_gemm
            try:
                L, U, P = lu(D)
            finally:
                factor.gemm = real
    assert list(info.value.errors) == [1]
    assert "injected failure inside lu" in str(info.value)


def test_a_thousand_blocks_aborted_inside_lu_leave_lab_memory_where_it_was(pools):
    pool = pools(4)
    with spmd(pool=pool):
        D = codistributed.rand(N, N, codist=codistributor2dbc([2, 2], NB), seed=1)
    for _ in range(30):  # warm-up: allocator pools, caches, imports
        abort_inside_lu(pool, D)
    before = lab_rss_mb(pool)
    start = time.monotonic()
    for _ in range(ABORTS):
        abort_inside_lu(pool, D)
    after = lab_rss_mb(pool)
    grown = {lab: round(after[lab] - before[lab], 1) for lab in before}
    print(f"{ABORTS} aborts in {time.monotonic() - start:.0f} s; lab RSS before {before}, growth (MB) {grown}")
    assert all(g < 10 for g in grown.values()), grown
    with spmd(pool=pool):  # and lu still works
        L, U, P = lu(D)
        R = P.T @ L @ U
    A = gather(D)
    np.testing.assert_allclose(gather(R), A, atol=1e-10)
