"""A live "running 12 s on 4 labs" line while a long spmd block runs.

Shown only where someone watches: on a terminal (stderr is a tty; the line is redrawn
in place and erased when the block ends) or in a Jupyter notebook (an updated display
that is emptied at the end). Off when output goes to a file or pipe, and with
``SPMDLAB_QUIET=1``. Lab output printed meanwhile is written above the line.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import settings

__all__ = ["Progress", "status_text", "output_kind"]

Sink = Callable[[int, str, str], None]
AFTER = 3.0  # seconds a block runs before the line appears


def status_text(seconds: float, nlabs: int) -> str:
    """``status_text(12.3, 4)`` -> ``"running 12 s on 4 labs (Ctrl-C interrupts)"``."""
    return f"running {seconds:.0f} s on {nlabs} lab{'s' if nlabs != 1 else ''} (Ctrl-C interrupts)"


def output_kind() -> str | None:
    """``"notebook"`` in a Jupyter kernel, ``"terminal"`` when stderr is a terminal, else None."""
    if settings.quiet():
        return None
    ipython = sys.modules.get("IPython")
    if ipython is not None:
        try:
            shell = ipython.get_ipython()
        except Exception:
            shell = None
        if shell is not None and type(shell).__name__ == "ZMQInteractiveShell":
            return "notebook"
    try:
        return "terminal" if sys.stderr.isatty() else None
    except (AttributeError, ValueError):
        return None


class Progress:
    """``with Progress(4) as p: pool.run(block, sink=p.wrap(sink))``."""

    def __init__(self, nlabs: int, after: float = AFTER, every: float = 1.0, kind: str | None = "auto"):
        self.nlabs = nlabs
        self.kind = output_kind() if kind == "auto" else kind
        self._after, self._every = after, every
        self._live = self.kind is not None  # unwatched (a pipe, a file): no lock, no thread, nothing per block
        if self._live:
            self._lock = threading.RLock()
            self._stop = threading.Event()
        self._shown = False
        self._handle: Any = None
        self._text = ""

    def __enter__(self) -> Progress:
        if self._live:
            self._started = time.monotonic()
            self.due = self._started + self._after
            _watcher.watch(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._live:
            return
        self._stop.set()
        _watcher.unwatch(self)
        with self._lock:
            self._erase()
            if self._handle is not None:
                try:
                    self._handle.update({"text/plain": ""}, raw=True)
                except Exception:
                    pass
                self._handle = None

    def wrap(self, sink: Sink) -> Sink:
        """``sink`` with the terminal line erased before and redrawn after each output."""
        if self.kind != "terminal":
            return sink

        def wrapped(lab: int, stream: str, text: str) -> None:
            with self._lock:
                self._erase()
                sink(lab, stream, text)
                self._draw()

        return wrapped

    def tick(self) -> None:
        """Show the line with the time so far (the watcher calls it when ``due``)."""
        self.due = time.monotonic() + self._every
        with self._lock:
            if self._stop.is_set():
                return
            self._text = status_text(time.monotonic() - self._started, self.nlabs)
            if self.kind == "terminal":
                self._erase()
                self._draw()
            else:
                self._notebook()

    def _notebook(self) -> None:
        try:
            from IPython.display import display

            if self._handle is None:
                self._handle = display({"text/plain": self._text}, raw=True, display_id=True)
            else:
                self._handle.update({"text/plain": self._text}, raw=True)
        except Exception:
            self.kind = None

    def _draw(self) -> None:
        if self._text and not self._stop.is_set():
            sys.stderr.write(self._text)
            sys.stderr.flush()
            self._shown = True

    def _erase(self) -> None:
        if self._shown:
            sys.stdout.flush()
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self._shown = False


class _Watcher:
    """One daemon thread for every block's line, started on first use: a block only
    registers itself (no thread start per block: that cost about 0.15 ms a block)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._current: Progress | None = None
        self._thread: threading.Thread | None = None
        self._idle = False  # the thread waits with no time limit: a new block must wake it

    def watch(self, progress: Progress) -> None:
        """Register ``progress``; the thread is woken only from its untimed wait (a timed
        wait ends by itself and rereads ``_current``: a block's due time is seconds away,
        so short blocks cost no thread wake-up)."""
        with self._cond:
            self._current = progress
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="spmdlab-progress", daemon=True)
                self._thread.start()
            if self._idle:
                self._cond.notify()

    def unwatch(self, progress: Progress) -> None:
        with self._cond:
            if self._current is progress:
                self._current = None  # no wake-up: the thread finds it gone when its wait ends

    def _run(self) -> None:
        while True:
            with self._cond:
                current = self._current
                if current is None:
                    self._idle = True
                    self._cond.wait()
                    self._idle = False
                    continue
                delay = current.due - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
            current.tick()  # outside the condition: drawing may block on the terminal


_watcher = _Watcher()
