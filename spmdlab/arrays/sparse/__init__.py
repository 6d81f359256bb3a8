"""Sparse codistributed matrices and Krylov solvers (issue 25), MATLAB's names.

Layers, bottom-up (a module imports only from those before it): ``matrix`` (the data and
layout facts), ``exchange`` (the ghost pattern of ``S @ x``), ``move`` (entries to their
owners), ``products`` (``S @ x``, ``x @ S``, ``S @ S``), ``ops`` and ``select`` (the other
operations), ``array`` (the class), ``build`` (constructors), ``problem`` (what the
solvers share), ``pcg``, ``gmres``, ``bicgstab``, ``others`` (bicg, cgs, minres, lsqr),
``precond`` (jacobi, ilu, ichol), and this façade.

Loaded on first use (it imports scipy): ``codistributed(S)``, ``codistributed.build``
with a scipy.sparse part and ``codistributed.speye/sprand/sprandn/spdiags`` reach it by
name from ``codist.creation``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ...layouts.codistributor import codistributor1d
from ..base import CodistArray, is_plain
from ..collectives import allreduce
from ..transfer import redistribute
from . import build as _build
from . import ops as _ops
from .array import SparseCodist, isSparseCodist
from .bicgstab import bicgstab
from .exchange import STATS
from .gmres import gmres
from .matrix import SparseBase, layout_error, target_layout
from .move import to_layout
from .others import bicg, cgs, lsqr, minres
from .pcg import pcg
from .precond import PrecondSpec, ichol, ilu, jacobi

__all__ = ["SparseCodist", "sparse", "speye", "sprand", "sprandn", "spdiags", "kron", "issparse", "full",
           "nnz", "nonzeros", "find", "pcg", "gmres", "bicgstab", "bicg", "cgs", "minres", "lsqr", "jacobi",
           "ilu", "ichol", "isSparseCodist", "from_scipy", "build_local", "STATS",
           "layout_error", "PrecondSpec", "SparseBase", "from_local"]


def sparse(*args: Any, codist: Any = None) -> SparseCodist:
    """MATLAB's ``sparse``: ``sparse(D)`` (a dense codistributed or replicated matrix, or
    a scipy.sparse matrix the same on every lab), ``sparse(i, j, v)``,
    ``sparse(i, j, v, m, n)`` (0-based indices, duplicates summed), ``sparse(m, n)``."""
    if len(args) == 1:
        X = args[0]
        if isinstance(X, SparseCodist):
            return X if codist is None else _build_to(X, codist)
        if sp.issparse(X):
            return _build.from_replicated(SparseCodist, X, codist)
        return _build.from_dense(SparseCodist, X, codist)
    if len(args) == 2:
        return _build.zeros(SparseCodist, args[0], args[1], codist)
    if len(args) in (3, 5):
        i, j, v = args[:3]
        m, n = args[3:] if len(args) == 5 else (None, None)
        return _build.from_triplets(SparseCodist, i, j, v, m, n, codist=codist)
    raise TypeError(f"sparse takes 1, 2, 3 or 5 arguments (D | m, n | i, j, v[, m, n]); got {len(args)}")


def from_local(part: Any, codist: Any) -> SparseCodist:
    """The sparse codistributed matrix whose part on this lab is ``part`` (a scipy.sparse
    matrix) in the complete layout ``codist``; no communication."""
    return SparseCodist._from_local(part, codist)


def _build_to(S: SparseBase, codist: Any) -> SparseCodist:
    return to_layout(S, target_layout(codist, S.shape, "sparse(S, codist)"), "sparse(S, codist)")


def from_scipy(S: Any, codist: Any = None, **kw: Any) -> SparseCodist:
    """``codistributed(S, codist)`` for a scipy.sparse matrix S (the same on every lab)."""
    return _build.from_replicated(SparseCodist, S, codist, **kw)


def build_local(L: Any, codist: Any = None) -> SparseCodist:
    """``codistributed.build(L, codist)`` for a scipy.sparse local part L."""
    return _build.from_local(SparseCodist, L, codist)


def speye(m: int, n: int | None = None, codist: Any = None, dtype: Any = float) -> SparseCodist:
    return _build.speye(SparseCodist, m, n, codist, dtype)


def sprand(m: int, n: int, density: float, codist: Any = None, seed: Any = None) -> SparseCodist:
    return _build.sprand(SparseCodist, m, n, density, codist, seed)


def sprandn(m: int, n: int, density: float, codist: Any = None, seed: Any = None) -> SparseCodist:
    return _build.sprandn(SparseCodist, m, n, density, codist, seed)


def spdiags(B: Any, d: Any, m: int, n: int, codist: Any = None) -> SparseCodist:
    return _build.spdiags(SparseCodist, B, d, m, n, codist)


def kron(A: Any, B: Any, codist: Any = None) -> SparseCodist:
    if isinstance(A, SparseBase):
        A = _ops.gather_sparse(A)
    if isinstance(B, SparseBase):
        B = _ops.gather_sparse(B)
    return _build.kron(SparseCodist, A, B, codist)


def issparse(X: Any) -> bool:
    """True for a sparse codistributed matrix (and for a scipy.sparse one)."""
    return isinstance(X, SparseBase) or bool(sp.issparse(X))


def full(S: Any) -> Any:
    """The dense codistributed matrix of S (dense arrays are returned as they are)."""
    return _ops.full(S) if isinstance(S, SparseBase) else S


def nnz(S: Any) -> int:
    if isinstance(S, SparseBase):
        return _ops.nnz(S)
    if isinstance(S, CodistArray):
        return _dense_nnz(S)
    return int(np.count_nonzero(S.toarray() if sp.issparse(S) else S))


def _dense_nnz(D: CodistArray) -> int:
    """The nonzeros of a dense codistributed array: each lab counts its part (halos,
    blocks and chunks first to the default layout), one allreduce."""
    if not is_plain(D._codist):
        D = redistribute(D, codistributor1d())
    return int(allreduce(np.array(np.count_nonzero(D._local), dtype=np.int64), "sum", "nnz(D)"))


def nonzeros(S: SparseBase) -> Any:
    return _ops.nonzeros(S)


def find(S: SparseBase) -> Any:
    return _ops.find(S)
