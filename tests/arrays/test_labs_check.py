"""One check, one message: an array laid out for other labs than the running block's is
refused by every family of operations (elementwise layers, transfers, matmul, fft,
linalg) with the array package's one error (``base.labs_for``), on every lab."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab import SpmdError, codistributed, codistributor1d, gather, redistribute, spmd

pytestmark = pytest.mark.timeout(300)

OPERATIONS = {
    "gather": lambda D: gather(D),
    "redistribute": lambda D: redistribute(D, codistributor1d(2)),
    "matmul": lambda D: D @ D,
    "fft": lambda D: np.fft.fft(D, axis=0),
    "norm": lambda D: np.linalg.norm(D),
    "eigvalsh": lambda D: np.linalg.eigvalsh(D + D.T),
    "qr": lambda D: np.linalg.qr(D),
}


def test_an_array_of_other_labs_is_refused_by_every_family(pools):
    pool = pools(3)
    X = np.arange(36.0).reshape(6, 6) + np.eye(6) * 50
    with spmd(pool=pool, timeout=120):
        D = codistributed(X, codistributor1d(1))
        warm = [op(D) for op in OPERATIONS.values()]  # lazy modules loaded on every lab
    for name, op in OPERATIONS.items():
        with pytest.raises(SpmdError, match="the array is distributed over 3 labs but this block runs on 2") \
                as info:
            with spmd(2, pool=pool, timeout=120):
                op(D)
        assert set(info.value.errors) <= {1, 2} and info.value.errors, f"{name}: {info.value}"
    with spmd(pool=pool, timeout=120):
        G = gather(D @ D)
    assert np.allclose(G[1], X @ X)
