"""Dense linear algebra on codistributed matrices.

Public functions under MATLAB's names (``mldivide``, ``mrdivide``, ``lu``, ``chol``,
``inv``, ``det``) and :data:`HANDLERS`, the table mapping numpy functions
(``np.linalg.solve``, ...) to implementations, looked up from
``CodistOps.__array_function__`` (registered in ``registry``). Algorithms: ``factor.py`` (ScaLAPACK PDGETRF,
PDPOTRF, PDTRSM on the 2dbc grid of ``grid.py``); eigenproblems and the SVD (issue 27):
``tridiag.py``/``eigh.py`` (PDSYTRD), ``bidiag.py``/``svd2d.py`` (PDGEBRD),
``hessenberg.py``/``eig.py`` (PDGEHRD), ``spectral.py`` (pinv, rank, cond).
"""
from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

from ..registry import implements
from .dense import (
    SINGULAR_WARNING,
    chol,
    cholesky,
    det,
    inv,
    lu,
    mldivide,
    mrdivide,
    np_inv,
    slogdet,
    solve,
    solve_triangular,
)
from .eig import eig, np_eig, np_eigvals
from .eigh import np_eigh, np_eigvalsh
from .grid import DEFAULT_BLOCKSIZE, ProcessGrid, to_2dbc
from .norms import norm, np_matrix_norm, np_norm, np_trace, np_tril, np_triu, np_vector_norm, trace, tril, triu
from .qr import lstsq, np_qr, qr
from .spectral import cond, np_cond, np_matrix_rank, np_pinv, pinv, rank
from .svd import np_svd, svd

__all__ = ["mldivide", "mrdivide", "lu", "chol", "inv", "det", "solve_triangular",
           "qr", "lstsq", "svd", "eig", "pinv", "rank", "cond", "norm", "trace", "triu", "tril",
           "SINGULAR_WARNING", "ProcessGrid", "to_2dbc", "DEFAULT_BLOCKSIZE", "HANDLERS"]

# numpy function -> implementation (same signature), for codistributed arguments
HANDLERS: Dict[Callable[..., Any], Callable[..., Any]] = {
    np.linalg.solve: solve, np.linalg.cholesky: cholesky, np.linalg.inv: np_inv,
    np.linalg.det: det, np.linalg.slogdet: slogdet,
    np.linalg.qr: np_qr, np.linalg.lstsq: lstsq, np.linalg.svd: np_svd,
    np.linalg.eig: np_eig, np.linalg.eigvals: np_eigvals, np.linalg.eigh: np_eigh,
    np.linalg.eigvalsh: np_eigvalsh, np.linalg.norm: np_norm, np.trace: np_trace,
    np.triu: np_triu, np.tril: np_tril, np.linalg.pinv: np_pinv,
    np.linalg.matrix_rank: np_matrix_rank, np.linalg.cond: np_cond,
}
for _name, _impl in (  # numpy >= 2's array-API names
        ("svdvals", lambda x: np_svd(x, compute_uv=False)),
        ("matrix_norm", np_matrix_norm), ("vector_norm", np_vector_norm),
        ("trace", lambda x, offset=0, dtype=None: np_trace(x, offset, dtype=dtype))):
    if hasattr(np.linalg, _name):
        HANDLERS[getattr(np.linalg, _name)] = _impl
for _numpy_function, _implementation in HANDLERS.items():
    implements(_numpy_function)(_implementation)
