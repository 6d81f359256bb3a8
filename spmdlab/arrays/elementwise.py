"""Elementwise operations of codistributed arrays: operators, ufuncs, np.where/clip/....

Operands are aligned to the result's layout (the first codistributed operand with the
result's shape; the layout rules are in docs/design.md §12) and each lab applies the numpy
function to its local parts. An operator whose operand is an unnamed temporary writes
the result into it, as numpy does for ``L * 2 + 1`` (see ``elision``).
"""
from __future__ import annotations

import numbers
import sys
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..layouts.regions import take
from . import elision, threads
from .adapt import adapted_call, assign, needs_adapting
from .base import NOVALUE, CodistArray, describe, layout_text, parts_of
from .elision import is_temporary, note_result
from .layout import labs_of, local_sel
from .registry import implements
from .transfer import gather, redistribute

__all__ = ["is_operand", "local_operand", "elementwise", "ufunc_call", "binary_op", "unary_op",
           "inplace_op", "write_into"]


def is_operand(x: Any) -> bool:
    return isinstance(x, (CodistArray, np.ndarray, numbers.Number, np.generic, list, tuple))


def _prep(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    return x


def local_operand(x: Any, codist: Any, G: tuple, lab: int, n: int, what: str) -> Any:
    """The part of operand ``x`` matching this lab's part of the result (layout codist)."""
    if isinstance(x, CodistArray):
        labs_of(x, what)
        if tuple(x.shape) == G:
            return x._local if x._codist == codist else redistribute(x, codist)._local
        x = gather(x)  # a smaller operand that broadcasts: every lab takes it whole
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            return x
        a = x.reshape((1,) * (len(G) - x.ndim) + x.shape) if x.ndim < len(G) else x
        sel = local_sel(codist, lab, n)
        sel = tuple(slice(None) if a.shape[e] == 1 and G[e] != 1 else s for e, s in enumerate(sel))
        return take(a, sel)
    return x


def elementwise(what: str, fn: Callable, operands: Sequence, out: Optional[tuple] = None) -> Any:
    """Apply ``fn`` (a numpy function of the local parts) to aligned operands."""
    operands = [_prep(x) for x in operands]
    shapes = [tuple(x.shape) if isinstance(x, CodistArray) else np.shape(x) for x in operands]
    try:
        G = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{what}: operands could not be broadcast together with shapes "
                         + " ".join(str(s) for s in shapes)) from None
    if out is not None:
        for o in out:
            if tuple(o.shape) != G:
                raise ValueError(f"{what}: the output has shape {o.shape} but the result has "
                                 f"shape {G}")
        base = out[0]
        for o in out[1:]:
            if o._codist != base._codist:
                raise NotImplementedError(f"{what}: outputs with different layouts "
                                          f"({layout_text(base._codist)} and {layout_text(o._codist)}) "
                                          "are not supported")
    else:
        base = next((x for x in operands if isinstance(x, CodistArray) and tuple(x.shape) == G), None)
        if base is None:
            raise NotImplementedError(
                f"{what}: broadcasting {', '.join(describe(x) for x in operands)} to the "
                f"shape {G} is not supported for codistributed arrays: one codistributed "
                "operand must have the result's shape")
    lab, n = labs_of(base, what)
    codist = base._codist
    locs = [local_operand(x, codist, G, lab, n, what) for x in operands]
    if out is not None:
        threads.apply(fn, locs, tuple(o._local for o in out))  # split over threads when large
        return out[0] if len(out) == 1 else tuple(out)
    res = threads.apply(fn, locs)
    if isinstance(res, tuple):
        return tuple(type(base)._from_local(np.asarray(r), codist) for r in res)
    return type(base)._from_local(np.asarray(res), codist)


