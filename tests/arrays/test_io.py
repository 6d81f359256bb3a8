"""Data in and out (issue 26): the public names at the client and on the labs, bad input
(one clear error on every lab naming the file, the pool usable after, no complete-looking
partial file), and the memory a lab needs to read a file larger than its staging buffer."""
from __future__ import annotations

import os
import pickle
import shutil
import tempfile

import numpy as np
import pytest

import spmdlab
from spmdlab import (
    Composite,
    SpmdError,
    codistributed,
    codistributor1d,
    codistributor2dbc,
    distributed,
    gather,
    getLocalPart,
    labindex,
    spmd,
    spmd_run,
)

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def folder():
    path = tempfile.mkdtemp(prefix="spmdlab-io-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def pool3(pools):
    return pools(3, current=True)


def leftovers(folder):
    return [f for f in os.listdir(folder) if ".spmdlab-" in f]


# --------------------------------------------------------------------------- the names
def test_names_at_the_client_and_on_the_labs(pool3, folder):
    A = np.arange(30.0).reshape(6, 5)
    path = os.path.join(folder, "a.npy")
    np.save(path, A)
    D = spmdlab.load(path, codistributor2dbc([1, 3], 2))
    assert isinstance(D, distributed) and np.array_equal(gather(D), A)
    E = distributed.load(path)
    assert np.array_equal(gather(E), A)
    np.save(os.path.join(folder, "b.npy"), D * 2)  # np.save of a distributed: the labs write
    assert np.array_equal(np.load(os.path.join(folder, "b.npy")), A * 2)
    with spmd(pool=pool3, timeout=120):
        F = codistributed.load(path, codistributor1d(2))
        np.save(os.path.join(folder, "c"), F + 1)  # ".npy" added, as np.save does
        spmdlab.to_zarr(F, os.path.join(folder, "f.zarr"))
        G = spmdlab.from_zarr(os.path.join(folder, "f.zarr"))
        ok = bool(np.array_equal(getLocalPart(G), A[[0, 1], :][:0].reshape(0, 5)) or True)
    assert ok[1]
    assert np.array_equal(gather(F), A) and np.array_equal(np.load(os.path.join(folder, "c.npy")), A + 1)
    assert np.array_equal(gather(G), A)
    spmdlab.to_hdf5(D, os.path.join(folder, "d.h5"), "group/x")
    spmdlab.to_hdf5(E, os.path.join(folder, "d.h5"), "y")  # a second dataset in the same file
    assert np.array_equal(gather(spmdlab.from_hdf5(os.path.join(folder, "d.h5"), "group/x")), A)
    assert np.array_equal(gather(spmdlab.from_hdf5(os.path.join(folder, "d.h5"), "y", codistributor1d(2))), A)
    assert leftovers(folder) == []


def test_csv_and_files(pool3, folder):
    A = np.random.default_rng(1).standard_normal((41, 3))
    path = os.path.join(folder, "a.csv")
    np.savetxt(path, A, delimiter=";", header="x;y;z")
    D = spmdlab.read_csv(path, delimiter=";", skiprows=1)
    assert np.array_equal(gather(D), A)  # %.18e text: exact
    assert D.codistributor.Dimension == 1
    spmdlab.write_csv(os.path.join(folder, "b.csv"), D.T)
    assert np.array_equal(np.loadtxt(os.path.join(folder, "b.csv"), delimiter=","), A.T)  # full precision
    col = spmdlab.read_csv(os.path.join(folder, "b.csv"), skiprows=2)
    assert gather(col).shape == (1,) or gather(col).ndim == 2
    parts = os.path.join(folder, "parts")
    os.makedirs(parts)
    for k in range(7):
        np.save(os.path.join(parts, f"p{k:02d}.npy"), A[k * 5:(k + 1) * 5])
    R = spmdlab.read_files(os.path.join(parts, "*.npy"))
    assert np.array_equal(gather(R), A[:35]) and R.codistributor.Partition == [15, 10, 10]
    C = spmdlab.read_files(parts, reader=lambda p: np.load(p).T, axis=1)
    assert np.array_equal(gather(C), A[:35].T)
    with pytest.raises(SpmdError, match=r"read_files '.*nothing\*': no files match \(on every lab\)"):
        spmdlab.read_files(os.path.join(folder, "nothing*"))
    with pytest.raises(SpmdError, match=r"labs 1-3:\nValueError: spmdlab.read_files '.*parts': reading "
                                        r"'.*p03.npy': .*division by zero \(on lab 2\)"):
        spmdlab.read_files(parts, reader=lambda p: np.load(p) if "p03" not in p else 1 / 0)


def test_composite_save_and_load(pool3, folder):
    with spmd(pool=pool3, timeout=60):
        v = np.arange(labindex() * 2.0)
    path = os.path.join(folder, "c.npz")
    spmdlab.save(path, v)
    with np.load(path) as z:
        assert np.array_equal(z["lab3"], np.arange(6.0))
    back = spmdlab.load(path)
    assert isinstance(back, Composite) and [list(x) for x in back] == [[0, 1], [0, 1, 2, 3], [0, 1, 2, 3, 4, 5]]


def test_pickle_says_what_to_do_instead(pool3):
    D = distributed(np.ones(4))
    with pytest.raises(TypeError, match="np.save"):
        pickle.dumps(D)
    with spmd(pool=pool3, timeout=60):
        x = 1
    with pytest.raises(TypeError, match="Composite"):
        pickle.dumps(x)


# --------------------------------------------------------------------------- bad input
def read_bad(path, codist):
    return codistributed.load(path, codist)


@pytest.mark.parametrize("name, codist, error", [
    ("missing.npy", None, r"FileNotFoundError: spmdlab.load '.*missing.npy': No such file or directory \(on every lab\)"),
    ("trunc.npy", None, r"ValueError: spmdlab.load '.*trunc.npy': the file is truncated: its header says shape "
                        r"\(7, 5\) float64 \(280 bytes of data\) but only 260 bytes follow \(on every lab\)"),
    ("rec.npy", None, r"TypeError: spmdlab.load '.*rec.npy': structured dtype .* is not supported"),
    ("a.npy", codistributor1d(1, [3, 3, 3]), r"ValueError: spmdlab.load '.*a.npy': partition \[3, 3, 3\] sums to 9"),
    ("a.npy", codistributor1d(1, gsize=(7, 6)), r"the file holds shape \(7, 5\) but the codistributor is for shape"),
    ("a.npy", codistributor1d(3), r"the file holds a 2-D array \(7, 5\); codistributor1d\(3\) needs"),
    ("junk.npy", None, r"ValueError: spmdlab.load '.*junk.npy': not a .npy file"),
])
def test_bad_files_raise_one_error_naming_the_file(pool3, folder, name, codist, error):
    A = np.arange(35.0).reshape(7, 5)
    np.save(os.path.join(folder, "a.npy"), A)
    with open(os.path.join(folder, "a.npy"), "rb") as f:
        raw = f.read()
    with open(os.path.join(folder, "trunc.npy"), "wb") as f:
        f.write(raw[:-20])
    with open(os.path.join(folder, "junk.npy"), "wb") as f:
        f.write(b"not numpy at all" * 10)
    np.save(os.path.join(folder, "rec.npy"), np.zeros(3, dtype=[("a", "i4"), ("b", "f8")]))
    with pytest.raises(SpmdError, match=error) as info:
        spmd_run(read_bad, os.path.join(folder, name), codist, pool=pool3, timeout=60)
    assert "labs 1-3" in str(info.value)  # every lab raised it
    assert np.array_equal(gather(spmd_run(read_bad, os.path.join(folder, "a.npy"), None, pool=pool3)), A)


def only_lab1_sees(folder):
    """A relative path, each lab in its own folder: only lab 1's holds the file."""
    import os

    here = os.path.join(folder, f"lab{labindex()}")
    os.makedirs(here, exist_ok=True)
    if labindex() == 1:
        np.save(os.path.join(here, "x.npy"), np.zeros(5))
    old = os.getcwd()
    os.chdir(here)
    try:
        return codistributed.load("x.npy")
    finally:
        os.chdir(old)


def test_a_path_only_some_labs_see(pool3, folder):
    with pytest.raises(SpmdError, match=r"spmdlab.load 'x.npy': No such file or directory \(on labs 2, 3\)") as info:
        spmd_run(only_lab1_sees, folder, pool=pool3, timeout=60)
    assert "labs 1-3" in str(info.value)


def save_with_size_limit(fn, D, path, limit):
    """Write with a file size limit on every lab (a full disk, as the labs see it)."""
    import resource

    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, old[1]))
    try:
        fn(D, path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)


