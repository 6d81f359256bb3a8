"""Codistributed arrays from sizes: the MATLAB-style constructors of ``codistributed``.

``codistributed.zeros(m, n, ..., codist, dtype=)`` and ``ones eye rand randn randi inf
nan true false colon linspace`` take MATLAB's argument forms (``zeros(n)`` is n-by-n, a
tuple is the shape as given, a trailing codistributor and dtype in any order). Each lab
makes only its own part, without communication; random constructors draw a stream per
lab (lab k uses ``SeedSequence(seed, spawn_key=(k-1,))``).
"""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .codist_comm import _CODISTRIBUTORS, _check_codist_arg, _check_dtype, _complete, _here

if TYPE_CHECKING:
    from .codistributed import codistributed


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
        if isinstance(tail, _CODISTRIBUTORS):
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
    _check_codist_arg(codist, what)
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
        error = _check_dtype(dtype)
        if error:
            raise TypeError(f"{what}: {error}")
    return shape, codist, dtype


# --------------------------------------------------------------------------- the constructors
class CodistConstructors:
    """The constructors of ``codistributed`` (a mixin of classmethods)."""

    __slots__ = ()

    @classmethod
    def _filled(cls, what: str, args: tuple, codist, dtype, fill, default=np.float64,
                allowed: str = "") -> "codistributed":
        shape, codist, dtype = _parse(args, codist, dtype, what)
        dtype = np.dtype(default) if dtype is None else dtype
        if allowed and dtype.kind not in allowed:
            raise TypeError(f"{what}: dtype {dtype} is not allowed here")
        lab, n = _here()
        codist = _complete(codist, shape, n)
        return cls._from_local(np.full(codist.localShape(lab, n), fill, dtype=dtype), codist)

    @classmethod
    def zeros(cls, *args, codist=None, dtype=None) -> "codistributed":
        """``codistributed.zeros(m, n, ..., codist, dtype=)``: all zeros (float64 default)."""
        return cls._filled("codistributed.zeros", args, codist, dtype, 0)

    @classmethod
    def ones(cls, *args, codist=None, dtype=None) -> "codistributed":
        """``codistributed.ones(m, n, ..., codist, dtype=)``: all ones."""
        return cls._filled("codistributed.ones", args, codist, dtype, 1)

    @classmethod
    def inf(cls, *args, codist=None, dtype=None) -> "codistributed":
        """``codistributed.inf(m, n, ..., codist)``: all ``inf`` (a float or complex dtype)."""
        return cls._filled("codistributed.inf", args, codist, dtype, np.inf, allowed="fc")

    Inf = inf

    @classmethod
    def nan(cls, *args, codist=None, dtype=None) -> "codistributed":
        """``codistributed.nan(m, n, ..., codist)``: all ``nan`` (a float or complex dtype)."""
        return cls._filled("codistributed.nan", args, codist, dtype, np.nan, allowed="fc")

    NaN = nan

    @classmethod
    def true(cls, *args, codist=None) -> "codistributed":
        """``codistributed.true(m, n, ..., codist)``: a bool array of True."""
        return cls._filled("codistributed.true", args, codist, None, True, default=np.bool_, allowed="b")

    @classmethod
    def false(cls, *args, codist=None) -> "codistributed":
        """``codistributed.false(m, n, ..., codist)``: a bool array of False."""
        return cls._filled("codistributed.false", args, codist, None, False, default=np.bool_, allowed="b")

    @classmethod
    def eye(cls, *args, codist=None, dtype=None) -> "codistributed":
        """``codistributed.eye(n)`` (n-by-n), ``eye(m, n)``, ``eye((m, n))``: the identity."""
        what = "codistributed.eye"
        shape, codist, dtype = _parse(args, codist, dtype, what)
        if len(shape) != 2:
            raise ValueError(f"{what}: the identity is 2-D; got size {shape}")
        dtype = np.dtype(np.float64) if dtype is None else dtype
        lab, n = _here()
        codist = _complete(codist, shape, n)
        rows, cols = codist.localIndices(lab, n)
        local = (rows[:, None] == cols[None, :]).astype(dtype)
        return cls._from_local(local, codist)

    @staticmethod
    def _rng(seed) -> np.random.Generator:
        lab, _ = _here()
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
    def rand(cls, *args, codist=None, dtype=None, seed=None) -> "codistributed":
        """Uniform on [0, 1). Each lab draws from its own stream; ``seed=`` makes the
        result reproducible (lab k uses ``SeedSequence(seed, spawn_key=(k-1,))``)."""
        return cls._random_floats("codistributed.rand", "random", args, codist, dtype, seed)

    @classmethod
    def randn(cls, *args, codist=None, dtype=None, seed=None) -> "codistributed":
        """Standard normal values; streams as :meth:`rand`."""
        return cls._random_floats("codistributed.randn", "standard_normal", args, codist, dtype, seed)

    @classmethod
    def _random_floats(cls, what: str, method: str, args: tuple, codist, dtype, seed) -> "codistributed":
        """``rand``/``randn``: each lab fills its part with ``Generator.<method>``."""
        shape, codist, dtype = _parse(args, codist, dtype, what)
        dtype = np.dtype(np.float64) if dtype is None else dtype
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"{what}: dtype must be float32 or float64, got {dtype}")
        lab, n = _here()
        codist = _complete(codist, shape, n)
        draw = getattr(cls._rng(seed), method)
        return cls._from_local(draw(codist.localShape(lab, n), dtype=dtype), codist)

    @classmethod
    def randi(cls, imax, *args, codist=None, dtype=None, seed=None) -> "codistributed":
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
        lab, n = _here()
        codist = _complete(codist, shape, n)
        rng = cls._rng(seed)
        local = rng.integers(lo, hi, size=codist.localShape(lab, n), endpoint=True, dtype=np.int64)
        return cls._from_local(local.astype(dtype, copy=False), codist)

    @classmethod
    def colon(cls, a, d, b=None, *, codist=None, dtype=None) -> "codistributed":
        """MATLAB's ``a:d:b`` (``colon(a, b)`` is ``a:1:b``) as a 1-D codistributed array;
        the end ``b`` is included when it is reached, as in MATLAB."""
        what = "codistributed.colon"
        if b is None:
            a, d, b = a, 1, d
        _check_codist_arg(codist, what)
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
        lab, n = _here()
        codist = _complete(codist, (count,), n)
        idx = codist.localIndices(lab, n)[0]
        local = (a + idx * d) if integral else (a + idx.astype(np.float64) * d)
        return cls._from_local(np.asarray(local).astype(dtype, copy=False), codist)

    @classmethod
    def linspace(cls, a, b, n: int = 100, *, codist=None, dtype=None) -> "codistributed":
        """``n`` evenly spaced values from ``a`` to ``b`` inclusive (MATLAB default n=100),
        as ``np.linspace``; a 1-D codistributed array."""
        what = "codistributed.linspace"
        _check_codist_arg(codist, what)
        for v in (a, b):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Number):
                raise TypeError(f"{what}: the end points must be numbers, got {v!r}")
        count = _size_value(n, what)
        lab, labs = _here()
        codist = _complete(codist, (count,), labs)
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
