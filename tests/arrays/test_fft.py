"""Distributed FFT: np.fft.* and MATLAB's names on codistributed arrays.

The first part needs no MPI (the plan and index math of the four-step and Bluestein
algorithms, run on one process). The rest runs on real pools of 1-4 labs: every case
builds the same array on each lab, distributes it (1d along each dimension, 2dbc),
transforms it and compares the gathered result with numpy on the whole array.
"""
from __future__ import annotations

import sys
import warnings
import zlib

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    distributed,
    gather,
    getCodistributor,
    getLocalPart,
    spmd,
)
from spmdlab.arrays import fft as cfft
from spmdlab.arrays.fft import bailey as fb
from spmdlab.arrays.fft import plan as fp

pytestmark = pytest.mark.timeout(180)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


# =========================================================================== no MPI
def test_plan_four_step_for_good_factorizations_bluestein_for_primes():
    assert fp.plan(2 ** 24, 2) == ("fourstep", 2 ** 24, 4096, 4096, 2 ** 24)
    assert fp.plan(1000, 4)[:4] == ("fourstep", 1000, 25, 40)
    assert fp.plan(999983, 2) == ("bluestein", 999983, 1024, 2048, 2 ** 21)
    assert fp.plan(2 * 499979, 4).kind == "bluestein"  # 2·prime: the factor 2 is too small
    assert fp.plan(17, 1).kind == "local"
    for n in range(1, 300):
        for p in (2, 3, 4):
            pl = fp.plan(n, p)
            assert pl.N1 * pl.N2 == pl.M
            if pl.kind == "bluestein":
                assert pl.M >= 2 * n - 1 and pl.M & (pl.M - 1) == 0
            else:
                assert pl.M == n
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        fp.plan(0, 2)


def test_bluestein_length_and_window_partition():
    assert [fp.bluestein_length(n) for n in (1, 2, 3, 5, 9, 999983)] == [1, 4, 8, 16, 32, 2 ** 21]
    assert fp.window_partition([4, 4, 4, 4], 9) == [4, 4, 1, 0]
    assert fp.window_partition([3, 0, 3], 6) == [3, 0, 3]
    assert fp.window_partition([5, 5], 0) == [0, 0]


@pytest.mark.parametrize("part,shift", [([2, 2], 1), ([3, 3, 2, 2], 5), ([4, 0, 3], -2), ([1, 1, 1], 3),
                                        ([7], 3), ([0, 5, 0, 2], 4), ([2, 3, 2], -10)])
def test_roll_pieces_is_np_roll(part, shift):
    n = sum(part)
    x = np.arange(n)
    starts = np.concatenate(([0], np.cumsum(part)))
    out = [np.full(c, -1) for c in part]
    for (src, dst), pieces in fp.roll_pieces(part, n, shift).items():
        assert [b for _, b, _ in pieces] == sorted(b for _, b, _ in pieces)
        for a, b, c in pieces:
            out[dst][b:b + c] = x[starts[src] + a:starts[src] + a + c]
    assert np.array_equal(np.concatenate(out), np.roll(x, shift))


def test_twiddle_in_blocks_equals_direct_formula():
    n1, n2 = 12, 10
    for k1s, n2s, rows, cols in ((0, 0, 12, 10), (5, 0, 7, 10), (0, 3, 12, 4), (7, 6, 1, 1)):
        y = np.ones((rows, cols), complex)
        fb._twiddle(y, k1s, n2s, n1 * n2, -1)
        k1 = np.arange(k1s, k1s + rows)[:, None]
        k2 = np.arange(n2s, n2s + cols)[None, :]
        assert np.allclose(y, np.exp(-2j * np.pi * k1 * k2 / (n1 * n2)), rtol=0, atol=1e-14)


@pytest.mark.parametrize("n1,n2", [(1, 1), (1, 7), (4, 4), (3, 5), (16, 64), (25, 40)])
@pytest.mark.parametrize("sign", [-1, 1])
def test_four_step_index_math_on_one_process(n1, n2, sign):
    x = np.random.default_rng(n1 * 100 + n2).standard_normal(n1 * n2) + 1j
    want = np.fft.fft(x) if sign < 0 else np.fft.ifft(x) * x.size
    w = fb.nat_to_spec(x.copy(), n1, n2, sign)
    assert np.allclose(w, want.reshape(n2, n1).T, rtol=1e-12, atol=1e-12)  # W[k1, k2] = X[k1 + n1 k2]
    nat, part = fb.spec_order_to_nat(w, n1, n2)
    assert part == [n1 * n2] and np.allclose(nat, want, rtol=1e-12, atol=1e-12)
    assert np.array_equal(fb.nat_order_to_spec(nat, n1, n2), w)
    back = fb.spec_to_nat(w.copy(), n1, n2, -sign)
    assert np.allclose(back / x.size, x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 13, 101, 1009])
