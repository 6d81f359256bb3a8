"""The ``codistributed`` class and the functions that read codistributed arrays.

The top of the array package: ``codistributed`` combines the data (``base``), the ways
to make one (``creation``) and the numpy operations (``ops``).

Numbering (docs/design.md §1): labs are 1..numlabs, dimensions passed as ``dim`` are
1-based (``axis=`` is the 0-based alternative), element indices are 0-based.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import runtime
from ..checks import check_lab
from ..layouts.codistributor import Codistributor, codistributor2dbc
from .base import CODISTRIBUTORS, is_scipy_sparse, need, numlabs_of
from .creation import CodistConstructors
from .habits import CodistHabits
from .ops import CodistOps

__all__ = ["codistributed", "iscodistributed", "getLocalPart", "getCodistributor", "globalIndices"]


class codistributed(CodistOps, CodistConstructors, CodistHabits):
    """An array distributed over the labs of an ``spmd`` block; each lab stores its part.

    ``codistributed(X)`` distributes ``X``, which must be the same on every lab (each lab
    keeps its own part); ``codistributed(X, codist)`` uses the given codistributor.
    ``codistributed.build(L, codist)`` assembles an array from the local parts ``L``.
    Constructors: ``zeros ones eye rand randn randi inf nan true false colon linspace``.
    ``codistributed(X, lab, codist)`` (or ``codistributed(X, codist, from_lab=lab)``)
    distributes the array only lab ``lab`` holds (the others pass anything, e.g. None).
    Other systems' habits (``itemsize``, ``mT``, ``map``, ``rand_``, ``show``): ``habits``.

    >>> with spmd():                                          # doctest: +SKIP
    ...     D = codistributed(np.zeros((80, 1000)))
    ...     L = getLocalPart(D)          # 80 x 250 on each of 4 labs
    """

    __array_priority__ = 20.0


def iscodistributed(X: Any) -> bool:
    """True if ``X`` is a codistributed array (dense, or sparse: ``_spmdlab_codistributed``)."""
    return isinstance(X, codistributed) or bool(getattr(type(X), "_spmdlab_codistributed", False))


def getLocalPart(D: codistributed) -> np.ndarray:
    """This lab's part of ``D`` (the stored numpy array itself, not a copy; the
    scipy.sparse part of a sparse codistributed matrix: once ``S @ x`` has split a
    row-distributed one into its two blocks, a csr part rebuilt from them)."""
    local: Any = getattr(D, "_local", None)  # (read once: a split sparse part is rebuilt on each read)
    if is_scipy_sparse(local):
        return local
    if getattr(type(D), "_spmdlab_subgrid", False):
        return getattr(D, "local")  # an array on a sub-grid: empty outside it
    return need(D, "getLocalPart")._local


def getCodistributor(D: Any) -> Codistributor:
    """The (complete) codistributor of a codistributed (or client distributed) array."""
    codist = getattr(D, "_codist", None)
    if codist is None:
        raise TypeError(f"getCodistributor needs a codistributed array, got {type(D).__name__}")
    return codist


def globalIndices(D: Any, dim: int | None = None, lab: int | None = None, *,
                  axis: int | None = None) -> np.ndarray:
    """0-based global indices along ``dim`` (1-based; or ``axis=``, 0-based) of the
    elements that ``lab`` (default: this lab) stores, as a numpy int64 array.

    ``D`` is a codistributed array or a complete codistributor. For a 1-D
    codistributor ``dim`` defaults to its distribution dimension.

    >>> c = codistributor1d(2, None, (1, 10)).complete((1, 10), 4)
    >>> globalIndices(c, 2, 3)
    array([6, 7])
    """
    codist: Any
    if getattr(type(D), "_spmdlab_subgrid", False):
        return D.globalIndices(dim, lab, axis=axis)  # an array on a sub-grid: lab is a pool lab
    if isinstance(D, CODISTRIBUTORS):
        codist = D
    else:
        codist = getattr(D, "_codist", None)
        if not isinstance(codist, CODISTRIBUTORS):
            raise TypeError(f"globalIndices needs a codistributed array or a codistributor, "
                            f"got {type(D).__name__}")
    if not codist.isComplete():
        raise ValueError("globalIndices needs a complete codistributor (GlobalSize set); "
                         "use codist.complete(gsize, numlabs) or pass the array")
    n = numlabs_of(codist)
    if lab is None:
        lab = runtime.state.index if runtime.state.size == n else None
        if lab is None:
            raise ValueError(f"globalIndices: pass lab= (1..{n}): this block does not run on "
                             f"the {n} labs of the codistributor")
    lab = check_lab(lab, n)
    if dim is None and axis is None and isinstance(codist, codistributor2dbc):
        raise TypeError("globalIndices of a 2dbc layout needs dim (1 = rows, 2 = columns) or axis=")
    return codist.globalIndices(dim, lab, n, axis=axis)

