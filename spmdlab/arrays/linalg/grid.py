"""The 2dbc process grid as the factorizations use it.

:class:`ProcessGrid` and the block-cyclic index maps (ScaLAPACK's NUMROC, INDXG2L,
INDXL2G) live in ``spmdlab/arrays/grid.py``, the array package's, which SUMMA uses too;
they are re-exported here. :func:`to_2dbc` redistributes any input (replicated array,
1-D or 2dbc layout) to the 2dbc layout the factorizations run on, with the block size
and lab grid they choose (:data:`DEFAULT_BLOCKSIZE`, :func:`choose_labgrid`).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ... import runtime
from ...layouts.codistributor import codistributor2dbc
from ..array import codistributed, getCodistributor
from ..grid import ProcessGrid, g2l, l2g, local_before, numroc, owner
from ..transfer import redistribute
from .blocksizes import default_blocksize, operation_of

__all__ = ["grid_codist", "numroc", "owner", "g2l", "l2g", "local_before", "ProcessGrid", "to_2dbc",
           "DEFAULT_BLOCKSIZE", "choose_labgrid"]

# Block size the factorizations redistribute to when the input is not 2dbc already and
# the measured table (blocksizes.py) names neither the operation nor a grid near it.
DEFAULT_BLOCKSIZE = 64


# --------------------------------------------------------------------------- index math
def grid_codist(D: Any) -> codistributor2dbc:
    """The 2dbc codistributor of ``D``, a matrix already on the process grid."""
    c = getCodistributor(D)
    if not isinstance(c, codistributor2dbc):
        raise TypeError(f"a matrix on the 2dbc grid was expected, got {type(c).__name__}")
    return c


def choose_labgrid(n: int, shape: Sequence[int]) -> List[int]:
    """The lab grid a factorization uses for an input that is not 2dbc: MATLAB's default
    (``codistributor2dbc.defaultLabGrid``, as square as the lab count allows)."""
    return codistributor2dbc.defaultLabGrid(n)


def _blocksize(what: str, grid: Sequence[int]) -> int:
    """The measured default for ``what`` on ``grid`` (``blocksizes.TABLE``)."""
    return default_blocksize(what, grid) if operation_of(what) else DEFAULT_BLOCKSIZE


# --------------------------------------------------------------------------- redistribution
def to_2dbc(A: Any, what: str, blocksize: Optional[int] = None,
            labgrid: Optional[Sequence[int]] = None, orientation: Optional[str] = None) -> Any:
    """``A`` as a 2dbc codistributed matrix for a factorization.

    A 2dbc input is kept (no copy) unless ``blocksize``/``labgrid``/``orientation`` ask
    for another; a 1-D layout is redistributed (lab to lab, never gathered) to
    ``labgrid`` (default: MATLAB's default grid), ``blocksize`` (default: the
    measured one for the operation ``what`` names and that grid, ``blocksizes.py``)
    and ``orientation`` (default 'row'); a replicated numpy array is split the same
    way (each lab keeps its part)."""
    n = runtime.numlabs()
    if not isinstance(A, codistributed):
        A = np.asarray(A)
        if A.ndim != 2:
            raise ValueError(f"{what}: expected a 2-D matrix, got an array of shape {A.shape}")
        grid = list(labgrid) if labgrid is not None else choose_labgrid(n, A.shape)
        nb = blocksize or _blocksize(what, grid)
        return codistributed(A, codistributor2dbc(grid, nb, orientation or "row", A.shape))
    if A.ndim != 2:
        raise ValueError(f"{what}: expected a 2-D matrix, got a codistributed array of shape {A.shape}")
    c = getCodistributor(A)
    if isinstance(c, codistributor2dbc):
        known = list(labgrid) if labgrid is not None else c.LabGrid
        # rectangular (mb, nb) blocks: the factorizations take square ones (PDGETRF's MB_A = NB_A): mb x mb
        nb = blocksize or c.BlockSizes[0]
        orient = orientation or c.Orientation
        if known == c.LabGrid and nb == c.BlockSize and orient == c.Orientation:
            return A
        return redistribute(A, codistributor2dbc(known, nb, orient, tuple(A.shape)))
    grid = list(labgrid) if labgrid is not None else choose_labgrid(n, A.shape)
    nb = blocksize or _blocksize(what, grid)
    return redistribute(A, codistributor2dbc(grid, nb, orientation or "row", tuple(A.shape)))