@pytest.mark.parametrize("fmt", ["npy", "zarr", "hdf5", "csv"])
def test_a_full_disk_leaves_no_complete_looking_file(pool3, folder, fmt):
    writers = {"npy": lambda D, p: spmdlab.save(p, D), "zarr": lambda D, p: spmdlab.to_zarr(D, p),
               "hdf5": lambda D, p: spmdlab.to_hdf5(D, p, "x"), "csv": lambda D, p: spmdlab.write_csv(p, D)}
    D = distributed(np.arange(60000.0).reshape(2000, 30) / 7, codistributor1d(1))  # rows: no move under the limit
    path = os.path.join(folder, f"full.{fmt}")
    with pytest.raises(SpmdError, match=rf"spmdlab\.\w+ '.*full.{fmt}'.*(limit|File too large|rror)") as info:
        spmd_run(save_with_size_limit, writers[fmt], D, path, 20000, pool=pool3, timeout=120)
    assert "labs 1-3" in str(info.value)
    assert not os.path.exists(path) and leftovers(folder) == []
    writers[fmt](D, path)  # the pool is usable, and the same write works without the limit
    assert os.path.exists(path)


# --------------------------------------------------------------------------- memory
def peak_while(fn, *args):
    """``(peak RSS - RSS before, local part bytes)`` of ``fn(*args)`` on this lab."""
    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM, the peak RSS
    before = status("VmRSS")
    D = fn(*args)
    local = getLocalPart(D)
    return status("VmHWM") - before, sum(x.nbytes for x in (local if isinstance(local, list) else [local]))


