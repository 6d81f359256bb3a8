"""numpy semantics for codistributed arrays: arithmetic, ufuncs, reductions, ``@``, indexing.

``CodistOps`` is the mixin of ``codistributed`` (``spmdlab/codistributed.py``). Every
operation gives what numpy gives on the gathered arrays; results are codistributed
arrays (or replicated numpy scalars for whole reductions and scalar indexing).

Layout rules (the decisions, in one place):

- **Elementwise** (operators, ufuncs, ``np.where``, ``clip``, ...): the result has the
  layout of the first codistributed operand whose shape is the result's shape (of
  ``out=`` when given). Other codistributed operands of that shape are redistributed to
  it; smaller codistributed operands that broadcast (``D - D.mean(axis=0)``) are gathered
  (every lab gets them whole) and treated as replicated; replicated numpy arrays and
  scalars broadcast, each lab slicing the part matching its local part. When no
  codistributed operand has the result's shape, ``NotImplementedError``.
- **Reductions** whole: a replicated numpy scalar on every lab (partials combined in
  lab order, so it is bitwise the same everywhere). Along axes: a codistributed array;
  along non-distributed dimensions of a 1-D layout it is local and keeps the layout
  (same partition); otherwise the partials are combined with one allreduce and the
  result gets the default ``codistributor1d`` of the reduced shape.
  ``mean/var/std`` follow numpy's algorithm (sum, divide; two-pass variance).
  ``argmax/argmin`` return global 0-based indices, the first occurrence as numpy.
- **Transpose** is local and, as in numpy, a view (it shares the local parts): 1-D
  layouts move the distribution dimension with the axes, 2dbc layouts get the
  transposed lab grid with the other orientation (the same lab keeps the same blocks).
- **reshape/ravel/flatten/squeeze** (C order) give a copy in the layout where each lab
  holds a contiguous range of flat indices (1-D along the first dimension longer than
  1): at most one redistribution of the source, then one all-to-all. ``cumsum/cumprod``
  scan locally and add (multiply) the totals of the labs before; ``nonzero`` gives
  codistributed index arrays partitioned by what each lab found.
- **``@``**: 1-D layouts use a ring (A's rows stay, B's row panels travel around the
  labs); 2dbc layouts use SUMMA (panels of A broadcast along grid rows, of B along grid
  columns, one panel ahead). Replicated operands need no communication (the other is
  redistributed by rows or columns as needed). Matrix-vector products gather the
  vector (rows and 2dbc layouts) and/or sum partial vectors with one allreduce.
- **Conversions**: ``np.asarray(D)`` raises TypeError (use ``gather(D)`` or
  ``getLocalPart(D)``); ``bool/float/int(D)`` and ``D.item()`` work for one element.
- **Indexing**: ints give a replicated scalar (the owner broadcasts); ints and slices
  give a codistributed *copy* (not a view): a slice with a positive step along the
  distributed dimension of a 1-D layout keeps each lab's part where it is (partition =
  what each lab holds), everything else moves to the default layout of the result in
  one all-to-all. ``D[mask]`` (codistributed or replicated boolean array of D's shape)
  gives a 1-D array partitioned by what each lab selected. Assignments write on the
  owning labs.

All communication is nonblocking collectives on the block's communicator waited with
``comm.wait`` (interruptible, no clash with user messages); every lab calls them in the
same order, and every check that can fail depends only on global metadata, so all labs
raise the same error (numpy errors that depend on the data itself, such as an integer
to a negative power, come from the labs holding such data; the block's error handling
aborts the others). Nothing here imports MPI at import time (the module is imported
at the client, where arrays behave as on a pool of one lab).
"""
from __future__ import annotations

import functools
import numbers
import operator

import numpy as np

from .codist_comm import _NOVALUE, _cls, _layout, _redistribute
from .codist_elementwise import (_binary, _elementwise, _inplace, _is_operand, _np_allclose,
                                 _np_array_equal, _np_clip, _np_isclose, _np_round, _np_where,
                                 _ufunc_call, _unary)
from .codist_indexing import _is_mask, _mask_get, _parse_key, _scalar_get, _setitem, _slice_get
from .codist_matmul import _matmul, _np_dot
from .codist_reductions import _argreduce, _mean, _no_extras, _reduce, _var
from .codist_reshape import _nonzero, _np_reshape, _reshape, _scan, _squeeze, _transpose

__all__ = ["CodistOps"]


def _np_size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


