"""Wrong answers found by differential fuzzing against numpy/scipy (issue 19, item 3), one
test per case: Cholesky's upper triangle, norms of empty and stacked arrays, ``out=`` and
in-place operators on every layout and at the client, byte orders and dtype promotion in
linear algebra, MATLAB's FFT names on dimensions beyond ``ndims``.

The single-lab cases run at the client, where codistributed arrays behave as on a pool of
one lab (no MPI); the rest run on one module-scoped pool of 2 labs.
"""
from __future__ import annotations

import sys
import warnings

import cloudpickle
import numpy as np
import pytest
import scipy.linalg
from support.layouts import every_kind

import spmdlab.numerics as numerics
from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    codistributorBlocks,
    distributed,
    gather,
    spmd,
)
from spmdlab.arrays import linalg as L
from spmdlab.arrays.fft import matlab as fft_matlab

pytestmark = pytest.mark.timeout(300)
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # lab checks travel by value


def outcome(fn, *args, **kwargs):
    """``("ok", value)`` or ``("error", exception type, message)``."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return ("ok", fn(*args, **kwargs))
    except Exception as exc:
        return ("error", type(exc), str(exc))


def same(got, want) -> bool:
    """Exactly numpy's outcome: the same error type, or the same kind, shape, dtype, values."""
    if want[0] == "error" or got[0] == "error":
        return got[0] == want[0] and issubclass(got[1], want[1])
    g, w = got[1], want[1]
    if isinstance(g, codistributed):
        g = gather(g)
    g, w = np.asarray(g), np.asarray(w)
    return g.shape == w.shape and g.dtype.str == w.dtype.str and np.array_equal(g, w, equal_nan=True)


# --------------------------------------------------------------------------- Cholesky
CHOL_CASES = {
    "upper-only-valid": np.array([[4.0, 2.0], [100.0, 3.0]]),      # the lower triangle is not PD
    "lower-only-valid": np.array([[4.0, 100.0], [2.0, 3.0]]),      # numpy raises, reading the upper
    "complex": np.array([[4.0, 1 - 2j], [7 + 1j, 6.0]]),
    "3x3": np.array([[9.0, 3.0, -6.0], [0.0, 5.0, 1.0], [1e3, 2.0, 17.0]]),
}


@pytest.mark.nompi
@pytest.mark.parametrize("name", sorted(CHOL_CASES))
def test_cholesky_upper_reads_the_upper_triangle_as_numpy(name):
    A = CHOL_CASES[name]
    want = outcome(np.linalg.cholesky, A, upper=True)
    got = outcome(np.linalg.cholesky, codistributed(A), upper=True)
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        np.testing.assert_allclose(gather(got[1]), want[1], rtol=1e-14)
        assert gather(got[1]).dtype == want[1].dtype
    else:
        assert got[1] is np.linalg.LinAlgError


def cholesky_on_labs(pool) -> list:
    with spmd(pool=pool, timeout=120):
        bad = []
        rng = np.random.default_rng(5)
        B = rng.standard_normal((9, 9))
        A = B @ B.T + 9 * np.eye(9)
        A[np.tril_indices(9, -1)] = 1e3  # garbage below: only the upper triangle may be read
        for cd in (codistributor2dbc(None, 2), codistributor1d(1), codistributor1d(2)):
            R = gather(np.linalg.cholesky(codistributed(A, cd), upper=True))
            if not np.allclose(R, np.linalg.cholesky(A, upper=True), rtol=1e-12, atol=1e-12):
                bad.append(f"{cd}: values")
            C = A.T.copy()
            try:
                np.linalg.cholesky(codistributed(C, cd), upper=True)
                bad.append(f"{cd}: no LinAlgError where numpy raises")
            except np.linalg.LinAlgError:
                pass
    return [m for msgs in bad for m in msgs]


def test_cholesky_upper_on_labs(pools):
    assert cholesky_on_labs(pools(2)) == []


