"""How code travels between the client and the labs: cloudpickle (functions and classes
defined at the client are sent by value), with each function's code keeping the name of
the file it came from.

cloudpickle 3.1 names the code of every function it sends by value ``<dynamic-code>``;
tracebacks and "running line N of ..." lines on the labs would then name no file. Here
each code object carries its file name again, and, when the labs cannot read that file (a
notebook cell, a line typed at a prompt: its lines live in the client's ``linecache``),
its lines, which the receiving side puts in its ``linecache``. Line numbers travel with
the code itself.
"""
from __future__ import annotations

import io
import linecache
import os
import pickle
import types
from collections import ChainMap
from collections.abc import Callable
from typing import Any

import cloudpickle

__all__ = ["dumps", "named_code"]

_reduce_code_by_value = cloudpickle.Pickler.dispatch_table[types.CodeType]


def named_code(rebuild: Callable[..., types.CodeType], args: tuple, filename: str,
               lines: list[str] | None) -> types.CodeType:
    """The code ``rebuild(*args)`` under ``filename``; ``lines``, when given, become that
    file's lines in ``linecache`` (what tracebacks show)."""
    if lines is not None:
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    return rebuild(*args).replace(co_filename=filename)


def _lines_elsewhere(filename: str) -> list[str] | None:
    """The lines of ``filename`` when they are not in a file on disk, else None."""
    if not filename.startswith("<") and os.path.exists(filename):
        return None
    return linecache.getlines(filename) or None


def _reduce_code(code: types.CodeType) -> tuple:
    rebuild, args = _reduce_code_by_value(code)
    return named_code, (rebuild, args, code.co_filename, _lines_elsewhere(code.co_filename))


class _Pickler(cloudpickle.Pickler):
    # cloudpickle's table is a ChainMap (its reducers, then copyreg's): one level, not two
    dispatch_table = ChainMap({types.CodeType: _reduce_code}, *cloudpickle.Pickler.dispatch_table.maps)


def dumps(obj: Any, buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None) -> bytes:
    """``cloudpickle.dumps(obj, protocol=5, buffer_callback=...)``, code keeping its file."""
    with io.BytesIO() as file:
        _Pickler(file, protocol=5, buffer_callback=buffer_callback).dump(obj)
        return file.getvalue()
