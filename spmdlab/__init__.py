"""spmdlab: MATLAB's spmd programming model for Python, on MPI.

>>> from spmdlab import spmd, labindex        # doctest: +SKIP
>>> with spmd():
...     x = labindex()
>>> x[2]
2
"""
from .composite import Composite, NoDataError, exist
from .errors import LabDiedError, PoolError, RemoteError, SpmdError, SpmdSourceError, SpmdTimeoutError
from .messaging import (gcat, gop, gplus, labBarrier, labBroadcast, labProbe, labReceive, labSend,
                        labSendReceive, spmdBarrier, spmdBroadcast, spmdCat, spmdPlus, spmdProbe,
                        spmdReceive, spmdReduce, spmdSend, spmdSendReceive)
from .pool import Pool, gcp, parpool
from .runtime import labindex, numlabs, spmdIndex, spmdSize
from .spmd import spmd, spmd_run

__version__ = "0.1.0"

__all__ = [
    "Composite", "NoDataError", "exist", "LabDiedError", "PoolError", "RemoteError", "SpmdError",
    "SpmdSourceError", "SpmdTimeoutError", "gcat", "gop", "gplus", "labBarrier", "labBroadcast",
    "labProbe", "labReceive", "labSend", "labSendReceive", "spmdBarrier", "spmdBroadcast", "spmdCat",
    "spmdPlus", "spmdProbe", "spmdReceive", "spmdReduce", "spmdSend", "spmdSendReceive", "Pool", "gcp",
    "parpool", "labindex", "numlabs", "spmdIndex", "spmdSize", "spmd", "spmd_run",
]

# Codistributed (lab side) and distributed (client side) arrays.
from .codistributor import codistributor, codistributor1d, codistributor2dbc  # noqa: E402
from .codistributed import (codistributed, gather, getCodistributor, getLocalPart,  # noqa: E402
                            globalIndices, iscodistributed, redistribute)
from .distributed import distributed, isdistributed  # noqa: E402
from .layout_plot import plot_layout  # noqa: E402

__all__ += [
    "codistributor", "codistributor1d", "codistributor2dbc", "codistributed", "gather",
    "getCodistributor", "getLocalPart", "globalIndices", "iscodistributed", "redistribute",
    "distributed", "isdistributed", "plot_layout",
]


def load_ipython_extension(ipython) -> None:
    """``%load_ext spmdlab``: the ``%%spmd``, ``%spmd`` and ``%pmode`` magics."""
    from .magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from .magics import unload_ipython_extension as unload

    unload(ipython)
