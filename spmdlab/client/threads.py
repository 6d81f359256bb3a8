"""PDL's auto-threading calls, at the client and on the labs (``spmdlab.arrays.threads``).

Inside ``spmd`` they act on the lab that calls them; at the client they act on every lab
of the current pool (a pool is started if there is none), as PDL's ``set_autopthread_targ``
acts on its one process. A pool's starting values come from ``SPMDLAB_AUTOTHREAD_TARG`` /
``SPMDLAB_AUTOTHREAD_SIZE`` or ``parpool(n, threads=t)``.

>>> set_autothread_targ(2); set_autothread_size(1)     # doctest: +SKIP
>>> (distributed.rand(4_000_000) * 2 + 1).sum()        # doctest: +SKIP
>>> get_autothread_actual()                            # doctest: +SKIP
2
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import settings
from ..arrays import threads
from ..arrays.calls import most_actual
from ..runtime import state
from .distributed import run_on_labs

__all__ = ["set_autothread_targ", "set_autothread_size", "get_autothread_targ", "get_autothread_size",
           "get_autothread_actual"]


def _here_or_labs(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args) if state.on_lab else run_on_labs(fn, *args)


def set_autothread_targ(n: int) -> None:
    """Split large elementwise operations, ufuncs, reductions, BLAS and FFT calls over
    ``n`` threads on each lab (PDL's ``set_autopthread_targ``). n ≥ 1."""
    settings.check_threads(n, "set_autothread_targ(n)")  # at the client too, before any lab
    _here_or_labs(threads.set_targ, n)


def set_autothread_size(mega_elements: float) -> None:
    """Local parts of fewer than ``mega_elements`` × 10⁶ elements use one thread (PDL's
    ``set_autopthread_size``). 0 threads every operation."""
    settings.check_size(mega_elements, "set_autothread_size(mega_elements)")
    _here_or_labs(threads.set_size, mega_elements)


def get_autothread_targ() -> int:
    """The thread count of this lab (at the client: of lab 1)."""
    return int(_here_or_labs(threads.targ))


def get_autothread_size() -> float:
    """The size threshold in mega-elements of this lab (at the client: of lab 1)."""
    return float(_here_or_labs(threads.size))


def get_autothread_actual() -> int:
    """The threads the last elementwise operation, reduction or FFT used on this lab (PDL's
    ``get_autopthread_actual``); at the client, the most any lab of the pool used."""
    return threads.actual() if state.on_lab else int(run_on_labs(most_actual))
