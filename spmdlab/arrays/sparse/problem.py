"""What every Krylov solver shares: the operator, the preconditioner, the right-hand
side and the first guess as this lab's parts of vectors in one row partition, and the
fused reductions.

The solvers work on local numpy parts (no wrapper objects in the loop): ``A`` is a sparse
codistributed matrix (moved to rows once, cached), a dense codistributed matrix, or a
function ``afun(x)`` of a codistributed vector (MATLAB's function handle); ``M1``/``M2``
a preconditioner object (``jacobi``, ``ilu``, ``ichol``), a function, or a matrix that is
block diagonal over the labs. ``dots`` sums every lab's partial dot products of one
point of the algorithm in ONE allreduce.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.linalg.blas import get_blas_funcs

from ...layouts.codistributor import codistributor1d
from ..array import codistributed, getLocalPart
from ..base import CodistArray, here
from ..collectives import allgather_objects, allreduce, error_entry, raise_combined
from .exchange import split_blocks
from .matrix import SparseBase, offsets
from .move import to_rows
from .ops import transpose
from .products import matvec_local, vector_local, wrap_rows

__all__ = ["Problem", "setup", "finish", "dots", "nonfinite", "axpy", "EPS"]

EPS = float(np.finfo(np.float64).eps)


def dots(values: list, what: str) -> np.ndarray:
    """Every lab's partial sums (dot products, counts) of one point, summed in one allreduce."""
    kind = complex if any(isinstance(v, complex) or np.iscomplexobj(v) for v in values) else float
    return allreduce(np.array(values, dtype=np.complex128 if kind is complex else np.float64), "sum", what)


