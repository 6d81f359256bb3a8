"""Dense linear algebra on codistributed matrices.

Public functions under MATLAB's names (``mldivide``, ``mrdivide``, ``lu``, ``chol``,
``inv``, ``det``); the numpy functions (``np.linalg.solve``, ...) are registered with
``registry.implements`` where they are defined, and this package is one of
``registry.LAZY_MODULES`` (imported on first use). Algorithms: ``factor.py`` (ScaLAPACK PDGETRF,
PDPOTRF, PDTRSM on the 2dbc grid of ``grid.py``); eigenproblems and the SVD (issue 27):
``tridiag.py``/``eigh.py`` (PDSYTRD), ``bidiag.py``/``svd2d.py`` (PDGEBRD),
``hessenberg.py``/``eig.py`` (PDGEHRD), ``spectral.py`` (pinv, rank, cond).
"""
from __future__ import annotations

from . import eigh  # noqa: F401  (imported for its @implements: np.linalg.eigh, eigvalsh)
from .dense import (
    SINGULAR_WARNING,
    chol,
    det,
    inv,
    lu,
    mldivide,
    mrdivide,
    solve_triangular,
)
from .eig import eig
from .grid import DEFAULT_BLOCKSIZE, ProcessGrid, to_2dbc
from .norms import norm, trace, tril, triu
from .qr import lstsq, qr
from .spectral import cond, pinv, rank
from .svd import svd

__all__ = ["mldivide", "mrdivide", "lu", "chol", "inv", "det", "solve_triangular",
           "qr", "lstsq", "svd", "eig", "pinv", "rank", "cond", "norm", "trace", "triu", "tril",
           "SINGULAR_WARNING", "ProcessGrid", "to_2dbc", "DEFAULT_BLOCKSIZE"]
