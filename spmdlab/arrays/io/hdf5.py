"""HDF5 datasets on the labs (h5py): every lab reads its own hyperslabs (``read_direct``
into its part, no copy); writing takes turns lab by lab into one file when h5py is not
built with MPI (PyPI's wheels are not), and uses the collective ``mpio`` driver when it is.
A new file is written under a temporary name and renamed when every lab has written.
"""
from __future__ import annotations

import os
import shutil
from typing import Any

import numpy as np

from ...lab import lazy_comm as comm
from ..base import here, need
from ..reshard import changeMode
from .agree import agree, report
from .boxes import agree_meta, check_room, commit, read_parts, write_parts
from .mpiio import no_sigxfsz
from .npy import check_dtype_io, temporary_name

__all__ = ["to_hdf5", "from_hdf5", "parallel_h5py"]


def _h5py() -> Any:
    import h5py  # heavy: loaded on first use

    return h5py


def parallel_h5py() -> bool:
    """True when h5py is built with parallel HDF5 (the ``mpio`` driver)."""
    return bool(_h5py().get_config().mpi)


def from_hdf5(path: Any, dataset: str, codist: Any = None) -> Any:
    """``dataset`` of the HDF5 file ``path``, codistributed with ``codist``; each lab
    reads only its own hyperslabs, straight into its part."""
    what = "spmdlab.from_hdf5"
    path = os.fspath(path)
    mine, meta, f = None, None, None
    try:
        f = _h5py().File(path, "r")
        if dataset not in f:
            raise KeyError(f"no dataset {dataset!r} in the file (it holds {sorted(f.keys())[:10]})")
        dset = f[dataset]
        if not isinstance(dset, _h5py().Dataset):
            raise TypeError(f"{dataset!r} is a group, not a dataset")
        meta = (tuple(dset.shape), dset.dtype.str)
    except Exception as exc:
        mine = report(exc) if not isinstance(exc, KeyError) else ("ValueError", str(exc.args[0]))
    try:
        shape, dtype = agree_meta(meta, mine, what, path)

        def read(part: Any, g: tuple, lo: tuple) -> None:
            if part.flags.c_contiguous:
                dset.read_direct(part, source_sel=g, dest_sel=lo)
            else:
                part[lo] = dset[g]

        return read_parts(read, shape, dtype, codist, what, path)
    finally:
        if f is not None:
            f.close()


def to_hdf5(D: Any, path: Any, dataset: str) -> None:
    """Write ``D`` as ``dataset`` of the HDF5 file ``path`` (created, or opened to add the
    dataset, replacing one of that name), each lab writing the elements it owns."""
    what = "spmdlab.to_hdf5"
    D = need(D, what)
    why = check_dtype_io(D.dtype)
    if why:
        raise TypeError(f"{what}: {why}")
    if D.mode != "replica":
        D = changeMode(D, "replica")
    path = os.fspath(path)
    lab, n = here()
    no_sigxfsz()
    mine, tmp = None, None
    try:
        check_room(path, D.nbytes + (os.path.getsize(path) if os.path.exists(path) else 0) + (1 << 20))
    except OSError as exc:
        mine = report(exc)
    if lab == 1 and mine is None:
        try:
            tmp = temporary_name(path)
            if os.path.exists(path):
                shutil.copyfile(path, tmp)  # a new dataset in an existing file: the copy gets it
            with _h5py().File(tmp, "a") as f:
                if dataset in f:
                    del f[dataset]
                f.create_dataset(dataset, shape=D.shape, dtype=D.dtype)
        except Exception as exc:
            mine = report(exc)
    tmp = agree(mine, what, path, tmp)[0]
    mine = None
    if parallel_h5py():  # pragma: no cover - PyPI's h5py has no MPI
        try:
            with _h5py().File(tmp, "r+", driver="mpio", comm=comm.block()) as f:
                write_parts(D, _writer(f[dataset]))
        except Exception as exc:
            mine = report(exc)
    else:
        for turn in range(1, n + 1):  # one lab at a time: HDF5 without MPI has one writer
            if turn == lab and mine is None:
                try:
                    with _h5py().File(tmp, "r+") as f:
                        write_parts(D, _writer(f[dataset]))
                except Exception as exc:
                    mine = report(exc)
            if n > 1:
                comm.wait(comm.block().Ibarrier(), what)
    commit(tmp, path, mine, what)


def _writer(dset: Any) -> Any:
    def write(g: tuple, values: np.ndarray) -> None:
        dset[g] = values

    return write
