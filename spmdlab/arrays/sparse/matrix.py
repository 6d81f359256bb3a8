"""The data of a sparse codistributed matrix: a lab's scipy.sparse part and the layout.

A ``SparseBase`` is laid out by a complete ``codistributor1d`` over rows (Dimension 1;
the local part a ``csr_array`` of shape ``(rows here, n)`` with global column indices)
or over columns (Dimension 2; a ``csc_array`` of shape ``(m, columns here)`` with global
row indices; MATLAB's default for matrices). Results are built with
``type(S)._from_local``, as in the dense package, so no module here needs the class
defined above it. Caches that depend only on the matrix and a vector layout (the ghost
pattern of ``S @ x``) live in ``_cache``; every lab fills them at the same call.
"""
from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from ...layouts.codistributor import codistributor1d
from ..base import complete, here

__all__ = ["SparseBase", "target_layout", "offsets", "check_layout", "local_format", "layout_error", "row_codist",
           "col_codist", "issparse_local", "SUPPORTED_DTYPES", "as_1d", "partition_of", "complete_1d", "transposed"]

S = TypeVar("S", bound="SparseBase")

# scipy.sparse's numeric types; others are refused with the list
SUPPORTED_DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32, np.float64,
                                               np.complex64, np.complex128))


def offsets(partition: Any) -> np.ndarray:
    """``[0, p1, p1 + p2, ...]``: where each lab's range starts (lab k: ``o[k-1]:o[k]``)."""
    return np.concatenate(([0], np.cumsum(np.asarray(partition, dtype=np.int64))))


def as_1d(codist: Any, what: str) -> codistributor1d:
    """``codist`` as the codistributor1d a sparse layout always is (TypeError otherwise)."""
    if not isinstance(codist, codistributor1d):
        raise TypeError(f"{what}: sparse matrices are laid out by a codistributor1d, got {codist!r}")
    return codist


def partition_of(codist: codistributor1d) -> list[int]:
    """The Partition of a complete codistributor1d (ValueError for an incomplete one)."""
    part = codist.Partition
    if part is None:
        raise ValueError(f"{codist!r} has no Partition yet (complete it for a shape first)")
    return part


def complete_1d(codist: codistributor1d, shape: tuple[int, ...], n: int) -> codistributor1d:
    """``base.complete`` for a codistributor1d, typed as one (completing keeps the kind)."""
    return as_1d(complete(codist, tuple(shape), n), "complete")


def layout_error(codist: Any, what: str) -> str | None:
    """Why ``codist`` cannot lay out a sparse matrix (with how to get one that can), else None."""
    if codist is None:
        return None
    if isinstance(codist, codistributor1d) and not codist.Halo and codist.Dimension in (None, 1, 2):
        return None
    return (f"{what}: sparse matrices are distributed by rows (codistributor1d(1)) or by columns "
            f"(codistributor1d(2)) without halos; got {codist!r}. Pass codistributor1d(1) or "
            "codistributor1d(2), or redistribute a dense array with full(S) first")


def check_layout(codist: Any, what: str) -> None:
    error = layout_error(codist, what)
    if error:
        raise ValueError(error)


def target_layout(codist: Any, shape: tuple[int, int], what: str) -> codistributor1d:
    """``codist`` (default: by columns, MATLAB's default for matrices) completed for ``shape``."""
    check_layout(codist, what)
    c = codist if codist is not None else codistributor1d(2)
    if c.Dimension is None:
        c = codistributor1d(2, c.Partition, c.GlobalSize)
    return complete_1d(c, tuple(shape), here()[1])


def row_codist(shape: tuple[int, int], partition: Any | None = None) -> codistributor1d:
    """The complete row layout of an ``m x n`` matrix (default partition when None)."""
    return codistributor1d(1, partition, tuple(shape)).complete(tuple(shape), here()[1])


def col_codist(shape: tuple[int, int], partition: Any | None = None) -> codistributor1d:
    return codistributor1d(2, partition, tuple(shape)).complete(tuple(shape), here()[1])


def transposed(A: S, conjugate: bool = False) -> S:
    """``A.T`` (``A.H`` with ``conjugate``): the local csr part read as csc of the
    transpose, so a matrix by rows becomes one by columns; nothing moves."""
    m, n = A.shape
    local = A._local.T
    if conjugate:
        local = local.conj()
    layout = col_codist if A.by_rows else row_codist
    return type(A)._from_local(local, layout((n, m), A.partition))


def local_format(codist: codistributor1d) -> str:
    return "csr" if codist.Dimension == 1 else "csc"


def issparse_local(x: Any) -> bool:
    return bool(sp.issparse(x))


class SparseBase:
    """A lab's part of a sparse matrix distributed by rows or by columns."""

    _csr: Any  # scipy.sparse csr_array (rows) or csc_array (columns); None once split
    _split: Any  # the ghost plan holding the entries as PETSc's two blocks, or None
    _codist: codistributor1d
    _cache: dict

    @property
    def _local(self) -> Any:
        """This lab's part (csr by rows, csc by columns). Once ``S @ x`` has split a
        row-distributed part into its diagonal and off-diagonal blocks, the entries live
        only there and this rebuilds the csr part on each read (O(nnz); the products and
        the solvers read the blocks, never this)."""
        return self._csr if self._split is None else self._split.merged()

    def _adopt(self, plan: Any) -> None:
        """Keep the entries only in ``plan``'s blocks (exchange.ghost_plan)."""
        self._csr, self._split = None, plan

    @classmethod
    def _from_local(cls: type[S], local: Any, codist: codistributor1d) -> S:
        """Wrap a local part (converted to the layout's format, indices sorted) and a
        complete codistributor1d; no checks, no communication."""
        self = object.__new__(cls)
        fmt = local_format(codist)
        local = sp.csr_array(local) if fmt == "csr" else sp.csc_array(local)
        if not local.has_sorted_indices:
            local.sort_indices()
        self._csr, self._split = local, None
        self._codist = codist
        self._cache = {}
        return self

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return (type(self)._from_local, (self._local, self._codist))

    # ---- global facts (no communication) ----------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        gsize = self._codist.GlobalSize
        if gsize is None:  # never: a sparse matrix's layout is complete
            raise ValueError(f"incomplete sparse layout {self._codist!r}")
        m, n = gsize
        return int(m), int(n)

    @property
    def dtype(self) -> np.dtype:
        return (self._csr if self._split is None else self._split.diag).dtype

    @property
    def ndim(self) -> int:
        return 2

    @property
    def codistributor(self) -> codistributor1d:
        return self._codist

    @property
    def by_rows(self) -> bool:
        """True when distributed by rows (csr parts), False by columns (csc parts)."""
        return self._codist.Dimension == 1

    @property
    def partition(self) -> list:
        return partition_of(self._codist)

    def range_of(self, lab: int | None = None) -> tuple[int, int]:
        """The global rows (by rows) or columns (by columns) ``lab`` (default: this one) holds."""
        o = offsets(partition_of(self._codist))
        lab = here()[0] if lab is None else lab
        return int(o[lab - 1]), int(o[lab])

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def format(self) -> str:
        return local_format(self._codist)

    def check_labs(self, what: str) -> None:
        """Raise (on every lab alike) when the running block has another number of labs."""
        n = here()[1]
        labs = len(partition_of(self._codist))
        if labs != n:
            raise ValueError(f"{what}: the matrix is distributed over {labs} labs "
                             f"but this block runs on {n}")

    def local_nnz(self) -> int:
        if self._split is not None:
            return int(self._split.diag.nnz + self._split.off.nnz)
        return int(self._csr.nnz)
