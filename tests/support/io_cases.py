"""Shared pieces of the io tests (issue 26): arrays and layouts drawn by hypothesis, and
the round trip every format goes through on the labs.

A case is (shape, dtype, layout, fortran). On the labs, ``round_trip`` reads a file the
reference library wrote (numpy, zarr, h5py, np.savetxt) into the layout, checks every
stored array against the reference's own read of the same selection, and writes the
array back with spmdlab; the test then reads that file with the reference library.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from spmdlab import codistributor1d, codistributor2dbc, codistributorBlocks, codistributorChunks

DTYPES = {
    "npy": ["bool", "int8", "uint16", "int64", "float32", ">f8", "complex128", "<U3", "S2", "datetime64[s]"],
    "zarr": ["bool", "int8", "uint16", "int64", "float32", "float64", "complex128"],
    "hdf5": ["bool", "int8", "uint16", "int64", "float32", ">f8", "complex64"],
    "csv": ["float64", "int64"],
}


def values(shape, dtype):
    """A deterministic array of ``shape`` and ``dtype`` with distinct-ish values."""
    k = np.arange(int(np.prod(shape)), dtype=np.int64)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        v = (k * 7 % 3) == 1
    elif dt.kind in "US":
        v = np.array([str(x % 97) for x in k], dtype=dt) if k.size else np.zeros(0, dt)
    elif dt.kind == "M":
        v = (k * 86400 + 1_600_000_000).astype(dt)
    elif dt.kind == "c":
        v = (k * 7 % 11 - 3) / 4 + 1j * (k % 5)
    elif dt.kind == "f":
        v = (k * 7 % 11 - 3) / 3
    else:
        v = k * 7 % 11 + (0 if dt.kind == "u" else -3)
    return np.asarray(v).astype(dt).reshape(shape)


def _cuts(draw, size, n):
    points = sorted(draw(st.lists(st.integers(0, size), min_size=n - 1, max_size=n - 1)))
    edges = [0] + points + [size]
    return [b - a for a, b in zip(edges[:-1], edges[1:])]


@st.composite
def layouts(draw, shape, n, kinds=("default", "1d", "halo", "2dbc", "blocks", "chunks")):
    kind = draw(st.sampled_from(kinds))
    ndim = len(shape)
    if kind == "2dbc" and ndim != 2:
        kind = "1d"
    if kind == "chunks" and (shape[0] == 0 or 0 in shape):
        kind = "1d"
    if kind == "default":
        return None
    if kind in ("1d", "halo"):
        d = draw(st.integers(0, ndim - 1))
        halo = draw(st.integers(1, 2)) if kind == "halo" else 0
        return codistributor1d(d + 1, _cuts(draw, shape[d], n), shape, halo=halo)
    if kind == "2dbc":
        r = draw(st.sampled_from([r for r in range(1, n + 1) if n % r == 0]))
        return codistributor2dbc([r, n // r], draw(st.integers(1, 3)), draw(st.sampled_from(["row", "col"])), shape)
    if kind == "blocks":
        names = ["blockrow", "cyclicrow"] + (["blockcol", "cycliccol"] if ndim >= 2 else [])
        bs = tuple(draw(st.integers(1, 3)) for _ in shape)
        return codistributorBlocks(bs, draw(st.sampled_from(names)))
    # a chunk map: rows cut in pieces dealt to random labs, one piece also on a second lab
    pieces = [p for p in _cuts(draw, shape[0], draw(st.integers(1, 4))) if p]
    index_map: dict = {lab: [] for lab in range(1, n + 1)}
    start = 0
    for p in pieces:
        box = (slice(start, start + p),) + tuple(slice(0, s) for s in shape[1:])
        index_map[draw(st.integers(1, n))].append(box)
        if draw(st.booleans()):
            index_map[draw(st.integers(1, n))].append(box)
        start += p
    return codistributorChunks(index_map)


@st.composite
def cases(draw, fmt, n, max_ndim=3):
    ndim = draw(st.integers(1, 2 if fmt == "csv" else max_ndim))
    shape = tuple(draw(st.lists(st.integers(0 if fmt != "csv" else 1, 6), min_size=ndim, max_size=ndim)))
    if fmt == "csv" and ndim == 2 and shape[1] == 1:
        shape = (shape[0], 2)
    dtype = draw(st.sampled_from(DTYPES[fmt]))
    layout = draw(layouts(shape, n))
    fortran = fmt == "npy" and ndim > 1 and draw(st.booleans())
    return shape, dtype, layout, fortran


# --------------------------------------------------------------------------- reference side
def write_reference(fmt, path, A, fortran=False):
    if fmt == "npy":
        np.save(path, np.asfortranarray(A) if fortran else A)
    elif fmt == "zarr":
        import zarr

        z = zarr.create_array(path, shape=A.shape, dtype=A.dtype, chunks=tuple(max(1, s // 2 + 1) for s in A.shape),
                              overwrite=True)
        if A.size:
            z[...] = A
    elif fmt == "hdf5":
        import h5py

        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=A)
    else:
        np.savetxt(path, A, delimiter=",", fmt="%d" if A.dtype.kind in "iu" else "%.17g", header="a header line")


def read_reference(fmt, path):
    if fmt == "npy":
        return np.load(path)
    if fmt == "zarr":
        import zarr

        return zarr.open_array(path, mode="r")[...]
    if fmt == "hdf5":
        import h5py

        with h5py.File(path, "r") as f:
            return f["x"][...]
    return np.loadtxt(path, delimiter=",", ndmin=2)


# --------------------------------------------------------------------------- lab side
def round_trip(fmt, src, dst, codist, dtype):
    """On every lab: read ``src`` into ``codist``, check each stored array against the
    reference, write ``dst``. Returns this lab's mismatches."""
    import numpy as np

    import spmdlab
    from spmdlab import getLocalPart, labindex, numlabs

    if fmt == "npy":
        D = spmdlab.load(src, codist)
        A = np.load(src, mmap_mode="r")
    elif fmt == "zarr":
        import zarr

        D = spmdlab.from_zarr(src, codist)
        A = zarr.open_array(src, mode="r")[...]
    elif fmt == "hdf5":
        import h5py

        D = spmdlab.from_hdf5(src, "x", codist)
        with h5py.File(src, "r") as f:
            A = f["x"][...]
    else:
        D = spmdlab.read_csv(src, skiprows=1, dtype=dtype)
        A = np.loadtxt(src, delimiter=",", skiprows=1, dtype=dtype, ndmin=2)
        if A.shape[1] == 1:
            A = A[:, 0]
        if codist is not None:
            D = spmdlab.redistribute(D, codist)
    bad = []
    c = D.codistributor
    local = getLocalPart(D)
    parts = local if isinstance(local, list) else [local]
    sels = c.chunkSelections(labindex(), numlabs())
    if len(parts) != len(sels):
        bad.append(f"lab {labindex()}: {len(parts)} parts for {len(sels)} selections")
    for part, sel in zip(parts, sels):
        want = A[np.ix_(*[np.arange(s.start, s.stop) if isinstance(s, slice) else np.asarray(s) for s in sel])] \
            if A.ndim else A
        if part.shape != want.shape or part.dtype != want.dtype or not np.array_equal(part, want):
            bad.append(f"lab {labindex()}: part {sel} is {part.dtype}{part.shape} {part.ravel()[:6]}, "
                       f"want {want.dtype}{want.shape} {want.ravel()[:6]}")
    if fmt == "npy":
        spmdlab.save(dst, D)
    elif fmt == "zarr":
        spmdlab.to_zarr(D, dst)
    elif fmt == "hdf5":
        spmdlab.to_hdf5(D, dst, "x")
    else:
        spmdlab.write_csv(dst, D)
    return bad
