"""Data in and out on the labs: every lab reads and writes only its own part.

- ``npy``: ``.npy`` files through MPI-IO (``load``, ``save``; ``np.save(path, D)``);
- ``zarrio``: zarr v3 stores (``to_zarr``, ``from_zarr``);
- ``hdf5``: HDF5 datasets (``to_hdf5``, ``from_hdf5``);
- ``csv``: numeric text (``read_csv``, ``write_csv``);
- ``files``: a folder or glob of files joined along an axis (``read_files``).

Lower modules: ``plan`` (which elements each lab moves, in rounds; pure), ``agree``
(one error on every lab), ``mpiio`` (file views and collective transfers).
"""
from __future__ import annotations

import numpy as np

from ..array import codistributed
from ..base import NOVALUE
from ..registry import implements
from .csv import read_csv, write_csv
from .files import read_files
from .hdf5 import from_hdf5, to_hdf5
from .npy import load, save
from .zarrio import from_zarr, to_zarr

__all__ = ["load", "save", "to_zarr", "from_zarr", "to_hdf5", "from_hdf5", "read_csv", "write_csv", "read_files"]


@implements(np.save)
def _np_save(file, arr, allow_pickle=True, fix_imports=NOVALUE):
    """``np.save(path, D)``: the same file ``spmdlab.save`` writes."""
    save(file, arr)


# codistributed.load(path, codist=None), as MATLAB's; set here, as the class sits below io
setattr(codistributed, "load", staticmethod(load))