def ufunc_call(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> Any:
    what = f"numpy.{ufunc.__name__}"
    out = kwargs.pop("out", None)
    if out is not None:
        out = out if isinstance(out, tuple) else (out,)
        if any(o is None for o in out):
            if all(o is None for o in out):
                out = None
            else:
                raise NotImplementedError(f"{what}: out= must give every output as a codistributed "
                                          "array, not None (inputs: "
                                          + ", ".join(describe(x) for x in inputs) + ")")
        elif not all(isinstance(o, CodistArray) for o in out):
            raise NotImplementedError(f"{what}: out= must be codistributed arrays, got "
                                      + ", ".join(describe(o) for o in out) + " for inputs "
                                      + ", ".join(describe(x) for x in inputs))
    where = kwargs.pop("where", True)
    operands = list(inputs)
    has_where = where is not True
    if has_where:
        operands.append(where)
    nin = len(inputs)

    def fn(*locs, out=None):
        extra = dict(kwargs)
        if has_where:
            extra["where"] = locs[nin]
        if out is not None:
            extra["out"] = out
        return ufunc(*locs[:nin], **extra)

    return elementwise(what, fn, operands, out)



# --------------------------------------------------------------------------- operators
_ELIDE_BYTES = 256 * 1024  # as numpy: below this an allocation is cheap


_CAN_ELIDE = elision.enabled() and np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _big(x: Any) -> bool:
    return _CAN_ELIDE and isinstance(x, CodistArray) and x._local.nbytes >= _ELIDE_BYTES


def _dtype_arg(x: Any):
    """What ``ufunc.resolve_dtypes`` needs for an operand (NEP 50: Python scalars weak)."""
    if isinstance(x, (CodistArray, np.ndarray, np.generic)):
        return x.dtype
    if type(x) in (int, float, complex):
        return type(x)
    if type(x) is bool:
        return np.dtype(bool)
    return None


def _reusable(target, ufunc: np.ufunc, operands: tuple) -> bool:
    """Can ``target`` (an unnamed temporary operand) take the result of ``ufunc`` on
    ``operands``? Only if it owns its buffer, nothing else refers to that buffer, and
    the result would have its dtype and layout anyway."""
    if ufunc.nout != 1:
        return False
    L = target.__dict__.get("_local")
    if type(L) is not np.ndarray or L.base is not None or not L.flags.writeable \
            or not L.flags.owndata or sys.getrefcount(L) != 3:  # dict, L, getrefcount's argument
        return False
    del L
    dts = [_dtype_arg(x) for x in operands]
    if any(d is None for d in dts):
        return False
    try:
        if ufunc.resolve_dtypes(tuple(dts) + (None,))[-1] != target.dtype:
            return False
    except (TypeError, ValueError):
        return False
    shapes = [tuple(x.shape) if isinstance(x, CodistArray) else np.shape(x) for x in operands]
    try:
        G = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return False
    base = next(x for x in operands if isinstance(x, CodistArray) and tuple(x.shape) == G) \
        if tuple(target.shape) == G else None
    return base is not None and base._codist == target._codist



def write_into(ufunc: np.ufunc, operands: tuple, target: CodistArray) -> Any:
    """``ufunc(*operands)`` written into ``target``, an unnamed temporary operand."""
    return ufunc_call(ufunc, operands, {"out": (target,)})


_SQUARE_ANY_DTYPE = (np.ones(1, dtype=bool) ** 2).dtype == np.dtype(np.int8)


def _fast_power(dtype: np.dtype, exponent: Any) -> Optional[np.ufunc]:
    """The unary ufunc numpy's ``**`` operator uses for ``array ** exponent``, if any."""
    inexact = dtype.kind in "fc"
    if type(exponent) is int:
        if exponent == 2 and (inexact or (_SQUARE_ANY_DTYPE and dtype.kind in "biu")):
            return np.square
        if exponent == -1 and inexact:
            return np.reciprocal
    elif type(exponent) is float and exponent == 0.5 and inexact:
        return np.sqrt
    return None


def binary_op(ufunc: np.ufunc, reflected: bool = False) -> Any:
    # is_temporary must be called from `op` itself, before anything else refers to
    # the operand (it counts references and reads the caller's frame).
    def op(self, other, modulo=None):
        if modulo is not None:
            raise NotImplementedError(f"pow(D, e, modulo) is not supported for codistributed arrays "
                                      f"({describe(self)})")
        if not is_operand(other):
            return NotImplemented
        if needs_adapting(self) or needs_adapting(other):  # halos, blocks, chunk maps, modes
            fast = _fast_power(self.dtype, other) if ufunc is np.power and not reflected else None
            if fast is not None:  # numpy's ** fast path (bool ** 2 is int8), in every layout
                return adapted_call(fast, (self,), {}, lambda ops, kw: ufunc_call(fast, ops, kw))
            return adapted_call(ufunc, (other, self) if reflected else (self, other), {},
                                lambda ops, kw: ufunc_call(ufunc, ops, kw))
        if _big(self) and is_temporary(self, "right" if reflected else "left"):
            temporary = self
        elif _big(other) and is_temporary(other, "left" if reflected else "right"):
            temporary = other
        else:
            temporary = None
        operands = (other, self) if reflected else (self, other)  # only now: it adds references
        fn = ufunc
        if ufunc is np.power and not reflected:
            fast = _fast_power(self.dtype, other)
            if fast is not None:
                fn, operands = fast, (self,)
        if temporary is not None and _reusable(temporary, fn, operands):
            result = write_into(fn, operands, temporary)
            note_result(result)
            return result
        result = ufunc_call(fn, operands, {})
        if fn.nout == 1:
            note_result(result)
        return result

    op.__name__ = f"__{'r' if reflected else ''}{ufunc.__name__}__"
    return op


def unary_op(ufunc: np.ufunc) -> Any:
    def op(self):
        if needs_adapting(self):
            return adapted_call(ufunc, (self,), {}, lambda ops, kw: ufunc_call(ufunc, ops, kw))
        if _big(self) and is_temporary(self, "unary") and _reusable(self, ufunc, (self,)):
            result = write_into(ufunc, (self,), self)
        else:
            result = ufunc_call(ufunc, (self,), {})
        note_result(result)
        return result

    op.__name__ = f"__{ufunc.__name__}__"
    return op


def inplace_op(ufunc: np.ufunc) -> Any:
    def op(self, other):
        if not is_operand(other):
            return NotImplemented
        fast = _fast_power(self.dtype, other) if ufunc is np.power else None
        if fast is not None:
            ufunc_call(fast, (self,), {"out": (self,)})
        else:
            ufunc_call(ufunc, (self, other), {"out": (self,)})
        return self

    return op



# --------------------------------------------------------------------------- elementwise numpy functions
@implements(np.where)
def np_where(condition: Any, x: Any = NOVALUE, y: Any = NOVALUE) -> Any:
    if x is NOVALUE or y is NOVALUE:
        raise NotImplementedError("numpy.where with one argument (indices of nonzero elements) "
                                  f"is not supported for codistributed arrays ({describe(condition)}); "
                                  "use where(c, x, y) or nonzero(c)")
    return elementwise("numpy.where", np.where, [condition, x, y])


@implements(np.clip)
def np_clip(a: Any, a_min: Any = NOVALUE, a_max: Any = NOVALUE, out: Any = None, *, min: Any = NOVALUE,
            max: Any = NOVALUE, **kwargs: Any) -> Any:
    lo = a_min if a_min is not NOVALUE else (min if min is not NOVALUE else None)
    hi = a_max if a_max is not NOVALUE else (max if max is not NOVALUE else None)
    ops = [a]
    if lo is not None:
        ops.append(lo)
    if hi is not None:
        ops.append(hi)
    has_lo, has_hi = lo is not None, hi is not None

    def fn(x, *bounds, out=None):
        it = iter(bounds)
        l = next(it) if has_lo else None
        h = next(it) if has_hi else None
        if out is not None:
            return np.clip(x, l, h, out=out[0], **kwargs)
        return np.clip(x, l, h, **kwargs)

    if out is not None:
        if not isinstance(out, CodistArray):
            raise NotImplementedError(f"numpy.clip: out= must be a codistributed array, got "
                                      f"{describe(out)} for {describe(a)}")
        return elementwise("numpy.clip", fn, ops, (out,))
    return elementwise("numpy.clip", fn, ops)


@implements(np.round, np.around)
def np_round(a: Any, decimals: Any = 0, out: Any = None) -> Any:
    if out is not None:
        raise NotImplementedError(f"numpy.round: out= is not supported for codistributed arrays "
                                  f"({describe(a)})")
    return elementwise("numpy.round", lambda x: np.round(x, decimals), [a])


@implements(np.nan_to_num)
def np_nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    """numpy's ``nan_to_num`` part by part, in any layout; ``copy=False`` writes into ``x``'s
    own arrays (every stored copy of an element) and returns ``x``."""
    kw = {"nan": nan, "posinf": posinf, "neginf": neginf}
    if copy or not isinstance(x, CodistArray):
        if needs_adapting(x):
            return adapted_call(np.nan_to_num, (x,), kw, lambda a, k: np_nan_to_num(*a, **k))
        return elementwise("numpy.nan_to_num", lambda a: np.nan_to_num(a, **kw), [x])
    if x._mode == "replica":
        for part in parts_of(x):
            np.nan_to_num(part, copy=False, **kw)
    else:  # partial values (a combining mode): the replaced values of the whole, written back
        assign(x, np_nan_to_num(x, True, **kw))
    return x


np_nan_to_num._spmdlab_any_layout = True  # type: ignore[attr-defined]  # adapts itself (shapes.any_layout)


@implements(np.isclose)
def np_isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> Any:
    return elementwise("numpy.isclose",
                        lambda x, y: np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan), [a, b])


@implements(np.allclose)
def np_allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> Any:
    return bool(np_isclose(a, b, rtol, atol, equal_nan).all())


@implements(np.array_equal)
def np_array_equal(a1: Any, a2: Any, equal_nan: Any = False) -> Any:
    if tuple(np.shape(a1) if not isinstance(a1, CodistArray) else a1.shape) != \
            tuple(np.shape(a2) if not isinstance(a2, CodistArray) else a2.shape):
        return False
    if equal_nan:
        eq = elementwise("numpy.array_equal",
                          lambda x, y: (x == y) | (np.isnan(x) & np.isnan(y)), [a1, a2])
    else:
        eq = elementwise("numpy.array_equal", np.equal, [a1, a2])
    return bool(eq.all())

