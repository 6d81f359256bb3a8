"""Cross-memory copies (``protocol.crossmem``) without a pool: a region's runs against
numpy's own selection, and real ``process_vm_readv``/``writev`` copies with a child
process (and with this process itself)."""
import ctypes
import errno
import subprocess
import sys

import numpy as np
import pytest
from support.processes import cross_memory_refused

from spmdlab.layouts.codistributor import codistributor1d, codistributor2dbc
from spmdlab.protocol import crossmem

pytestmark = pytest.mark.timeout(120)
copies = pytest.mark.skipif(cross_memory_refused() is not None, reason=str(cross_memory_refused()))


def _bytes_of(vec: np.ndarray) -> bytes:
    return b"".join(ctypes.string_at(int(b), int(n)) for b, n in vec.tolist())


def _selections():
    """Every lab's selection of a few layouts of a (37, 129) array, 1-4 labs."""
    shape = (37, 129)
    for n in range(1, 5):
        layouts = [codistributor1d(1), codistributor1d(2), codistributor1d(2, [0, 100, 0, 29] if n == 4 else None)]
        grids = [[1, n], [n, 1]] + ([[2, 2]] if n == 4 else [])
        layouts += [codistributor2dbc(g, b) for g in grids for b in (1, 4, 16, 64)]
        for codist in layouts:
            codist = codist.complete(shape, n) if hasattr(codist, "complete") else codist
            for lab in range(1, n + 1):
                yield codist, codist.localSelection(lab, n)


def _arrays():
    X = np.arange(37 * 129 * 3, dtype=np.float64).reshape(37, 129, 3)[:, :, 1]  # strided, runs of 8 bytes
    C = np.arange(37 * 129, dtype=np.complex128).reshape(37, 129)
    big = np.arange(37 * 300, dtype=np.int64).reshape(37, 300)[:, 150:279]  # a view: rows 2400 bytes apart
    return {"contiguous": C, "view": big, "reversed": C[::-1], "fortran": np.asfortranarray(C), "strided": X}


def test_the_runs_of_a_region_are_its_bytes_in_c_order():
    seen = 0
    for _, index in _selections():
        for name, A in _arrays().items():
            region = crossmem.Region(A, index)
            want = A[np.ix_(*[np.arange(A.shape[d])[s] if isinstance(s, slice) else s for d, s in enumerate(index)])]
            assert region.shape == want.shape and region.nbytes == want.nbytes
            vec = region.iovecs() if region.nbytes else None
            if vec is None:
                continue
            seen += 1
            assert int(vec["len"].sum()) == want.nbytes
            assert _bytes_of(vec) == np.ascontiguousarray(want).tobytes(), (name, index)
    assert seen > 100


def test_regions_with_short_runs_or_objects_are_refused():
    F = np.asfortranarray(np.ones((40, 40)))
    assert crossmem.Region(F, (slice(0, 40), slice(0, 20))).iovecs() is None  # 8-byte runs
    assert crossmem.Region(F, (np.arange(40), np.arange(0, 40, 2))).iovecs() is None
    O = np.empty((40, 40), dtype=object)
    assert crossmem.Region(O, (slice(0, 40), slice(0, 20))).iovecs() is None
    C = np.ones((40, 400))
    assert crossmem.Region(C, (np.arange(40), np.arange(0, 400, 2))).iovecs() is None  # every other column
    assert crossmem.Region(C, (np.arange(40), np.arange(0, 64))).iovecs() is not None  # 512-byte runs


@copies
def test_lend_refuses_what_cannot_be_lent():
    assert crossmem.lend(np.ones((4, 4))[:, :2]) is None
    assert crossmem.lend(np.empty(3, dtype=object)) is None
    lent = crossmem.lend(np.ones(5))
    assert lent is not None and lent.nbytes == 40 and lent.where == crossmem.here()


