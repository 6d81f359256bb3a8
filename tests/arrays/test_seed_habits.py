"""The seed systems' habits on codistributed arrays, on real pools: pbdMPI's
``comm.print`` (``labprint``), pbdDMAT's ``print(x, all=TRUE)`` (``D.show``), Dagger.jl's
``map``, ``rand!``, ``AutoBlocks`` and ``:blockcol`` vectors, CuPy's index maps,
``itemsize`` and ``mT``; each against numpy or the seed's own documented example."""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest

from spmdlab import (
    AutoBlocks,
    SpmdError,
    changeMode,
    codistributed,
    codistributor1d,
    codistributorBlocks,
    codistributorChunks,
    gather,
    getCodistributor,
    getLocalPart,
    labindex,
    labprint,
    make_2d_index_map,
    numlabs,
    spmd_run,
)

pytestmark = pytest.mark.timeout(240)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def run_lines(capsys, fn, *args, pool) -> list[str]:
    capsys.readouterr()
    spmd_run(fn, *args, pool=pool, timeout=120)
    return capsys.readouterr().out.splitlines()


# --------------------------------------------------------------------------- labprint
def print_case(all_: bool, quiet: bool) -> None:
    labprint(f"value of lab {labindex()}", all=all_, quiet=quiet)


@pytest.mark.parametrize("all_,quiet,want", [
    (False, False, ["Lab 1: labindex = 1", "Lab 1: value of lab 1"]),
    (False, True, ["Lab 1: value of lab 1"]),
    (True, False, [f"Lab 1: {line}" for k in (1, 2, 3) for line in (f"labindex = {k}", f"value of lab {k}")]),
    (True, True, ["Lab 1: value of lab 1", "Lab 1: value of lab 2", "Lab 1: value of lab 3"]),
])
def test_labprint_prints_from_lab_1_or_every_lab_in_order(pools, capsys, all_, quiet, want):
    assert run_lines(capsys, print_case, all_, quiet, pool=pools(3)) == want


def print_alone() -> None:
    if labindex() == 2:
        labprint("only lab 2 calls it")  # all=False: lab 1 prints; lab 2 alone prints nothing, no hang
    if labindex() == 1:
        labprint(np.arange(3), quiet=True)


def test_labprint_without_all_needs_no_other_lab(pools, capsys):
    assert run_lines(capsys, print_alone, pool=pools(3)) == ["Lab 1: [0 1 2]"]


def print_bad() -> None:
    labprint("x", all="yes")


def test_labprint_bad_flag_is_an_error_on_every_lab(pools):
    with pytest.raises(SpmdError, match="(?s)labs 1-3.*labprint: all= and quiet= are True or False"):
        spmd_run(print_bad, pool=pools(3), timeout=60)


# --------------------------------------------------------------------------- print(D), D.show
def show_case(all_: bool, n: int = 100) -> None:
    D = codistributed.colon(0, n - 1)
    if all_:
        D.show(all=True)
    else:
        labprint(D, quiet=True)


def test_print_of_a_big_array_is_its_header(pools, capsys):
    lines = run_lines(capsys, show_case, False, 1000, pool=pools(3))
    assert lines == ["Lab 1: This lab stores D[0:334].", "Lab 1:   local part: shape (334,), dtype int64",
                     "Lab 1:   global: shape (1000,), codistributor1d(Dimension=1, Partition=[334, 333, 333], "
                     "GlobalSize=(1000,))"]


def test_show_all_streams_every_element_row_by_row(pools, capsys, monkeypatch):
    lines = run_lines(capsys, show_case, True, pool=pools(3))
    assert lines[0] == "Lab 1: codistributed array, shape (100,), dtype int64, on 3 labs"
    body = [line.removeprefix("Lab 1: ") for line in lines[2:]]
    assert body[0] == "[0] 0 1 2 3 4 5 6 7" and body[-1] == "[96] 96 97 98 99" and len(body) == 13
    values = [int(v) for line in body for v in line.split()[1:]]
    assert values == list(range(100))


def show_matrix() -> None:
    X = np.arange(12.0).reshape(3, 4)
    D = codistributed(X, codistributorBlocks((2, 2), "cycliccol"))
    D.show(all=True)


