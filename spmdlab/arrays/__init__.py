"""The array package: codistributed arrays on the labs (internal; the public names are
re-exported by ``spmdlab``).

Layers, bottom-up; a module imports only from layers below it:

- ``regions`` (copying Cartesian regions), ``registry`` (the numpy-function table),
  ``elision`` (operator temporaries): pure, no arrays;
- ``base``: the array's data (``CodistArray``: local part + codistributor) and facts
  about a codistributor; ``layout``: which global indices each lab holds; ``plan``:
  which elements a redistribution moves (pure index math);
- ``collectives``: the MPI collectives every operation uses;
- ``transfer`` (redistribute, gather); ``elementwise``; ``reductions``; ``reshape``;
  ``indexing``; ``matmul``; ``creation``: the operations;
- ``ops``: the operators and methods; ``array``: the ``codistributed`` class.

A new operation goes in a module of its own (or the layer it belongs to), registers the
numpy functions it implements with ``registry.implements``, and is imported here.
"""
from __future__ import annotations

from typing import Any

from . import fancy_funcs as fancy_funcs  # registers np.take, np.flatnonzero, np.argwhere
from . import io as io
from . import join as join  # registers concatenate, stack, ...
from . import rearrange as rearrange  # registers delete, insert, repeat, tile, flip, roll
from . import shapes as shapes  # registers the *_like constructors, copyto, swapaxes, ...
from . import sorting as sorting
from . import stats as stats
from .array import codistributed, getCodistributor, getLocalPart, globalIndices, iscodistributed
from .base import register_sparse_loader
from .registry import implements
from .reshard import changeMode, updateHalos
from .subgrid import SubgridArray, colgrid, grid, gridexit, rowgrid
from .transfer import gather, redistribute

__all__ = ["changeMode", "codistributed", "gather", "getCodistributor", "getLocalPart", "globalIndices",
           "implements", "iscodistributed", "redistribute", "updateHalos", "grid", "rowgrid", "colgrid", "gridexit",
           "SubgridArray"]


def _sparse_package() -> Any:
    from . import sparse  # imports scipy: loaded on the first scipy.sparse input or sparse constructor

    return sparse


register_sparse_loader(_sparse_package)  # base.sparse_package: for creation, transfer, the client
