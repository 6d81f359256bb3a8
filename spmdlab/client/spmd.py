"""``with spmd():`` and its function form ``spmd_run`` (DESIGN §3).

``spmd.__enter__`` reads the body's source (``blocksource``), sends it with the client
values it reads to the labs, waits, and arms a one-shot opcode trace on the caller's
frame that raises ``_SkipBody`` before the body's first instruction, so the client never
runs it; ``__exit__`` swallows that exception and writes the assigned names back as
Composites (or distributed arrays) into the caller's frame, function locals included.
"""
from __future__ import annotations

import ctypes
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

from .. import runtime
from ..errors import SpmdError
from ..protocol.calls import Ref
from ..protocol.seam import Pool
from ..settings import check_timeout
from .blocksource import read_body
from .composite import Composite
from .console import print_sink
from .execute import Outcome, run_block
from .pool import gcp
from .progress import Progress

__all__ = ["spmd", "spmd_run", "run_body", "block_size", "check_counts", "labindex", "numlabs"]


class _SkipBody(Exception):
    pass


def _write_back(frame: types.FrameType, values: dict[str, Any]) -> None:
    if not values:
        return
    if frame.f_locals is frame.f_globals:
        frame.f_globals.update(values)
        return
    local_vars = frame.f_locals  # a snapshot before 3.13, a write-through proxy after
    for name, value in values.items():
        local_vars[name] = value
    if sys.version_info < (3, 13):
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))


def block_size(m: int | None, n: int | None, numlabs: int) -> int:
    """MATLAB: ``spmd(n)`` exactly n labs, ``spmd(m, n)`` at least m, at most n."""
    if m is None:
        return numlabs
    if n is None:
        if m > numlabs:
            raise ValueError(f"spmd({m}) needs {m} labs but the pool has {numlabs}")
        return m
    if m > numlabs:
        raise ValueError(f"spmd({m}, {n}) needs at least {m} labs but the pool has {numlabs}")
    return min(n, numlabs)


def check_counts(m: Any, n: Any) -> None:
    for value in (m, n):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"spmd takes whole numbers of labs >= 0, got {value!r}")
    if m is not None and n is not None and m > n:
        raise ValueError(f"spmd({m}, {n}): the minimum number of labs exceeds the maximum")


class _NeedsCall(type):
    """``with spmd:`` (MATLAB writes ``spmd ... end``) gets a hint instead of Python's
    "does not support the context manager protocol"."""

    def __enter__(cls) -> None:
        raise TypeError("`with spmd:` needs parentheses in Python: write `with spmd():` for every lab, or "
                        "`with spmd(n):` for labs 1..n (MATLAB's spmd ... end and spmd(n) ... end)")

    def __exit__(cls, *exc: Any) -> None:
        return None


