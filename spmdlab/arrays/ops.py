"""numpy semantics for codistributed arrays: the operators, methods and numpy protocols.

``CodistOps`` is the mixin of ``codistributed`` that turns Python's and numpy's entry
points (``D + E``, ``np.sin(D)``, ``D.sum()``, ``np.where(...)``, ``D[i, j]``) into the
operations of the layers below; it decides nothing about layouts itself (the rules are
in docs/design.md). numpy functions are looked up in the registry (``registry.lookup``).
"""
from __future__ import annotations

import numbers
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .adapt import (
    assign,
    assign_out,
    check_ufunc_out,
    chunkwise,
    needs_adapting,
    on_elementwise,
    on_inplace,
    on_plain,
    plain_args,
    restore,
)
from .base import NOVALUE, CodistArray, layout_text, parts_of
from .elementwise import (
    binary_op,
    elementwise,
    inplace_op,
    is_operand,
    np_clip,
    np_round,
    ufunc_call,
    unary_op,
)
from .indexing import getitem, setitem
from .matmul import matmul, np_dot
from .reductions import arg_reduce, mean_of, no_extras, reduce_along, var_of
from .registry import implements, lookup
from .reshape import cumulative, nonzero_of, reshape_to, squeeze_axes, transpose_axes
from .reshard import changeMode
from .transfer import redistribute

__all__ = ["CodistOps"]

# numpy 2.4: size-1 arrays with ndim > 0 no longer convert (a codistributed array is never 0-d)
_NOT_0D = "only 0-dimensional arrays can be converted to Python scalars (use D.item())"


def adapted(wrap: Callable[[Any, Callable], Callable], fn: Any) -> Callable[[Callable], Callable]:
    """``@adapted(on_elementwise, np.absolute)``: the method decorated with ``wrap(fn, method)``,
    so that it reaches arrays in the extended layouts (``adapt``)."""
    return lambda method: wrap(fn, method)


