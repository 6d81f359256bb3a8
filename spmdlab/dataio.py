"""Data in and out, under one name at the client and on the labs (issue 26).

On a lab (inside ``spmd``) each function is the array package's own
(``spmdlab.codist.io``: every lab reads and writes its own part). At the client the same
call runs on the labs of the current pool: arrays come back as ``distributed`` handles,
and a ``distributed`` argument is the array the labs hold. ``save``/``load`` also take a
``Composite`` (one value per lab, in one ``.npz``), which exists only at the client.
"""
from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

from . import runtime
from .arrays import io as lab_io
from .client.composite import Composite
from .client.distributed import run_on_labs
from .errors import SpmdError

__all__ = ["save", "load", "to_zarr", "from_zarr", "to_hdf5", "from_hdf5", "read_csv", "write_csv", "read_files"]


def _either(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn`` here on a lab, else on the labs of the current pool."""
    if runtime.state.on_lab:
        return fn(*args, **kwargs)
    try:
        return run_on_labs(fn, *args, **kwargs)
    except SpmdError as exc:  # the labs' error, without this module's frames
        raise exc.with_traceback(None) from None


def save(path: Any, D: Any) -> None:
    """Write ``D`` to ``path``: a codistributed/``distributed`` array to one ``.npy``
    file that ``np.load`` reads (each lab writes its own part), a ``Composite`` to one
    ``.npz`` with an entry per lab (``lab1``, ``lab2``, ...)."""
    if isinstance(D, Composite):
        return _save_composite(path, D)
    return _either(lab_io.save, path, D)


def load(path: Any, codist: Any = None) -> Any:
    """Read a ``.npy`` file into a codistributed array (``distributed`` at the client) laid
    out by ``codist`` (default: the default codistributor1d), each lab reading its own
    part; a ``.npz`` written from a Composite gives back a Composite."""
    if not runtime.state.on_lab and os.fspath(path).endswith(".npz"):
        return _load_composite(path)
    return _either(lab_io.load, path, codist)


def to_zarr(D: Any, store: Any, chunks: Any = None) -> None:
    """Write ``D`` to a zarr v3 array at ``store`` (chunks follow the layout by default)."""
    return _either(lab_io.to_zarr, D, store, chunks)


def from_zarr(store: Any, codist: Any = None) -> Any:
    """Read the zarr array at ``store`` into any layout, each lab its own part."""
    return _either(lab_io.from_zarr, store, codist)


def to_hdf5(D: Any, path: Any, dataset: str) -> None:
    """Write ``D`` to ``dataset`` of the HDF5 file ``path``."""
    return _either(lab_io.to_hdf5, D, path, dataset)


def from_hdf5(path: Any, dataset: str, codist: Any = None) -> Any:
    """Read ``dataset`` of the HDF5 file ``path``, each lab its own hyperslab."""
    return _either(lab_io.from_hdf5, path, dataset, codist)


def read_csv(path: Any, delimiter: str = ",", skiprows: int = 0, dtype: Any = float) -> Any:
    """A numeric text file as a row-distributed array (each lab parses its byte range)."""
    return _either(lab_io.read_csv, path, delimiter, skiprows, dtype)


def write_csv(path: Any, D: Any, delimiter: str = ",") -> None:
    """Write ``D`` (1-D or 2-D) as text that ``np.loadtxt`` reads back exactly."""
    return _either(lab_io.write_csv, path, D, delimiter)


def read_files(pattern: Any, reader: Callable[[str], Any] = np.load, axis: int = 0) -> Any:
    """The files matching ``pattern`` (a glob, or a folder: all its files), in sorted name
    order, dealt to the labs in runs, read with ``reader`` and joined along ``axis``."""
    return _either(lab_io.read_files, pattern, reader, axis)


# --------------------------------------------------------------------------- Composite
def _save_composite(path: Any, C: Composite) -> None:
    """One .npz, written under a temporary name: each lab's value fetched in turn, so the
    client holds one value at a time."""
    path = os.fspath(path)
    if not path.endswith(".npz"):
        path += ".npz"
    tmp = lab_io.npy.temporary_name(path)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
            z.writestr("numlabs.npy", _npy_bytes(np.array(len(C))))
            for lab in range(1, len(C) + 1):
                if not C.exist(lab):
                    continue
                value = np.asarray(C[lab])
                if value.dtype.hasobject:
                    raise TypeError(f"spmdlab.save {path!r}: lab {lab}'s value is a {type(C[lab]).__name__}; "
                                    "a Composite is saved as arrays (numbers, numpy arrays): pickle other values "
                                    "yourself, list(c)")
                with z.open(f"lab{lab}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, value, allow_pickle=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _npy_bytes(a: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, allow_pickle=False)
    return buf.getvalue()


def _load_composite(path: Any) -> Composite:
    with np.load(path, allow_pickle=False) as z:
        if "numlabs" not in z.files:
            raise ValueError(f"spmdlab.load {os.fspath(path)!r}: not a Composite file (no 'numlabs' entry); "
                             "np.load reads other .npz files")
        n = int(z["numlabs"])
        C = Composite(n)
        for lab in range(1, n + 1):
            if f"lab{lab}" in z.files:
                C[lab] = z[f"lab{lab}"]
    return C