def test_show_all_of_a_block_matrix(pools, capsys):
    lines = [line.removeprefix("Lab 1: ") for line in run_lines(capsys, show_matrix, pool=pools(2))]
    assert lines[0] == "codistributed array, shape (3, 4), dtype float64, on 2 labs with 2×2 partitions of size 2×2"
    assert lines[2:] == ["[0, :] [0. 1. 2. 3.]", "[1, :] [4. 5. 6. 7.]", "[2, :] [ 8.  9. 10. 11.]"]


# --------------------------------------------------------------------------- Dagger
def dagger_case() -> str:
    n = numlabs()
    v = np.ones(15)
    # vd = distribute(v, Blocks(3), :blockcol) and :cycliccol with 4 workers (Dagger's docs)
    dagger = (("blockcol", [1, 1, 2, 3, 4]), ("cycliccol", [1, 2, 3, 4, 1])) if n == 4 else ()
    for rule, owners in dagger:
        vd = codistributed(v * np.arange(15), codistributorBlocks(3, rule))
        assert getCodistributor(vd).BlockOwners.tolist() == owners
        assert np.array_equal(gather(vd), v * np.arange(15))
        mine = [i for i in range(15) if owners[i // 3] == labindex()]
        assert getLocalPart(vd).tolist() == [float(i) for i in mine], rule
    # DX = rand(AutoBlocks(), 100, 100): one partition per lab along the last dimension
    DX = codistributed.rand(100, 100, AutoBlocks(), seed=3)
    c = getCodistributor(DX)
    assert c.partitions_text() == f"with 1×{n} partitions of size 100×{-(-100 // n)}"
    assert np.array_equal(gather(DX), gather(codistributed.rand(100, 100, c, seed=3)))
    assert f"global: shape (100, 100) with 1×{n} partitions" in repr(DX)
    # map(f, D) with any Python function, elementwise on the parts
    A = np.arange(-6, 6).reshape(3, 4)
    for layout in (None, codistributorBlocks((2, 2), "cycliccol"), codistributor1d(1, None, (3, 4), halo=1)):
        D = codistributed(A, layout)
        M = D.map(lambda x: x * x + 1 if x > 0 else -x)
        assert getCodistributor(M) == getCodistributor(D)
        assert M.dtype == np.int64 and np.array_equal(gather(M), np.vectorize(lambda x: x * x + 1 if x > 0 else -x)(A))
        assert gather(D.map(str, dtype="U3")).tolist() == A.astype("U3").tolist()
        S = D.map(lambda x: "+" * int(x + 6))  # lengths 0..11: numpy's dtype is <U11, over every lab
        assert S.dtype == np.dtype("<U11") and gather(S).tolist() == np.vectorize(lambda x: "+" * int(x + 6))(A).tolist()
        assert np.array_equal(gather(D.map(np.vectorize(float, otypes=[np.float32]))), A.astype(np.float32))
    # numpy's rule on the whole array: the first element's result decides the dtype, even
    # on labs whose own elements give floats
    half = lambda x: x / 2 if x >= 4 else x
    E = codistributed(np.arange(8), codistributor1d(1)).map(half)
    assert E.dtype == np.int64 and gather(E).tolist() == np.vectorize(half)(np.arange(8)).tolist()
    F = codistributed(np.arange(8)[::-1].copy(), codistributor1d(1)).map(half)
    assert F.dtype == np.float64 and gather(F).tolist() == np.vectorize(half)(np.arange(8)[::-1]).tolist()
    # a combining mode is made replica first
    C = codistributorChunks({k: [(slice(0, 4),)] for k in range(1, n + 1)}, (4,))
    S = changeMode(codistributed(np.arange(4.0), C), "sum")
    assert gather(S.map(lambda x: 2 * x)).tolist() == [0, 2, 4, 6]
    return "ok"


def rand_case() -> str:
    for layout in (None, codistributor1d(1), codistributorBlocks((2, 3), "cyclicrow"),
                   codistributor1d(1, None, (7, 5), halo=1)):
        D = codistributed.zeros(7, 5, codist=layout)
        same = D.rand_(seed=11)
        assert same is D
        R = codistributed.rand(7, 5, codist=layout, seed=11)
        assert np.array_equal(gather(D), gather(R))  # the constructor's values, reproducibly
        for mine, ref in zip(*(list(x) if isinstance(x, list) else [x] for x in (getLocalPart(D), getLocalPart(R)))):
            assert np.array_equal(mine, ref)  # halo copies too
        F = codistributed.zeros(7, 5, codist=layout, dtype=np.float32).randn_(seed=2)
        assert np.array_equal(gather(F), gather(codistributed.randn(7, 5, codist=layout, dtype=np.float32, seed=2)))
    U = codistributed.zeros((1000,)).rand_()
    u = gather(U)
    assert 0 <= u.min() and u.max() < 1 and len(np.unique(u)) == 1000
    return "ok"


def cupy_case() -> str:
    # CuPy's docstring index map, devices 0, 1, 2 as labs 1, 2, 3
    imap = make_2d_index_map([0, 2, 4], [0, 3, 5], [[{1}, {2}], [{3}, {1, 2}]])
    X = np.arange(20.0).reshape(4, 5)
    D = codistributed(X, codistributorChunks(imap, (4, 5)))
    assert np.array_equal(gather(D), X)
    mine = getLocalPart(D)
    assert [m.tolist() for m in mine] == [X[s].tolist() for s in imap.get(labindex(), [])]
    assert D.itemsize == 8 and D.mode == "replica"
    assert np.array_equal(gather(D.mT), X.T)
    Y = codistributed(np.arange(24).reshape(2, 3, 4).astype(np.int16))
    assert Y.itemsize == 2 and np.array_equal(gather(Y.mT), np.arange(24).reshape(2, 3, 4).mT)
    try:
        codistributed(np.arange(4)).mT
    except ValueError as exc:
        assert "matrix transpose with ndim < 2 is undefined" in str(exc)
    else:
        raise AssertionError("mT of a vector")
    return "ok"


@pytest.mark.parametrize("case", [dagger_case, rand_case])
@pytest.mark.parametrize("labs", [1, 4])
def test_dagger_habits(pools, case, labs):
    assert list(spmd_run(case, pool=pools(labs), timeout=200)) == ["ok"] * labs


def test_cupy_habits(pools):
    assert list(spmd_run(cupy_case, pool=pools(3), timeout=200)) == ["ok"] * 3


def map_bad(case: str):
    D = codistributed(np.arange(6))
    if case == "object":
        return D.map(lambda x: [x])
    if case == "objects":
        return D.map(lambda x: None)
    if case == "empty":
        return codistributed(np.arange(0)).map(float)
    if case == "raises" and labindex() == 2:
        return D.map(lambda x: 1 // 0)
    if case == "raises":
        return D.map(lambda x: x)
    if case == "not-callable":
        return D.map(3)
    if case == "rand-int":
        return D.rand_()
    raise AssertionError(case)


@pytest.mark.parametrize("case,message", [
    ("object", "D.map(f): f must return one value per element, it returned an array of shape (1,)"),
    ("objects", "D.map(f): f returns Python objects: arrays of dtype object cannot be codistributed"),
    ("empty", "D.map(f): cannot infer the result's dtype of an empty array"),
    ("not-callable", "D.map(f): f must be callable, got int"),
    ("rand-int", "D.rand_: fills float32 or float64 arrays, this one is int64"),
    ("raises", "ZeroDivisionError"),
])
def test_map_and_rand_errors(pools, case, message):
    pool = pools(3)
    with pytest.raises(SpmdError) as info:
        spmd_run(map_bad, case, pool=pool, timeout=60)
    assert message in str(info.value)
    assert list(spmd_run(lambda: labindex(), pool=pool)) == [1, 2, 3]


@pytest.mark.nompi
def test_labprint_and_show_at_the_client(capsys):
    """At the client arrays and labprint behave as on a pool of one lab."""
    labprint([1, 2], all=True)
    D = codistributed(np.arange(6.0).reshape(2, 3), codistributorBlocks((1, 3), "blockrow"))
    D.show(all=True)
    assert capsys.readouterr().out.splitlines() == [
        "labindex = 1", "[1, 2]",
        "codistributed array, shape (2, 3), dtype float64, on 1 lab with 2×1 partitions of size 1×3",
        "  " + "codistributorBlocks(BlockSize=(1, 3), Assignment='blockrow', GlobalSize=(2, 3), NumLabs=1)",
        "[0, :] [0. 1. 2.]", "[1, :] [3. 4. 5.]"]
    M = codistributed(np.arange(4), AutoBlocks()).map(lambda v: v * 3)
    assert gather(M).tolist() == [0, 3, 6, 9] and M.itemsize == 8
