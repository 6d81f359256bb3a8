"""Regressions found by differential fuzzing against numpy, one test per bug.

The single-lab cases run at the client, where codistributed arrays behave as on a pool
of one lab (no MPI); the cases that need several labs run on real pools.
"""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab import codistributed, codistributor1d, codistributor2dbc, gather, getLocalPart, labindex, numlabs, spmd

pytestmark = pytest.mark.timeout(120)


# --------------------------------------------------------------------------- one lab, no MPI
@pytest.mark.nompi
def test_empty_negative_step_slice_selects_nothing():
    D = codistributed(np.arange(8.0).reshape(2, 4), codistributor1d(2))
    R = D[-3::-1]
    assert R.shape == (0, 4)
    assert getLocalPart(R).shape == (0, 4)
    assert gather(R[R > -1]).shape == (0,)


@pytest.mark.nompi
def test_item_takes_negative_flat_indices():
    D = codistributed(np.arange(6.0).reshape(2, 3))
    assert D.item(-1) == 5.0
    assert D.item(-6) == 0.0
    with pytest.raises(IndexError, match="index -7 is out of bounds for size 6"):
        D.item(-7)
    with pytest.raises(IndexError, match="index 6 is out of bounds for size 6"):
        D.item(6)


@pytest.mark.nompi
def test_squeeze_to_0d_gives_a_0d_array():
    X = np.array([[2.5]], dtype=">f8")
    got = codistributed(X).squeeze()
    want = X.squeeze()
    assert type(got) is np.ndarray and got.shape == () and got.dtype == want.dtype and got == want
    assert np.squeeze(codistributed(X)).shape == ()


@pytest.mark.nompi
@pytest.mark.parametrize("X", [np.array([True, False]), np.arange(3, dtype=">f8"),
                               np.arange(3, dtype=">i4"), np.array([1 + 2j, 3j], dtype=">c16")])
def test_conj_keeps_dtype_and_byteorder_as_ndarray_conj(X):
    got = codistributed(X).conj()
    want = X.conj()
    assert got.dtype == want.dtype and got.dtype.str == want.dtype.str
    np.testing.assert_array_equal(gather(got), want)
    assert codistributed(X).conjugate().dtype.str == want.dtype.str


@pytest.mark.nompi
def test_mask_assignment_of_a_complex_scalar_to_floats_raises_as_numpy():
    D = codistributed(np.arange(4.0))
    with pytest.raises(TypeError):
        D[D > 1] = 1 + 2j
    np.testing.assert_array_equal(gather(D), np.arange(4.0))
    D[D > 1] = 7  # a Python int still goes in
    np.testing.assert_array_equal(gather(D), [0.0, 1.0, 7.0, 7.0])
    I8 = codistributed(np.arange(4, dtype=np.int8))
    with pytest.raises(OverflowError):
        I8[I8 > 1] = 300


@pytest.mark.nompi
@pytest.mark.parametrize("convert", [float, int, complex])
@pytest.mark.parametrize("shape", [(1,), (1, 1)])
def test_python_scalar_conversion_needs_0d_as_numpy_2_4(convert, shape):
    with pytest.raises(TypeError, match="only 0-dimensional arrays"):
        convert(codistributed(np.ones(shape)))
    assert codistributed(np.ones(shape)).item() == 1.0
    assert bool(codistributed(np.ones(shape))) is True


@pytest.mark.nompi
@pytest.mark.parametrize("exponent", [2, -1, 0.5, 2.0, 3, np.int64(2)])
@pytest.mark.parametrize("X", [np.array([True, False]), np.array([2, 0], dtype=np.int8),
                               np.array([4.0, np.inf, 0.0, -0.0]), np.array([4, 0], dtype=np.float16),
                               np.array([1e200 + 1e200j, 0j, complex(np.inf, np.nan)])])
def test_power_operator_uses_numpys_fast_paths(X, exponent):
    with np.errstate(all="ignore"):
        try:
            want = X ** exponent
        except (ValueError, OverflowError) as exc:
            with pytest.raises(type(exc)):
                codistributed(X) ** exponent
            return
        got = codistributed(X) ** exponent
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(gather(got), want)
        if np.can_cast(want.dtype, X.dtype, "same_kind"):
            D, Y = codistributed(X), X.copy()
            D **= exponent
            Y **= exponent
            np.testing.assert_array_equal(gather(D), Y)


# --------------------------------------------------------------------------- several labs
@pytest.fixture(scope="module")
def pools(pools):
    return {n: pools(n) for n in (2, 3)}


