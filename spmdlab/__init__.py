"""spmdlab: MATLAB's spmd programming model for Python, on MPI.

>>> from spmdlab import spmd, labindex        # doctest: +SKIP
>>> with spmd():
...     x = labindex()
>>> x[2]
2

The names below are the public API (docs/design.md); every other module is internal.
"""
from typing import Any

from .arrays.printing import labprint
from .arrays.subgrid import colgrid, grid, gridexit, rowgrid
from .client.composite import Composite, NoDataError, exist
from .client.distributed import distributed, isdistributed
from .client.habits import delete
from .client.pool import Pool, gcp, parpool
from .client.spmd import spmd, spmd_run
from .client.threads import (
    get_autothread_actual,
    get_autothread_size,
    get_autothread_targ,
    set_autothread_size,
    set_autothread_targ,
)

# (through the module spmdlab.codistributed, so that importing that module later cannot
# rebind the name spmdlab.codistributed from the class to the module)
from .codistributed import (
    changeMode,
    codistributed,
    gather,
    getCodistributor,
    getLocalPart,
    globalIndices,
    iscodistributed,
    redistribute,
    updateHalos,
)
from .dataio import from_hdf5, from_zarr, load, read_csv, read_files, save, to_hdf5, to_zarr, write_csv
from .errors import LabDiedError, PoolError, RemoteError, SpmdError, SpmdSourceError, SpmdTimeoutError
from .lab.messaging import (
    gcat,
    gop,
    gplus,
    labBarrier,
    labBroadcast,
    labProbe,
    labReceive,
    labSend,
    labSendReceive,
    spmdBarrier,
    spmdBroadcast,
    spmdCat,
    spmdPlus,
    spmdProbe,
    spmdReceive,
    spmdReduce,
    spmdSend,
    spmdSendReceive,
)
from .layouts.autoblocks import AutoBlocks
from .layouts.codistributor import (
    codistributor,
    codistributor1d,
    codistributor2dbc,
    codistributorBlocks,
    codistributorChunks,
)
from .layouts.indexmap import make_2d_index_map
from .layouts.pictures import plot_layout
from .runtime import labindex, numlabs, spmdIndex, spmdSize

__version__ = "0.1.0"

# MATLAB's names for the numerics (spmdlab.numerics): loaded on first use, since they import
# scipy, which would add about a second to every lab's start and to `import spmdlab`.
_NUMERICS = ("fft", "fft2", "fftn", "ifft", "ifft2", "ifftn",
             "mldivide", "mrdivide", "lu", "chol", "inv", "det", "solve_triangular",
             "qr", "lstsq", "svd", "eig", "pinv", "rank", "cond", "norm", "trace", "triu", "tril",
             "sparse", "speye", "sprand", "sprandn", "spdiags", "kron", "issparse", "full", "nnz", "nonzeros",
             "find", "pcg", "gmres", "bicgstab", "bicg", "cgs", "minres", "lsqr", "jacobi", "ilu", "ichol",
             "cat", "horzcat", "vertcat",
             "sort", "unique", "median", "prctile", "histcounts", "cumsum", "cumprod", "diff")

__all__ = [
    # pools and blocks
    "Pool", "gcp", "parpool", "delete", "spmd", "spmd_run",
    # threads inside each lab (PDL's auto-threading)
    "set_autothread_targ", "set_autothread_size", "get_autothread_targ", "get_autothread_size",
    "get_autothread_actual",
    # values on the labs
    "Composite", "NoDataError", "exist",
    # the lab API
    "labindex", "numlabs", "spmdIndex", "spmdSize",
    "gcat", "gop", "gplus", "labBarrier", "labBroadcast", "labProbe", "labReceive", "labSend",
    "labSendReceive", "spmdBarrier", "spmdBroadcast", "spmdCat", "spmdPlus", "spmdProbe",
    "spmdReceive", "spmdReduce", "spmdSend", "spmdSendReceive", "labprint",
    # distributed arrays
    "codistributor", "codistributor1d", "codistributor2dbc", "codistributorBlocks", "codistributorChunks",
    "AutoBlocks", "make_2d_index_map",
    "codistributed", "gather",
    "getCodistributor", "getLocalPart", "globalIndices", "iscodistributed", "redistribute",
    "updateHalos", "changeMode",
    "distributed", "isdistributed", "plot_layout",
    # process grids on some labs (pbdBASE's BLACS contexts)
    "grid", "rowgrid", "colgrid", "gridexit",
    # data in and out
    "save", "load", "to_zarr", "from_zarr", "to_hdf5", "from_hdf5", "read_csv", "write_csv", "read_files",
    # numerics under MATLAB's names (loaded on first use)
    *_NUMERICS,
    # errors
    "LabDiedError", "PoolError", "RemoteError", "SpmdError", "SpmdSourceError", "SpmdTimeoutError",
    # notebooks (%load_ext spmdlab)
    "load_ipython_extension", "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext spmdlab``: the ``%%spmd``, ``%spmd`` and ``%pmode`` magics."""
    from .notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook import unload_ipython_extension as unload

    unload(ipython)


def __getattr__(name: str) -> object:
    if name in _NUMERICS:
        from . import numerics

        value = getattr(numerics, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'spmdlab' has no attribute {name!r}")
