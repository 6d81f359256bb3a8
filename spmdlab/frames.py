"""Which frames of a traceback are code the user wrote, not installed code.

Installed code is the standard library, site-packages (numpy's internals, scipy, this
library when installed), the interpreter's frozen modules (``<frozen importlib._bootstrap>``)
and Cython modules of installed packages, whose frames name a path relative to the
package (``numpy/random/_generator.pyx``). Typed input (``<pmode-3>``, ``Cell In[4]``)
and the user's files are the user's.
"""
from __future__ import annotations

import functools
import linecache
import os
import sysconfig
from traceback import FrameSummary
from typing import Callable, Sequence

__all__ = ["installed_dirs", "is_installed", "running_where"]

_CYTHON = (".pyx", ".pxd", ".pxi")


@functools.lru_cache(maxsize=1)
def installed_dirs() -> tuple[str, ...]:
    """Where this Python keeps the standard library and installed packages."""
    paths = sysconfig.get_paths()
    return tuple(sorted({paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}))


def is_installed(filename: str, dirs: Sequence[str] | None = None) -> bool:
    """True for a frame of installed code (see the module's docstring); ``dirs``: the
    installed directories (default :func:`installed_dirs`)."""
    if filename.startswith("<"):
        return filename.startswith("<frozen ")
    dirs = installed_dirs() if dirs is None else dirs
    if filename.endswith(_CYTHON) and not os.path.isabs(filename):
        top = filename.replace("\\", "/").split("/", 1)[0]
        return any(os.path.isdir(os.path.join(d, top)) for d in dirs)
    return any(filename == d or filename.startswith(d.rstrip("/") + "/") for d in dirs)


def running_where(frames: Sequence[FrameSummary], library: Callable[[str], bool] = lambda f: False) -> str:
    """Where a stopped lab was, for "lab 2: running line 7 of script.py": the innermost
    of ``frames`` that is neither installed code nor ``library`` code, nor code such code
    generated (a ``<string>`` that ``dataclasses`` compiled: called from such code, with
    no source in ``linecache``, where the user's typed input is)."""
    where = None
    inside = False
    for frame in frames:
        name = frame.filename
        if library(name) or is_installed(name):
            inside = True
        elif not (inside and name.startswith("<") and not linecache.getline(name, frame.lineno or 0)):
            where, inside = frame, False
    return "running" if where is None else f"running line {where.lineno} of {where.filename}"