@pytest.mark.parametrize("sign", [-1, 1])
def test_bluestein_on_one_process(n, sign):
    x = np.random.default_rng(n).standard_normal(n) + 0.5j
    m = fp.bluestein_length(n)
    k = m.bit_length() - 1
    how = fp.Plan(("bluestein", n, 1 << (k // 2), m >> (k // 2), m))
    got, part = fb.vector_dft(x.copy(), [n], n, sign, how)
    want = np.fft.fft(x) if sign < 0 else np.fft.ifft(x) * n
    assert part == [n] and np.allclose(got, want, rtol=1e-10, atol=1e-10 * n)


def test_cook_matches_numpy_including_deprecations():
    shape = (4, 5, 6)
    assert cfft._cook(shape, None, None) == ([4, 5, 6], [0, 1, 2])
    assert cfft._cook(shape, [3, -1], (0, -1)) == ([3, 6], [0, 2])
    assert cfft._cook(shape, None, (0, 2), invreal=True) == ([4, 10], [0, 2])
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None`"):
        assert cfft._cook(shape, (2, 3), None) == ([2, 3], [1, 2])
    with pytest.warns(DeprecationWarning, match="containing `None`"):
        cfft._cook(shape, (None, 3), (0, 1))
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        cfft._cook(shape, (2,), (0, 1))


def test_matlab_names_on_numpy_arrays_follow_matlab():
    X = np.random.default_rng(0).random((4, 6))
    assert np.allclose(spmdlab.fft(X), np.fft.fft(X, axis=0))  # first non-singleton dim
    assert np.allclose(spmdlab.fft(X, 8, 2), np.fft.fft(X, 8, axis=1))
    assert np.allclose(spmdlab.fft(X[None, 0]), np.fft.fft(X[0]))  # 1 x 6: along dim 2
    S = np.fft.fft(X, axis=0)
    assert np.allclose(spmdlab.ifft(S, None, 1, "symmetric"), X)
    assert spmdlab.ifft(S, "symmetric").dtype == np.float64
    assert np.allclose(spmdlab.ifft2(spmdlab.fft2(X)), X)
    assert np.allclose(spmdlab.fft2(X, 5, 7), np.fft.fft2(X, (5, 7), axes=(0, 1)))
    assert np.allclose(spmdlab.ifftn(spmdlab.fftn(X), "symmetric"), X)
    with pytest.raises(ValueError, match="numbered from 1"):
        spmdlab.fft(X, None, 0)
    with pytest.raises(ValueError, match="'symmetric' or 'nonsymmetric'"):
        spmdlab.ifft(X, None, 1, "sym")


# =========================================================================== on pools
SIZES = (1, 2, 3, 4)


@pytest.fixture(scope="module")
def pools(pools):
    return {n: pools(n) for n in SIZES}


def layouts(shape):
    out = [("1d", d) for d in range(1, len(shape) + 1)]
    if len(shape) == 2:
        out += [("2dbc", 2), ("2dbc", 3)]
    return out


def make_codist(spec, shape):
    kind, arg = spec
    if kind == "1d":
        return codistributor1d(arg)
    return codistributor2dbc(None, arg)


def run_cases(cases):
    """On each lab: every case against numpy on the whole array. Returns (failures, count)."""
    bad = []
    for fname, shape, dtype, spec, kw in cases:
        label = f"{fname}{shape} {np.dtype(dtype).name} {spec} {kw}"
        rng = np.random.default_rng(zlib.crc32(repr((shape, np.dtype(dtype).str)).encode()))
        X = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            X = X + 1j * rng.standard_normal(shape)
        X = X.astype(dtype)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                want = getattr(np.fft, fname)(X, **kw)
        except Exception as exc:  # numpy's error: ours must be the same kind
            try:
                getattr(np.fft, fname)(codistributed(X, make_codist(spec, shape)), **kw)
                bad.append(f"{label}: no error, numpy raised {exc!r}")
            except type(exc):
                pass
            except Exception as mine:
                bad.append(f"{label}: {mine!r}, numpy raised {exc!r}")
            continue
        D = codistributed(X, make_codist(spec, shape))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                R = getattr(np.fft, fname)(D, **kw)
            G = gather(R)
        except Exception as exc:
            bad.append(f"{label}: {exc!r}")
            continue
        single = np.dtype(dtype) in (np.float32, np.complex64)
        rtol = 1e-4 if single else 1e-10
        scale = float(np.max(np.abs(want))) if want.size else 1.0
        if G.shape != want.shape or G.dtype != want.dtype:
            bad.append(f"{label}: got {G.shape} {G.dtype}, numpy {want.shape} {want.dtype}")
        elif not np.allclose(G, want, rtol=rtol, atol=rtol * scale):
            bad.append(f"{label}: max error {np.max(np.abs(G - want)):.3g} (scale {scale:.3g})")
        elif not np.array_equal(gather(D), X):
            bad.append(f"{label}: the input changed")
        elif isinstance(getCodistributor(D), codistributor1d) and \
                getCodistributor(R).Dimension != getCodistributor(D).Dimension:
            bad.append(f"{label}: result layout {getCodistributor(R)!r}")
        elif isinstance(getCodistributor(D), codistributor2dbc) and \
                (getCodistributor(R).LabGrid, getCodistributor(R).BlockSize) != \
                (getCodistributor(D).LabGrid, getCodistributor(D).BlockSize):
            bad.append(f"{label}: result layout {getCodistributor(R)!r}")
    return bad, len(cases)


def each_pool(pools, cases, sizes=SIZES):
    for n in sizes:
        with spmd(pool=pools[n], timeout=150):
            bad, count = run_cases(cases)
        failures = [f"{n} labs, lab {lab}: {m}" for lab, ms in enumerate(bad, start=1) for m in ms]
        assert not failures, "\n".join(failures[:30]) + f"\n({len(failures)} failures)"
        assert count[1] == len(cases)


SHAPES_1D = [(1,), (2,), (3,), (5,), (13,), (16,), (97,), (1000,)]
SHAPES_ND = [(7, 10), (3, 5), (1, 37), (37, 1), (2, 3, 4), (0, 6), (6, 0), (4, 4)]


def one_d_cases():
    cases = []
    for shape in SHAPES_1D + SHAPES_ND:
        nd = len(shape)
        for spec in layouts(shape):
            for fname in ("fft", "ifft"):
                for kw in ({}, {"axis": 0}, {"n": 7, "norm": "ortho"}, {"n": 1, "axis": -1, "norm": "forward"}):
                    if "axis" in kw and kw["axis"] >= nd:
                        continue
                    cases.append((fname, shape, np.complex128, spec, kw))
            for fname, dt in (("rfft", np.float64), ("irfft", np.complex128), ("hfft", np.complex128),
                              ("ihfft", np.float64)):
                for kw in ({}, {"axis": 0, "norm": "ortho"}, {"n": 9}, {"n": 4, "norm": "forward"}):
                    if fname in ("irfft", "hfft") and 0 in shape:
                        continue  # numpy's irfft of an empty axis returns uninitialized memory
                    cases.append((fname, shape, dt, spec, kw))
    return cases


@pytest.mark.parametrize("labs", SIZES)
def test_one_dimensional_transforms_equal_numpy(pools, labs):
    each_pool(pools, one_d_cases(), sizes=(labs,))


def nd_cases():
    cases = []
    for shape in [(7, 10), (3, 5), (1, 37), (2, 3, 4), (0, 6), (5, 6, 7), (1, 1, 9)]:
        nd = len(shape)
        for spec in layouts(shape):
            for fname in ("fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"):
                if fname.endswith("2") and (nd < 2 or spec[0] == "2dbc"):
                    continue
                dt = np.float64 if fname.startswith("rfft") else np.complex128
                kws = [{}, {"s": [3] * min(nd, 2), "axes": list(range(min(nd, 2)))}]
                if not fname.endswith("2"):
                    kws += [{"norm": "ortho", "axes": (0,)}]
                    if nd >= 2:
                        kws += [{"axes": (1, 0)}, {"s": (4, 5), "axes": (-1, 0), "norm": "forward"}, {"axes": (0, 0)}]
                    if nd == 3:
                        kws += [{"s": (2, 3)}]  # deprecated: s without axes
                for kw in kws:
                    if "irfft" in fname and 0 in shape:
                        continue
                    cases.append((fname, shape, dt, spec, kw))
    return cases


@pytest.mark.parametrize("labs", SIZES)
def test_multidimensional_transforms_equal_numpy(pools, labs):
    each_pool(pools, nd_cases(), sizes=(labs,))


def test_dtypes_follow_numpy(pools):
    cases = []
    for shape in [(6, 5), (11,)]:
        for spec in layouts(shape)[:2]:
            for dt in (np.float32, np.complex64, np.int32, np.float64):
                for fname in ("fft", "ifft", "fft2" if len(shape) == 2 else "fftn", "rfft", "irfft"):
                    cases.append((fname, shape, dt, spec, {}))
    each_pool(pools, cases, sizes=(1, 3))


@pytest.mark.parametrize("labs", SIZES)
def test_shifts_equal_numpy(pools, labs):
    cases = []
    for shape in SHAPES_1D + SHAPES_ND + [(5, 6, 7)]:
        for spec in layouts(shape):
            for fname in ("fftshift", "ifftshift"):
                for kw in ({}, {"axes": 0}, {"axes": (-1,)}, {"axes": (0, 0)}):
                    cases.append((fname, shape, np.float64, spec, kw))
    each_pool(pools, cases, sizes=(labs,))


def test_errors_are_numpys(pools):
    cases = [("fft", (5,), np.float64, ("1d", 1), {"n": 0}), ("fft", (5,), np.float64, ("1d", 1), {"norm": "x"}),
             ("fft", (0,), np.float64, ("1d", 1), {}), ("rfft", (5,), np.complex128, ("1d", 1), {}),
             ("fft2", (4, 4), np.float64, ("1d", 1), {"s": (3,), "axes": (0, 1)}),
             ("fft", (4, 4), np.float64, ("1d", 1), {"axis": 2})]
    each_pool(pools, cases, sizes=(2,))


def long_vectors(n):
    x = np.random.default_rng(n).standard_normal(n) + 1j * np.random.default_rng(n + 1).standard_normal(n)
    D = codistributed(x)
    out = {}
    for name, f, g in (("fft", np.fft.fft, np.fft.fft), ("ifft", np.fft.ifft, np.fft.ifft),
                       ("rfft", lambda d: np.fft.rfft(d.real), lambda a: np.fft.rfft(a.real)),
                       ("irfft", np.fft.irfft, np.fft.irfft)):
        G = gather(f(D))
        W = g(x)
        out[name] = (G.shape == W.shape, float(np.max(np.abs(G - W)) / np.max(np.abs(W))))
    R = np.fft.ifft(np.fft.fft(D))
    out["round trip"] = (True, float(np.max(np.abs(gather(R) - x))))
    return out


@pytest.mark.parametrize("n", [2 ** 16, 10007, 3 * 2 ** 11 + 1, 2 * 4999])
def test_long_vectors_four_step_and_bluestein(pools, n):
    for labs in (2, 4):
        res = spmdlab.spmd_run(long_vectors, n, pool=pools[labs], timeout=150)
        for lab in range(1, labs + 1):
            for name, (shape_ok, err) in res[lab].items():
                assert shape_ok and err < 1e-11, (labs, lab, name, err)


def comm_counts():
    """How many all-to-alls (redistributions, slab transposes by messages or pipelined
    through the staging window) each transform makes on this lab."""
    from spmdlab.arrays.fft import exchange as fx
    from spmdlab.arrays.fft import pipeline as fpipe

    calls = []
    original, slab = fx.redistribute, fx.slab_transpose
    piped = fpipe.cols_to_rows, fpipe.rows_to_cols

    def counting(D, codist=None):
        calls.append(codist)
        return original(D, codist)

    def counting_slab(*args):
        calls.append(args[1:])
        return slab(*args)

    def counting_pipe(f):
        def counted(*args, **kw):
            r = f(*args, **kw)
            if r is not None:  # (None: no staging window, the messages are counted)
                calls.append(args[1:5])
            return r
        return counted

    fx.redistribute, fx.slab_transpose = counting, counting_slab
    fpipe.cols_to_rows, fpipe.rows_to_cols = (counting_pipe(f) for f in piped)
    try:
        out = {}
        X = np.random.default_rng(0).random((64, 48))
        D = codistributed(X)  # by columns
        for name, f in (("fft axis 0", lambda: np.fft.fft(D, axis=0)), ("fft axis 1", lambda: np.fft.fft(D)),
                        ("fft2", lambda: np.fft.fft2(D)), ("fft2 T", lambda: cfft.fft2(D, transposed=True)),
                        ("fftn axes 0", lambda: np.fft.fftn(D, axes=(0,))),
                        ("vector", lambda: np.fft.fft(codistributed(np.ones(4096)))),
                        ("shift 0", lambda: np.fft.fftshift(D, axes=0))):
            calls.clear()
            f()
            out[name] = len(calls)
        T = cfft.fft2(D, transposed=True)
        calls.clear()
        B = cfft.ifft2(T, transposed=True)
        out["ifft2 of T"] = len(calls)
        out["round trip"] = (getCodistributor(B) == getCodistributor(D),
                             bool(np.allclose(gather(B), X, rtol=1e-12, atol=1e-12)))
        return out
    finally:
        fx.redistribute, fx.slab_transpose = original, slab
        fpipe.cols_to_rows, fpipe.rows_to_cols = piped


def test_local_axes_need_no_communication_distributed_ones_one_all_to_all(pools):
    res = spmdlab.spmd_run(comm_counts, pool=pools[4], timeout=100)[1]
    assert res["fft axis 0"] == 0 and res["fftn axes 0"] == 0 and res["shift 0"] == 0
    assert res["fft axis 1"] == 2  # there and back
    assert res["fft2"] == 2 and res["fft2 T"] == 1 and res["ifft2 of T"] == 1
    assert res["vector"] == 3  # four-step: three transposes (4096 = 64 x 64, default partition)
    assert res["round trip"] == (True, True)


def matlab_on_labs():
    X = np.random.default_rng(3).random((6, 9))
    D = codistributed(X, codistributor2dbc(None, 2))
    V = codistributed(np.arange(11.0))
    checks = {
        "fft dim 1": np.allclose(gather(spmdlab.fft(D)), np.fft.fft(X, axis=0)),
        "fft n dim 2": np.allclose(gather(spmdlab.fft(D, 12, 2)), np.fft.fft(X, 12, axis=1)),
        "ifft symmetric": np.allclose(gather(spmdlab.ifft(spmdlab.fft(D, None, 2), None, 2, "symmetric")), X),
        "fft2/ifft2": np.allclose(gather(spmdlab.ifft2(spmdlab.fft2(D))), X),
        "fftn siz": np.allclose(gather(spmdlab.fftn(D, (4, 5))), np.fft.fftn(X, (4, 5))),
        "ifftn symmetric": np.allclose(gather(spmdlab.ifftn(spmdlab.fftn(D), "symmetric")), X),
        "vector": np.allclose(gather(spmdlab.ifft(spmdlab.fft(V))), np.arange(11.0)),
        "transposed": np.allclose(gather(spmdlab.fft2(D, transposed=True)), np.fft.fft2(X)),
    }
    return checks


def test_matlab_names_inside_spmd(pools):
    for labs in (1, 3, 4):
        res = spmdlab.spmd_run(matlab_on_labs, pool=pools[labs], timeout=100)
        for lab in range(1, labs + 1):
            assert all(res[lab].values()), (labs, lab, res[lab])


def test_client_distributed_forwards_and_returns_distributed(pools):
    pool = pools[3]
    X = np.random.default_rng(5).random((8, 10))
    D = distributed(X, pool=pool)
    for f, g in ((np.fft.fft2, np.fft.fft2), (np.fft.rfft, np.fft.rfft), (np.fft.fftshift, np.fft.fftshift),
                 (lambda a: np.fft.irfftn(a, s=(8, 10), axes=(0, 1)), lambda a: np.fft.irfftn(a, s=(8, 10), axes=(0, 1))),
                 (spmdlab.fft, lambda a: np.fft.fft(a, axis=0)),
                 (lambda a: spmdlab.ifft(a, 4, 2), lambda a: np.fft.ifft(a, 4, axis=1)),
                 (spmdlab.fft2, lambda a: np.fft.fft2(a)), (spmdlab.fftn, np.fft.fftn),
                 (lambda a: spmdlab.fft(a, None, 1, transposed=True), lambda a: np.fft.fft(a, axis=0))):
        R = f(D)
        assert isinstance(R, distributed)
        assert np.allclose(gather(R), g(X), rtol=1e-10, atol=1e-12)
    # out= on the labs
    with spmd(pool=pool, timeout=60):
        E = codistributed(X + 0j)
        O = codistributed.zeros(8, 10, codist=codistributor1d(1), dtype=complex)
        back = np.fft.fft(E, out=O)
        same = back is O and bool(np.allclose(gather(O), np.fft.fft(X)))
    assert all(same)


def memory_probe(n, what):
    import tracemalloc as tm

    tm.start()
    if what == "fft2":
        D = codistributed.rand(n, n, seed=1) + 0j  # complex128, by columns
        f = lambda: np.fft.fft2(D)
    else:
        D = codistributed.rand(1, n * n, seed=1).ravel() + 0j
        f = lambda: np.fft.fft(D)
    fb.clear_cache()  # the exchange buffer slab transposes keep counts as new memory
    part = getLocalPart(D).nbytes
    from spmdlab.lab import comm

    tm.reset_peak()
    before, window = tm.get_traced_memory()[0], comm.staging_bytes()
    R = f()
    # (redistribute's staging window is MPI's memory, not traced: what it grew counts too)
    peak = tm.get_traced_memory()[1] - before + comm.staging_bytes() - window
    tm.stop()
    return peak / part, getLocalPart(R).nbytes / part


@pytest.mark.parametrize("what,bound", [("fft2", 2.7), ("vector", 2.3)])
def test_memory_part_plus_one_exchange_buffer(pools, what, bound):
    """fft2: a lab holds its part and, at the peak, the intermediate part, the result's part
    and the four chunks of the staging window its pipelined transposes use (2.51 parts of
    new memory measured on 4 labs; 2.76 with the message exchanges before). The
    pipelined four-step vector FFT frees each intermediate after its transpose (2.02
    parts; 3.77 before). Nothing like the whole array is ever allocated (that alone
    would be numlabs parts and more for the vector's padding)."""
    res = spmdlab.spmd_run(memory_probe, 512, what, pool=pools[4], timeout=100)
    for lab in range(1, 5):
        peak, result = res[lab]
        assert result == pytest.approx(1.0, rel=0.05)
        assert 1.0 <= peak <= bound, (lab, peak)


# =========================================================================== pipelined transposes
def _uneven(n, p):
    """A partition of n over p labs unlike the default one (the first lab holds 1)."""
    if p == 1 or n < p:
        return fp.default_partition(n, p)
    return [1] + fp.default_partition(n - 1, p - 1)


def pipelined_in_many_chunks(shapes, vector_lengths):
    """On the labs: with chunks of a few hundred bytes (so many chunks, with the buffers
    reused round after round), matrices by rows and by columns (default and uneven
    partitions) and four-step vectors against numpy; returns (failures, whether each
    transpose went through the staging window)."""
    from spmdlab import numlabs
    from spmdlab.arrays.fft import pipeline

    p = numlabs()
    saved = pipeline.CHUNK_BYTES, pipeline.MIN_CHUNKS, pipeline.SMALL_BYTES, pipeline.window
    used = []

    def counting(nbytes, what):
        st = saved[3](nbytes, what)
        used.append(st is not None)
        return st

    pipeline.CHUNK_BYTES, pipeline.MIN_CHUNKS, pipeline.SMALL_BYTES, pipeline.window = 512, 8, 0, counting
    bad = []
    try:
        for shape in shapes:
            rng = np.random.default_rng(zlib.crc32(repr(shape).encode()))
            X = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
            for dim, part in ((1, None), (2, None), (1, _uneven(shape[0], p)), (2, _uneven(shape[1], p))):
                codist = codistributor1d(dim) if part is None else codistributor1d(dim, part, shape)
                D = codistributed(X, codist)
                for name, f, want in (
                        ("fft2", lambda d: np.fft.fft2(d), np.fft.fft2(X)),
                        ("ifft2 ortho", lambda d: np.fft.ifft2(d, norm="ortho"), np.fft.ifft2(X, norm="ortho")),
                        ("fft axis 0", lambda d: np.fft.fft(d, axis=0), np.fft.fft(X, axis=0)),
                        ("ifft axis 1", lambda d: np.fft.ifft(d, axis=1), np.fft.ifft(X, axis=1)),
                        ("fft2 T", lambda d: cfft.fft2(d, transposed=True), np.fft.fft2(X)),
                        ("round trip T", lambda d: cfft.ifft2(cfft.fft2(d, transposed=True), transposed=True), X)):
                    R = f(D)
                    err = float(np.max(np.abs(gather(R) - want))) / max(1.0, float(np.max(np.abs(want))))
                    if err > 1e-12:
                        bad.append(f"{shape} dim {dim} part {part} {name}: error {err:.3g}")
                    if name != "fft2 T" and getCodistributor(R).Dimension != dim:
                        bad.append(f"{shape} dim {dim} {name}: result layout {getCodistributor(R)!r}")
                if not np.array_equal(gather(D), X):
                    bad.append(f"{shape} dim {dim}: the input changed")
        for n in vector_lengths:
            x = np.random.default_rng(n).standard_normal(n) + 1j
            V = codistributed(x)
            for name, f, g in (("fft", np.fft.fft, np.fft.fft), ("ifft", np.fft.ifft, np.fft.ifft)):
                want = g(x)
                err = float(np.max(np.abs(gather(f(V)) - want)) / np.max(np.abs(want)))
                if err > 1e-12:
                    bad.append(f"vector {n} {name}: error {err:.3g}")
    finally:
        pipeline.CHUNK_BYTES, pipeline.MIN_CHUNKS, pipeline.SMALL_BYTES, pipeline.window = saved
    return bad, used


@pytest.mark.parametrize("labs", (2, 3))
def test_pipelined_transposes_in_many_chunks_equal_numpy(pools, labs):
    """The slab transposes through the staging window, in many small chunks (each lab's
    four buffers reused again and again: a lab that wrote a buffer another still read
    would show here), uneven partitions and lengths that do not split evenly."""
    res = spmdlab.spmd_run(pipelined_in_many_chunks, [(37, 29), (8, 61), (64, 24)], [4096, 36 * 25],
                           pool=pools[labs], timeout=170)
    for lab in range(1, labs + 1):
        bad, used = res[lab]
        assert not bad, (labs, lab, bad[:10])
        assert used and all(used), (labs, lab, used)


# =========================================================================== 3-D arrays
def three_d_cases(shapes, messages=False):
    """On the labs: fftn and its relatives of 3-D arrays in 1-D layouts along each
    dimension (default and uneven partitions), against numpy on the whole array
    (``messages``: without the staging window, as on several machines)."""
    from spmdlab import numlabs
    from spmdlab.arrays.fft import pipeline

    p = numlabs()
    bad: list = []
    pipeline.ENABLED = not messages
    try:
        _three_d(shapes, p, bad)
    finally:
        pipeline.ENABLED = True
    return bad


def _three_d(shapes, p, bad):
    for shape in shapes:
        rng = np.random.default_rng(zlib.crc32(repr(shape).encode()))
        X = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        R = X.real.copy()
        for dim in (1, 2, 3):
            for part in (None, _uneven(shape[dim - 1], p)):
                codist = codistributor1d(dim) if part is None else codistributor1d(dim, part, shape)
                D, E = codistributed(X, codist), codistributed(R, codist)
                for name, f, want in (
                        ("fftn", lambda: np.fft.fftn(D), np.fft.fftn(X)),
                        ("ifftn ortho", lambda: np.fft.ifftn(D, norm="ortho"), np.fft.ifftn(X, norm="ortho")),
                        ("fftn axes (2, 0)", lambda: np.fft.fftn(D, axes=(2, 0)), np.fft.fftn(X, axes=(2, 0))),
                        ("fftn s", lambda: np.fft.fftn(D, s=(3, 4, 5), axes=(0, 1, 2)),
                         np.fft.fftn(X, s=(3, 4, 5), axes=(0, 1, 2))),
                        ("rfftn", lambda: np.fft.rfftn(E), np.fft.rfftn(R)),
                        ("irfftn", lambda: np.fft.irfftn(np.fft.rfftn(E), s=shape), R),
                        ("fftn T", lambda: cfft.fftn(D, transposed=True), np.fft.fftn(X))):
                    try:
                        G = f()
                        got = gather(G)
                    except Exception as exc:
                        bad.append(f"{shape} dim {dim} part {part} {name}: {exc!r}")
                        continue
                    scale = max(1.0, float(np.max(np.abs(want))))
                    if got.shape != want.shape or float(np.max(np.abs(got - want))) > 1e-12 * scale:
                        bad.append(f"{shape} dim {dim} part {part} {name}: wrong values")
                    elif name != "fftn T" and getCodistributor(G).Dimension != dim:
                        bad.append(f"{shape} dim {dim} {name}: result layout {getCodistributor(G)!r}")


@pytest.mark.parametrize("labs,messages", [(2, False), (3, False), (4, False), (3, True)])
def test_three_dimensional_fftn_on_every_one_d_layout_equals_numpy(pools, labs, messages):
    """3-D arrays distributed along each of their dimensions (pencils along the first and
    the last, slabs along the middle one), some too short for every lab to hold a slab of
    them ((2, 9, 3) on 3 and 4 labs); with and without the staging window."""
    res = spmdlab.spmd_run(three_d_cases, [(8, 6, 10), (4, 3, 16), (2, 9, 3)], messages, pool=pools[labs],
                           timeout=170)
    for lab in range(1, labs + 1):
        bad = res[lab]
        assert not bad, (labs, lab, bad[:10], len(bad))


def pencil_counts():
    """On the labs: how fftn of a 3-D array by its last dimension moves (pencils: two
    transposes of the (x·y, z) matrix; a slab along x would need a redistribution there
    and one back) and the shapes of the pencils."""
    from spmdlab.arrays.fft import exchange as fx
    from spmdlab.arrays.fft import pipeline as fpipe

    calls = []
    piped, original = (fpipe.cols_to_rows, fpipe.rows_to_cols), fx.redistribute

    def counted(f):
        def g(*args, **kw):
            calls.append((f.__name__, args[1], args[2]))
            return f(*args, **kw)
        return g

    fpipe.cols_to_rows, fpipe.rows_to_cols = (counted(f) for f in piped)
    fx.redistribute = lambda *a: calls.append("redistribute") or original(*a)
    try:
        X = np.random.default_rng(1).random((2, 3, 40)) + 0j
        np.fft.fftn(codistributed(X))
    finally:
        fpipe.cols_to_rows, fpipe.rows_to_cols = piped
        fx.redistribute = original
    return calls


def test_three_dimensional_fftn_by_pencils(pools):
    """(2, 3, 40) on 4 labs: x and y too short for slabs of every lab; pencils: the 6 x-y
    positions split over the labs, whole z lines each, one transpose there, one back."""
    res = spmdlab.spmd_run(pencil_counts, pool=pools[4], timeout=100)
    for lab in range(1, 5):
        assert res[lab] == [("cols_to_rows", 6, 40), ("rows_to_cols", 6, 40)], res[lab]


def failing_in_the_pipeline():
    """On the labs: lab 2's chunk transform fails halfway through fft2's first pipelined
    transpose, while lab 1 waits for it in a chunk's barrier."""
    from spmdlab import labindex
    from spmdlab.arrays.fft import pipeline

    original, calls = pipeline.fft_into, []

    def failing(*args):
        calls.append(1)
        if labindex() == 2 and len(calls) == 3:
            raise MemoryError("lab 2 ran out of memory in a chunk")
        return original(*args)

    pipeline.fft_into = failing
    try:
        X = np.random.default_rng(0).random((512, 256)) + 0j  # parts of 1 MB: 8 chunks
        np.fft.fft2(codistributed(X))
    finally:
        pipeline.fft_into = original


def test_an_error_in_a_pipelined_transpose_reaches_every_lab_and_the_pool_stays_usable(pools):
    from spmdlab import SpmdError

    pool = pools[2]
    with pytest.raises(SpmdError) as info:
        spmdlab.spmd_run(failing_in_the_pipeline, pool=pool, timeout=60)
    assert "MemoryError" in str(info.value) and "lab 2 ran out of memory in a chunk" in str(info.value)
    X = np.random.default_rng(1).random((64, 48)) + 0j
    with spmd(pool=pool, timeout=60):  # the pool, its staging window and fft2 still work
        ok = bool(np.allclose(gather(np.fft.fft2(codistributed(X))), np.fft.fft2(X)))
    assert all(ok)