@functools.lru_cache(maxsize=1)
def _handlers() -> dict:
    def method(name):
        return lambda a, *args, **kwargs: getattr(a, name)(*args, **kwargs)

    table = {
        np.sum: method("sum"), np.prod: method("prod"), np.min: method("min"),
        np.max: method("max"), np.amin: method("min"), np.amax: method("max"),
        np.mean: method("mean"), np.std: method("std"), np.var: method("var"),
        np.any: method("any"), np.all: method("all"), np.argmax: method("argmax"),
        np.argmin: method("argmin"),
        np.transpose: lambda a, axes=None: a.transpose(axes),
        np.copy: lambda a, order="K", subok=False: a.copy(),
        np.shape: lambda a: tuple(a.shape), np.ndim: lambda a: a.ndim, np.size: _np_size,
        np.where: _np_where, np.clip: _np_clip, np.round: _np_round, np.around: _np_round,
        np.isclose: _np_isclose, np.allclose: _np_allclose, np.array_equal: _np_array_equal,
        np.dot: _np_dot, np.real: lambda a: a.real, np.imag: lambda a: a.imag,
        np.reshape: _np_reshape, np.ravel: lambda a, order="C": _reshape(a, (-1,), order, "ravel"),
        np.squeeze: lambda a, axis=None: _squeeze(a, axis),
        np.cumsum: lambda a, axis=None, dtype=None, out=None: _scan(a, "sum", axis, dtype, out),
        np.cumprod: lambda a, axis=None, dtype=None, out=None: _scan(a, "prod", axis, dtype, out),
        np.nonzero: lambda a: _nonzero(a),
    }
    return table


