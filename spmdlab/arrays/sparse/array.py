"""The sparse codistributed matrix class: operators, numpy's protocols, the display.

``SparseCodist`` joins the data (``matrix``) to the operations (``products``, ``ops``,
``select``). numpy's ufuncs and functions reach it through ``__array_ufunc__`` (``abs``,
``negative``, ``conjugate``, ``multiply``/``divide`` by a scalar, ``matmul``) and
``__array_function__`` (``np.sum``, ``np.transpose``, ``np.diag``, ``np.tril``,
``np.triu``, ``np.linalg.norm``); anything else is a ``TypeError`` naming it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...protocol.messages import Summary
from ..base import here
from . import ops, products, select
from .matrix import SparseBase, target_layout
from .move import to_layout

__all__ = ["SparseCodist", "isSparseCodist"]


class SparseCodist(SparseBase):
    """A sparse matrix distributed over the labs by rows (csr parts) or columns (csc parts).

    Made with ``sparse(...)``, ``speye``, ``sprand``, ``sprandn``, ``spdiags``, ``kron``,
    ``codistributed(S, codist)`` or ``codistributed.build(L, codist)``;
    ``getLocalPart(S)`` is the scipy.sparse part, ``gather(S)`` the whole scipy.sparse matrix.
    """

    __array_priority__ = 25.0
    _spmdlab_codistributed = True  # iscodistributed(S)

    # ---- views and conversions -----------------------------------------------------------
    @property
    def T(self) -> SparseCodist:
        return ops.transpose(self)

    @property
    def H(self) -> SparseCodist:
        return ops.transpose(self, conjugate=True)

    def transpose(self) -> SparseCodist:
        return ops.transpose(self)

    def conj(self) -> SparseCodist:
        return ops.map_local(self, lambda a: a.conj())

    conjugate = conj

    def astype(self, dtype: Any) -> SparseCodist:
        return ops.map_local(self, lambda a: a.astype(dtype))

    def copy(self) -> SparseCodist:
        return ops.map_local(self, lambda a: a.copy())

    def toarray(self) -> Any:
        """The dense codistributed matrix (MATLAB's ``full``)."""
        return ops.full(self)

    todense = toarray

    @property
    def nnz(self) -> int:
        """The number of stored entries (collective: every lab must read it)."""
        return ops.nnz(self)

    def sum(self, axis: int | None = None, dtype: Any = None) -> Any:
        return ops.ssum(self, axis, dtype)

    def diagonal(self, k: int = 0) -> Any:
        return ops.diagonal(self, k)

    # ---- operators -----------------------------------------------------------------------
    def __matmul__(self, other: Any) -> Any:
        return products.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return products.rmatmul(other, self)

    def dot(self, other: Any) -> Any:
        return products.matmul(self, other)

    def __mul__(self, other: Any) -> Any:
        return ops.multiply(self, other)

    __rmul__ = __mul__
    multiply = __mul__

    def __truediv__(self, other: Any) -> Any:
        if not np.isscalar(other):
            return NotImplemented
        return ops.map_local(self, lambda a: a / other)

    def __add__(self, other: Any) -> Any:
        return ops.add(self, other, 1)

    def __sub__(self, other: Any) -> Any:
        return ops.add(self, other, -1)

    def __radd__(self, other: Any) -> Any:
        return ops.add(self, other, 1)

    def __neg__(self) -> SparseCodist:
        return ops.map_local(self, lambda a: -a)

    def __pos__(self) -> SparseCodist:
        return self

    def __abs__(self) -> SparseCodist:
        return ops.map_local(self, abs)

    def __getitem__(self, index: Any) -> Any:
        return select.getitem(self, index)

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a sparse codistributed matrix is ambiguous; use S.nnz")

    __hash__ = None  # type: ignore[assignment]

    # ---- numpy protocols -----------------------------------------------------------------
    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a sparse codistributed matrix cannot become a numpy array silently; "
                        "use gather(S) (scipy.sparse) or getLocalPart(S)")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__" or kwargs.get("out") is not None:
            return NotImplemented
        if ufunc in (np.absolute, np.negative, np.conjugate) and len(inputs) == 1:
            return {np.absolute: abs, np.negative: lambda s: -s, np.conjugate: lambda s: s.conj()}[ufunc](self)
        if ufunc is np.matmul and len(inputs) == 2:
            a, b = inputs
            return products.matmul(a, b) if a is self else products.rmatmul(a, b)
        if ufunc is np.multiply and len(inputs) == 2:
            a, b = inputs
            return ops.multiply(self, b if a is self else a)
        if ufunc is np.true_divide and len(inputs) == 2 and inputs[0] is self:
            return self / inputs[1]
        return NotImplemented

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        impl = _FUNCTIONS.get(func)
        if impl is None:
            raise TypeError(f"np.{getattr(func, '__name__', func)} is not implemented for sparse codistributed "
                            "matrices; use full(S) for a dense codistributed matrix")
        return impl(*args, **kwargs)

    # ---- display -------------------------------------------------------------------------
    def __repr__(self) -> str:
        """What this lab knows, without communication (a display on the labs must not be
        a hidden collective: a lab that prints alone would hang): the global size, this
        lab's rows or columns, its nnz and density. The client's display of the
        ``distributed`` handle shows the total nnz, density and every lab's nnz."""
        lab, n = here()
        lo, hi = self.range_of(lab) if n == len(self.partition) else (0, self.shape[int(not self.by_rows)])
        where = f"S[{lo}:{hi}, :]" if self.by_rows else f"S[:, {lo}:{hi}]"
        m, k = self.shape
        mine = self.local_nnz()
        cells = (hi - lo) * (k if self.by_rows else m)
        density = f"{mine / cells:.4g}" if cells else "-"
        return "\n".join([
            f"This lab stores {where} of a sparse codistributed {m}x{k} {self.dtype} matrix "
            f"(by {'rows' if self.by_rows else 'columns'} over {len(self.partition)} labs).",
            f"  size: {m}x{k}; nnz on this lab: {mine}, density on this lab: {density}",
            f"  partition: {self.partition}, {self._codist!r}"])

    __str__ = __repr__

    def _spmdlab_summary(self) -> Summary:
        m, k = self.shape
        text = (f"sparse codistributed {self.dtype}, size = ({m}, {k}), by {'rows' if self.by_rows else 'columns'}, "
                f"nnz on this lab = {self.local_nnz()}")
        return Summary("sparse", str(self.dtype), (m, k), text, self._codist)

    def _spmdlab_redistribute(self, codist: Any) -> SparseCodist:
        """``redistribute(S, codist)``: between rows and columns or partitions (entries move
        to their new owners in one all-to-all per array)."""
        return to_layout(self, target_layout(codist, self.shape, "redistribute(S)"), "redistribute(S)")

    def _spmdlab_gather(self) -> Any:
        return ops.gather_sparse(self)

    def _spmdlab_gather_to(self, lab: int) -> Any:
        """``gather(S, lab)``: the whole matrix on ``lab``, an empty one elsewhere."""
        return ops.gather_sparse(self, lab)


