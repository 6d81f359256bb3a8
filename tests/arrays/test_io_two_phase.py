"""The two-phase read (``SPMDLAB_IO_TWO_PHASE=1``, off by default): a .npy file loaded by
its last dimension through contiguous row slabs and an exchange gives numpy's array."""
from __future__ import annotations

import numpy as np
import pytest

import spmdlab
from spmdlab import codistributor1d, gather, spmd

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("n", [2, 3])
def test_two_phase_load_by_the_last_dimension_equals_numpy(tmp_path, monkeypatch, n):
    monkeypatch.setenv("SPMDLAB_IO_TWO_PHASE", "1")  # read by the labs when the pool starts
    monkeypatch.setenv("SPMDLAB_STAGING_MB", "0.001")  # small rounds: several of them
    rng = np.random.default_rng(n)
    cases = {"m.npy": rng.standard_normal((37, 29)), "t.npy": rng.integers(-9, 9, (5, 4, 23)).astype(np.int16)}
    for name, X in cases.items():
        np.save(tmp_path / name, X)
    with spmdlab.Pool(n) as pool:
        with spmd(pool=pool, timeout=120):
            from spmdlab.arrays.io import twophase
            on = twophase.fits_two_phase(codistributor1d(2, None, (37, 29)), (37, 29), False, n)
            got = {name: gather(spmdlab.load(str(tmp_path / name), codistributor1d(X.ndim)))
                   for name, X in cases.items()}
        assert on[1] is True
        for name, X in cases.items():
            assert got[1][name].dtype == X.dtype and np.array_equal(got[1][name], X), name
