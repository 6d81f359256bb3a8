"""Preconditioners for the Krylov solvers, each an object passed as ``M1``:

- ``jacobi(A)``: the diagonal of A;
- ``ilu(A, drop_tol, fill_factor)``: block Jacobi with an incomplete LU of each lab's
  diagonal block (PETSc's default preconditioner, PCBJACOBI with ILU on each block;
  the local factorization is SuperLU's ILUTP through ``scipy.sparse.linalg.spilu``, in
  its symmetric mode: minimum degree ordering of A + A^T and no pivoting, so that on an
  SPD matrix the factor is fit for ``pcg``; SuperLU's default column ordering and
  pivoting gave preconditioners under which CG diverged on the 2-D Laplacian);
- ``ichol(A, drop_tol, fill_factor)``: block Jacobi with an incomplete Cholesky
  ``L D L^H`` of each diagonal block (SPD when A is, so it suits ``pcg``), from the
  unpivoted incomplete LU in natural order.

A factorization failure on any lab is one error on every lab (one allgather). A
preconditioner built for A's row partition is applied to local vector parts with no
communication.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..array import getLocalPart
from ..base import CodistArray, here
from ..collectives import allgather_objects, allreduce, error_entry, raise_combined
from .array import SparseCodist
from .build import from_dense
from .exchange import split_blocks
from .matrix import SparseBase, offsets
from .move import to_rows
from .ops import diagonal
from .products import vector_local, wrap_rows

__all__ = ["Preconditioner", "PrecondSpec", "jacobi", "ilu", "ichol"]


class Preconditioner:
    """``solve_local(r, part)``: ``M \\ r`` on this lab's part ``r`` of a vector in row
    partition ``part`` (a partition other than the one it was built for costs two moves)."""

    name = "preconditioner"
    part: list

    def solve_here(self, r: np.ndarray) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def solve_local(self, r: np.ndarray, part: list, what: str) -> np.ndarray:
        if list(part) == list(self.part):
            return self.solve_here(r)
        n = int(sum(part))
        moved = vector_local(wrap_rows(r, part, n), self.part, what)
        return vector_local(wrap_rows(self.solve_here(moved), self.part, n), part, what)

    def solve_here_adjoint(self, r: np.ndarray) -> np.ndarray:
        return self.solve_here(r)  # Hermitian unless overridden

    def solve_local_adjoint(self, r: np.ndarray, part: list, what: str) -> np.ndarray:
        """``M^H \\ r`` (for bicg)."""
        if list(part) != list(self.part):
            raise ValueError(f"{what}: the preconditioner was built for another partition of the rows")
        return self.solve_here_adjoint(r)

    def __call__(self, r: Any) -> Any:
        """``M \\ r`` for a codistributed vector r."""
        n = int(sum(self.part))
        return wrap_rows(self.solve_here(vector_local(r, self.part, self.name)), self.part, n)

    def __repr__(self) -> str:
        return f"{self.name} preconditioner over {len(self.part)} labs"


def _square_rows(A: Any, what: str) -> Any:
    if not isinstance(A, (SparseBase, CodistArray)) or len(A.shape) != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{what}: A must be a square sparse or dense codistributed matrix, "
                         f"got {getattr(A, 'shape', type(A).__name__)}")
    if isinstance(A, CodistArray):
        A = from_dense(SparseCodist, A, None)
    return to_rows(A, what)


class jacobi(Preconditioner):
    """``M = diag(A)``; zeros on the diagonal are an error on every lab."""

    name = "jacobi"

    def __init__(self, A: Any) -> None:
        S = _square_rows(A, "jacobi")
        self.part = S.partition
        d = diagonal(S)
        self.d = vector_local(d, self.part, "jacobi")
        zeros = allreduce(np.asarray(int(np.count_nonzero(self.d == 0)), dtype=np.int64), "sum", "jacobi")
        if zeros:
            raise ValueError(f"jacobi: A has {int(zeros)} zeros on its diagonal; a Jacobi preconditioner "
                             "needs a nonzero diagonal")
        self.inv = 1 / self.d

    def solve_here(self, r: np.ndarray) -> np.ndarray:
        return r * self.inv

    def solve_here_adjoint(self, r: np.ndarray) -> np.ndarray:
        return r * np.conj(self.inv)


class _Block(Preconditioner):
    def _blocks(self, A: Any, what: str) -> Any:
        S = _square_rows(A, what)
        self.part = S.partition
        lab, _ = here()
        o = offsets(self.part)
        return split_blocks(getLocalPart(S), int(o[lab - 1]), int(o[lab]))[0]

    def _agree(self, error: str | None, what: str) -> None:
        raise_combined([e[0] for e in allgather_objects((error_entry(error),), what)], what)


class ilu(_Block):
    """Block Jacobi with an incomplete LU of each lab's diagonal block."""

    name = "ilu"

    def __init__(self, A: Any, drop_tol: float | None = None, fill_factor: float | None = None) -> None:
        block = self._blocks(A, "ilu")
        self.factor = None
        error = None
        if block.shape[0]:
            try:
                self.factor = spla.spilu(sp.csc_array(block), drop_tol=drop_tol, fill_factor=fill_factor,
                                         permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                         options={"SymmetricMode": True})
            except RuntimeError as exc:
                error = f"lab {here()[0]}: the incomplete LU of its diagonal block failed ({exc})"
        self._agree(error, "ilu")

    def solve_here(self, r: np.ndarray) -> np.ndarray:
        if self.factor is None:
            return r.copy()
        if np.iscomplexobj(r) and not np.iscomplexobj(self.factor.L.data):
            return self.factor.solve(r.real) + 1j * self.factor.solve(r.imag)
        return self.factor.solve(r)

    def solve_here_adjoint(self, r: np.ndarray) -> np.ndarray:
        if self.factor is None:
            return r.copy()
        if np.iscomplexobj(r) and not np.iscomplexobj(self.factor.L.data):
            return self.factor.solve(r.real, trans="T") + 1j * self.factor.solve(r.imag, trans="T")
        return self.factor.solve(r, trans="H")


