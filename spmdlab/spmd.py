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
from typing import Any, Callable

from . import runtime
from .blocksource import read_body
from .composite import Composite
from .errors import SpmdError
from .progress import Progress
from .protocol import Block


class _SkipBody(Exception):
    pass


def _input_spec(value: Any, pool) -> tuple:
    if isinstance(value, types.ModuleType) and value.__name__ != "__main__":
        return ("mod", value.__name__)
    hook = getattr(type(value), "_spmdlab_input", None)
    if hook is not None:
        return hook(value, pool)
    return ("val", value)


def _output_value(pool, key: int, summaries: dict[int, tuple], nlabs: int) -> Any:
    """A Composite, or a distributed array when every lab of the block holds a
    codistributed part of it."""
    if len(summaries) == nlabs and all(s[0] == "codist" for s in summaries.values()):
        from .distributed import distributed

        return distributed._from_labs(pool, key, summaries[1])
    return Composite._from_labs(pool, key, summaries)


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


def _block_size(m: int | None, n: int | None, numlabs: int) -> int:
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


def _check_counts(m, n) -> None:
    for value in (m, n):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"spmd takes whole numbers of labs >= 0, got {value!r}")
    if m is not None and n is not None and m > n:
        raise ValueError(f"spmd({m}, {n}): the minimum number of labs exceeds the maximum")


class spmd:
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
        _check_counts(m, n)
        self.m, self.n, self.pool, self.timeout = m, n, pool, timeout
        self._frame: types.FrameType | None = None

    def __enter__(self) -> None:
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
        from .pool import gcp

        pool = self.pool if self.pool is not None else gcp()
        pool.ensure_running()
        nlabs = _block_size(self.m, self.n, pool.numlabs)
        return run_body(pool, body, nlabs, frame.f_locals, frame.f_globals, timeout=self.timeout)

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


def print_sink(lab: int, stream: str, text: str) -> None:
    """Lab output as ``Lab N: <line>`` (the pool's default), looked up when called."""
    from .pool import print_sink as sink

    sink(lab, stream, text)


def run_body(pool, body, nlabs: int, local_vars, global_vars, timeout: float | None = None,
             sink=None, echo: bool = False, replies_out: dict | None = None) -> dict[str, Any]:
    """Run a checked ``Body`` on labs 1..nlabs with the client values it reads (looked
    up in ``local_vars`` then ``global_vars``); the names it assigns, as Composites or
    distributed arrays. ``sink`` receives lab output; ``replies_out`` the labs' replies."""
    inputs = {}
    for name in body.reads:
        if name in local_vars:
            inputs[name] = _input_spec(local_vars[name], pool)
        elif name in global_vars:
            inputs[name] = _input_spec(global_vars[name], pool)
    outputs = {name: pool.new_key() for name in body.writes}
    block = Block(epoch=0, source=body.source, filename=body.filename, firstlineno=body.firstlineno,
                  inputs=inputs, outputs=outputs, nlabs=nlabs if nlabs < pool.numlabs else 0)
    if echo:
        block.echo = True
    with Progress(nlabs) as progress:
        replies = pool.run(block, sink=progress.wrap(sink or print_sink), timeout=timeout)
    if replies_out is not None:
        replies_out.update(replies)
    results = {}
    for name, key in outputs.items():
        summaries = {lab: r[2]["summaries"][name] for lab, r in replies.items()
                     if r[2] and name in r[2]["summaries"]}
        if summaries:
            results[name] = _output_value(pool, key, summaries, nlabs)
        else:
            pool.free_later(key, pool.generation)
    return results


def spmd_run(fn: Callable, *args: Any, n: int | None = None, pool=None, timeout: float | None = None,
             **kwargs: Any):
    """The function form of spmd, for code whose source cannot be read (``python -c``,
    the plain prompt): every lab calls ``fn(*args, **kwargs)``; returns a Composite of the
    results (a distributed array if every lab returns a codistributed part). Composite
    and distributed arguments arrive on each lab as its own element / part.

    >>> ranks = spmd_run(lambda: labindex())     # doctest: +SKIP
    >>> list(ranks)
    [1, 2, 3, 4]
    """
    from .pool import gcp

    pool = pool if pool is not None else gcp()
    pool.ensure_running()
    nlabs = _block_size(n, None, pool.numlabs)
    inputs = {"__spmd_fn": ("val", fn)}
    call = []
    for i, arg in enumerate(args):
        inputs[f"__spmd_a{i}"] = _input_spec(arg, pool)
        call.append(f"__spmd_a{i}")
    for name, arg in kwargs.items():
        inputs[f"__spmd_k_{name}"] = _input_spec(arg, pool)
        call.append(f"{name}=__spmd_k_{name}")
    key = pool.new_key()
    block = Block(epoch=0, source=f"ans = __spmd_fn({', '.join(call)})\n", filename="<spmd_run>",
                  inputs=inputs, outputs={"ans": key}, nlabs=nlabs if nlabs < pool.numlabs else 0)
    try:
        with Progress(nlabs) as progress:
            replies = pool.run(block, sink=progress.wrap(print_sink), timeout=timeout)
    except (SpmdError, KeyboardInterrupt) as exc:
        # shown from here: the caller's line, not the pool's internals
        raise exc.with_traceback(None) from None
    summaries = {lab: r[2]["summaries"]["ans"] for lab, r in replies.items() if r[2] and "ans" in r[2]["summaries"]}
    return _output_value(pool, key, summaries, nlabs)


labindex = runtime.labindex
numlabs = runtime.numlabs