# Methods reach arrays in the extended layouts through ``adapt``, each decorated where it is
# defined (binary and unary operators adapt in ``elementwise``: an extra frame would defeat elision).
class CodistOps(CodistArray):
    """numpy operations of ``codistributed`` arrays (arithmetic, ufuncs, reductions, ``@``,
    transpose, global indexing); the layout rules are in docs/design.md §12."""


    # ---- numpy protocols ---------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        what = f"numpy.{ufunc.__name__}"
        out = kwargs.get("out")
        if any(needs_adapting(x) for x in inputs + (out if isinstance(out, tuple) else (out,))):
            return self._adapted_ufunc(ufunc, method, inputs, kwargs)
        if method == "__call__":
            if not all(is_operand(x) for x in inputs):
                return NotImplemented
            if ufunc is np.matmul:
                if kwargs:
                    raise NotImplementedError(f"{what}: keyword arguments "
                                              f"{sorted(kwargs)} are not supported for "
                                              f"codistributed arrays ({layout_text(self._codist)})")
                return matmul(inputs[0], inputs[1])
            out = kwargs.get("out")
            if out is not None and any(x is not None and not is_operand(x)
                                       for x in (out if isinstance(out, tuple) else (out,))):
                return NotImplemented
            return ufunc_call(ufunc, inputs, dict(kwargs))
        if method == "reduce":
            reductions: dict[Any, str] = {np.add: "sum", np.multiply: "prod", np.maximum: "max",
                                          np.minimum: "min", np.logical_or: "any", np.logical_and: "all"}
            how = reductions.get(ufunc)
            D = inputs[0]
            if how is None or len(inputs) != 1 or not isinstance(D, CodistArray):
                raise NotImplementedError(f"{what}.reduce is not supported for codistributed arrays "
                                          f"({layout_text(self._codist)})")
            kw = dict(kwargs)
            axis = kw.pop("axis", 0)
            dtype = kw.pop("dtype", None)
            keepdims = kw.pop("keepdims", False)
            if kw.pop("out", None) is not None:
                raise NotImplementedError(f"{what}.reduce: out= is not supported for codistributed "
                                          f"arrays ({layout_text(self._codist)})")
            no_extras(f"{what}.reduce", layout=self._codist, **kw)
            extra = {"dtype": dtype} if dtype is not None and how not in ("any", "all") else {}
            return reduce_along(D, how, axis, None, extra, keepdims, f"{what}.reduce")
        raise NotImplementedError(f"{what}.{method} is not supported for codistributed arrays "
                                  f"({layout_text(self._codist)}); gather(D) for a numpy array")

    def _adapted_ufunc(self, ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
        """A ufunc with operands in the extended layouts (``adapt``)."""
        out = kwargs.pop("out", None)
        if out is not None:
            check_ufunc_out(ufunc, method, inputs, out if isinstance(out, tuple) else (out,), kwargs)
        if method == "__call__" and out is None and ufunc is not np.matmul and ufunc.nout == 1:
            done = chunkwise(ufunc, inputs, kwargs)
            if done is not None:
                return done
        like = next(x for x in inputs if needs_adapting(x)) if any(needs_adapting(x) for x in inputs) else None
        pin, pkw = plain_args(inputs, kwargs)
        result = getattr(ufunc, method)(*pin, **pkw)
        if method == "__call__" and like is not None:
            result = restore(result, like)
        if out is None:
            return result
        outs = out if isinstance(out, tuple) else (out,)
        results = result if isinstance(result, tuple) else (result,)
        for o, r in zip(outs, results):
            if isinstance(o, CodistArray) and isinstance(r, CodistArray):
                assign(o, r)
            else:
                np.copyto(o, r)
        return outs[0] if len(outs) == 1 else outs  # the given array itself, as numpy

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        handler = lookup(func)
        if handler is None:
            raise NotImplementedError(
                f"numpy.{getattr(func, '__name__', func)} is not supported for codistributed "
                f"arrays ({layout_text(self._codist)}); use gather(D) for a numpy array, or "
                "getLocalPart(D) for this lab's part")
        if getattr(handler, "_spmdlab_any_layout", False):  # takes every layout as it is (shapes.any_layout)
            return handler(*args, **kwargs)
        out = kwargs.get("out")
        if needs_adapting(out):  # computed on plain arrays, then written into out's own arrays
            result = on_plain(handler)(*args, **{k: v for k, v in kwargs.items() if k != "out"})
            return assign_out(out, result, f"numpy.{getattr(func, '__name__', func)}")
        return on_plain(handler)(*args, **kwargs)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise TypeError("a codistributed array does not convert to a numpy array implicitly: "
                        "use gather(D) (the whole array on every lab) or getLocalPart(D)")

    # ---- arithmetic ---------------------------------------------------------------------
    __add__ = binary_op(np.add)
    __radd__ = binary_op(np.add, True)
    __sub__ = binary_op(np.subtract)
    __rsub__ = binary_op(np.subtract, True)
    __mul__ = binary_op(np.multiply)
    __rmul__ = binary_op(np.multiply, True)
    __truediv__ = binary_op(np.true_divide)
    __rtruediv__ = binary_op(np.true_divide, True)
    __floordiv__ = binary_op(np.floor_divide)
    __rfloordiv__ = binary_op(np.floor_divide, True)
    __mod__ = binary_op(np.remainder)
    __rmod__ = binary_op(np.remainder, True)
    __divmod__ = binary_op(np.divmod)
    __rdivmod__ = binary_op(np.divmod, True)
    __and__ = binary_op(np.bitwise_and)
    __rand__ = binary_op(np.bitwise_and, True)
    __or__ = binary_op(np.bitwise_or)
    __ror__ = binary_op(np.bitwise_or, True)
    __xor__ = binary_op(np.bitwise_xor)
    __rxor__ = binary_op(np.bitwise_xor, True)
    __lshift__ = binary_op(np.left_shift)
    __rlshift__ = binary_op(np.left_shift, True)
    __rshift__ = binary_op(np.right_shift)
    __rrshift__ = binary_op(np.right_shift, True)
    __eq__ = binary_op(np.equal)
    __ne__ = binary_op(np.not_equal)
    __lt__ = binary_op(np.less)
    __le__ = binary_op(np.less_equal)
    __gt__ = binary_op(np.greater)
    __ge__ = binary_op(np.greater_equal)
    __iadd__ = on_inplace(np.add, inplace_op(np.add))
    __isub__ = on_inplace(np.subtract, inplace_op(np.subtract))
    __imul__ = on_inplace(np.multiply, inplace_op(np.multiply))
    __itruediv__ = on_inplace(np.true_divide, inplace_op(np.true_divide))
    __ifloordiv__ = on_inplace(np.floor_divide, inplace_op(np.floor_divide))
    __imod__ = on_inplace(np.remainder, inplace_op(np.remainder))
    __ipow__ = on_inplace(np.power, inplace_op(np.power))
    __iand__ = on_inplace(np.bitwise_and, inplace_op(np.bitwise_and))
    __ior__ = on_inplace(np.bitwise_or, inplace_op(np.bitwise_or))
    __ixor__ = on_inplace(np.bitwise_xor, inplace_op(np.bitwise_xor))
    __ilshift__ = on_inplace(np.left_shift, inplace_op(np.left_shift))
    __irshift__ = on_inplace(np.right_shift, inplace_op(np.right_shift))
    __hash__ = None  # type: ignore[assignment]  # mutable, and == is elementwise

    __pow__ = binary_op(np.power)
    __rpow__ = binary_op(np.power, True)

    @on_plain
    def __matmul__(self, other: Any) -> Any:
        if not is_operand(other):
            return NotImplemented
        return matmul(self, other)

    @on_plain
    def __rmatmul__(self, other: Any) -> Any:
        if not is_operand(other):
            return NotImplemented
        return matmul(other, self)

    @adapted(on_inplace, None)
    def __imatmul__(self, other: Any) -> Any:
        r = matmul(self, other)
        if tuple(r.shape) != tuple(self.shape):
            raise ValueError(f"matmul: in-place @= would change the shape {self.shape} to {r.shape}")
        if r._codist != self._codist:
            r = redistribute(r, self._codist)
        np.copyto(self._local, r._local, casting="same_kind")
        return self

    __neg__ = unary_op(np.negative)
    __pos__ = unary_op(np.positive)
    __invert__ = unary_op(np.invert)

    @adapted(on_elementwise, np.absolute)
    def __abs__(self) -> Any:
        return ufunc_call(np.absolute, (self,), {})

    # ---- conversions --------------------------------------------------------------------
    @on_plain
    def item(self, *args: Any) -> Any:
        """The single element as a Python scalar (replicated), as ``ndarray.item``; a flat
        index (negative counts from the end) or a tuple of indices picks another one."""
        if args:
            if len(args) == 1 and isinstance(args[0], numbers.Integral):
                flat = operator.index(args[0])
                if not -self.size <= flat < self.size:
                    raise IndexError(f"index {flat} is out of bounds for size {self.size}")
                idx = np.unravel_index(flat % self.size, self.shape)
            else:
                idx = tuple(args[0]) if len(args) == 1 else args
            return self[tuple(int(i) for i in idx)].item()
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self[(0,) * self.ndim].item()

    @on_plain
    def __bool__(self) -> bool:
        if self.size != 1:
            if self.size == 0:
                raise ValueError("The truth value of an empty array is ambiguous. Use "
                                 "`array.size > 0` to check that an array is not empty.")
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return bool(self.item())

    def __float__(self) -> float:
        raise TypeError(_NOT_0D)

    def __int__(self) -> int:
        raise TypeError(_NOT_0D)

    def __complex__(self) -> complex:
        raise TypeError(_NOT_0D)

    @property
    @adapted(on_elementwise, np.real)
    def real(self) -> Any:
        return elementwise("real", np.real, [self])

    @property
    @adapted(on_elementwise, np.imag)
    def imag(self) -> Any:
        return elementwise("imag", np.imag, [self])

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """The same array converted to ``dtype`` (each lab converts its own part; partial
        values of a combining mode are combined first, as the conversion of a sum is
        not the sum of the conversions)."""
        src = self if self._mode == "replica" else changeMode(self, "replica")
        return CodistArray.astype(src, dtype, copy)

    @adapted(on_elementwise, np.ndarray.conj)
    def conj(self) -> Any:
        """The complex conjugate; as ``ndarray.conj``, the same array for real dtypes."""
        return elementwise("conj", np.ndarray.conj, [self])

    conjugate = conj

    @adapted(on_elementwise, None)
    def clip(self, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any) -> Any:
        return np_clip(self, min, max, out, **kwargs)

    @adapted(on_elementwise, None)
    def round(self, decimals: Any = 0, out: Any = None) -> Any:
        return np_round(self, decimals, out)

    # ---- reductions ---------------------------------------------------------------------
    @on_plain
    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, *, dim: Any = None,
            **extra: Any) -> Any:
        """Sum, whole (a replicated scalar) or along ``axis`` (0-based) / ``dim`` (1-based)."""
        return self._red("sum", axis, dim, dtype, out, keepdims, extra)

    @on_plain
    def prod(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, *, dim: Any = None,
             **extra: Any) -> Any:
        return self._red("prod", axis, dim, dtype, out, keepdims, extra)

    @on_plain
    def min(self, axis: Any = None, out: Any = None, keepdims: Any = False, *, dim: Any = None, **extra: Any) -> Any:
        return self._red("min", axis, dim, None, out, keepdims, extra)

    @on_plain
    def max(self, axis: Any = None, out: Any = None, keepdims: Any = False, *, dim: Any = None, **extra: Any) -> Any:
        return self._red("max", axis, dim, None, out, keepdims, extra)

    @on_plain
    def any(self, axis: Any = None, out: Any = None, keepdims: Any = False, *, dim: Any = None, **extra: Any) -> Any:
        return self._red("any", axis, dim, None, out, keepdims, extra)

    @on_plain
    def all(self, axis: Any = None, out: Any = None, keepdims: Any = False, *, dim: Any = None, **extra: Any) -> Any:
        return self._red("all", axis, dim, None, out, keepdims, extra)

    def _red(self, how, axis, dim, dtype, out, keepdims, extra):
        if out is not None:
            raise NotImplementedError(f"{how}: out= is not supported for codistributed arrays "
                                      f"({layout_text(self._codist)})")
        no_extras(how, layout=self._codist, **extra)
        keepdims = bool(keepdims) if keepdims is not NOVALUE else False
        return reduce_along(self, how, axis, dim, {"dtype": dtype} if dtype is not None else {},
                       keepdims, how)

    @on_plain
    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, *, dim: Any = None,
             where: Any = True) -> Any:
        """Mean (numpy's dtype rules: float64 for integers)."""
        keepdims = bool(keepdims) if keepdims is not NOVALUE else False
        return mean_of(self, axis, dtype, out, keepdims, dim=dim, where=where)

    @on_plain
    def var(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: Any = False, *,
            dim: Any = None,
            where: Any = True, mean: Any = NOVALUE, correction: Any = NOVALUE) -> Any:
        """Variance (two-pass, as numpy)."""
        keepdims = bool(keepdims) if keepdims is not NOVALUE else False
        return var_of(self, axis, dtype, out, ddof, keepdims, dim=dim, where=where, mean=mean,
                    correction=correction, what="var")

    @on_plain
    def std(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: Any = False, *,
            dim: Any = None,
            where: Any = True, mean: Any = NOVALUE, correction: Any = NOVALUE) -> Any:
        keepdims = bool(keepdims) if keepdims is not NOVALUE else False
        return var_of(self, axis, dtype, out, ddof, keepdims, dim=dim, where=where, mean=mean,
                    correction=correction, what="std", root=True)

    @on_plain
    def argmax(self, axis: Any = None, out: Any = None, *, keepdims: Any = False, dim: Any = None) -> Any:
        """Global 0-based index of the (first) maximum, flat (replicated) or along an axis."""
        return arg_reduce(self, "max", axis, out, keepdims=bool(keepdims), dim=dim)

    @on_plain
    def argmin(self, axis: Any = None, out: Any = None, *, keepdims: Any = False, dim: Any = None) -> Any:
        return arg_reduce(self, "min", axis, out, keepdims=bool(keepdims), dim=dim)

    # ---- shape ----------------------------------------------------------------------------
    @on_plain
    def transpose(self, *axes: Any) -> Any:
        """Permuted axes (no communication: the layout is permuted with the local part)."""
        return transpose_axes(self, axes)

    @property
    @on_plain
    def T(self) -> Any:
        return transpose_axes(self, None)

    @on_plain
    def dot(self, other: Any, out: Any = None) -> Any:
        return np_dot(self, other, out)

    @on_plain
    def reshape(self, *shape: Any, order: Any = "C") -> Any:
        """C-order reshape (a codistributed copy; data moves in one all-to-all)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape_to(self, shape, order)

    @on_plain
    def ravel(self, order: Any = "C") -> Any:
        return reshape_to(self, (-1,), order, "ravel")

    @on_plain
    def flatten(self, order: Any = "C") -> Any:
        return reshape_to(self, (-1,), order, "flatten")

    @on_plain
    def squeeze(self, axis: Any = None) -> Any:
        return squeeze_axes(self, axis)

    @on_plain
    def cumsum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        """Cumulative sum (along the distributed dimension: local scans plus the totals of
        the labs before, as numpy on the gathered array)."""
        return cumulative(self, "sum", axis, dtype, out)

    @on_plain
    def cumprod(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        return cumulative(self, "prod", axis, dtype, out)

    @on_plain
    def nonzero(self) -> Any:
        """Tuple of codistributed 1-D arrays of global indices of the nonzero elements."""
        return nonzero_of(self)

    def fill(self, value: Any) -> None:
        """Set every element to ``value`` (each lab fills its part)."""
        for part in parts_of(self):
            part.fill(value)
        if self._mode != "replica":
            del self._mode

    # ---- indexing -------------------------------------------------------------------------
    @on_plain
    def __getitem__(self, key: Any) -> Any:
        """Global 0-based indexing: ints → a replicated scalar, slices → a codistributed
        copy, a boolean mask of the array's shape → a 1-D codistributed array."""
        return getitem(self, key)

    @adapted(on_inplace, None)
    def __setitem__(self, key: Any, value: Any) -> None:
        """``D[i, j] = v`` writes on the owning lab; slices and boolean masks as numpy
        (the value: a scalar, a replicated array, or a codistributed array)."""
        setitem(self, key, value)