class ichol(_Block):
    """Block Jacobi with an incomplete Cholesky ``L D L^H`` of each diagonal block."""

    name = "ichol"

    def __init__(self, A: Any, drop_tol: float | None = None, fill_factor: float | None = None) -> None:
        block = self._blocks(A, "ichol")
        self.L = self.D = None
        error = None
        if block.shape[0]:
            try:
                f = spla.spilu(sp.csc_array(block), drop_tol=drop_tol, fill_factor=fill_factor,
                               permc_spec="NATURAL", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
                if not (np.array_equal(f.perm_r, np.arange(block.shape[0]))
                        and np.array_equal(f.perm_c, np.arange(block.shape[0]))):
                    error = f"lab {here()[0]}: the factorization pivoted; A is not positive definite"
                else:
                    D = f.U.diagonal()
                    if np.any(D.real <= 0):
                        error = f"lab {here()[0]}: a nonpositive pivot; A is not positive definite"
                    self.L, self.D = self._triangular(f.L), D
            except RuntimeError as exc:
                error = f"lab {here()[0]}: the incomplete Cholesky of its diagonal block failed ({exc})"
        self._agree(error, "ichol")

    @staticmethod
    def _triangular(L: Any) -> Any:
        """SuperLU's factorization of the unit lower triangle itself (natural order, no
        pivoting: its L is ``L``, its U the identity), so both triangular solves,
        ``L \\ r`` and ``L^H \\ r`` (``trans='H'``), run compiled in SuperLU (three
        times faster than ``spsolve_triangular`` on a 300x300 grid's factor)."""
        return spla.splu(sp.csc_array(L), permc_spec="NATURAL", diag_pivot_thresh=0.0,
                         options={"SymmetricMode": True})

    def solve_here(self, r: np.ndarray) -> np.ndarray:
        """``L^-H D^-1 L^-1 r`` (the preconditioner stays Hermitian, as pcg needs)."""
        if self.L is None or self.D is None:  # both set together, or neither (no rows here)
            return r.copy()
        if np.iscomplexobj(r) and not np.iscomplexobj(self.D):
            return self.solve_here(r.real) + 1j * self.solve_here(r.imag)
        return self.L.solve(self.L.solve(r) / self.D, trans="H")


class PrecondSpec:
    """A preconditioner to make on the labs from the solver's A: what ``jacobi(D)``,
    ``ilu(D)`` and ``ichol(D)`` give at the client for a ``distributed`` D (a factorization
    lives on the labs; the client never holds one). ``source`` names D's storage, so a
    solver given another matrix refuses it."""

    def __init__(self, kind: str, source: Any, args: tuple, kwargs: dict) -> None:
        self.kind, self.source, self.args, self.kwargs = kind, source, args, kwargs

    def build_for(self, A: Any) -> Preconditioner:
        return {"jacobi": jacobi, "ilu": ilu, "ichol": ichol}[self.kind](A, *self.args, **self.kwargs)

    def __repr__(self) -> str:
        return f"{self.kind}(A) (made on the labs from the solver's A)"
