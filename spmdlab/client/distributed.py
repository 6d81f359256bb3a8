"""``distributed``: the client's handle to an array whose parts live on the labs (DESIGN §3).

``distributed(X)`` scatters a client array over the current pool, streaming each lab only
its own part (one ``set`` request per lab, the part pickled when that lab's message is
sent, out of band: never a full copy per lab; ``scatter``). On the labs the value is a
``codistributed`` array, so a ``distributed`` used in ``spmd`` *is* the codistributed
array there, and a codistributed array assigned in ``spmd`` comes back as a
``distributed``. ``gather(D)`` fetches the parts (one ``call`` per lab) and assembles them.

numpy operations on a ``distributed`` (arithmetic, comparisons, ufuncs, numpy functions,
reductions, indexing) run on the labs: a small block applies the same operation to the
codistributed arrays there and the result comes back as a new ``distributed`` (or, when
the labs' result is not codistributed, e.g. a full reduction, as lab 1's value).
Lab storage is freed when the client drops its last reference.
"""
from __future__ import annotations

import functools
import math
import operator
import weakref
from typing import Any, Callable, Optional, TypeVar

import numpy as np

from ..arrays.array import codistributed
from ..arrays.base import check_codist_arg as _check_codist_arg
from ..arrays.base import check_dtype as _check_dtype
from ..arrays.base import is_plain as _is_plain
from ..arrays.base import numlabs_of as _codist_numlabs
from ..arrays.calls import construct, labs_holding, placed, to_codistributed
from ..arrays.io import load as _io_load
from ..errors import SpmdError, labs_words
from ..layouts.codistributor import codistributor1d
from ..protocol.calls import Ref, call_method, get_attr, map_leaves, split, ufunc_method
from ..protocol.messages import Call, Get, Input, Summary
from ..protocol.values import is_handle
from .crosscopy import gather_across
from .display import distributed_html
from .execute import register_handle, run_block
from .habits_array import DistributedHabits
from .parts import gather_plain
from .pool import gcp
from .preview import corner_text, fetch_corner
from .scatter import scatter_parts

__all__ = ["distributed", "isdistributed", "on_labs", "register_input", "run_on_labs"]


_D = TypeVar("_D", bound="distributed")
# Inputs another handle scatters, ``(accepts(X), scatter(X, codist, pool))``: registered
# by its module (distributed_sparse: scipy.sparse matrices), which client/__init__ imports.
_OTHER_INPUTS: list[tuple[Callable[[Any], bool], Callable[..., Any]]] = []


def register_input(accepts: Callable[[Any], bool], scatter: Callable[..., Any]) -> None:
    """``distributed(X)`` for an X that ``accepts``: ``scatter(X, codist, pool)``."""
    _OTHER_INPUTS.append((accepts, scatter))


# --------------------------------------------------------------------------- running on the labs
def _encode(x: Any, refs: list) -> Any:
    """``x`` with each distributed array replaced by ``Ref("d<i>")``, the array in ``refs``."""
    def leaf(v: Any) -> Any:
        if isinstance(v, distributed):
            for i, d in enumerate(refs):
                if d is v:
                    return Ref(f"d{i}")
            refs.append(v)
            return Ref(f"d{len(refs) - 1}")
        if is_handle(v):
            raise TypeError(f"a {type(v).__name__} cannot be combined with a distributed array at "
                            "the client; use both inside spmd")
        return v

    return map_leaves(x, leaf)


def _run(fn, args: tuple = (), kwargs: Optional[dict] = None, *, pool=None, nlabs: Optional[int] = None,
         nout: int = 1, tuples: bool = False):
    """Run ``fn(*args, **kwargs)`` on the labs, with every ``distributed`` in the
    arguments replaced by its codistributed array there. Codistributed results come back
    as ``distributed``, other results as lab 1's value. ``nout > 1``: ``fn`` returns that
    many values; ``tuples``: a tuple result (up to 8 items) is split the same way."""
    refs: list = []
    targs = _encode(tuple(args), refs)
    tkw = _encode(dict(kwargs or {}), refs)
    if pool is None:
        if refs:
            pool = refs[0]._pool
        else:
            pool = gcp()
    for d in refs:
        d._check_pool(pool)
    if nlabs is None:
        nlabs = refs[0]._nlabs if refs else pool.numlabs
    for d in refs:
        if d._nlabs != nlabs:
            raise ValueError(f"distributed arrays on different numbers of labs ({d._nlabs} and "
                             f"{nlabs}) cannot be combined")
    names = [f"R{i}" for i in range(nout if nout > 1 else (_MAX_TUPLE if tuples else 0))]
    if nout == 1:
        names.append("ans")
    call = (split, (fn, nout, tuples, *targs), tkw)
    outcome = run_block(pool, call=call, filename="<distributed>", refs={f"d{i}": d._key for i, d in enumerate(refs)},
                        outputs=names, nlabs=nlabs)
    results = {name: _result(pool, value) for name, value in outcome.values.items()}
    if nout > 1:
        return tuple(results.get(f"R{i}") for i in range(nout))
    value = results.get("ans")
    if tuples and type(value) is tuple and len(value) == 2 and value[0] == "__tuple__":
        return tuple(results.get(f"R{i}") for i in range(value[1]))
    return value