class spmd(metaclass=_NeedsCall):
    """Run the body of a ``with`` statement on every lab of the pool.

    ``spmd()`` uses all labs, ``spmd(n)`` labs 1..n, ``spmd(m, n)`` between m and n labs,
    ``spmd(0)`` runs the body at the client. ``pool=`` picks a pool (default: the
    current one, started if needed); ``timeout=`` seconds turns a hang into an error.

    >>> with spmd():                       # doctest: +SKIP
    ...     x = labindex() * 10
    >>> x[2]
    20
    """

    def __init__(self, m: int | None = None, n: int | None = None, *, pool=None,
                 timeout: float | None = None):
        check_counts(m, n)
        self.m, self.n, self.pool, self.timeout = m, n, pool, check_timeout(timeout)
        self._frame: types.FrameType | None = None

    def __enter__(self) -> None:
        runtime.refuse_on_lab("with spmd()")
        frame = sys._getframe(1)
        body = read_body(frame.f_code.co_filename, frame.f_lineno, frame.f_globals)
        self._frame = frame
        self._body = body
        if self.m == 0 or (self.n == 0):
            self._on_client = True
            return None
        self._on_client = False
        # An error (or Ctrl-C) while the labs run is raised from the body's first line,
        # in the user's frame, so its traceback shows the user's code and no spmdlab frame.
        self._error: BaseException | None = None
        try:
            self._results = self._run_on_labs(frame, body)
        except (SpmdError, KeyboardInterrupt) as exc:
            self._error = exc.with_traceback(None)
        self._old_trace = sys.gettrace()
        sys.settrace(lambda *args: None)  # turns tracing on, so the frame's f_trace fires
        frame.f_trace_opcodes = True
        frame.f_trace = self._skip
        return None

    def _skip(self, frame, event, arg):
        if event == "opcode":
            if self._error is not None:
                raise self._error
            raise _SkipBody
        return self._skip

    def _run_on_labs(self, frame: types.FrameType, body) -> dict[str, Any]:
        pool = self.pool if self.pool is not None else gcp()
        pool.ensure_running()
        nlabs = block_size(self.m, self.n, pool.numlabs)
        return run_body(pool, body, nlabs, frame.f_locals, frame.f_globals, timeout=self.timeout).values

    def __exit__(self, exc_type, exc, tb) -> bool:
        frame, self._frame = self._frame, None
        if self._on_client:
            if exc_type is None:
                values = {**frame.f_globals, **frame.f_locals}
                _write_back(frame, {name: Composite._from_client(values[name])
                                    for name in self._body.writes if name in values})
            return False
        sys.settrace(self._old_trace)
        frame.f_trace = None
        frame.f_trace_opcodes = False
        if exc_type is _SkipBody:
            _write_back(frame, self._results)
            return True
        if exc is not None and exc is self._error and tb is not None:
            tb.tb_next = None  # drop this module's frame (the trace function raised it)
        self._error = None
        return False


def run_body(pool: Pool, body: Any, nlabs: int, local_vars: Mapping[str, Any], global_vars: Mapping[str, Any],
             timeout: float | None = None, sink: Callable[[int, str, str], None] | None = None,
             echo: bool = False) -> Outcome:
    """Run a checked ``Body`` on labs 1..nlabs with the client values it reads (looked
    up in ``local_vars`` then ``global_vars``), with the live "running" line while it
    runs. ``Outcome.values``: the names it assigns, as Composites or distributed arrays;
    ``Outcome.replies``: the labs' replies. ``sink`` receives lab output."""
    inputs = {}
    for name in body.reads:
        if name in local_vars:
            inputs[name] = local_vars[name]
        elif name in global_vars:
            inputs[name] = global_vars[name]
    with Progress(nlabs) as progress:
        return run_block(pool, source=body.source, filename=body.filename, firstlineno=body.firstlineno,
                         inputs=inputs, outputs=body.writes, nlabs=nlabs, timeout=timeout, echo=echo,
                         sink=progress.wrap(sink or print_sink))


def spmd_run(fn: Callable, *args: Any, n: int | None = None, pool: Pool | None = None, timeout: float | None = None,
             **kwargs: Any) -> Any:
    """The function form of spmd, for code whose source cannot be read (``python -c``,
    the plain prompt): every lab calls ``fn(*args, **kwargs)``; returns a Composite of the
    results (a distributed array if every lab returns a codistributed part). Composite
    and distributed arguments arrive on each lab as its own element / part.

    >>> ranks = spmd_run(lambda: labindex())     # doctest: +SKIP
    >>> list(ranks)
    [1, 2, 3, 4]
    """
    runtime.refuse_on_lab("spmd_run")
    timeout = check_timeout(timeout)
    pool = pool if pool is not None else gcp()
    pool.ensure_running()
    nlabs = block_size(n, None, pool.numlabs)
    inputs = {f"a{i}": arg for i, arg in enumerate(args)}
    inputs.update({f"k_{name}": arg for name, arg in kwargs.items()})
    call = (fn, tuple(Ref(f"a{i}") for i in range(len(args))), {name: Ref(f"k_{name}") for name in kwargs})
    try:
        with Progress(nlabs) as progress:
            outcome = run_block(pool, call=call, filename="<spmd_run>", inputs=inputs, outputs=["ans"],
                                nlabs=nlabs, timeout=timeout, sink=progress.wrap(print_sink))
    except (SpmdError, KeyboardInterrupt) as exc:
        # shown from here: the caller's line, not the pool's internals
        raise exc.with_traceback(None) from None
    return outcome.values.get("ans")


labindex = runtime.labindex
numlabs = runtime.numlabs
