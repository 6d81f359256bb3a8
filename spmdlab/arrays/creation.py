"""Making codistributed arrays: from a replicated array (``codistributed(X)``), from local
parts (``codistributed.build``), and from sizes (``zeros ones eye rand randn randi inf nan
true false colon linspace``).

The constructors from sizes take MATLAB's argument forms (``zeros(n)`` is n-by-n, a tuple
is the shape as given, a trailing codistributor and dtype in any order). Each lab makes
only its own part, without communication; random constructors draw a stream per lab
(lab k uses ``SeedSequence(seed, spawn_key=(k-1,))``).
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Optional, Sequence, Tuple, Type, TypeVar

import numpy as np

from ..layouts.codistributor import Codistributor, codistributor1d, codistributor2dbc
from ..layouts.regions import sel_len, take
from .base import (
    CODISTRIBUTORS,
    GRID_HOOKS,
    Chunks,
    CodistArray,
    check_codist_arg,
    check_dtype,
    check_mode,
    complete,
    here,
    is_plain,
    is_scipy_sparse,
    on_subgrid_args,
    sparse_error,
    sparse_package,
)
from .collectives import allgather_objects, check_agree, check_same_codist, error_entry, raise_combined
from .fromlab import from_lab as from_lab_local
from .fromlab import is_lab_number
from .reshard import reshard
from .transfer import redistribute

__all__ = ["CodistConstructors"]

A = TypeVar("A", bound="CodistConstructors")


# --------------------------------------------------------------------------- argument parsing
def _size_value(x: Any, what: str) -> int:
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{what}: sizes must be whole numbers, got {x!r}")
    if isinstance(x, numbers.Integral):
        v = int(x)
    elif isinstance(x, numbers.Real) and float(x).is_integer():
        v = int(x)  # MATLAB sizes are doubles: 1e6 is fine
    else:
        raise TypeError(f"{what}: sizes must be whole numbers, got {x!r}")
    if v < 0:
        raise ValueError(f"{what}: sizes must be >= 0, got {v}")
    return v


def _is_dtype_like(x: Any) -> bool:
    if isinstance(x, (np.dtype, type)):
        return True
    if isinstance(x, str):
        try:
            np.dtype(x)
            return True
        except TypeError:
            return False
    return False


def _is_size_like(x: Any) -> bool:
    return isinstance(x, (numbers.Real, tuple, list, np.ndarray)) and not isinstance(x, (bool, np.bool_))


def _parse(args: tuple, codist: Any, dtype: Any, what: str, square: bool = True):
    """MATLAB-style ``(m, n, ..., [codist], [dtype/'noCommunication'])`` or
    ``((m, n, ...), [codist], ...)`` -> ``(shape, codist, dtype)``.

    One whole number n means n-by-n, as MATLAB's ``zeros(n)``; a tuple is the shape
    as given (so ``(n,)`` makes a 1-D array); no size means 1-by-1.
    """
    args = list(args)
    while args and not _is_size_like(args[-1]):
        tail = args.pop()
        if isinstance(tail, CODISTRIBUTORS):
            if codist is not None:
                raise TypeError(f"{what}: the codistributor was given twice")
            codist = tail
        elif isinstance(tail, str) and tail.lower() == "nocommunication":
            pass  # constructors never communicate anyway
        elif _is_dtype_like(tail):
            if dtype is not None:
                raise TypeError(f"{what}: the dtype was given twice")
            dtype = tail
        else:
            raise TypeError(f"{what}: unexpected argument {tail!r} (expected sizes, then "
                            "optionally a codistributor and a dtype)")
    check_codist_arg(codist, what)
    if len(args) == 1 and isinstance(args[0], (tuple, list, np.ndarray)):
        shape = tuple(_size_value(s, what) for s in np.asarray(args[0]).reshape(-1).tolist()) \
            if not isinstance(args[0], (tuple, list)) else tuple(_size_value(s, what) for s in args[0])
    elif any(isinstance(a, (tuple, list, np.ndarray)) for a in args):
        raise TypeError(f"{what}: give the size as whole numbers (m, n, ...) or one tuple, not a mix")
    elif len(args) == 0:
        shape = (1, 1)
    elif len(args) == 1 and square:
        n = _size_value(args[0], what)
        shape = (n, n)
    else:
        shape = tuple(_size_value(a, what) for a in args)
    if len(shape) == 0:
        raise ValueError(f"{what}: a codistributed array needs at least one dimension")
    if dtype is not None:
        try:
            dtype = np.dtype(dtype)
        except TypeError as exc:
            raise TypeError(f"{what}: invalid dtype {dtype!r}: {exc}") from None
        error = check_dtype(dtype)
        if error:
            raise TypeError(f"{what}: {error}")
    return shape, codist, dtype


def _infer_gsize(codist: Codistributor, shapes: list, n: int, what: str) -> Tuple[int, ...]:
    """The global size implied by the local parts' shapes for an incomplete codistributor."""
    ndim = len(shapes[0])
    if isinstance(codist, codistributor1d):
        dim = codist.Dimension
        if dim is None:
            pending = codist._pending_axis
            dim = (pending % ndim + 1) if (pending is not None and ndim) else ndim
        if ndim == 0 or dim > ndim:
            raise ValueError(f"{what}: cannot distribute {ndim}-D local parts along dimension {dim}")
        others = {s[:dim - 1] + s[dim:] for s in shapes}
        if len(others) > 1:
            detail = ", ".join(f"lab {k + 1}: {s}" for k, s in enumerate(shapes))
            raise ValueError(f"{what}: local parts distributed along dimension {dim} must agree "
                             f"in the other dimensions; got {detail}")
        g = list(shapes[0])
        g[dim - 1] = sum(s[dim - 1] for s in shapes)
        return tuple(g)
    if ndim != 2:
        raise ValueError(f"{what}: codistributor2dbc distributes 2-D arrays; the local parts are {ndim}-D")
    grid = codist.LabGrid or codistributor2dbc.defaultLabGrid(n)
    if grid[0] * grid[1] != n:
        raise ValueError(f"{what}: labgrid {grid} holds {grid[0] * grid[1]} labs but there are {n} labs")
    probe = codistributor2dbc(grid, codist.BlockSize, codist.Orientation, (1, 1))
    # Labs in grid column 0 hold every row once; labs in grid row 0 hold every column once.
    rows = sum(shapes[lab - 1][0] for lab in range(1, n + 1) if probe.gridCoords(lab, n)[1] == 0)
    cols = sum(shapes[lab - 1][1] for lab in range(1, n + 1) if probe.gridCoords(lab, n)[0] == 0)
    return (rows, cols)