# --------------------------------------------------------------------------- norms of empty arrays
EMPTY_NORMS = [((0,), o) for o in (None, 1, 2, np.inf, -np.inf, 0, -1, 0.5, 3)] + \
    [(s, o) for s in ((0, 3), (3, 0), (0, 0)) for o in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)]


@pytest.mark.nompi
@pytest.mark.parametrize("shape, ord", EMPTY_NORMS)
def test_norm_of_an_empty_array_is_numpys(shape, ord):
    X = np.zeros(shape)
    assert same(outcome(np.linalg.norm, codistributed(X), ord), outcome(np.linalg.norm, X, ord))
    if len(shape) == 1:
        assert same(outcome(np.linalg.vector_norm, codistributed(X), ord=ord or 2),
                    outcome(np.linalg.vector_norm, X, ord=ord or 2))
    else:
        assert same(outcome(np.linalg.matrix_norm, codistributed(X), ord=ord or "fro"),
                    outcome(np.linalg.matrix_norm, X, ord=ord or "fro"))


@pytest.mark.nompi
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (0,), (1, 0), (0, 1)])
@pytest.mark.parametrize("p", [1, 2, np.inf, "fro"])
def test_matlab_norm_of_an_empty_matrix_is_zero(shape, p):
    """MATLAB: ``norm(zeros(0, 3))`` and every p-norm of an empty matrix or vector are 0."""
    assert L.norm(codistributed(np.zeros(shape)), p) == 0.0
    assert L.norm(np.zeros(shape), p) == 0.0


def empty_norms_on_labs(pool) -> list:
    with spmd(pool=pool, timeout=120):
        bad = []
        for shape in ((0,), (0, 3), (3, 0)):
            X = np.zeros(shape)
            for name, cd in every_kind(shape, 2).items():
                for ord in (None, 1, 2, np.inf, -np.inf):
                    if len(shape) == 2 and ord == -np.inf:
                        continue
                    if not same(outcome(np.linalg.norm, codistributed(X, cd), ord), outcome(np.linalg.norm, X, ord)):
                        bad.append(f"{shape} {name} ord={ord}")
    return [m for msgs in bad for m in msgs]


def test_norms_of_empty_arrays_on_every_layout(pools):
    assert empty_norms_on_labs(pools(2)) == []


# --------------------------------------------------------------------------- out= on every layout
def out_on_labs(pool) -> list:
    with spmd(pool=pool, timeout=120):
        bad = []
        for shape in ((6,), (6, 5)):
            X = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 1
            for name, cd in every_kind(shape, 2).items():
                for label, fn, dtype in (("fft", lambda a, out: np.fft.fft(a, out=out), np.complex128),
                                         ("ifft", lambda a, out: np.fft.ifft(a, axis=0, out=out), np.complex128),
                                         ("sqrt", lambda a, out: np.sqrt(a, out=out), np.float64),
                                         ("add", lambda a, out: np.add(a, 1, out=out), np.float64),
                                         ("tuple", lambda a, out: np.multiply(a, a, out=(out,)), np.float64)):
                    want = fn(X, np.zeros(shape, dtype))
                    for ecd in (cd, codistributor1d(1, None, shape)):
                        E = codistributed(np.zeros(shape, dtype), ecd)
                        r = fn(codistributed(X, cd), E)
                        if r is not E:
                            bad.append(f"{label} {name} into {ecd}: returned {type(r).__name__}, not out")
                        if not np.allclose(gather(E), want, rtol=1e-12, atol=1e-12):
                            bad.append(f"{label} {name} into {ecd}: out not filled")
    return [m for msgs in bad for m in msgs]


def test_out_writes_into_and_returns_the_given_array_on_every_layout(pools):
    assert out_on_labs(pools(2)) == []


