"""Reading parts of a .npy file through windowed memory maps (``arrays/io/mapped.py``):
the part a selection names, for C and Fortran files, slices and index arrays, windows of
one row up to the whole file; no MPI (the copy is each lab's alone)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spmdlab.arrays.io import mapped
from spmdlab.arrays.io.npy import read_header

pytestmark = pytest.mark.nompi


def selection(draw, size):
    if draw(st.booleans()):
        a = draw(st.integers(0, size))
        return slice(a, draw(st.integers(a, size)))
    return np.array(sorted(draw(st.sets(st.integers(0, size - 1), max_size=size))) if size else [], dtype=np.int64)


@st.composite
def cases(draw):
    shape = tuple(draw(st.lists(st.integers(0, 9), min_size=1, max_size=3)))
    sel = tuple(selection(draw, s) for s in shape)
    return shape, sel, draw(st.booleans()), draw(st.sampled_from([0.0001, 0.001, 1.0])), \
        draw(st.sampled_from(["f8", "i2", "c16"]))


def expected(A, sel):
    idx = [np.arange(s.start, s.stop) if isinstance(s, slice) else s for s in sel]
    return A[np.ix_(*idx)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases())
def test_a_part_read_through_windows_is_the_selection(tmp_path_factory, monkeypatch, case):
    shape, sel, fortran, staging_mb, dtype = case
    monkeypatch.setenv("SPMDLAB_STAGING_MB", repr(staging_mb))
    A = (np.arange(int(np.prod(shape)), dtype=np.int64) * 7 % 1000).astype(dtype).reshape(shape)
    path = os.path.join(tmp_path_factory.mktemp("m"), "a.npy")
    np.save(path, np.asfortranarray(A) if fortran else A)
    got_shape, got_fortran, descr, offset, _ = read_header(path)
    want = expected(A, sel)
    part = np.full(want.shape, -1, dtype=dtype, order="F" if got_fortran else "C")
    with open(path, "rb") as f:
        if part.size:
            mapped._copy(f.fileno(), offset, np.dtype(dtype), got_shape, got_fortran, sel, part)
    assert np.array_equal(part, want)
