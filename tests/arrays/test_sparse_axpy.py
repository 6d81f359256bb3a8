"""``axpy`` of the Krylov solvers (``y += a x`` in place, BLAS where it can): the same
values as numpy's two passes, for every BLAS type, mixed types, empty and strided parts,
and always in y's own buffer."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab.arrays.sparse.problem import axpy

pytestmark = pytest.mark.nompi


CASES = [(dtype, a) for dtype in (np.float32, np.float64) for a in (2.5, -1.0, 0.0)] + \
        [(dtype, a) for dtype in (np.complex64, np.complex128) for a in (2.5, 1.5 - 2j)] + [(np.int64, 3)]


@pytest.mark.parametrize("dtype, a", CASES)
@pytest.mark.parametrize("n", [0, 1, 1000])
def test_axpy_is_numpys_update_in_place(dtype, a, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 5).astype(dtype)
    y = (rng.standard_normal(n) * 3).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(n).astype(dtype)
    want = y.copy()
    want += a * x
    buf = y
    got = axpy(a, x, y)
    assert got is buf
    rtol = 1e-5 if dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_strided_and_mixed_parts_fall_back_to_numpy():
    x = np.arange(20.0)[::2]
    y = np.ones(10, dtype=np.float32)
    want = y + np.float32(2) * x.astype(np.float32)
    assert axpy(2.0, x, y) is y
    np.testing.assert_allclose(y, want)
    z = np.ones(20)[::2]
    assert axpy(3.0, np.arange(10.0), z) is z
    np.testing.assert_array_equal(z, 1 + 3 * np.arange(10.0))
