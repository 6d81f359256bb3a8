"""Round trips of every format × layout × lab count × dtype (issue 26): files written by
numpy/zarr/h5py/np.savetxt read by spmdlab into random layouts (1-D on each dimension
with uneven partitions and empty labs, halos, 2dbc, blocks, chunk maps), every stored
array checked against the reference library's read, written back by spmdlab and read by
the reference library.

The example budget is small in CI (``SPMDLAB_FUZZ_EXAMPLES``, default 10 per format and
pool size); ``SPMDLAB_FUZZ_EXAMPLES=500 SPMDLAB_FUZZ_LABS=1,2,3,4,5`` for a long run.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from support.io_cases import cases, read_reference, round_trip, values, write_reference

from spmdlab import spmd_run

pytestmark = pytest.mark.timeout(900)

EXAMPLES = int(os.environ.get("SPMDLAB_FUZZ_EXAMPLES", "10"))
LABS = [int(n) for n in os.environ.get("SPMDLAB_FUZZ_LABS", "1,2,3").split(",")]
SUFFIX = {"npy": ".npy", "zarr": ".zarr", "hdf5": ".h5", "csv": ".csv"}


@pytest.fixture(scope="module")
def folder():
    path = tempfile.mkdtemp(prefix="spmdlab-io-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def check_round_trip(pool, folder, fmt, case):
    shape, dtype, layout, fortran = case
    A = values(shape, dtype)
    src = os.path.join(folder, "src" + SUFFIX[fmt])
    dst = os.path.join(folder, "dst" + SUFFIX[fmt])
    for p in (src, dst):
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.path.exists(p) and os.remove(p)
    write_reference(fmt, src, A, fortran)
    bad = spmd_run(round_trip, fmt, src, dst, layout, dtype, pool=pool, timeout=120)
    problems = [m for lab in range(1, len(bad) + 1) for m in bad[lab]]
    assert problems == [], (case, problems)
    B = read_reference(fmt, dst)
    if fmt == "csv":
        B = B.reshape(A.shape) if A.size else B
    assert B.dtype == A.dtype or fmt == "csv", (case, B.dtype)
    assert B.shape == A.shape and np.array_equal(B, A), (case, B, A)
    assert not [f for f in os.listdir(folder) if ".spmdlab-" in f], os.listdir(folder)  # no temporary left


@pytest.mark.parametrize("fmt", ["npy", "zarr", "hdf5", "csv"])
@pytest.mark.parametrize("n", LABS)
def test_round_trip(pools, folder, fmt, n):
    pool = pools(n)

    @settings(max_examples=EXAMPLES, deadline=None, derandomize="SPMDLAB_FUZZ_EXAMPLES" not in os.environ,
              database=None, suppress_health_check=list(HealthCheck))
    @given(cases(fmt, n))
    def check(case):
        check_round_trip(pool, folder, fmt, case)

    check()


@pytest.mark.parametrize("fmt", ["npy", "zarr"])
def test_round_trip_on_five_labs(pools, folder, fmt):
    """Five labs (more labs than rows in most cases: empty labs everywhere)."""
    pool = pools(5)

    @settings(max_examples=max(3, EXAMPLES // 2), deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases(fmt, 5))
    def check(case):
        check_round_trip(pool, folder, fmt, case)

    check()