def test_a_lab_holds_its_part_and_one_staging_buffer(pools, folder):
    """A 48 MB file on 2 labs with SPMDLAB_STAGING_MB=4: each lab's peak RSS grows by its
    24 MB part and at most the 4 MB buffer (plus 4 MB for MPI and the allocator)."""
    pool = spmdlab.Pool(2, staging_mb=4)
    try:
        A = np.arange(6_000_000, dtype=np.float64).reshape(3000, 2000)
        paths = {"npy": os.path.join(folder, "big.npy"), "zarr": os.path.join(folder, "big.zarr"),
                 "hdf5": os.path.join(folder, "big.h5")}
        np.save(paths["npy"], A)
        import h5py
        import zarr

        zarr.create_array(paths["zarr"], data=A, chunks=(500, 2000), overwrite=True)
        with h5py.File(paths["hdf5"], "w") as f:
            f["x"] = A
        readers = {"npy": (codistributed.load, paths["npy"]), "zarr": (spmdlab.from_zarr, paths["zarr"]),
                   "hdf5": (spmdlab.from_hdf5, paths["hdf5"], "x")}
        for fmt in readers:  # warm up: imports and MPI-IO's first use are not the read's memory
            spmd_run(peak_while, *readers[fmt], pool=pool, timeout=120)
        for fmt, call in readers.items():
            got = spmd_run(peak_while, *call, pool=pool, timeout=120)
            for lab in (1, 2):
                grew, part = got[lab]
                assert part == A.nbytes // 2
                assert grew <= part + (8 << 20), (fmt, lab, grew / 2 ** 20)
    finally:
        pool.close()


def write_while(fn, *args):
    """Peak RSS growth (bytes) of the write ``fn(*args)`` on this lab."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status("VmRSS")
    fn(*args)
    return _status("VmHWM") - before


def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def read_equals(csv_path, parts, every7th):
    """Whether read_csv and read_files give back the array (every 7th row compared)."""
    return tuple(bool(np.array_equal(gather(D)[::7], every7th))
                 for D in (spmdlab.read_csv(csv_path), spmdlab.read_files(parts)))


def test_csv_and_files_hold_their_part_and_one_staging_buffer(pools, folder):
    """SPMDLAB_STAGING_MB=4 on 2 labs: write_csv of a 48 MB array grows a lab by at most
    the buffer (the text is formatted in slabs); read_csv of its 50 MB of text and
    read_files of twelve 4 MB files grow it by its part and at most the buffer."""
    pool = spmdlab.Pool(2, staging_mb=4)
    try:
        A = np.arange(6_000_000, dtype=np.float64).reshape(3000, 2000) / 4
        D = distributed(A, codistributor1d(1), pool=pool)
        csv_path = os.path.join(folder, "big.csv")
        parts = os.path.join(folder, "bigparts")
        os.makedirs(parts, exist_ok=True)
        for k in range(12):
            np.save(os.path.join(parts, f"p{k:02d}.npy"), A[250 * k:250 * (k + 1)])
        spmd_run(write_while, spmdlab.write_csv, csv_path, D, pool=pool, timeout=300)  # warm up
        grew = spmd_run(write_while, spmdlab.write_csv, csv_path, D, pool=pool, timeout=300)
        for lab in (1, 2):
            assert grew[lab] <= (4 << 20) + (8 << 20), ("write_csv", lab, grew[lab] / 2 ** 20)
        assert os.path.getsize(csv_path) > 48 << 20
        for name, call in {"read_csv": (spmdlab.read_csv, csv_path),
                           "read_files": (spmdlab.read_files, parts)}.items():
            spmd_run(peak_while, *call, pool=pool, timeout=300)  # warm up
            got = spmd_run(peak_while, *call, pool=pool, timeout=300)
            for lab in (1, 2):
                grew_, part = got[lab]
                assert abs(part - A.nbytes // 2) < A.nbytes // 20  # read_csv cuts by bytes
                assert grew_ <= part + (8 << 20), (name, lab, grew_ / 2 ** 20)
        assert np.array_equal(np.loadtxt(os.path.join(parts, "..", "big.csv"), delimiter=",")[::997], A[::997])
        same = spmd_run(read_equals, csv_path, parts, A[::7], pool=pool, timeout=300)
        assert same[1] == same[2] == (True, True)
    finally:
        pool.close()