def _on_grid(shape: tuple, dtype: Any, codist: Any, make: Any) -> Any:
    """A constructor's array on a process grid of some labs (``subgrid``): built on the
    grid's labs alone by ``make(the layout of the grid's labs)``, nothing elsewhere; None
    for any other layout (the constructor goes on)."""
    if GRID_HOOKS and GRID_HOOKS["on_some_labs"](codist, here()[1]):
        return GRID_HOOKS["construct"](shape, dtype, codist, make)
    return None


# --------------------------------------------------------------------------- the constructors
class CodistConstructors(CodistArray):
    """How ``codistributed`` arrays are made: ``__init__``, ``build`` and the classmethods
    from sizes (a base of ``codistributed``)."""

    def __new__(cls, X: Any = None, *args: Any, **kwargs: Any) -> Any:
        if is_scipy_sparse(X):  # a sparse codistributed matrix (codist/sparse), not this class
            return sparse_package().from_scipy(X, *args, **kwargs)
        codist = args[0] if args else kwargs.get("codist")
        if GRID_HOOKS and GRID_HOOKS["on_some_labs"](codist, here()[1]):  # an array on some labs (subgrid)
            return GRID_HOOKS["redistribute" if isinstance(X, CodistArray) or on_subgrid_args((X,), {})
                              else "distribute"](X, codist)
        return super().__new__(cls)

    # MATLAB's sparse constructors, in the sparse package (loaded on first use: scipy)
    @staticmethod
    def speye(*args: Any, **kwargs: Any) -> Any:
        """``codistributed.speye(m, n, codist)``: a sparse codistributed identity."""
        return sparse_package().speye(*args, **kwargs)

    @staticmethod
    def sprand(*args: Any, **kwargs: Any) -> Any:
        """``codistributed.sprand(m, n, density, codist, seed=)``: sparse, uniform values."""
        return sparse_package().sprand(*args, **kwargs)

    @staticmethod
    def sprandn(*args: Any, **kwargs: Any) -> Any:
        """``codistributed.sprandn(m, n, density, codist, seed=)``: sparse, normal values."""
        return sparse_package().sprandn(*args, **kwargs)

    @staticmethod
    def spdiags(*args: Any, **kwargs: Any) -> Any:
        """``codistributed.spdiags(B, d, m, n, codist)``: MATLAB's spdiags, sparse codistributed."""
        return sparse_package().spdiags(*args, **kwargs)

    def __init__(self, X: Any, codist: Any = None, codist_after_lab: Optional[Codistributor] = None, *,
                 noCommunication: bool = False, from_lab: Optional[int] = None) -> None:
        if is_lab_number(codist) or from_lab is not None:  # MATLAB's codistributed(X, lab, codist)
            self._from_holder(X, codist, codist_after_lab, from_lab, noCommunication)
            return
        what = "codistributed(X)"
        if codist_after_lab is not None:
            raise TypeError(f"{what}: a third argument is MATLAB's codistributed(X, lab, codist): "
                            f"the second must then be a lab number, got {type(codist).__name__}")
        check_codist_arg(codist, what)
        if isinstance(X, CodistArray):
            source = redistribute(X, codist) if codist is not None else X.copy()
            self._local, self._codist = source._local, source._codist
            if source._mode != "replica":
                self._mode = source._mode
            return
        lab, n = here()
        error = sparse_error(X)
        kind = "TypeError" if error else "ValueError"
        if X is None:
            error = ("X is None on this lab, but codistributed(X, codist) needs X on every lab; to distribute an "
                     "array that only lab k holds, use codistributed(X, codist, from_lab=k) (MATLAB: "
                     "codistributed(X, k, codist))")
            X = np.empty(0)
        if error is None:
            X = np.asarray(X)
            error = check_dtype(X.dtype)
        target = None
        if error is None:
            try:
                target = complete(codist, X.shape, n)
            except (ValueError, TypeError) as exc:
                error = str(exc)
        if not noCommunication and n > 1:
            infos = allgather_objects((X.shape, X.dtype.str, error_entry(error, kind), target), what)
            raise_combined([i[2] for i in infos], what)
            shapes = {(i[0], i[1]) for i in infos}
            if len(shapes) > 1:
                detail = ", ".join(f"lab {k + 1}: {i[0]} {np.dtype(i[1])}" for k, i in enumerate(infos))
                raise ValueError(f"{what}: X must be the same array on every lab (replicated), "
                                 f"but its size or dtype differs: {detail}")
            check_same_codist([i[3] for i in infos], what)
        elif error is not None:
            raise (TypeError if kind == "TypeError" else ValueError)(f"{what}: {error}")
        self._codist = target
        if not is_plain(target):
            parts = [np.array(take(X, sel), copy=True) for sel in target.chunkSelections(lab, n)]
            self._local = Chunks(parts, X.dtype) if target.isChunked(n) else parts[0]
            return
        part = np.ascontiguousarray(take(X, target.localSelection(lab, n)))
        self._local = part.copy() if np.may_share_memory(part, X) else part

    def _from_holder(self, X: Any, lab_or_codist: Any, codist: Any, from_lab: Any, noCommunication: bool) -> None:
        """``codistributed(X, lab, codist)`` / ``codistributed(X, codist, from_lab=lab)``."""
        if from_lab is not None:
            what = "codistributed(X, codist, from_lab=)"
            if codist is not None:
                raise TypeError(f"{what}: give the lab once, as from_lab= or as MATLAB's codistributed(X, lab, codist)")
            lab, codist = from_lab, lab_or_codist
        else:
            what, lab = "codistributed(X, lab, codist)", lab_or_codist
        check_codist_arg(codist, what)
        if noCommunication:
            raise ValueError(f"{what}: 'noCommunication' cannot be used when one lab holds X: the others learn "
                             "its size from it")
        self._local, self._codist = from_lab_local(X, lab, codist, what)

    @classmethod
    def build(cls: Type[A], L: Any, codist: Optional[Codistributor] = None, flag: Optional[str] = None, *,
              noCommunication: bool = False, mode: str = "replica") -> A:
        """Assemble a codistributed array from each lab's local part ``L``.

        ``codist`` should be complete (GlobalSize set); otherwise the global size is
        inferred from the local parts (1-D: along ``Dimension``, default the last one;
        2dbc: from the grid). Local sizes and dtypes are checked across labs with one
        collective; a mismatch raises the same ``ValueError`` on every lab.
        ``build(L, codist, 'noCommunication')`` (MATLAB's spelling of
        ``noCommunication=True``) skips that collective: ``codist`` must then be complete,
        and each lab checks only its own part.
        """
        what = "codistributed.build"
        check_codist_arg(codist, what)
        check_mode(mode, what)
        if is_scipy_sparse(L) and (codist is None or is_plain(codist)) and mode == "replica":
            return sparse_package().build_local(L, codist)
        if flag is not None:
            if not (isinstance(flag, str) and flag.lower() == "nocommunication"):
                raise ValueError(f"{what}: the third argument can only be 'noCommunication' (MATLAB's flag); "
                                 f"got {flag!r}")
            noCommunication = True
        if noCommunication and (codist is None or codist.GlobalSize is None):
            raise ValueError(f"{what}: 'noCommunication' needs a complete codistributor (with its global size), "
                             "as in MATLAB: without asking the other labs the global size is unknown")
        lab, n = here()
        if (codist is not None and not is_plain(codist)) or mode != "replica":
            return cls._build_chunks(L, codist, mode, noCommunication, what)
        error = sparse_error(L)
        kind = "TypeError" if error else "ValueError"
        if error is None:
            L = np.asarray(L)
            error = check_dtype(L.dtype)
        if noCommunication:
            infos = [(L.shape, L.dtype.str, None)] * n  # only this lab's own entry is known
            if error is not None:
                raise (TypeError if kind == "TypeError" else ValueError)(f"{what}: {error}")
        else:
            infos = allgather_objects((L.shape, L.dtype.str, error_entry(error, kind), codist), what)
            raise_combined([i[2] for i in infos], what)
            check_same_codist([i[3] for i in infos], what)
        shapes = [tuple(i[0]) for i in infos]
        dtypes = [np.dtype(i[1]) for i in infos]
        if len(set(dtypes)) > 1:
            detail = ", ".join(f"lab {k + 1}: {d}" for k, d in enumerate(dtypes))
            raise ValueError(f"{what}: the local parts must have the same dtype on every lab; got {detail}")
        if len({len(s) for s in shapes}) > 1:
            detail = ", ".join(f"lab {k + 1}: {s}" for k, s in enumerate(shapes))
            raise ValueError(f"{what}: the local parts must have the same number of dimensions "
                             f"on every lab; got {detail}")
        if codist is None:
            codist = codistributor1d(len(shapes[0]) if shapes[0] else None)
        if codist.GlobalSize is None:
            gsize = _infer_gsize(codist, shapes, n, what)
            codist = complete(codist, gsize, n)
        else:
            codist = complete(codist, codist.GlobalSize, n)
        labs = [lab] if noCommunication else range(1, n + 1)
        bad = [(k, shapes[k - 1], codist.localShape(k, n)) for k in labs if shapes[k - 1] != codist.localShape(k, n)]
        if bad:
            detail = "; ".join(f"lab {k} has {got}, expected {want}" for k, got, want in bad[:6])
            if len(bad) > 6:
                detail += f"; ... ({len(bad)} labs)"
            raise ValueError(f"{what}: the local part sizes do not match the codistributor "
                             f"{codist!r}: {detail}")
        return cls._from_local(L, codist)

    @classmethod
    def _build_chunks(cls: Type[A], L: Any, codist: Any, mode: str, noCommunication: bool, what: str) -> A:
        """``build`` for the extended layouts and for modes: ``L`` is the lab's list of
        chunks for a chunked layout, else its one array (halo cells included)."""
        lab, n = here()
        error = None
        kind = "ValueError"
        parts: list = []
        target = None
        if codist is None or codist.GlobalSize is None:
            error = "the layouts with halos, blocks or chunk maps need a complete codistributor (gsize set)"
        else:
            try:
                target = complete(codist, codist.GlobalSize, n)
            except (ValueError, TypeError) as exc:
                error = str(exc)
        if error is None:
            chunked = target.isChunked(n)
            if chunked and not isinstance(L, (list, tuple)):
                error = (f"lab {lab}: in this layout the local part is a list of chunks "
                         f"({len(target.chunkSelections(lab, n))} here), got {type(L).__name__}")
            elif sparse := next(filter(None, map(sparse_error, L if chunked else [L])), None):
                error, kind = sparse, "TypeError"
            else:
                parts = [np.asarray(x) for x in L] if chunked else [np.asarray(L)]
                want = [tuple(sel_len(x) for x in sel) for sel in target.chunkSelections(lab, n)]
                got = [x.shape for x in parts]
                if got != want:
                    error = f"lab {lab} has local part(s) of shape {got}, expected {want}"
                elif len({x.dtype for x in parts}) > 1:
                    error = f"lab {lab}: its chunks have different dtypes {[str(x.dtype) for x in parts]}"
                elif parts and check_dtype(parts[0].dtype):
                    error = check_dtype(parts[0].dtype)
        dtype = parts[0].dtype.str if parts else None
        if noCommunication:
            if error is not None:
                raise (TypeError if kind == "TypeError" else ValueError)(f"{what}: {error}")
            infos = [(dtype, None)] * n
        else:
            infos = allgather_objects((dtype, error_entry(error, kind), codist), what)
            raise_combined([i[1] for i in infos], what)
            check_same_codist([i[2] for i in infos], what)
        dtypes = {i[0] for i in infos if i[0] is not None}
        if len(dtypes) > 1:
            detail = ", ".join(f"lab {k + 1}: {np.dtype(i[0])}" for k, i in enumerate(infos) if i[0] is not None)
            raise ValueError(f"{what}: the local parts must have the same dtype on every lab; got {detail}")
        dt = np.dtype(dtypes.pop()) if dtypes else np.dtype(float)
        local: Any = Chunks([x.astype(dt, copy=False) for x in parts], dt) if target.isChunked(n) else parts[0]
        return cls._from_local(local, target, mode)

    @classmethod
    def _filled(cls: Type[A], what: str, args: tuple, codist, dtype, fill, default=np.float64,
                allowed: str = "") -> A:
        shape, codist, dtype = _parse(args, codist, dtype, what)
        dtype = np.dtype(default) if dtype is None else dtype
        if allowed and dtype.kind not in allowed:
            raise TypeError(f"{what}: dtype {dtype} is not allowed here")
        made = _on_grid(shape, dtype, codist, lambda c: cls._filled(what, (shape,), c, dtype, fill, default, allowed))
        if made is not None:
            return made
        lab, n = here()
        codist = complete(codist, shape, n)
        check_agree(what, shape, dtype, codist)
        if not is_plain(codist):
            parts = [np.full(tuple(sel_len(x) for x in sel), fill, dtype=dtype)
                     for sel in codist.chunkSelections(lab, n)]
            return cls._from_local(Chunks(parts, dtype) if codist.isChunked(n) else parts[0], codist)
        return cls._from_local(np.full(codist.localShape(lab, n), fill, dtype=dtype), codist)

    @classmethod
    def zeros(cls: Type[A], *args: Any, codist: Any = None, dtype: Any = None) -> A:
        """``codistributed.zeros(m, n, ..., codist, dtype=)``: all zeros (float64 default)."""
        return cls._filled("codistributed.zeros", args, codist, dtype, 0)

    @classmethod
    def ones(cls: Type[A], *args: Any, codist: Any = None, dtype: Any = None) -> A:
        """``codistributed.ones(m, n, ..., codist, dtype=)``: all ones."""
        return cls._filled("codistributed.ones", args, codist, dtype, 1)

    @classmethod
    def inf(cls: Type[A], *args: Any, codist: Any = None, dtype: Any = None) -> A:
        """``codistributed.inf(m, n, ..., codist)``: all ``inf`` (a float or complex dtype)."""
        return cls._filled("codistributed.inf", args, codist, dtype, np.inf, allowed="fc")

    Inf = inf

    @classmethod
    def nan(cls: Type[A], *args: Any, codist: Any = None, dtype: Any = None) -> A:
        """``codistributed.nan(m, n, ..., codist)``: all ``nan`` (a float or complex dtype)."""
        return cls._filled("codistributed.nan", args, codist, dtype, np.nan, allowed="fc")

    NaN = nan

    @classmethod
    def true(cls: Type[A], *args: Any, codist: Any = None) -> A:
        """``codistributed.true(m, n, ..., codist)``: a bool array of True."""
        return cls._filled("codistributed.true", args, codist, None, True, default=np.bool_, allowed="b")

    @classmethod
    def false(cls: Type[A], *args: Any, codist: Any = None) -> A:
        """``codistributed.false(m, n, ..., codist)``: a bool array of False."""
        return cls._filled("codistributed.false", args, codist, None, False, default=np.bool_, allowed="b")

    @classmethod
    def eye(cls: Type[A], *args: Any, codist: Any = None, dtype: Any = None) -> A:
        """``codistributed.eye(n)`` (n-by-n), ``eye(m, n)``, ``eye((m, n))``: the identity."""
        what = "codistributed.eye"
        shape, codist, dtype = _parse(args, codist, dtype, what)
        if len(shape) != 2:
            raise ValueError(f"{what}: the identity is 2-D; got size {shape}")
        dtype = np.dtype(np.float64) if dtype is None else dtype
        made = _on_grid(shape, dtype, codist, lambda c: cls.eye(shape, codist=c, dtype=dtype))
        if made is not None:
            return made
        lab, n = here()
        codist = complete(codist, shape, n)
        check_agree(what, shape, dtype, codist)
        if not is_plain(codist):
            return reshard(cls.eye(shape, dtype=dtype), codist, what)
        rows, cols = codist.localIndices(lab, n)
        local = (rows[:, None] == cols[None, :]).astype(dtype)
        return cls._from_local(local, codist)

    @staticmethod
    def _rng(seed) -> np.random.Generator:
        lab, _ = here()
        if seed is None:
            return np.random.default_rng()  # fresh entropy: a different stream on each lab
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (numbers.Integral, Sequence)):
            raise TypeError(f"seed must be a non-negative integer (or a sequence of them), got {seed!r}")
        try:
            seq = np.random.SeedSequence(seed, spawn_key=(lab - 1,))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"invalid seed {seed!r}: {exc}") from None
        return np.random.default_rng(seq)

    @classmethod
    def rand(cls: Type[A], *args: Any, codist: Any = None, dtype: Any = None, seed: Any = None) -> A:
        """Uniform on [0, 1). Each lab draws from its own stream; ``seed=`` makes the
        result reproducible (lab k uses ``SeedSequence(seed, spawn_key=(k-1,))``)."""
        return cls._random_floats("codistributed.rand", "random", args, codist, dtype, seed)

    @classmethod
    def randn(cls: Type[A], *args: Any, codist: Any = None, dtype: Any = None, seed: Any = None) -> A:
        """Standard normal values; streams as :meth:`rand`."""
        return cls._random_floats("codistributed.randn", "standard_normal", args, codist, dtype, seed)

    @classmethod
    def _random_floats(cls: Type[A], what: str, method: str, args: tuple, codist, dtype, seed) -> A:
        """``rand``/``randn``: each lab fills its part with ``Generator.<method>``."""
        shape, codist, dtype = _parse(args, codist, dtype, what)
        dtype = np.dtype(np.float64) if dtype is None else dtype
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"{what}: dtype must be float32 or float64, got {dtype}")
        made = _on_grid(shape, dtype, codist, lambda c: cls._random_floats(what, method, (shape,), c, dtype, seed))
        if made is not None:
            return made
        lab, n = here()
        codist = complete(codist, shape, n)
        check_agree(what, shape, dtype, codist)
        if not is_plain(codist):
            return reshard(cls._random_floats(what, method, (shape,), None, dtype, seed), codist, what)
        draw = getattr(cls._rng(seed), method)
        return cls._from_local(draw(codist.localShape(lab, n), dtype=dtype), codist)

    @classmethod
    def randi(cls: Type[A], imax: Any, *args: Any, codist: Any = None, dtype: Any = None, seed: Any = None) -> A:
        """``randi(imax, m, n, ...)``: integers in 1..imax; ``randi([imin, imax], ...)``:
        in imin..imax (inclusive, as MATLAB). Default dtype int64."""
        what = "codistributed.randi"
        if isinstance(imax, (tuple, list, np.ndarray)):
            bounds = list(np.asarray(imax).reshape(-1).tolist())
            if len(bounds) != 2:
                raise ValueError(f"{what}: the range must be imax or [imin, imax], got {imax!r}")
            lo, hi = bounds
        else:
            lo, hi = 1, imax
        for v in (lo, hi):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or not float(v).is_integer():
                raise TypeError(f"{what}: the range limits must be whole numbers, got {imax!r}")
        lo, hi = int(lo), int(hi)
        if hi < lo:
            raise ValueError(f"{what}: the range [{lo}, {hi}] is empty (imax must be >= imin)")
        shape, codist, dtype = _parse(args, codist, dtype, what)
        dtype = np.dtype(np.int64) if dtype is None else dtype
        if dtype.kind not in "iuf":
            raise TypeError(f"{what}: dtype must be an integer or float type, got {dtype}")
        made = _on_grid(shape, dtype, codist, lambda c: cls.randi([lo, hi], shape, codist=c, dtype=dtype, seed=seed))
        if made is not None:
            return made
        lab, n = here()
        codist = complete(codist, shape, n)
        check_agree(what, shape, dtype, codist)
        if not is_plain(codist):
            return reshard(cls.randi([lo, hi], shape, dtype=dtype, seed=seed), codist, what)
        rng = cls._rng(seed)
        local = rng.integers(lo, hi, size=codist.localShape(lab, n), endpoint=True, dtype=np.int64)
        return cls._from_local(local.astype(dtype, copy=False), codist)

    @classmethod
    def colon(cls: Type[A], a: Any, d: Any, b: Any = None, *, codist: Any = None, dtype: Any = None) -> A:
        """MATLAB's ``a:d:b`` (``colon(a, b)`` is ``a:1:b``) as a 1-D codistributed array;
        the end ``b`` is included when it is reached, as in MATLAB."""
        what = "codistributed.colon"
        if b is None:
            a, d, b = a, 1, d
        check_codist_arg(codist, what)
        for v in (a, d, b):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                raise TypeError(f"{what}: a, d and b must be real numbers, got {v!r}")
        if not all(math.isfinite(v) for v in (a, d, b)):
            raise ValueError(f"{what}: a, d and b must be finite")
        integral = all(isinstance(v, numbers.Integral) for v in (a, d, b))
        if d == 0 or (d > 0 and b < a) or (d < 0 and b > a):
            count = 0
        elif integral:
            count = (int(b) - int(a)) // int(d) + 1
        else:
            count = int(math.floor((b - a) / d + 1e-10)) + 1
        if dtype is None:
            dtype = np.dtype(np.int64) if integral else np.dtype(np.float64)
        dtype = np.dtype(dtype)
        made = _on_grid((count,), dtype, codist, lambda c: cls.colon(a, d, b, codist=c, dtype=dtype))
        if made is not None:
            return made
        lab, n = here()
        codist = complete(codist, (count,), n)
        check_agree(what, (count,), dtype, codist)
        if not is_plain(codist):
            return reshard(cls.colon(a, d, b, dtype=dtype), codist, what)
        idx = codist.localIndices(lab, n)[0]
        local = (a + idx * d) if integral else (a + idx.astype(np.float64) * d)
        return cls._from_local(np.asarray(local).astype(dtype, copy=False), codist)

    @classmethod
    def linspace(cls: Type[A], a: Any, b: Any, n: int = 100, *, codist: Any = None, dtype: Any = None) -> A:
        """``n`` evenly spaced values from ``a`` to ``b`` inclusive (MATLAB default n=100),
        as ``np.linspace``; a 1-D codistributed array."""
        what = "codistributed.linspace"
        check_codist_arg(codist, what)
        for v in (a, b):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Number):
                raise TypeError(f"{what}: the end points must be numbers, got {v!r}")
        count = _size_value(n, what)
        made = _on_grid((count,), np.result_type(np.float64, np.asarray(a).dtype, np.asarray(b).dtype)
                        if dtype is None else np.dtype(dtype), codist,
                        lambda c: cls.linspace(a, b, count, codist=c, dtype=dtype))
        if made is not None:
            return made
        lab, labs = here()
        codist = complete(codist, (count,), labs)
        check_agree(what, (count,), dtype if dtype is not None else np.float64, codist)
        if not is_plain(codist):
            return reshard(cls.linspace(a, b, count, dtype=dtype), codist, what)
        idx = codist.localIndices(lab, labs)[0]
        dt = np.result_type(np.float64, np.asarray(a).dtype, np.asarray(b).dtype)
        if count > 1:
            step = (b - a) / (count - 1)
            local = idx.astype(dt) * step + a
            local[idx == count - 1] = b
        else:
            local = np.full(idx.shape, a, dtype=dt)
        if dtype is not None:
            local = local.astype(np.dtype(dtype))
        return cls._from_local(local, codist)