def axpy(a: Any, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``y += a * x`` in place, in one pass (BLAS ``?axpy``) where x and y are contiguous
    vectors of one BLAS type; numpy's two passes otherwise. Returns y."""
    if y.size == 0:
        return y
    if x.dtype == y.dtype and x.dtype.char in "fdFD" and x.ndim == y.ndim == 1 \
            and x.flags.c_contiguous and y.flags.c_contiguous and (np.iscomplexobj(y) or not np.iscomplexobj(a)):
        out = get_blas_funcs("axpy", (x, y))(x, y, a=a)
        if out is y:
            return y
        y[...] = out  # (f2py gave a copy: not expected for contiguous vectors)
        return y
    y += a * x
    return y


def nonfinite(x: np.ndarray) -> int:
    return int(x.size - np.count_nonzero(np.isfinite(x)))


def setup(A: Any, b: Any, tol: Any, maxit: Any, M1: Any, M2: Any, x0: Any, what: str,
          **kw: Any) -> tuple[Problem, float, int, float]:
    """Every solver's first steps with MATLAB's defaults: ``(P, tol, maxit, norm(b))``,
    tol 1e-6 and maxit ``min(n, 20)`` when not given, A, b and x0 checked for NaN/Inf."""
    P = Problem(A, b, x0, M1, M2, what, **kw)
    tol = 1e-6 if tol is None else float(tol)
    maxit = min(P.n, 20) if maxit is None else int(maxit)
    return P, tol, maxit, P.start()


def finish(P: Problem, x: np.ndarray, flag: int, iters: Any, normr_act: float, n2b: float,
           xmin: np.ndarray | None, imin: Any, resvec: list) -> tuple:
    """MATLAB's ending: on failure, the best iterate when its true residual is smaller."""
    relres = normr_act / n2b
    if flag != 0 and xmin is not None:
        rmin = P.true_residual(xmin)
        if rmin <= normr_act:
            x, iters, relres = xmin, imin, rmin / n2b
    return P.wrap(x), flag, float(relres), iters, np.array(resvec, dtype=np.float64)


class Problem:
    """``A x = b`` with preconditioner ``M = M1 M2`` as local parts in A's row partition."""

    def __init__(self, A: Any, b: Any, x0: Any, M1: Any, M2: Any, what: str, square: bool = True,
                 need_adjoint: bool = False) -> None:
        self.what = what
        self.A = A
        _, nl = here()
        if isinstance(A, SparseBase):
            A.check_labs(what)
        shape: tuple[int, int] | None = None  # A's; a function's is b's (square)
        if isinstance(A, SparseBase) or isinstance(A, CodistArray):
            if len(A.shape) != 2:
                raise ValueError(f"{what}: A must be a matrix, got shape {A.shape}")
            shape = (int(A.shape[0]), int(A.shape[1]))
            if square and shape[0] != shape[1]:
                raise ValueError(f"{what}: A must be square, got {shape[0]}x{shape[1]}"
                                 + (" (use lsqr for rectangular systems)" if what != "lsqr" else ""))
        elif not callable(A):
            raise TypeError(f"{what}: A must be a sparse or dense codistributed matrix or a function "
                            f"afun(x); got {type(A).__name__}")
        bshape = getattr(b, "shape", None)
        if bshape is None:
            b = np.asarray(b)
            bshape = b.shape
        if len(bshape) != 1 and not (len(bshape) == 2 and bshape[1] == 1):
            raise ValueError(f"{what}: b must be a vector, got shape {tuple(bshape)}")
        m, n = shape if shape is not None else (int(bshape[0]), int(bshape[0]))
        if bshape[0] != m:
            raise ValueError(f"{what}: A is {m}x{n} but b has {bshape[0]} entries")
        self.m, self.n = m, n
        if isinstance(A, SparseBase):
            self.S = to_rows(A, what)
            self.part = self.S.partition
            self.cpart = self.part if m == n else codistributor1d.defaultPartition(n, nl)
            self.ST = to_rows(transpose(self.S, conjugate=True), what, self.cpart) if need_adjoint else None
        else:
            self.S = None
            self.part = codistributor1d.defaultPartition(self.m, nl)
            self.cpart = self.part if m == n else codistributor1d.defaultPartition(self.n, nl)
        self.off, self.coff = offsets(self.part), offsets(self.cpart)
        if len(bshape) == 2:
            b = b[:, 0] if isinstance(b, codistributed) else b.reshape(-1)
        self.b = np.ascontiguousarray(vector_local(b, self.part, what))
        dtype = np.result_type(self.b.dtype, A.dtype if hasattr(A, "dtype") else self.b.dtype, np.float32)
        self.dtype = dtype
        self.b = self.b.astype(dtype, copy=False)
        self.x = (np.zeros(self.coff[here()[0]] - self.coff[here()[0] - 1], dtype) if x0 is None
                  else np.array(vector_local(x0, self.cpart, what), dtype=dtype))
        self.M = [self._precond(M, k) for k, M in ((1, M1), (2, M2)) if M is not None]

    # ---- applying A, A^H and M ----------------------------------------------------------
    def matvec(self, xloc: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if self.S is not None:
            return matvec_local(self.S, xloc, self.coff, self.what, out)
        y = self.apply(self.A, xloc, self.cpart, self.part, "notransp")
        if out is not None:
            out[...] = y
            return out
        return y

    def rmatvec(self, yloc: np.ndarray) -> np.ndarray:
        """``A^H y`` (for bicg, lsqr)."""
        if self.ST is not None:
            return matvec_local(self.ST, yloc, self.off, self.what)
        if self.S is not None:  # a solver that needs A^H asks for it (need_adjoint)
            raise RuntimeError(f"{self.what}: A^H was not prepared (Problem(..., need_adjoint=True))")
        if callable(self.A) and not isinstance(self.A, CodistArray):
            return self.apply(self.A, yloc, self.part, self.cpart, "transp")
        return self.apply(lambda v: self.A.conj().T @ v, yloc, self.part, self.cpart, None)

    def apply(self, f: Callable, xloc: np.ndarray, pin: list, pout: list, flag: str | None) -> np.ndarray:
        """``f`` (an operator: a codistributed matrix or a function, with MATLAB's
        ``'notransp'``/``'transp'`` flag) applied to a local vector part laid out by ``pin``;
        the result's part laid out by ``pout`` (a copy, never the input)."""
        xd = wrap_rows(xloc, pin, int(sum(pin)))
        if isinstance(f, CodistArray):
            y = f @ xd
        else:
            y = f(xd, flag) if flag == "transp" or (flag and _takes_flag(f)) else f(xd)
        return np.array(vector_local(y, pout, self.what), dtype=self.dtype)  # a copy: never the input

    def _precond(self, M: Any, k: int) -> Callable:
        if hasattr(M, "build_for"):  # made at the client: built here from A (precond.PrecondSpec)
            M = M.build_for(self.A)
        if hasattr(M, "solve_local"):
            return lambda r: M.solve_local(r, self.part, self.what)
        if isinstance(M, (SparseBase, CodistArray)):
            return BlockSolve(M, self.part, f"{self.what}: M{k}").solve
        if callable(M):
            return lambda r: self.apply(M, r, self.part, self.part, None)
        raise TypeError(f"{self.what}: M{k} must be a preconditioner (jacobi(A), ilu(A), ichol(A)), a function "
                        f"or a matrix; got {type(M).__name__}")

    def psolve(self, r: np.ndarray) -> np.ndarray:
        """``M2 \\ (M1 \\ r)`` (r itself without a preconditioner)."""
        for solve in self.M:
            r = solve(r)
        return r

    # ---- checks and results -------------------------------------------------------------
    def local_nonfinite(self) -> int:
        bad = nonfinite(self.b) + nonfinite(self.x)
        if self.S is not None:
            bad += nonfinite(np.asarray(getLocalPart(self.S).data))  # (the scipy.sparse part's entries)
        elif isinstance(self.A, codistributed):
            bad += nonfinite(np.asarray(getLocalPart(self.A)))
        return bad

    def start(self) -> float:
        """``norm(b)``, after checking A, b and x0 for NaN/Inf on every lab (one allreduce)."""
        s = dots([np.vdot(self.b, self.b).real, float(self.local_nonfinite())], self.what)
        if s[1].real:
            raise ValueError(f"{self.what}: A, b or x0 has NaN or Inf entries ({int(s[1].real)} of them)")
        return float(np.sqrt(s[0].real))

    def wrap(self, xloc: np.ndarray) -> Any:
        return wrap_rows(xloc, self.cpart, self.n)

    def norm(self, v: np.ndarray) -> float:
        return float(np.sqrt(dots([np.vdot(v, v).real], self.what)[0].real))

    def true_residual(self, x: np.ndarray) -> float:
        """``norm(b - A x)``, computed afresh (MATLAB's check before it reports convergence)."""
        return self.norm(self.b - self.matvec(x))

    def no_work(self, iters: Any = 0) -> tuple:
        """The answer for ``b = 0``: x = 0, converged in no iterations."""
        return self.wrap(np.zeros_like(self.x)), 0, 0.0, iters, np.zeros(1)


def _takes_flag(f: Callable) -> bool:
    try:
        return len(inspect.signature(f).parameters) >= 2
    except (TypeError, ValueError):
        return False


class BlockSolve:
    """``M \\ r`` for a matrix M that is block diagonal over the labs (each lab's rows
    touch only its own columns): each lab factors its diagonal block once (splu)."""

    def __init__(self, M: Any, part: list, what: str) -> None:
        lab, _ = here()
        o = offsets(part)
        lo, hi = int(o[lab - 1]), int(o[lab])
        if isinstance(M, SparseBase):
            local = getLocalPart(to_rows(M, what)) if list(to_rows(M, what).partition) == list(part) else None
        else:
            local = sp.csr_array(vector_local(M, part, what))
        error = None
        self.lu = None
        if local is None:
            error = "M's rows are partitioned differently from A's"
        else:
            diag, off, _ = split_blocks(local, lo, hi)
            if off.nnz:
                error = (f"lab {lab}: M has entries outside its diagonal block; a general M needs a "
                         "distributed direct solve: pass ilu(M), jacobi(M) or a function instead")
            elif hi > lo:
                try:
                    self.lu = spla.splu(sp.csc_array(diag))
                except RuntimeError as exc:
                    error = f"lab {lab}: M's diagonal block is singular ({exc})"
        raise_combined([e[0] for e in allgather_objects((error_entry(error),), what)], what)

    def solve(self, r: np.ndarray) -> np.ndarray:
        return self.lu.solve(r) if self.lu is not None else r.copy()

    def solve_adjoint(self, r: np.ndarray) -> np.ndarray:
        return self.lu.solve(r, trans="H") if self.lu is not None else r.copy()