def test_out_at_the_client_returns_the_given_handle(pools):
    pool = pools(2)
    X = np.arange(12.0).reshape(3, 4) + 1
    for cd in (codistributor1d(1), codistributorBlocks((2, 2), "cyclicrow")):
        D = distributed(X, cd, pool=pool)
        for fn, want in ((lambda a, out: np.fft.fft(a, out=out), np.fft.fft(X)),
                         (lambda a, out: np.fft.fft2(a, out=out), np.fft.fft2(X)),
                         (lambda a, out: np.fft.ifftn(a, out=out), np.fft.ifftn(X))):
            E = distributed(np.zeros(X.shape, np.complex128), cd, pool=pool)
            assert fn(D, E) is E
            np.testing.assert_allclose(gather(E), want, rtol=1e-12, atol=1e-12)
        E = distributed(np.zeros(X.shape), cd, pool=pool)
        assert np.sqrt(D, out=E) is E
        np.testing.assert_array_equal(gather(E), np.sqrt(X))


# --------------------------------------------------------------------------- in-place operators at the client
INPLACE = ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>="]


def _apply(op: str, a, b):
    ns = {"a": a, "b": b}
    exec(f"a {op} b", ns)
    return ns["a"]


def test_inplace_operators_at_the_client_modify_the_array_and_its_aliases(pools):
    pool = pools(2)
    for dtype, ops in ((np.int64, INPLACE), (np.float64, INPLACE[:7])):
        X = np.arange(1, 13, dtype=dtype).reshape(3, 4)
        Y = np.full((3, 4), 2, dtype=dtype)
        for op in ops:
            D = distributed(X, pool=pool)
            alias = D
            want = outcome(_apply, op, X.copy(), Y)
            if want[0] == "error":  # int /= int: numpy's casting error, D untouched
                with pytest.raises(want[1]):
                    _apply(op, D, distributed(Y, pool=pool))
                np.testing.assert_array_equal(gather(alias), X)
                continue
            want = want[1]
            R = _apply(op, D, distributed(Y, pool=pool))
            assert R is alias, op
            np.testing.assert_array_equal(gather(alias), want)
            assert gather(alias).dtype == want.dtype
    S = np.arange(16.0).reshape(4, 4)
    D = distributed(S, pool=pool)
    alias = D
    D @= distributed(S.T, pool=pool)
    assert D is alias
    np.testing.assert_array_equal(gather(alias), S @ S.T)


def test_inplace_operators_at_the_client_keep_numpys_casting_rules(pools):
    pool = pools(2)
    for op, a, b in (("*=", np.arange(4), 1.5), ("+=", np.arange(4), np.ones(4)),
                     ("/=", np.arange(4), 2), ("+=", np.arange(4.0), np.ones(4, complex))):
        with pytest.raises(Exception) as numpy_error:
            _apply(op, a.copy(), b)
        D = distributed(a, pool=pool)
        alias = D
        B = distributed(b, pool=pool) if np.ndim(b) else b
        with pytest.raises(numpy_error.type, match="Cannot cast ufunc"):
            _apply(op, D, B)
        np.testing.assert_array_equal(gather(alias), a)  # untouched


# --------------------------------------------------------------------------- linear algebra dtypes and shapes
BIG = (np.eye(4) * 3 + 1).astype(">f8")


@pytest.mark.nompi
@pytest.mark.parametrize("name", ["solve", "cholesky", "inv", "det", "slogdet", "lstsq", "qr", "svd", "norm2",
                                  "mldivide", "lu", "solve_triangular", "chol"])
