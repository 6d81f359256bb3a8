"""MATLAB's names for the numerics on distributed arrays (docs/design.md §7): each works
inside ``spmd`` on codistributed arrays, at the client on ``distributed`` arrays (the call
runs on the labs), and on plain numpy arrays where numpy has the same function. numpy's
own names (``np.fft.fft2``, ``np.linalg.solve``, ...) reach the same code through
``__array_function__``. Importing this module imports scipy: ``spmdlab`` loads it on
first use of one of these names.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from .arrays import join as _join
from .arrays import linalg
from .arrays import sparse as _sparse
from .arrays.adapt import on_plain
from .arrays.fancy_funcs import find as _dense_find
from .arrays.fft import matlab as fft_matlab
from .arrays.stats import matlab as stats_matlab
from .client.distributed import distributed as _distributed
from .client.distributed import on_labs as _on_labs


def on_labs(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` at the client and on the labs, for arrays in any layout (``adapt.on_plain``)."""
    return _on_labs(on_plain(fn))


__all__ = ["fft", "fft2", "fftn", "ifft", "ifft2", "ifftn",
           "mldivide", "mrdivide", "lu", "chol", "inv", "det", "solve_triangular",
           "qr", "lstsq", "svd", "eig", "pinv", "rank", "cond", "norm", "trace", "triu", "tril",
           # sparse matrices and Krylov solvers (issue 25)
           "sparse", "speye", "sprand", "sprandn", "spdiags", "kron", "issparse", "full", "nnz", "nonzeros",
           "find", "pcg", "gmres", "bicgstab", "bicg", "cgs", "minres", "lsqr", "jacobi", "ilu", "ichol",
           # joining (issue 21)
           "cat", "horzcat", "vertcat",
           # sorting and statistics (issue 21)
           "sort", "unique", "median", "prctile", "histcounts", "cumsum", "cumprod", "diff"]

fft = on_labs(fft_matlab.matlab_fft)
ifft = on_labs(fft_matlab.matlab_ifft)
fft2 = on_labs(fft_matlab.matlab_fft2)
ifft2 = on_labs(fft_matlab.matlab_ifft2)
fftn = on_labs(fft_matlab.matlab_fftn)
ifftn = on_labs(fft_matlab.matlab_ifftn)

mldivide = on_labs(linalg.mldivide)
mrdivide = on_labs(linalg.mrdivide)
lu = on_labs(linalg.lu)
chol = on_labs(linalg.chol)
inv = on_labs(linalg.inv)
det = on_labs(linalg.det)
solve_triangular = on_labs(linalg.solve_triangular)
qr = on_labs(linalg.qr)
lstsq = on_labs(linalg.lstsq)
svd = on_labs(linalg.svd)
eig = on_labs(linalg.eig)
pinv = on_labs(linalg.pinv)
rank = on_labs(linalg.rank)
cond = on_labs(linalg.cond)

cat = on_labs(_join.cat)
horzcat = on_labs(_join.horzcat)
vertcat = on_labs(_join.vertcat)


def _or_sparse(dense: Callable[..., Any], sparse: Callable[..., Any]) -> Callable[..., Any]:
    """``dense``, or ``sparse`` when the first argument is a sparse codistributed matrix."""
    def either(A: Any, *args: Any, **kwargs: Any) -> Any:
        return (sparse if isinstance(A, _sparse.SparseBase) else dense)(A, *args, **kwargs)

    either.__name__, either.__doc__ = dense.__name__, dense.__doc__
    return either


norm = on_labs(_or_sparse(linalg.norm, _sparse.ops.norm))
trace = on_labs(linalg.trace)
triu = on_labs(_or_sparse(linalg.triu, _sparse.ops.triu))
tril = on_labs(_or_sparse(linalg.tril, _sparse.ops.tril))


def _precond(kind: str) -> Callable[..., Any]:
    """``jacobi``/``ilu``/``ichol``: on the labs the preconditioner; at the client, of a
    ``distributed`` matrix, a recipe the solver builds on the labs from the same matrix."""
    make = getattr(_sparse, kind)

    def precond(A: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(A, _distributed):
            return _sparse.PrecondSpec(kind, A.store_key, args, kwargs)
        return make(A, *args, **kwargs)

    precond.__name__, precond.__doc__ = kind, make.__doc__
    return precond


def _solver(fn: Callable[..., Any]) -> Callable[..., Any]:
    run = _on_labs(fn)

    @functools.wraps(fn)
    def solve(A: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
        for M in (*args, *kwargs.values()):
            if isinstance(M, _sparse.PrecondSpec) and getattr(A, "store_key", None) != M.source:
                raise ValueError(f"{fn.__name__}: at the client a preconditioner made with {M.kind}(D) is built "
                                 f"on the labs from the solver's A, so D must be A; for another matrix, "
                                 "run both inside spmd")
        return run(A, b, *args, **kwargs)

    return solve


sparse = _on_labs(_sparse.sparse)
speye, sprand, sprandn = _sparse.speye, _sparse.sprand, _sparse.sprandn
spdiags, kron = _sparse.spdiags, _sparse.kron
issparse = _on_labs(_sparse.issparse)
full = _on_labs(_sparse.full)
nnz = _on_labs(_sparse.nnz)
nonzeros = _on_labs(_sparse.nonzeros)
find = on_labs(_or_sparse(_dense_find, _sparse.find))  # dense: 0-based linear indices, MATLAB's order
pcg, gmres, bicgstab, bicg = (_solver(_sparse.pcg), _solver(_sparse.gmres), _solver(_sparse.bicgstab),
                              _solver(_sparse.bicg))
cgs, minres, lsqr = _solver(_sparse.cgs), _solver(_sparse.minres), _solver(_sparse.lsqr)
jacobi, ilu, ichol = _precond("jacobi"), _precond("ilu"), _precond("ichol")

sort = on_labs(stats_matlab.sort)
unique = on_labs(stats_matlab.unique)
median = on_labs(stats_matlab.median)
prctile = on_labs(stats_matlab.prctile)
histcounts = on_labs(stats_matlab.histcounts)
cumsum = on_labs(stats_matlab.cumsum)
cumprod = on_labs(stats_matlab.cumprod)
diff = on_labs(stats_matlab.diff)
