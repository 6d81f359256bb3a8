"""Threads inside each lab by size threshold (PDL::ParallelCPU, issue 24), and small
``distributed`` arrays kept whole on one lab (``SPMDLAB_DISTRIBUTE_SIZE``).

Lab-side checks compare the threaded result with numpy's on the gathered data: bitwise for
elementwise operations, to rounding for reductions; thread counts above the cores (3 on a
2-core machine) are fine for exactness and make the pieces uneven.
"""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spmdlab
from spmdlab import (
    SpmdError,
    codistributed,
    codistributor1d,
    codistributor2dbc,
    distributed,
    gather,
    get_autothread_actual,
    get_autothread_size,
    get_autothread_targ,
    set_autothread_size,
    set_autothread_targ,
    spmd,
    spmd_run,
)
from spmdlab import settings as spmdlab_settings

cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.timeout(300)


def same_bits(got, want) -> bool:
    want = np.asarray(want)
    return got.shape == want.shape and got.dtype == want.dtype and got.tobytes() == want.tobytes()


# --------------------------------------------------------------------------- lab side
def elementwise_cases(targ: int, size: float):
    """(label, exact?, threads used) for each elementwise operation on large parts."""
    set_autothread_targ(targ)
    set_autothread_size(size)
    out = []
    rng = np.random.default_rng(7)
    for shape, codist in [((100_003,), None), ((301, 77), None), ((301, 77), codistributor2dbc()),
                          ((50, 41, 9), codistributor1d(2))]:
        x = rng.standard_normal(shape)
        D = codistributed(x, codist) if codist is not None else codistributed(x)
        row = rng.standard_normal(shape[-1:])
        ops = {
            "D * 2 + 1": (lambda A: A * 2 + 1, lambda a: a * 2 + 1),
            "sin": (np.sin, np.sin), "exp": (np.exp, np.exp), "D ** 2": (lambda A: A ** 2, lambda a: a ** 2),
            "where": (lambda A: np.where(A > 0.5, A, -A), lambda a: np.where(a > 0.5, a, -a)),
            "clip": (lambda A: np.clip(A, -0.2, 0.8), lambda a: np.clip(a, -0.2, 0.8)),
            "divmod[1]": (lambda A: np.divmod(A, 0.3)[1], lambda a: np.divmod(a, 0.3)[1]),
            "+ row": (lambda A: A + row, lambda a: a + row),
            "isclose": (lambda A: np.isclose(A, 0.1, atol=0.3), lambda a: np.isclose(a, 0.1, atol=0.3)),
        }
        for name, (f, g) in ops.items():
            r = f(D)
            used = get_autothread_actual()
            out.append((f"{shape} {name}", same_bits(gather(r), g(x)), used))
        E = codistributed.zeros(shape, codist=D.codistributor) if codist is not None else codistributed.zeros(shape)
        np.multiply(D, 3.0, out=E)
        out.append((f"{shape} out=", same_bits(gather(E), x * 3.0), get_autothread_actual()))
        D += 1.5
        out.append((f"{shape} +=", same_bits(gather(D), x + 1.5), get_autothread_actual()))
    return out


def reduction_cases(targ: int, size: float):
    """(label, agrees?, threads used) for reductions whole and along each axis."""
    set_autothread_targ(targ)
    set_autothread_size(size)
    out = []
    rng = np.random.default_rng(11)
    for shape, codist in [((100_003,), None), ((301, 177), None), ((301, 177), codistributor1d(1)),
                          ((3001, 5), codistributor1d(2)), ((300, 170), codistributor2dbc()),
                          ((40, 33, 31), codistributor1d(3))]:
        x = rng.random(shape) + 0.5
        D = codistributed(x, codist) if codist is not None else codistributed(x)
        near1 = 1 + (D - 1) * 1e-4  # products that neither overflow nor underflow (as on more labs)
        for axis in [None, *range(len(shape))]:
            for how in ("sum", "prod", "min", "max", "any", "all", "mean", "var", "std"):
                data = {"any": x > 1, "all": x > 1, "prod": 1 + (x - 1) * 1e-4}.get(how, x)
                want = getattr(np, how)(data, axis=axis)
                arg = {"any": D > 1, "all": D > 1, "prod": near1}.get(how, D)
                got = getattr(arg, how)(axis=axis)
                used = get_autothread_actual()
                got = gather(got) if isinstance(got, codistributed) else got
                if how in ("min", "max", "any", "all"):
                    ok = np.array_equal(got, want)
                else:
                    ok = np.allclose(got, want, rtol=1e-10, atol=0) and np.shape(got) == np.shape(want)
                out.append((f"{shape} {how} axis={axis}", bool(ok), used))
    return out