def test_linalg_takes_big_endian_input_as_numpy(name):
    b = np.arange(4, dtype=">f8")
    funcs = {"solve": lambda A, y: np.linalg.solve(A, y), "cholesky": lambda A, y: np.linalg.cholesky(A),
             "inv": lambda A, y: np.linalg.inv(A), "det": lambda A, y: np.linalg.det(A),
             "slogdet": lambda A, y: np.linalg.slogdet(A)[1], "lstsq": lambda A, y: np.linalg.lstsq(A, y)[0],
             "qr": lambda A, y: abs(np.linalg.qr(A)[1]), "svd": lambda A, y: np.linalg.svd(A, compute_uv=False),
             "norm2": lambda A, y: np.linalg.norm(A, 2)}
    matlab = {"mldivide": (L.mldivide, np.linalg.solve),
              "lu": (lambda A, y: L.lu(A)[1], lambda A, y: scipy.linalg.lu(A.astype("<f8"))[2]),
              "solve_triangular": (L.solve_triangular, scipy.linalg.solve_triangular),
              "chol": (lambda A, y: L.chol(A), lambda A, y: np.linalg.cholesky(A, upper=True))}
    ours, theirs = matlab.get(name, (funcs.get(name), funcs.get(name)))
    want = theirs(BIG, b)
    got = ours(codistributed(BIG), codistributed(b))
    got = gather(got) if isinstance(got, codistributed) else got
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    assert np.asarray(got).dtype == np.asarray(want).dtype


@pytest.mark.nompi
@pytest.mark.parametrize("dtype", [">f8", ">i4", ">c16", "<f8"])
@pytest.mark.parametrize("fn", [np.triu, np.tril])
def test_triu_tril_dtype_is_numpys(fn, dtype):
    X = np.arange(9).reshape(3, 3).astype(dtype)
    got, want = fn(codistributed(X)), fn(X)
    assert got.dtype.str == want.dtype.str
    np.testing.assert_array_equal(gather(got), want)


@pytest.mark.nompi
@pytest.mark.parametrize("bshape", [(0,), (0, 2)])
def test_lstsq_and_mldivide_of_zero_row_a(bshape):
    A, B = np.zeros((0, 3)), np.zeros(bshape)
    want = np.linalg.lstsq(A, B)
    got = np.linalg.lstsq(codistributed(A), codistributed(B))
    np.testing.assert_array_equal(gather(got[0]), want[0])
    assert gather(got[0]).shape == want[0].shape and got[2] == want[2]
    assert np.asarray(got[3]).shape == want[3].shape
    X = L.mldivide(codistributed(A), codistributed(B))
    assert gather(X).shape == want[0].shape and not gather(X).any()


@pytest.mark.nompi
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, np.inf, -np.inf, 2, -2])
def test_matrix_norm_of_a_stack_is_one_norm_per_matrix(ord):
    X = np.random.default_rng(3).standard_normal((2, 3, 4))
    want = outcome(np.linalg.matrix_norm, X, ord=ord)
    got = outcome(np.linalg.matrix_norm, codistributed(X), ord=ord)
    if got[0] == "error" and got[1] is NotImplementedError:
        pytest.skip("singular values of a stack")
    assert got[0] == "ok", got
    g = gather(got[1]) if isinstance(got[1], codistributed) else np.asarray(got[1])
    np.testing.assert_allclose(g, want[1], rtol=1e-12)
    assert g.shape == want[1].shape and g.dtype == want[1].dtype
    kept = np.linalg.matrix_norm(codistributed(X), ord=ord, keepdims=True)
    assert np.shape(kept) == np.linalg.matrix_norm(X, ord=ord, keepdims=True).shape


@pytest.mark.nompi
def test_matrix_norm_of_a_vector_raises_as_numpy():
    with pytest.raises(np.exceptions.AxisError):
        np.linalg.matrix_norm(np.arange(3.0))
    with pytest.raises(np.exceptions.AxisError):
        np.linalg.matrix_norm(codistributed(np.arange(3.0)))


@pytest.mark.nompi
@pytest.mark.parametrize("lower", [False, True])
def test_solve_triangular_with_no_right_hand_sides_is_empty(lower):
    T = np.triu(np.ones((3, 3))) if not lower else np.tril(np.ones((3, 3)))
    T[1, 1] = 0
    want = scipy.linalg.solve_triangular(T, np.zeros((3, 0)), lower=lower)
    got = L.solve_triangular(codistributed(T), codistributed(np.zeros((3, 0))), lower=lower)
    assert gather(got).shape == want.shape and gather(got).dtype == want.dtype