# --------------------------------------------------------------------------- the mixin
class CodistOps:
    """numpy operations of ``codistributed`` arrays (arithmetic, ufuncs, reductions, ``@``,
    transpose, global indexing). See the module docstring for the layout rules."""

    __slots__ = ()

    # ---- numpy protocols ---------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs, **kwargs):
        what = f"numpy.{ufunc.__name__}"
        if method == "__call__":
            if not all(_is_operand(x) for x in inputs):
                return NotImplemented
            if ufunc is np.matmul:
                if kwargs:
                    raise NotImplementedError(f"{what}: keyword arguments "
                                              f"{sorted(kwargs)} are not supported for "
                                              f"codistributed arrays ({_layout(self._codist)})")
                return _matmul(inputs[0], inputs[1])
            out = kwargs.get("out")
            if out is not None and any(x is not None and not _is_operand(x)
                                       for x in (out if isinstance(out, tuple) else (out,))):
                return NotImplemented
            return _ufunc_call(ufunc, inputs, dict(kwargs))
        if method == "reduce":
            how = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
                   np.logical_or: "any", np.logical_and: "all"}.get(ufunc)
            D = inputs[0]
            if how is None or len(inputs) != 1 or not isinstance(D, _cls()):
                raise NotImplementedError(f"{what}.reduce is not supported for codistributed arrays "
                                          f"({_layout(self._codist)})")
            kw = dict(kwargs)
            axis = kw.pop("axis", 0)
            dtype = kw.pop("dtype", None)
            keepdims = kw.pop("keepdims", False)
            if kw.pop("out", None) is not None:
                raise NotImplementedError(f"{what}.reduce: out= is not supported for codistributed "
                                          f"arrays ({_layout(self._codist)})")
            _no_extras(f"{what}.reduce", layout=self._codist, **kw)
            extra = {"dtype": dtype} if dtype is not None and how not in ("any", "all") else {}
            return _reduce(D, how, axis, None, extra, keepdims, f"{what}.reduce")
        raise NotImplementedError(f"{what}.{method} is not supported for codistributed arrays "
                                  f"({_layout(self._codist)}); gather(D) for a numpy array")

    def __array_function__(self, func, types, args, kwargs):
        handler = _handlers().get(func)
        if handler is None:  # issue 12: numpy.linalg functions (spmdlab/codist/linalg)
            from .codist.linalg import HANDLERS as _LINALG
            handler = _LINALG.get(func)
        if handler is None:
            raise NotImplementedError(
                f"numpy.{getattr(func, '__name__', func)} is not supported for codistributed "
                f"arrays ({_layout(self._codist)}); use gather(D) for a numpy array, or "
                "getLocalPart(D) for this lab's part")
        return handler(*args, **kwargs)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a codistributed array does not convert to a numpy array implicitly: "
                        "use gather(D) (the whole array on every lab) or getLocalPart(D)")

    # ---- arithmetic ---------------------------------------------------------------------
    __add__ = _binary(np.add)
    __radd__ = _binary(np.add, True)
    __sub__ = _binary(np.subtract)
    __rsub__ = _binary(np.subtract, True)
    __mul__ = _binary(np.multiply)
    __rmul__ = _binary(np.multiply, True)
    __truediv__ = _binary(np.true_divide)
    __rtruediv__ = _binary(np.true_divide, True)
    __floordiv__ = _binary(np.floor_divide)
    __rfloordiv__ = _binary(np.floor_divide, True)
    __mod__ = _binary(np.remainder)
    __rmod__ = _binary(np.remainder, True)
    __divmod__ = _binary(np.divmod)
    __rdivmod__ = _binary(np.divmod, True)
    __and__ = _binary(np.bitwise_and)
    __rand__ = _binary(np.bitwise_and, True)
    __or__ = _binary(np.bitwise_or)
    __ror__ = _binary(np.bitwise_or, True)
    __xor__ = _binary(np.bitwise_xor)
    __rxor__ = _binary(np.bitwise_xor, True)
    __lshift__ = _binary(np.left_shift)
    __rlshift__ = _binary(np.left_shift, True)
    __rshift__ = _binary(np.right_shift)
    __rrshift__ = _binary(np.right_shift, True)
    __eq__ = _binary(np.equal)
    __ne__ = _binary(np.not_equal)
    __lt__ = _binary(np.less)
    __le__ = _binary(np.less_equal)
    __gt__ = _binary(np.greater)
    __ge__ = _binary(np.greater_equal)
    __iadd__ = _inplace(np.add)
    __isub__ = _inplace(np.subtract)
    __imul__ = _inplace(np.multiply)
    __itruediv__ = _inplace(np.true_divide)
    __ifloordiv__ = _inplace(np.floor_divide)
    __imod__ = _inplace(np.remainder)
    __ipow__ = _inplace(np.power)
    __iand__ = _inplace(np.bitwise_and)
    __ior__ = _inplace(np.bitwise_or)
    __ixor__ = _inplace(np.bitwise_xor)
    __ilshift__ = _inplace(np.left_shift)
    __irshift__ = _inplace(np.right_shift)
    __hash__ = None  # mutable, and == is elementwise

    __pow__ = _binary(np.power)
    __rpow__ = _binary(np.power, True)

    def __matmul__(self, other):
        if not _is_operand(other):
            return NotImplemented
        return _matmul(self, other)

    def __rmatmul__(self, other):
        if not _is_operand(other):
            return NotImplemented
        return _matmul(other, self)

    def __imatmul__(self, other):
        r = _matmul(self, other)
        if tuple(r.shape) != tuple(self.shape):
            raise ValueError(f"matmul: in-place @= would change the shape {self.shape} to {r.shape}")
        if r._codist != self._codist:
            r = _redistribute(r, self._codist)
        np.copyto(self._local, r._local, casting="same_kind")
        return self

    __neg__ = _unary(np.negative)
    __pos__ = _unary(np.positive)
    __invert__ = _unary(np.invert)

    def __abs__(self):
        return _ufunc_call(np.absolute, (self,), {})

    # ---- conversions --------------------------------------------------------------------
    def item(self, *args):
        """The single element as a Python scalar (replicated), as ``ndarray.item``."""
        if args:
            if len(args) == 1 and isinstance(args[0], numbers.Integral):
                idx = np.unravel_index(operator.index(args[0]), self.shape)
            else:
                idx = tuple(args[0]) if len(args) == 1 else args
            return self[tuple(int(i) for i in idx)].item()
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self[(0,) * self.ndim].item()

    def __bool__(self) -> bool:
        if self.size != 1:
            if self.size == 0:
                raise ValueError("The truth value of an empty array is ambiguous. Use "
                                 "`array.size > 0` to check that an array is not empty.")
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self._scalar_only("float"))

    def __int__(self) -> int:
        return int(self._scalar_only("int"))

    def __complex__(self) -> complex:
        return complex(self._scalar_only("complex"))

    def _scalar_only(self, what: str):
        if self.size != 1:
            raise TypeError(f"only arrays of size 1 can be converted to Python scalars ({what})")
        return self.item()

    @property
    def real(self):
        return _elementwise("real", np.real, [self])

    @property
    def imag(self):
        return _elementwise("imag", np.imag, [self])

    def conj(self):
        return _ufunc_call(np.conjugate, (self,), {})

    conjugate = conj

    def clip(self, min=None, max=None, out=None, **kwargs):
        return _np_clip(self, min, max, out, **kwargs)

    def round(self, decimals=0, out=None):
        return _np_round(self, decimals, out)

    # ---- reductions ---------------------------------------------------------------------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, *, dim=None, **extra):
        """Sum, whole (a replicated scalar) or along ``axis`` (0-based) / ``dim`` (1-based)."""
        return self._red("sum", axis, dim, dtype, out, keepdims, extra)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, *, dim=None, **extra):
        return self._red("prod", axis, dim, dtype, out, keepdims, extra)

    def min(self, axis=None, out=None, keepdims=False, *, dim=None, **extra):
        return self._red("min", axis, dim, None, out, keepdims, extra)

    def max(self, axis=None, out=None, keepdims=False, *, dim=None, **extra):
        return self._red("max", axis, dim, None, out, keepdims, extra)

    def any(self, axis=None, out=None, keepdims=False, *, dim=None, **extra):
        return self._red("any", axis, dim, None, out, keepdims, extra)

    def all(self, axis=None, out=None, keepdims=False, *, dim=None, **extra):
        return self._red("all", axis, dim, None, out, keepdims, extra)

    def _red(self, how, axis, dim, dtype, out, keepdims, extra):
        if out is not None:
            raise NotImplementedError(f"{how}: out= is not supported for codistributed arrays "
                                      f"({_layout(self._codist)})")
        _no_extras(how, layout=self._codist, **extra)
        keepdims = bool(keepdims) if keepdims is not _NOVALUE else False
        return _reduce(self, how, axis, dim, {"dtype": dtype} if dtype is not None else {},
                       keepdims, how)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, dim=None, where=True):
        """Mean (numpy's dtype rules: float64 for integers)."""
        keepdims = bool(keepdims) if keepdims is not _NOVALUE else False
        return _mean(self, axis, dtype, out, keepdims, dim=dim, where=where)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, dim=None,
            where=True, mean=_NOVALUE, correction=_NOVALUE):
        """Variance (two-pass, as numpy)."""
        keepdims = bool(keepdims) if keepdims is not _NOVALUE else False
        return _var(self, axis, dtype, out, ddof, keepdims, dim=dim, where=where, mean=mean,
                    correction=correction, what="var")

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, dim=None,
            where=True, mean=_NOVALUE, correction=_NOVALUE):
        keepdims = bool(keepdims) if keepdims is not _NOVALUE else False
        return _var(self, axis, dtype, out, ddof, keepdims, dim=dim, where=where, mean=mean,
                    correction=correction, what="std", root=True)

    def argmax(self, axis=None, out=None, *, keepdims=False, dim=None):
        """Global 0-based index of the (first) maximum, flat (replicated) or along an axis."""
        return _argreduce(self, "max", axis, out, keepdims=bool(keepdims), dim=dim)

    def argmin(self, axis=None, out=None, *, keepdims=False, dim=None):
        return _argreduce(self, "min", axis, out, keepdims=bool(keepdims), dim=dim)

    # ---- shape ----------------------------------------------------------------------------
    def transpose(self, *axes):
        """Permuted axes (no communication: the layout is permuted with the local part)."""
        return _transpose(self, axes)

    @property
    def T(self):
        return _transpose(self, None)

    def dot(self, other, out=None):
        return _np_dot(self, other, out)

    def reshape(self, *shape, order="C"):
        """C-order reshape (a codistributed copy; data moves in one all-to-all)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _reshape(self, shape, order)

    def ravel(self, order="C"):
        return _reshape(self, (-1,), order, "ravel")

    def flatten(self, order="C"):
        return _reshape(self, (-1,), order, "flatten")

    def squeeze(self, axis=None):
        return _squeeze(self, axis)

    def cumsum(self, axis=None, dtype=None, out=None):
        """Cumulative sum (along the distributed dimension: local scans plus the totals of
        the labs before, as numpy on the gathered array)."""
        return _scan(self, "sum", axis, dtype, out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return _scan(self, "prod", axis, dtype, out)

    def nonzero(self):
        """Tuple of codistributed 1-D arrays of global indices of the nonzero elements."""
        return _nonzero(self)

    def fill(self, value) -> None:
        """Set every element to ``value`` (each lab fills its part)."""
        self._local.fill(value)

    # ---- indexing -------------------------------------------------------------------------
    def __getitem__(self, key):
        """Global 0-based indexing: ints → a replicated scalar, slices → a codistributed
        copy, a boolean mask of the array's shape → a 1-D codistributed array."""
        what = "indexing D[...]"
        if _is_mask(key, self):
            return _mask_get(self, key, what)
        parsed = _parse_key(key, tuple(self.shape), what, self._codist)
        if all(kind == "i" for kind, _ in parsed):
            return _scalar_get(self, tuple(v for _, v in parsed), what)
        return _slice_get(self, parsed, what)

    def __setitem__(self, key, value):
        """``D[i, j] = v`` writes on the owning lab; slices and boolean masks as numpy
        (the value: a scalar, a replicated array, or a codistributed array)."""
        _setitem(self, key, value)
