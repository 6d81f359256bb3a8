"""``distributedSparse``: the client's handle to a sparse matrix whose parts live on the
labs (issue 25), a ``distributed`` whose lab values are sparse codistributed matrices.

``distributed(S)`` of a scipy.sparse matrix scatters it (each lab receives only its
rows or columns, cut when its message is pickled); a block that assigns a sparse
codistributed matrix on every lab gives one back; ``distributed.speye/sprand/sprandn/
spdiags`` build one on the labs. Operators and methods run on the labs as for dense
``distributed`` arrays; ``gather(S)`` returns the scipy.sparse matrix; the display
shows the size, the number of nonzeros, the density and each lab's nonzeros.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..arrays.base import complete, sparse_package
from ..arrays.calls import nnz_per_lab
from ..arrays.transfer import gather
from ..layouts.codistributor import codistributor1d
from ..protocol.messages import Set
from .distributed import _run, distributed, register_input
from .execute import register_handle
from .pool import gcp

__all__ = ["distributedSparse", "is_sparse_input", "type_default"]


class _SendSparse:
    """One lab's rows (columns) of a client scipy.sparse matrix, cut when pickled."""

    __slots__ = ("S", "codist", "lo", "hi")

    def __init__(self, S: Any, codist: Any, lo: int, hi: int) -> None:
        self.S, self.codist, self.lo, self.hi = S, codist, lo, hi

    def __reduce_ex__(self, protocol: Any) -> tuple:
        part = self.S[self.lo:self.hi] if self.codist.Dimension == 1 else self.S[:, self.lo:self.hi]
        return (sparse_package().from_local, (part, self.codist))


class distributedSparse(distributed):
    """A client handle to a sparse matrix distributed over the labs by rows or columns."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass  # made by distributed(S) (scatter) or from_labs

    @classmethod
    def from_labs(cls, pool: Any, key: int, summary: Any) -> distributedSparse:
        """The handle for a sparse codistributed matrix stored under ``key`` on the labs."""
        return cls._from_labs(pool, key, summary)

    @classmethod
    def scatter(cls, S: Any, codist: Any = None, pool: Any = None) -> distributedSparse:
        import scipy.sparse as sp  # S is one: scipy is loaded

        pkg = sparse_package()
        pool = pool if pool is not None else gcp()
        pool.ensure_running()
        n = pool.numlabs
        if S.ndim != 2:
            raise ValueError(f"distributed(S): sparse matrices are 2-D, got {S.ndim}-D")
        error = pkg.layout_error(codist, "distributed(S)")
        if error:
            raise ValueError(error)
        base = codist if codist is not None and codist.Dimension is not None else \
            type_default(codist)
        target = complete(base, S.shape, n)
        if not isinstance(target, codistributor1d):  # layout_error let only a codistributor1d by
            raise TypeError(f"distributed(S): sparse layouts are codistributor1d, got {target!r}")
        S = sp.csr_array(S) if target.Dimension == 1 else sp.csc_array(S)
        o = np.concatenate(([0], np.cumsum(np.asarray(target.Partition, dtype=np.int64))))
        pool.flush_frees()
        key = pool.new_key()
        messages = {lab: Set(key, _SendSparse(S, target, int(o[lab - 1]), int(o[lab]))) for lab in range(1, n + 1)}
        try:
            pool.request_many(messages)
        except BaseException:
            pool.free_later(key, pool.generation)
            raise
        self = cls.__new__(cls)
        self._bind(pool, key, S.shape, S.dtype, target)
        return self

    def _spmdlab_gather(self) -> Any:
        """The whole matrix as a scipy.sparse array (csr by rows, csc by columns)."""
        self._live_pool()
        return _run(gather, (self,), pool=self._pool)

    def gather(self) -> Any:
        return self._spmdlab_gather()

    def __repr__(self) -> str:
        m, n = self._shape
        head = (f"sparse distributed matrix, {m}x{n} {self._dtype}, by "
                f"{'rows' if self._codist.Dimension == 1 else 'columns'} on {self._nlabs} labs")
        if self._pool.state != "idle" or self._pool.generation != self._generation:
            return head
        try:
            counts = _run(nnz_per_lab, (self,), pool=self._pool)
        except Exception:  # a display must not fail
            return head
        total = sum(counts)
        density = total / (m * n) if m * n else 0.0
        return f"{head}\n  nnz {total} (density {density:.3g}), per lab {counts}"

    def _repr_html_(self) -> str:
        return "<pre>" + self.__repr__().replace("&", "&amp;").replace("<", "&lt;") + "</pre>"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("a sparse distributed matrix cannot become a numpy array silently; use gather(S) "
                        "(a scipy.sparse matrix)")


def type_default(codist: Any) -> Any:
    """MATLAB's default layout for a matrix: by columns (keeping a given partition)."""
    return codistributor1d(2, None if codist is None else codist.Partition,
                           None if codist is None else codist.GlobalSize)


def is_sparse_input(X: Any) -> bool:
    module = sys.modules.get("scipy.sparse")
    return module is not None and bool(module.issparse(X))


register_input(is_sparse_input, distributedSparse.scatter)  # distributed(S) of a scipy.sparse S
register_handle("sparse", distributedSparse.from_labs)  # a block's sparse codistributed results
