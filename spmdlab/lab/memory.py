"""How a lab's C allocator treats the memory of large arrays it frees (``SPMDLAB_KEEP_MEMORY``).

glibc serves every allocation above 32 MiB with a fresh ``mmap`` and unmaps it on ``free``,
so each new large array (a sort's received keys, a concatenate's result, a redistribute's
part) starts on pages the kernel must map and zero on first touch: on the 2-core
development machine 400 MB took 155 ms to allocate and fill, against 44 ms into memory
already mapped. CuPy's memory pool and jemalloc's retained extents keep freed memory for
the next allocation; a lab does the same with glibc's own switches: no ``mmap`` for large
blocks (``M_MMAP_MAX`` 0), so they come from the heap, and no trimming of the heap's top
below 2 GiB (``M_TRIM_THRESHOLD``), so a freed block is reused as it is. What the lab keeps is given back
(``malloc_trim``) once it has been idle for the setting's seconds, as jemalloc's decay
does; 0 leaves the allocator as the C library set it. On a C library other than glibc
nothing changes.
"""
from __future__ import annotations

import ctypes
import math
import platform
import threading
import time
from collections.abc import Callable

__all__ = ["keep_freed", "Keeper"]

_M_TRIM_THRESHOLD = -1  # malloc.h
_M_MMAP_MAX = -4
_TRIM_AT = 2**31 - 1  # the largest value mallopt takes (an int)


def _libc() -> ctypes.CDLL | None:
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def keep_freed(seconds: float, busy: Callable[[], bool]) -> Keeper | None:
    """Keep freed memory for reuse, given back after ``seconds`` idle (``busy()`` False
    meanwhile); ``None`` (nothing changed) for 0 or a C library other than glibc."""
    libc = _libc()
    if seconds <= 0 or libc is None:
        return None
    if not (libc.mallopt(_M_MMAP_MAX, 0) and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_AT)):
        return None
    return Keeper(libc, seconds, busy)


class Keeper:
    """Gives the kept memory back after ``seconds`` without a request (``done()`` marks the
    end of each one); never, for ``inf``."""

    def __init__(self, libc: ctypes.CDLL, seconds: float, busy: Callable[[], bool]) -> None:
        self._libc, self.seconds, self._busy = libc, seconds, busy
        self._last = time.monotonic()
        self._given_back = True  # nothing kept yet
        if math.isfinite(seconds):
            threading.Thread(target=self._decay, name="spmdlab-memory", daemon=True).start()

    def done(self) -> None:
        """A request has ended: the lab may now hold freed memory."""
        self._last = time.monotonic()
        self._given_back = False

    def give_back(self) -> None:
        """Return the heap's free pages to the system now."""
        self._given_back = True
        self._libc.malloc_trim(0)

    def _decay(self) -> None:
        while True:
            idle = time.monotonic() - self._last
            if idle < self.seconds or self._given_back or self._busy():
                time.sleep(max(self.seconds - idle, self.seconds / 4, 0.05))
                continue
            self.give_back()