def isSparseCodist(x: Any) -> bool:
    return isinstance(x, SparseCodist)


def _np_sum(S: SparseBase, axis: int | None = None, dtype: Any = None) -> Any:
    return ops.ssum(S, axis, dtype)


def _np_transpose(S: SparseBase, axes: Any = None) -> Any:
    return ops.transpose(S)


def _np_diag(S: SparseBase, k: int = 0) -> Any:
    return ops.diagonal(S, k)


def _np_diagonal(S: SparseBase, offset: int = 0) -> Any:
    return ops.diagonal(S, offset)


def _np_tril(S: SparseBase, k: int = 0) -> Any:
    return ops.tril(S, k)


def _np_triu(S: SparseBase, k: int = 0) -> Any:
    return ops.triu(S, k)


def _np_norm(S: SparseBase, ord: Any = None) -> Any:
    return ops.norm(S, ord)


def _np_conj(S: SparseCodist) -> SparseCodist:
    return S.conj()


def _np_shape(S: SparseBase) -> tuple[int, int]:
    return S.shape


def _np_ndim(S: SparseBase) -> int:
    return 2


_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.sum: _np_sum,
    np.transpose: _np_transpose,
    np.diag: _np_diag,
    np.diagonal: _np_diagonal,
    np.tril: _np_tril,
    np.triu: _np_triu,
    np.linalg.norm: _np_norm,
    np.abs: abs,
    np.conj: _np_conj,
    np.shape: _np_shape,
    np.ndim: _np_ndim,
}