# --------------------------------------------------------------------------- numpy functions as methods
def _method(name: str) -> Any:
    def call(a: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(a, name)(*args, **kwargs)

    call.__name__ = name
    return call


_np_fn: Any
for _np_fn, _name in [(np.sum, "sum"), (np.prod, "prod"), (np.min, "min"), (np.max, "max"),
                      (np.amin, "min"), (np.amax, "max"), (np.mean, "mean"), (np.std, "std"),
                      (np.var, "var"), (np.any, "any"), (np.all, "all"), (np.argmax, "argmax"),
                      (np.argmin, "argmin")]:
    implements(_np_fn)(_method(_name))
del _np_fn, _name


@implements(np.copy)
def _np_copy(a: Any, order: str = "K", subok: bool = False) -> Any:
    return a.copy()


@implements(np.shape)
def _np_shape(a: Any) -> tuple:
    return tuple(a.shape)


@implements(np.ndim)
def _np_ndim(a: Any) -> int:
    return a.ndim


@implements(np.size)
def _np_size(a: Any, axis: Any = None) -> int:
    return a.size if axis is None else a.shape[axis]


@implements(np.real)
def _np_real(a: Any) -> Any:
    return a.real


@implements(np.imag)
def _np_imag(a: Any) -> Any:
    return a.imag