def actual_after(n: int, targ: int, size: float) -> tuple:
    """The actual thread count after an elementwise op and a sum of an n-element array."""
    set_autothread_targ(targ)
    set_autothread_size(size)
    D = codistributed.ones((n,))
    E = D * 2
    a = get_autothread_actual()
    E.sum()
    return a, get_autothread_actual()


def blas_and_fft(targ: int) -> tuple:
    from threadpoolctl import threadpool_info

    set_autothread_targ(targ)
    set_autothread_size(0.01)
    blas = sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
    x = np.random.default_rng(3).standard_normal((4096, 8))
    D = codistributed(x, codistributor1d(2))
    F = np.fft.fft(D, axis=0)
    used = get_autothread_actual()
    ok = np.allclose(gather(F), np.fft.fft(x, axis=0), rtol=1e-12, atol=1e-9)
    return blas, used, bool(ok)


def settings_seen() -> tuple:
    return get_autothread_targ(), get_autothread_size()


# --------------------------------------------------------------------------- threaded results
@pytest.mark.parametrize("nlabs", [1, 2])
def test_elementwise_split_is_bitwise_exact(pools, nlabs):
    results = list(spmd_run(elementwise_cases, 3, 0.001, pool=pools(nlabs), timeout=240))
    for lab, cases in enumerate(results, start=1):
        wrong = [label for label, ok, _ in cases if not ok]
        assert wrong == [], f"lab {lab}: not bitwise numpy's result: {wrong}"
        unthreaded = [(label, used) for label, _, used in cases if used != 3]
        assert unthreaded == [], f"lab {lab}: ran on fewer threads than 3: {unthreaded}"


@pytest.mark.parametrize("nlabs", [1, 2])
def test_reductions_split_agree_with_numpy(pools, nlabs):
    results = list(spmd_run(reduction_cases, 3, 0.001, pool=pools(nlabs), timeout=240))
    for lab, cases in enumerate(results, start=1):
        wrong = [label for label, ok, _ in cases if not ok]
        assert wrong == [], f"lab {lab}: differs from numpy: {wrong}"
    if nlabs == 1:  # one lab holds everything: every reduction of these sizes is threaded
        assert {used for _, _, used in results[0]} == {3}


def test_actual_count_follows_the_size_threshold(pools):
    pool = pools(1)
    assert list(spmd_run(actual_after, 10_000, 3, 0.01, pool=pool)) == [(3, 3)]  # at the size: threads
    assert list(spmd_run(actual_after, 9_999, 3, 0.01, pool=pool)) == [(1, 1)]  # below: one
    assert list(spmd_run(actual_after, 10_000, 1, 0.01, pool=pool)) == [(1, 1)]  # targ 1
    assert list(spmd_run(actual_after, 2, 4, 0, pool=pool)) == [(2, 2)]  # never more than the length


def test_blas_and_fft_use_the_lab_thread_count(pools):
    pool = pools(1)
    assert list(spmd_run(blas_and_fft, 2, pool=pool)) == [([2], 2, True)]
    assert list(spmd_run(blas_and_fft, 1, pool=pool)) == [([1], 1, True)]


def test_spmdlab_blas_threads_keeps_blas_fixed():
    with spmdlab.Pool(1, threads=2, blas_threads=1) as pool:  # SPMDLAB_BLAS_THREADS=1
        assert list(spmd_run(blas_and_fft, 2, pool=pool)) == [([1], 2, True)]