@pytest.mark.nompi
@pytest.mark.parametrize("bdtype", [bool, np.int8, np.int64, np.uint16])
@pytest.mark.parametrize("adtype", [np.float32, np.complex64])
def test_solve_result_dtype_is_numpys(adtype, bdtype):
    A = (np.eye(3) * 2 + 1).astype(adtype)
    b = np.ones(3, dtype=bdtype)
    want = np.linalg.solve(A, b)
    got = np.linalg.solve(codistributed(A), codistributed(b))
    assert gather(got).dtype == want.dtype
    np.testing.assert_allclose(gather(got), want, rtol=1e-6)


@pytest.mark.nompi
@pytest.mark.parametrize("shape", [(2, 2), (3,), (2, 3, 2)])
@pytest.mark.parametrize("ord", [0.5, 1, 2, np.inf, 0])
def test_vector_norm_keepdims_keeps_every_dimension(shape, ord):
    X = np.arange(np.prod(shape), dtype=float).reshape(shape) - 2
    want = np.linalg.vector_norm(X, ord=ord, keepdims=True)
    got = np.linalg.vector_norm(codistributed(X), ord=ord, keepdims=True)
    assert isinstance(got, codistributed) and got.shape == want.shape
    np.testing.assert_allclose(gather(got), want, rtol=1e-13)


def promotion_on_labs(pool) -> list:
    with spmd(pool=pool, timeout=120):
        bad = []
        for shape in ((5,), (4, 3)):
            B = np.arange(np.prod(shape)).reshape(shape) % 2 == 0
            C = (np.arange(np.prod(shape)).reshape(shape) * (1 - 1j)).astype(np.complex64)
            for name, cd in every_kind(shape, 2).items():
                for label, fn in (("bool**2 + c64", lambda b, c: b ** 2 + c),
                                  ("c64 + bool**2", lambda b, c: c + b ** 2),
                                  ("bool**3 * c64", lambda b, c: (b ** 3) * c)):
                    want = fn(B, C)
                    got = fn(codistributed(B, cd), codistributed(C, cd))
                    if got.dtype != want.dtype or not np.array_equal(gather(got), want):
                        bad.append(f"{label} {name}: {got.dtype} (numpy {want.dtype})")
    return [m for msgs in bad for m in msgs]


def test_bool_power_keeps_numpys_promotion_on_every_layout(pools):
    assert promotion_on_labs(pools(2)) == []


# --------------------------------------------------------------------------- MATLAB FFT names
@pytest.mark.nompi
def test_matlab_fft_along_a_dimension_beyond_ndims():
    """MATLAB: dimensions beyond ndims(X) are trailing singleton dimensions."""
    X = np.arange(12.0).reshape(3, 4)
    for D in (X, codistributed(X)):
        got = fft_matlab.matlab_fft(D, None, 3)
        np.testing.assert_array_equal(gather(got) if isinstance(got, codistributed) else got, X.astype(complex))
        got = fft_matlab.matlab_fft(D, 2, 3)  # zero-padded to 2 along the third dimension
        want = np.fft.fft(X[:, :, None], 2, 2)
        np.testing.assert_allclose(gather(got) if isinstance(got, codistributed) else got, want)


@pytest.mark.nompi
@pytest.mark.parametrize("fn, npfn", [("matlab_fft2", np.fft.fft2), ("matlab_ifft2", np.fft.ifft2)])
def test_matlab_fft2_of_a_vector(fn, npfn):
    """A 1-D array is a column (n x 1): fft2 transforms it along its only dimension."""
    v = np.arange(5.0) + 1
    want = npfn(v[:, None]).reshape(5)
    for V in (v, codistributed(v)):
        got = getattr(fft_matlab, fn)(V)
        np.testing.assert_allclose(gather(got) if isinstance(got, codistributed) else got, want, rtol=1e-13)
    got = getattr(fft_matlab, fn)(codistributed(v), 6, 2)
    np.testing.assert_allclose(gather(got), npfn(v[:, None], (6, 2)), rtol=1e-13, atol=1e-13)