@copies
def test_copies_with_this_process():
    part = np.zeros((30, 80))
    A = np.arange(30 * 240, dtype=np.float64).reshape(30, 240)
    region = crossmem.Region(A, (slice(None), slice(80, 160)))  # runs of 640 bytes
    lent = crossmem.lend(part)
    crossmem.read_into([])
    crossmem.write_from([(lent, region.iovecs())])  # A's columns 80:160 into part
    assert np.array_equal(part, A[:, 80:160])
    B = np.zeros_like(A)
    crossmem.read_into([(lent, crossmem.Region(B, (slice(None), slice(80, 160))).iovecs())])
    assert np.array_equal(B[:, 80:160], A[:, 80:160]) and not B[:, :80].any() and not B[:, 160:].any()


_CHILD = """
import sys, numpy as np
from spmdlab.protocol import crossmem
part = np.arange(6 * 1000, dtype=np.float64).reshape(6, 1000) * 2
print(repr(tuple(crossmem.lend(part))), flush=True)
sys.stdin.readline()
print(float(part.sum()), flush=True)
"""


@copies
def test_copies_with_another_process():
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        where, pid, address, nbytes = eval(child.stdout.readline())
        lent = crossmem.Lent(tuple(where), pid, address, nbytes)
        assert lent.where == crossmem.here() and lent.pid == child.pid
        out = np.zeros((6, 3000))
        crossmem.read_into([(lent, crossmem.Region(out, (slice(None), slice(1000, 2000))).iovecs())])
        assert np.array_equal(out[:, 1000:2000], np.arange(6000.0).reshape(6, 1000) * 2)
        assert not out[:, :1000].any() and not out[:, 2000:].any()
        X = np.ones((6, 3000))
        crossmem.write_from([(lent, crossmem.Region(X, (slice(None), slice(0, 1000))).iovecs())])
        child.stdin.write("\n")
        child.stdin.flush()
        assert float(child.stdout.readline()) == 6000.0  # the child's part now holds ones
    finally:
        child.kill()
        child.wait(10)


@copies
def test_a_refused_copy_raises_cross_memory_error():
    part = np.zeros(1000)
    lent = crossmem.lend(part)._replace(pid=2 ** 22 + 12345)  # no such process
    vec = crossmem.Region(np.ones(1000), (slice(None),)).iovecs()
    with pytest.raises(crossmem.CrossMemoryError) as info:
        crossmem.read_into([(lent, vec)])
    assert info.value.errno == errno.ESRCH
    short = crossmem.Region(np.ones(100), (slice(None),)).iovecs()
    with pytest.raises(ValueError, match="lent part of 8000 bytes for a region of 800"):
        crossmem.read_into([(lent, short)])


def test_large_copies_are_shared_out_in_chunks_that_cover_them_once():
    lent = crossmem.Lent(("b", 1), 1, 1000, 3 * crossmem.CHUNK + 5)
    one = np.array([(50, lent.nbytes)], dtype=crossmem._IOVEC)
    pieces = crossmem._split(lent, one)
    assert [p[0].nbytes for p in pieces] == [crossmem.CHUNK] * 3 + [5]
    assert [p[0].address for p in pieces] == [1000 + k * crossmem.CHUNK for k in range(4)]
    assert [int(p[1]["base"][0]) for p in pieces] == [50 + k * crossmem.CHUNK for k in range(4)]
    runs = np.zeros(1000, dtype=crossmem._IOVEC)
    runs["base"] = np.arange(1000) * 100_000
    runs["len"] = np.random.default_rng(0).integers(1, 60_000, 1000)
    lent = lent._replace(nbytes=int(runs["len"].sum()))
    pieces = crossmem._split(lent, runs)
    assert len(pieces) > 2
    assert np.array_equal(np.concatenate([v for _, v in pieces]), runs)  # every run once, in order
    assert [p[0].nbytes for p in pieces] == [int(v["len"].sum()) for _, v in pieces]
    starts = np.cumsum([0] + [p[0].nbytes for p in pieces[:-1]])
    assert [p[0].address for p in pieces] == [1000 + int(s) for s in starts]
    assert crossmem._split(lent._replace(nbytes=10), runs[:1]) == [(lent._replace(nbytes=10), runs[:1])]