# --------------------------------------------------------------------------- settings
def test_environment_variables_take_effect_in_a_new_pool(monkeypatch):
    monkeypatch.setenv("SPMDLAB_AUTOTHREAD_TARG", "3")
    monkeypatch.setenv("SPMDLAB_AUTOTHREAD_SIZE", "0.25")
    with spmdlab.Pool(2) as pool:
        assert list(spmd_run(settings_seen, pool=pool)) == [(3, 0.25)] * 2
    monkeypatch.delenv("SPMDLAB_AUTOTHREAD_TARG")
    monkeypatch.delenv("SPMDLAB_AUTOTHREAD_SIZE")
    with spmdlab.Pool(2) as pool:  # the default: labs × threads fit the cores
        assert list(spmd_run(settings_seen, pool=pool)) == [(max(1, spmdlab_settings.cpu_cores() // 2), 1.0)] * 2


def test_parpool_threads_sets_the_labs_thread_count():
    pool = spmdlab.parpool(2, threads=3, replace=True)
    try:
        assert get_autothread_targ() == 3  # at the client: the labs' value
        assert list(spmd_run(settings_seen, pool=pool)) == [(3, 1.0)] * 2
    finally:
        pool.close()


def test_client_calls_set_every_lab_and_report_the_most_used(pools):
    pool = pools(2, current=True)
    set_autothread_targ(2)
    set_autothread_size(0.01)
    assert list(spmd_run(settings_seen, pool=pool)) == [(2, 0.01)] * 2
    D = distributed(np.arange(100_000.0))  # spread over both labs (tests set SPMDLAB_DISTRIBUTE_SIZE=0)
    assert D.numlabs_used == 2
    assert same_bits(gather(D * 2 + 1), np.arange(100_000.0) * 2 + 1)
    assert get_autothread_actual() == 2
    assert D.sum() == np.arange(100_000.0).sum()
    assert get_autothread_actual() == 2
    (distributed(np.ones(10)) + 1).sum()
    assert get_autothread_actual() == 1


def test_bad_thread_settings_are_clear_errors(pools):
    with pytest.raises(ValueError, match=r"set_autothread_targ\(n\) must be 1 or more, got 0"):
        set_autothread_targ(0)
    with pytest.raises(TypeError, match=r"set_autothread_targ\(n\) must be a whole number of threads, got float"):
        set_autothread_targ(1.5)
    with pytest.raises(ValueError, match=r"set_autothread_size\(mega_elements\) must be 0 or more"):
        set_autothread_size(-1)
    with pytest.raises(ValueError, match=r"threads \(SPMDLAB_AUTOTHREAD_TARG\) must be 1 or more, got 0"):
        spmdlab.Pool(2, threads=0)
    pool = pools(2)
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool, timeout=60):
            set_autothread_targ(-2)
    text = str(info.value)
    assert text.startswith("Error detected on labs 1 and 2"), text
    assert "set_autothread_targ(n) must be 1 or more, got -2" in text
    assert "spmdlab/" not in text.split("Traceback")[-1] if "Traceback" in text else True
    assert list(spmd_run(settings_seen, pool=pool))[0][0] >= 1  # still usable


@pytest.mark.nompi
def test_settings_read_the_thread_and_distribute_variables(monkeypatch):
    s = spmdlab_settings.Settings()
    assert (s.autothread_targ, s.autothread_size, s.distribute_size) == (None, 1.0, 1e6)
    assert s.lab_threads(labs_here=10 ** 6) == 1
    assert s.lab_threads(labs_here=1) == spmdlab_settings.cpu_cores()
    monkeypatch.setenv("SPMDLAB_AUTOTHREAD_TARG", "0")
    with pytest.raises(ValueError, match="SPMDLAB_AUTOTHREAD_TARG"):
        spmdlab_settings.load()
    monkeypatch.setenv("SPMDLAB_AUTOTHREAD_TARG", "2")
    monkeypatch.setenv("SPMDLAB_DISTRIBUTE_SIZE", "-5")
    with pytest.raises(ValueError, match="SPMDLAB_DISTRIBUTE_SIZE"):
        spmdlab_settings.load()
    monkeypatch.setenv("SPMDLAB_DISTRIBUTE_SIZE", "2.5e6")
    s = spmdlab_settings.load(threads=4)
    assert (s.autothread_targ, s.distribute_size) == (4, 2.5e6)
    env = s.lab_environment()
    assert env["SPMDLAB_AUTOTHREAD_TARG"] == "4"


# --------------------------------------------------------------------------- distribute threshold
def test_small_distributed_arrays_stay_whole_on_lab_1_by_default(monkeypatch):
    monkeypatch.delenv("SPMDLAB_DISTRIBUTE_SIZE", raising=False)  # the tests' pools set 0
    with spmdlab.Pool(4) as pool:
        assert pool.settings.distribute_size == 1e6
        R = distributed.rand(4, pool=pool)  # MATLAB's rand(4): 4 x 4
        assert R.numlabs_used == 1 and R.shape == (4, 4)
        assert list(R.codistributor.Partition) == [4, 0, 0, 0]
        x = np.arange(10.0).reshape(2, 5)
        D = distributed(x, pool=pool)
        assert D.numlabs_used == 1
        assert same_bits(gather(D * 2 + 1), x * 2 + 1) and (D * 2).numlabs_used == 1
        assert D.sum() == x.sum()
        assert distributed(x, codistributor1d(), pool=pool).numlabs_used == 4  # a codistributor: as asked
        assert distributed.rand(4, codistributor1d(), pool=pool).numlabs_used == 4
        assert distributed.rand(4, seed=5, pool=pool).numlabs_used == 1


def test_arrays_at_the_distribute_size_spread():
    with spmdlab.Pool(2, distribute_size=100) as pool:
        assert distributed.rand((99,), pool=pool).numlabs_used == 1
        assert distributed.rand((100,), pool=pool).numlabs_used == 2
        assert distributed.zeros(10, pool=pool).numlabs_used == 2  # 10 x 10
        assert distributed(np.ones((10, 10)), pool=pool).numlabs_used == 2
        assert distributed(np.ones((9, 11)), pool=pool).numlabs_used == 1


# --------------------------------------------------------------------------- the split itself, no MPI
@pytest.fixture
def local_threads():
    """The client's own arrays.threads state (what a lab has), restored afterwards."""
    from spmdlab.arrays import threads

    before = threads.targ(), threads.size()
    yield threads
    threads.set_targ(before[0])
    threads.set_size(before[1])


shapes = st.lists(st.integers(1, 70), min_size=1, max_size=3).map(tuple)


@pytest.mark.nompi
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=shapes, targ=st.integers(1, 5), bcast=st.integers(0, 2), seed=st.integers(0, 2 ** 16))
def test_elementwise_pieces_are_bitwise_the_unsplit_result(local_threads, shape, targ, bcast, seed):
    local_threads.set_targ(targ)
    local_threads.set_size(0)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    y = rng.standard_normal(shape[bcast % len(shape):] if bcast else shape)  # broadcasting from the right
    for fn, args in [(np.add, (x, y)), (np.sin, (x,)), (np.divmod, (x, 0.7)), (np.where, (x > 0, x, y)),
                     (lambda a, b: np.hypot(a, b) * 2, (x, y))]:
        want = fn(*args)
        got = local_threads.apply(fn, args)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert same_bits(g, w), (fn, shape)
    out = np.empty(shape)
    local_threads.apply(np.multiply, (x, 3.0), (out,))
    assert same_bits(out, x * 3.0)
    assert local_threads.actual() == min(targ, max(shape))


@pytest.mark.nompi
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=shapes, targ=st.integers(1, 5), axes=st.sets(st.integers(0, 2)), seed=st.integers(0, 2 ** 16))
def test_reduction_pieces_agree_with_numpy(local_threads, shape, targ, axes, seed):
    local_threads.set_targ(targ)
    local_threads.set_size(0)
    x = np.random.default_rng(seed).random(shape) + 0.5
    ax = tuple(sorted(a for a in axes if a < len(shape))) or None
    for fn, combine in [(np.sum, np.add), (np.max, np.maximum), (np.min, np.minimum), (np.prod, np.multiply)]:
        data = x if fn is not np.prod else 1 + (x - 1) * 1e-3
        want = fn(data) if ax is None else fn(data, axis=ax, keepdims=True)
        got = local_threads.reduce(fn, data, ax, {}, combine)
        assert np.shape(got) == np.shape(want)
        assert np.allclose(got, want, rtol=1e-12, atol=0), (fn, shape, ax)
        if fn in (np.max, np.min):
            assert np.array_equal(got, want)