@pytest.mark.nompi
@pytest.mark.parametrize("fn, npfn", [("matlab_fftn", np.fft.fftn), ("matlab_ifftn", np.fft.ifftn)])
def test_matlab_fftn_with_more_sizes_than_dimensions(fn, npfn):
    X = np.arange(6.0).reshape(2, 3)
    want = npfn(X[:, :, None], (2, 4, 3), axes=(0, 1, 2))
    for D in (X, codistributed(X)):
        got = getattr(fft_matlab, fn)(D, [2, 4, 3])
        np.testing.assert_allclose(gather(got) if isinstance(got, codistributed) else got, want,
                                   rtol=1e-13, atol=1e-13)


def matlab_fft_on_labs(pool) -> list:
    with spmd(pool=pool, timeout=120):
        bad = []
        X = np.arange(12.0).reshape(3, 4)
        for name, cd in every_kind((3, 4), 2).items():
            D = codistributed(X, cd)
            for label, got, want in (
                    ("fft dim 3", lambda: numerics.fft(D, None, 3), lambda: X.astype(complex)),
                    ("fftn siz", lambda: numerics.fftn(D, [3, 4, 2]), lambda: np.fft.fftn(X[:, :, None], (3, 4, 2), axes=(0, 1, 2))),
                    ("ifft2", lambda: numerics.ifft2(D), lambda: np.fft.ifft2(X))):
                g = outcome(got)
                if g[0] != "ok" or not np.allclose(gather(g[1]), want(), atol=1e-12):
                    bad.append(f"{label} {name}: {g}")
    return [m for msgs in bad for m in msgs]


def test_matlab_fft_names_on_every_layout(pools):
    assert matlab_fft_on_labs(pools(2)) == []


# --------------------------------------------------------------------------- found by the broader fuzz
@pytest.mark.nompi
@pytest.mark.parametrize("dtype", ["bool", ">f8", ">i4", "int8"])
def test_conj_keeps_dtype_and_byteorder_on_every_layout(dtype):
    X = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    for name, cd in every_kind(X.shape, 1).items():
        for got in (codistributed(X, cd).conj(), codistributed(X, cd).conjugate()):
            assert got.dtype.str == X.conj().dtype.str, name
            np.testing.assert_array_equal(gather(got), X.conj())


@pytest.mark.nompi
@pytest.mark.parametrize("dtype", [">f4", ">c8", "float32"])
def test_norm_of_big_endian_single_precision_is_single(dtype):
    X = np.arange(6).reshape(2, 3).astype(dtype)
    for fn in (lambda a: np.linalg.norm(a), lambda a: np.linalg.norm(a, 1),
               lambda a: np.linalg.vector_norm(a, ord=3)):
        assert fn(codistributed(X)).dtype == fn(X).dtype


@pytest.mark.nompi
def test_lstsq_rank_is_numpys_int32():
    A, b = np.arange(6.0).reshape(3, 2) + np.eye(3, 2), np.ones(3)
    for shape in ((3, 2), (0, 2)):
        A = A[:shape[0]]
        rank = np.linalg.lstsq(codistributed(A), codistributed(b[:shape[0]]))[2]
        want = np.linalg.lstsq(A, b[:shape[0]])[2]
        assert type(rank) is type(want) and rank == want


@pytest.mark.nompi
def test_matrix_norm_checks_the_order_of_an_empty_stack():
    with pytest.raises(ValueError, match="Invalid norm order for matrices"):
        np.linalg.matrix_norm(np.zeros((0, 2, 2)), ord=0)
    with pytest.raises(ValueError, match="Invalid norm order for matrices"):
        np.linalg.matrix_norm(codistributed(np.zeros((0, 2, 2))), ord=0)


@pytest.mark.nompi
@pytest.mark.parametrize("fn", [np.linalg.det, np.linalg.inv, np.linalg.slogdet])
def test_a_stack_of_matrices_is_unsupported_not_a_wrong_error(fn):
    """numpy works matrix by matrix; a codistributed stack says it is not supported (it
    used to raise LinAlgError "3-dimensional array given", which numpy never does)."""
    X = np.stack([np.eye(2), 2 * np.eye(2)])
    fn(X)
    with pytest.raises(NotImplementedError, match="stacks of matrices"):
        fn(codistributed(X))