def slices_on(pool) -> list:
    with spmd(pool=pool, timeout=60):
        bad = []
        A = np.arange(8.0).reshape(2, 4)
        for cd in (codistributor1d(2), codistributor1d(1), codistributor2dbc(None, 1)):
            D = codistributed(A, cd)
            for key in ((slice(-3, None, -1),), (slice(None), slice(-5, None, -1)),
                        (slice(0, 0, -1), slice(None))):
                R = D[key]
                want = A[key]
                if R.shape != want.shape or getLocalPart(R).shape != R._codist.localShape(labindex(), numlabs()):
                    bad.append(f"{cd} {key}: {R.shape} local {getLocalPart(R).shape}")
                elif gather(R[R > -1]).shape != want[want > -1].shape:
                    bad.append(f"{cd} {key}: mask of the slice")
    return [msg for msgs in bad for msg in msgs]


def test_empty_negative_step_slice_on_labs(pools):
    for pool in pools.values():
        assert slices_on(pool) == []


def reshapes_on(pool, cases) -> list:
    with spmd(pool=pool, timeout=60):
        bad = []
        for src, new in cases:
            for cd in (None, codistributor1d(1)):
                R = codistributed(np.zeros(src), cd).reshape(new)
                want = np.zeros(src).reshape(new)
                if R.shape != want.shape or gather(R).shape != want.shape:
                    bad.append(f"{src} -> {new}: {R.shape}")
                if getLocalPart(R).shape != R._codist.localShape(labindex(), numlabs()):
                    bad.append(f"{src} -> {new}: local part {getLocalPart(R).shape}")
    return [msg for msgs in bad for msg in msgs]


def test_reshape_of_zero_size_arrays_does_not_hang(pools):
    cases = [((0, 6), (0, 3)), ((0, 3, 2), (0, 3)), ((1, 0, 2), (-1, 5)), ((0, 4), (0, 3, 2)),
             ((3, 0), (0,)), ((0, 5), (5, 0))]
    for pool in pools.values():
        assert reshapes_on(pool, cases) == []


@pytest.mark.nompi
def test_reductions_along_an_axis_of_2dbc_arrays_work_at_the_client():
    X = np.array([[1.0, np.nan], [0.0, 2.0]], dtype=np.float32)
    D = codistributed(X, codistributor2dbc(None, 1))
    np.testing.assert_array_equal(gather(D.argmin(axis=0)), X.argmin(axis=0))
    np.testing.assert_array_equal(gather(D.argmax(axis=1)), X.argmax(axis=1))


# --------------------------------------------------------------------------- a longer fuzz, 2026-11-28
def _long_fuzz_cases_on_labs() -> dict:
    import warnings

    import numpy as np

    from spmdlab import codistributed, codistributor1d, codistributor2dbc, gather

    out: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = np.corrcoef(codistributed(np.zeros(0, np.int8), codistributor1d(1)))
        out["corrcoef of an empty vector"] = (type(r).__name__, bool(np.isnan(r)))
        row = np.array([[1, 2]], dtype=np.int8)
        out["cov of one row, rowvar=False"] = gather(np.cov(codistributed(row, codistributor2dbc(None, 1)),
                                                            rowvar=False, bias=True))
        big = np.array([[[2.0]]], dtype=">f8")
        out["histogram edges of a big-endian array"] = gather(np.histogram(codistributed(big, codistributor1d(1)),
                                                                           bins=4)[1])
    E = codistributed(np.zeros((0, 0), bool), codistributor2dbc(None, 1))
    out["take from an empty axis"] = gather(np.take(E, [0], axis=1)).shape
    try:
        E[-1, np.array([], np.intp)]
        out["an integer beside an empty array"] = "no error"
    except IndexError as exc:
        out["an integer beside an empty array"] = str(exc)
    return out


def test_the_cases_a_longer_fuzz_found(pools):
    """SPMDLAB_FUZZ_EXAMPLES=300-1500 found these on 3 labs, two of which hold nothing of
    the small arrays: a 0-d corrcoef, numpy 2.4's cov of one row, big-endian histogram
    edges, a take from an empty axis and an integer index beside an empty array."""
    import warnings

    from spmdlab import spmd_run

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = {
            "corrcoef of an empty vector": (type(np.corrcoef(np.zeros(0, np.int8))).__name__, True),
            "cov of one row, rowvar=False": np.cov(np.array([[1, 2]], dtype=np.int8), rowvar=False, bias=True),
            "histogram edges of a big-endian array": np.histogram(np.array([[[2.0]]], dtype=">f8"), bins=4)[1],
            "take from an empty axis": np.take(np.zeros((0, 0), bool), [0], axis=1).shape,
        }
    try:
        np.zeros((0, 0), bool)[-1, np.array([], np.intp)]
    except IndexError as exc:
        want["an integer beside an empty array"] = str(exc)
    for lab, got in enumerate(spmd_run(_long_fuzz_cases_on_labs, pool=pools[3]), 1):
        for key, value in want.items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(got[key], value), (lab, key, got[key], value)
            else:
                assert got[key] == value, (lab, key, got[key], value)