_MAX_TUPLE = 8


def on_labs(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, a function of codistributed arrays, made to take client ``distributed``
    arrays too: when one is among its arguments the call runs on the labs (codistributed
    results come back as ``distributed``, a tuple of them as a tuple); otherwise ``fn``
    runs where it is called (inside ``spmd``, or on plain numpy arrays).

    >>> mldivide = on_labs(linalg.mldivide)          # doctest: +SKIP
    """
    @functools.wraps(fn)
    def either(*args: Any, **kwargs: Any) -> Any:
        if any(isinstance(v, distributed) for v in (*args, *kwargs.values())):
            return _run(fn, args, kwargs, tuples=True)
        return fn(*args, **kwargs)

    return either


def run_on_labs(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` run on every lab of the current pool (``distributed``
    arguments arrive as their codistributed arrays); codistributed results come back as
    ``distributed``, others as lab 1's value."""
    return _run(fn, args, kwargs, tuples=True)


def _result(pool, handle: Any) -> Any:
    """A distributed result as is; any other result as lab 1's value (then freed)."""
    if isinstance(handle, distributed):
        return handle
    try:  # lab 1's, or the first lab's of a grid (labs outside a grid hold an empty "subgrid")
        lab = min((k for k, s in handle._summaries.items() if s.kind != "subgrid"), default=1)
        first = handle._summaries.get(lab)
        if first is None or (first.kind == "scalar" and first.type_name == "NoneType"):
            return None
        reply = pool.request(lab, Get(handle._key))
        return reply.result if reply.kind == "value" else None
    finally:
        pool.free_later(handle._key, pool.generation)


# --------------------------------------------------------------------------- the class
def _binary(op):
    def method(self, other):
        return _run(op, (self, other))

    method.__name__ = f"__{op.__name__.strip('_')}__"
    return method


def _reflected(op):
    def method(self, other):
        return _run(op, (other, self))

    method.__name__ = f"__r{op.__name__.strip('_')}__"
    return method


def _cast_probe(op, dtype: np.dtype, other: Any) -> None:
    """numpy's casting error for ``D op= other`` raised at the client, before the labs run:
    the same operation on one element of each dtype (a Python scalar as it is, NEP 50)."""
    if op is operator.imatmul:
        return
    if isinstance(other, distributed) or isinstance(other, np.ndarray):
        other = np.zeros(1, dtype=other.dtype)
    elif not np.isscalar(other):
        return
    with np.errstate(all="ignore"):
        op(np.zeros(1, dtype=dtype), other)


def _one(x: Any) -> Any:
    """One element of ``x``'s dtype (a scalar as it is: NEP 50 treats Python scalars apart)."""
    if isinstance(x, (distributed, np.ndarray)):
        return np.zeros(1, dtype=x.dtype)
    return np.zeros(1, dtype=np.asarray(x).dtype) if np.ndim(x) else x


def _out_probe(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> None:
    """numpy's casting error for ``ufunc(..., out=...)`` raised at the client (numpy's own,
    on one element of each dtype) before the labs run."""
    rest = {k: v for k, v in kwargs.items() if k != "out"}
    if any(isinstance(v, distributed) or np.ndim(v) for v in rest.values()):
        return  # where= and the like: the labs decide
    out = kwargs["out"]
    outs = tuple(None if o is None else _one(o) for o in (out if isinstance(out, tuple) else (out,)))
    with np.errstate(all="ignore"):
        ufunc(*(_one(x) for x in inputs), out=outs, **rest)


def _inplace(op):
    def method(self, other):
        _cast_probe(op, self.dtype, other)
        _run(op, (self, other))  # the labs update their parts in place
        return self

    method.__name__ = f"__{op.__name__.strip('_')}__"
    return method


def _unary(op):
    def method(self):
        return _run(op, (self,))

    method.__name__ = f"__{op.__name__.strip('_')}__"
    return method


def _constructor(name: str, doc: str = "") -> Any:
    """``distributed.<name>(*args, pool=None, **kwargs)``: codistributed.<name> on the labs."""
    def make(cls: Any, *args: Any, **kwargs: Any) -> "distributed":
        return cls._construct(name, args, kwargs)

    make.__name__, make.__doc__ = name, doc or f"``distributed.{name}(...)``, built on the labs."
    return classmethod(make)


def _forward(name: str, doc: str = ""):
    def method(self, *args, **kwargs):
        return _run(call_method, (self, name, *args), kwargs, tuples=name == "nonzero")

    method.__name__ = name
    method.__doc__ = doc or f"``D.{name}(...)`` computed on the labs (as numpy's ``{name}``)."
    return method


class distributed(DistributedHabits):
    """A client handle to an array distributed over the labs of a pool.

    ``distributed(X)`` scatters the numpy array ``X`` over the current pool with the
    default codistributor (or ``codist=``), each lab receiving only its part.
    ``distributed.zeros/ones/rand/randn/eye/...`` build one on the labs. ``gather(D)``
    returns the numpy array. numpy operations run on the labs.

    >>> D = distributed(np.arange(12.0).reshape(3, 4))      # doctest: +SKIP
    >>> gather(D * 2).sum()
    132.0
    """

    __array_priority__ = 30.0
    __hash__ = None  # type: ignore[assignment]

    def __new__(cls, X: Any = None, codist=None, *, pool=None):
        for accepts, scatter in _OTHER_INPUTS:  # e.g. a scipy.sparse matrix (distributed_sparse)
            if accepts(X):
                return scatter(X, codist, pool)
        grid = getattr(codist, "Grid", None)
        if grid is None or is_handle(X) or grid.is_full(getattr(pool if pool is not None else gcp(), "numlabs", 0)):
            return super().__new__(cls)
        return distributed(X, pool=pool).redistribute(codist)  # on a grid of some labs: scattered, then moved

    def __init__(self, X: Any, codist=None, *, pool=None):
        _check_codist_arg(codist, "distributed(X)")
        if isinstance(X, distributed):
            other = _run(to_codistributed, (X, codist))
            self._bind(other._pool, other._key, other._shape, other._dtype, other._codist)
            other._finalizer.detach()
            return
        if isinstance(X, codistributed):
            raise TypeError("distributed(X) takes a client array; a codistributed array lives on "
                            "the labs (assign it in spmd to get a distributed)")
        if is_handle(X):
            raise TypeError(f"distributed(X) takes an array, not a {type(X).__name__}")
        pool = pool if pool is not None else gcp()
        pool.ensure_running()
        X = np.asarray(X)
        error = _check_dtype(X.dtype)
        if error:
            raise TypeError(f"distributed(X): {error}")
        target = placed(codist, X.shape, pool.numlabs, pool.settings.distribute_size)  # small: whole on lab 1
        self._bind(pool, scatter_parts(pool, X, target), X.shape, X.dtype, target)

    def _on_labs(self, fn: Any, args: tuple, kwargs: Optional[dict] = None) -> Any:
        return _run(fn, args, kwargs)

    def _bind(self, pool, key: int, shape, dtype, codist) -> None:
        self._pool = pool
        self._key = key
        self._shape = tuple(shape)
        self._dtype = np.dtype(dtype)
        self._codist = codist
        self._nlabs = _codist_numlabs(codist)
        self._generation = pool.generation
        self._finalizer = weakref.finalize(self, pool.free_later, key, self._generation)

    @property
    def store_key(self) -> int:
        """The key under which the labs keep this array's parts (one per handle)."""
        return self._key

    @classmethod
    def _from_labs(cls: type[_D], pool, key: int, summary: Summary) -> _D:
        """The handle for a codistributed array stored under ``key`` on the labs."""
        self = cls.__new__(cls)
        codist = summary.layout
        if codist is None:
            codist = pool.request(1, Call(get_attr, key, ("_codist",))).result
        self._bind(pool, key, summary.shape, summary.type_name, codist)
        return self

    # ---- checks ----------------------------------------------------------------------
    def _live_pool(self):
        pool = self._pool
        if pool.state == "closed" or pool.generation != self._generation:
            raise SpmdError("this distributed array's data was lost: the pool that held it stopped")
        return pool

    def _check_pool(self, pool) -> None:
        if pool is not self._pool:
            raise ValueError("a distributed array can only be used on the pool that holds it")
        self._live_pool()

    def _spmdlab_input(self, pool) -> Input:
        """How this value enters an spmd block: each lab's codistributed array."""
        self._check_pool(pool)
        return Input("ref", self._key)

    # ---- reading ---------------------------------------------------------------------
    def _spmdlab_gather(self) -> np.ndarray:
        """Fetch the parts and assemble them (``crosscopy``, else ``parts.gather_plain``)."""
        pool = self._live_pool()
        n, codist = self._nlabs, self._codist
        out = np.empty(self._shape, dtype=self._dtype)
        if out.size == 0 or gather_across(pool, self._key, out, codist, n):  # one machine, large: copied across
            return out
        if not _is_plain(codist):  # halos, blocks, chunk maps: moved to a plain layout first
            return _run(to_codistributed, (self, codistributor1d()), pool=pool)._spmdlab_gather()
        return gather_plain(pool, self._key, out, codist, n)

    def gather(self) -> np.ndarray:
        """The whole array, as a numpy array at the client."""
        return self._spmdlab_gather()

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def numlabs_used(self) -> int:
        """How many labs hold a part (1 for an array below ``SPMDLAB_DISTRIBUTE_SIZE``)."""
        return labs_holding(self._codist, self._nlabs)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    def __len__(self) -> int:
        return self._shape[0]

    @property
    def codistributor(self) -> Any:
        return self._codist

    def _head(self) -> str:
        """Where the array lives, as its display's first line names it (after the shape
        and dtype): the labs, and for block layouts Dagger's words for the partitions."""
        labs = labs_words(list(range(1, self._nlabs + 1)))
        parts = getattr(self._codist, "partitions_text", None)
        return f"on {labs}{' ' + parts() if parts else ''}"

    def __repr__(self) -> str:
        head = f"distributed array, shape {self._shape}, dtype {self._dtype}, {self._head()}\n  {self._codist!r}"
        if self._pool.state == "closed" or self._pool.generation != self._generation:
            return head + "\n  (data lost: the pool stopped)"
        values = self._values_text()
        return head if values is None else head + "\n  " + values.replace("\n", "\n  ")

    def _values_text(self) -> Optional[str]:
        """The values as numpy's repr shows them (a small array whole, a big one's corners),
        only those elements fetched; None while the pool is busy or gone."""
        if self._pool.state != "idle" or self._pool.generation != self._generation:
            return None
        try:
            return corner_text(*fetch_corner(self._pool, self._key, self._nlabs, self._shape, self._dtype))
        except Exception:  # a display must not fail
            return None

    def _repr_html_(self) -> str:
        return distributed_html(self, self._nlabs, self._values_text(), self._pool, self._generation)

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError("the truth value of a distributed array with more than one element "
                             "is ambiguous; use any() or all()")
        return bool(self.gather().reshape(()))

    def __iter__(self):
        raise TypeError("iterating over a distributed array would fetch it element by element; "
                        "gather(D) first, or index it")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("a distributed array does not convert to a numpy array implicitly: use gather(D) "
                        "(fetches the whole array to the client), or run numpy on D itself (it runs on the labs)")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("cannot pickle a distributed array: it is a handle to parts held by the labs, which "
                        "end with the pool; save it with spmdlab.save(path, D) or np.save(path, D) (each lab "
                        "writes its part; spmdlab.load reads it back), or pickle gather(D), the numpy array")

    def __copy__(self) -> "distributed":
        return self.copy()

    def __deepcopy__(self, memo: Any) -> "distributed":
        return self.copy()

    # ---- numpy ---------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        if out is not None and method == "__call__":
            _out_probe(ufunc, inputs, kwargs)
        if method == "__call__":
            result = _run(ufunc, inputs, kwargs, nout=ufunc.nout)
        else:
            result = _run(ufunc_method, (ufunc, method, *inputs), kwargs)
        if out is not None:  # the labs wrote into the out arrays; hand those back
            outs = out if isinstance(out, tuple) else (out,)
            if all(isinstance(o, distributed) for o in outs):
                return outs[0] if len(outs) == 1 else outs
        return result

    def __array_function__(self, func, types, args, kwargs):
        result = _run(func, args, kwargs, tuples=True)
        out = kwargs.get("out")
        return out if isinstance(out, distributed) else result  # the labs wrote into out

    def __getitem__(self, index):
        return _run(operator.getitem, (self, index))

    def __setitem__(self, index, value) -> None:
        _run(operator.setitem, (self, index, value))

    @property
    def T(self) -> "distributed":
        """The transpose, computed on the labs."""
        return _run(get_attr, (self, "T"))

    @property
    def real(self) -> "distributed":
        return _run(get_attr, (self, "real"))

    @property
    def imag(self) -> "distributed":
        return _run(get_attr, (self, "imag"))

    def astype(self, dtype: Any, copy: bool = True) -> "distributed":
        """The array converted to ``dtype`` (on the labs)."""
        return _run(call_method, (self, "astype", dtype), {"copy": copy})

    def copy(self) -> "distributed":
        """A copy, on the labs."""
        return _run(call_method, (self, "copy"))

    def redistribute(self, codist: Any) -> "distributed":
        """The array with another layout, moved lab to lab (never through the client)."""
        return _run(to_codistributed, (self, codist))

    # ---- constructors (built on the labs) ---------------------------------------------
    @classmethod
    def load(cls, path: Any, codist: Any = None) -> "distributed":
        """The array in the .npy file ``path``, read by the labs, each its own part
        (``spmdlab.load``)."""
        return _run(_io_load, (path,), {"codist": codist})

    @classmethod
    def _construct(cls, name: str, args: tuple, kwargs: dict) -> "distributed":
        pool = kwargs.pop("pool", None)
        pool = gcp() if pool is None else pool
        assert pool is not None
        result = _run(construct, (name, args, kwargs, pool.settings.distribute_size), pool=pool)
        if not isinstance(result, distributed):
            raise TypeError(f"distributed.{name} did not produce a distributed array")
        return result

    zeros = _constructor("zeros", "``distributed.zeros(m, n, ..., codist=, dtype=, pool=)``, built on the labs.")
    ones = _constructor("ones")
    eye = _constructor("eye")
    rand = _constructor("rand", "Uniform [0, 1) values, a different stream per lab; ``seed=`` to reproduce.")
    randn = _constructor("randn")
    randi = _constructor("randi")
    inf = _constructor("inf")
    nan = _constructor("nan")
    true = _constructor("true")
    false = _constructor("false")
    colon = _constructor("colon")
    linspace = _constructor("linspace")
    # sparse matrices (a distributedSparse handle)
    speye = _constructor("speye", "``distributed.speye(m, n, codist)``: the sparse identity, built on the labs.")
    sprand = _constructor("sprand", "``distributed.sprand(m, n, density, codist, seed=)``: built on the labs.")
    sprandn = _constructor("sprandn")
    spdiags = _constructor("spdiags")


for _name, _op in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("matmul", operator.matmul),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("lshift", operator.lshift), ("rshift", operator.rshift)]:
    setattr(distributed, f"__{_name}__", _binary(_op))
    setattr(distributed, f"__r{_name}__", _reflected(_op))
    setattr(distributed, f"__i{_name}__", _inplace(getattr(operator, f"i{_name.rstrip('_')}")))
for _name, _op in [("lt", operator.lt), ("le", operator.le), ("eq", operator.eq),
                   ("ne", operator.ne), ("gt", operator.gt), ("ge", operator.ge)]:
    setattr(distributed, f"__{_name}__", _binary(_op))
for _name, _op1 in [("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs),
                    ("invert", operator.invert)]:
    setattr(distributed, f"__{_name}__", _unary(_op1))
setattr(distributed, "__divmod__", lambda self, other: _run(divmod, (self, other), nout=2))
setattr(distributed, "__rdivmod__", lambda self, other: _run(divmod, (other, self), nout=2))
for _name in ["sum", "prod", "min", "max", "mean", "std", "var", "any", "all", "argmax", "argmin",
              "cumsum", "cumprod", "transpose", "reshape", "conj", "conjugate", "round", "clip",
              "dot", "ravel", "flatten", "squeeze", "nonzero", "fill"]:
    setattr(distributed, _name, _forward(_name))
del _name, _op, _op1


register_handle("codist", distributed._from_labs)


def isdistributed(X: Any) -> bool:
    """True if ``X`` is a (client) distributed array."""
    return isinstance(X, distributed)