@pytest.mark.nompi
@pytest.mark.parametrize("shape", [(0, 3), (4, 3)])
def test_out_casting_errors_are_numpys_on_every_layout(shape):
    X = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    for name, cd in every_kind(shape, 1).items():
        for fn, odt in ((np.sqrt, np.int64), (np.negative, np.int64), (np.fft.fft, np.float32)):
            with pytest.raises(Exception) as numpy_error:
                fn(X, out=np.zeros(shape, odt))
            E = codistributed(np.zeros(shape, odt), cd)
            with pytest.raises(numpy_error.type, match="Cannot cast ufunc"):
                fn(codistributed(X, cd), out=E)


def test_out_casting_errors_at_the_client_are_numpys(pools):
    pool = pools(2)
    X = np.arange(12.0).reshape(3, 4)
    E = distributed(np.zeros((3, 4), np.int64), pool=pool)
    alias = E
    for fn in (np.negative, np.sqrt):
        with pytest.raises(Exception) as numpy_error:
            fn(X, out=np.zeros((3, 4), np.int64))
        with pytest.raises(numpy_error.type, match="Cannot cast ufunc"):
            fn(distributed(X, pool=pool), out=E)
    np.testing.assert_array_equal(gather(alias), np.zeros((3, 4), np.int64))
    assert np.negative(distributed(-X, pool=pool), out=distributed(np.zeros((3, 4)), pool=pool)) is not None


def big_endian_on_labs(pool) -> list:
    with spmd(pool=pool, timeout=120):
        bad = []
        A = (np.eye(6) * 4 + np.arange(36).reshape(6, 6) / 36).astype(">f8")
        b = np.arange(6, dtype=">f8")
        T = np.random.default_rng(1).standard_normal((12, 3)).astype(">f8")
        for cd in (codistributor2dbc(None, 2), codistributor1d(1), codistributor1d(2)):
            D = codistributed(A, cd)
            checks = (("solve", lambda: gather(np.linalg.solve(D, codistributed(b))), np.linalg.solve(A, b)),
                      ("inv", lambda: gather(np.linalg.inv(D)), np.linalg.inv(A)),
                      ("det", lambda: np.linalg.det(D), np.linalg.det(A)),
                      ("norm1", lambda: np.linalg.norm(D, 1), np.linalg.norm(A, 1)),
                      ("lstsq", lambda: gather(np.linalg.lstsq(codistributed(T, codistributor1d(1)), np.ones(12))[0]),
                       np.linalg.lstsq(T, np.ones(12))[0]))
            for name, got, want in checks:
                g = outcome(got)
                if g[0] != "ok" or not np.allclose(g[1], want, rtol=1e-12) or np.asarray(g[1]).dtype != want.dtype:
                    bad.append(f"{name} {cd}: {g}")
    return [m for msgs in bad for m in msgs]


def test_linalg_takes_big_endian_input_on_labs(pools):
    assert big_endian_on_labs(pools(2)) == []


@pytest.mark.nompi
@pytest.mark.parametrize("ord", [1, np.inf, -np.inf, 0, 2, 0.5])
@pytest.mark.parametrize("axis", [(0, 1), (1, 0), (-2, -1)])
def test_vector_norm_over_every_axis_of_a_matrix_is_a_vector_norm(axis, ord):
    """numpy's vector_norm(X, axis=(0, 1)) is the norm of all entries as one vector (it
    used to give the matrix norm of that order)."""
    X = np.arange(12.0).reshape(3, 4) - 5
    want = np.linalg.vector_norm(X, ord=ord, axis=axis)
    got = np.linalg.vector_norm(codistributed(X), ord=ord, axis=axis)
    np.testing.assert_allclose(got, want, rtol=1e-13)
