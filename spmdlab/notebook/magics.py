"""IPython adapter for ``%load_ext spmdlab``: ``%%spmd``, ``%spmd``, ``%pmode``.

Thin: the work is in :mod:`spmdlab.notebook.cells`. Loading the extension also makes
IPython show spmdlab's errors (and Ctrl-C during a block) without spmdlab's own frames.
"""
from __future__ import annotations

import sys
import types
from typing import Any

from .._frames import is_library
from ..client.pool import gcp, parpool
from ..errors import SpmdError
from ..pmode.commands import CommandError, parse
from . import cells

__all__ = ["load_ipython_extension", "unload_ipython_extension", "SpmdMagics"]



def _cell_filename(shell: Any) -> str | None:
    """The name IPython compiled the running cell under (shown as ``Cell In[7]``)."""
    names = getattr(shell.compile, "_filename_map", {})
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename in names:
            return frame.f_code.co_filename
        frame = frame.f_back
    return None


def _user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without spmdlab's frames and IPython's hidden ones (``__tracebackhide__``)."""
    kept = []
    while tb is not None:
        frame = tb.tb_frame
        hidden = is_library(frame.f_code.co_filename) or frame.f_locals.get("__tracebackhide__")
        if not hidden:
            kept.append(tb)
        tb = tb.tb_next
    for first, second in zip(kept, kept[1:]):
        first.tb_next = second
    if kept:
        kept[-1].tb_next = None
        return kept[0]
    return None


def _show_error(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> list[str]:
    """IPython's custom handler for SpmdError and KeyboardInterrupt."""
    if isinstance(value, cells.PmodeCellError):
        stb = shell.InteractiveTB.get_exception_only(etype, value)
    else:
        stb = shell.InteractiveTB.structured_traceback(etype, value, _user_traceback(tb), tb_offset=0)
    shell._showtraceback(etype, value, stb)
    return stb


try:
    from IPython.core.error import UsageError
    from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
except ImportError:  # pragma: no cover - IPython is what loads this module
    raise ImportError("spmdlab's magics need IPython (pip install ipython)") from None


@magics_class
class SpmdMagics(Magics):
    """``%%spmd``, ``%spmd`` and ``%pmode``."""

    def __init__(self, shell: Any):
        super().__init__(shell)
        self.pmode_on = False

    def _run(self, line: str, cell: str, firstlineno: int) -> None:
        try:
            opts = cells.parse_options(line)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        filename = _cell_filename(self.shell)
        if opts.pmode:
            firstlineno = 1  # the transformer put the magic line in front of the user's cell
        if filename is None:
            count = self.shell.execution_count
            filename = f"<spmd-cell-{count}>"
        ns = self.shell.user_ns
        if opts.pmode:
            cells.run_pmode_cell(cell, ns, opts, filename, firstlineno)
        else:
            cells.run_cell(cell, ns, opts, filename, firstlineno)

    @cell_magic
    def spmd(self, line: str, cell: str) -> None:
        """Run the cell on the labs as the body of ``with spmd():``.

        %%spmd [-n N] [-m M] [--timeout S]   as spmd(N), spmd(M, N), timeout=S
        """
        self._run(line, cell, 2)

    @line_magic("spmd")
    def spmd_line(self, line: str) -> None:
        """``%spmd <statement>``: one statement on the labs, as in ``with spmd():``."""
        if not line.strip():
            raise UsageError("usage: %spmd <statement>, e.g. %spmd x = labindex()")
        self._run("", line.strip() + "\n", 1)

    @line_magic
    def pmode(self, line: str) -> None:
        """%pmode start [N] | exit | lab2client labvar lab [clientvar] | client2lab clientvar labs [labvar]

        After ``%pmode start``, every cell runs on the labs with pmode's grouped output,
        until ``%pmode exit``; the names cells assign are Composites here."""
        words = line.split()
        if not words:
            raise UsageError("usage: " + (SpmdMagics.pmode.__doc__ or "").split("\n")[0])
        sub = words[0]
        if sub == "start":
            self._start(words[1:])
        elif sub in ("exit", "quit"):
            self._exit()
        elif sub in ("lab2client", "client2lab"):
            self._copy(line)
        else:
            raise UsageError(f"unknown command '%pmode {sub}'; use start, exit, lab2client or client2lab")

    def _start(self, args: list[str]) -> None:
        n = None
        if args:
            if len(args) > 1 or not args[0].isdigit() or int(args[0]) < 1:
                raise UsageError("usage: %pmode start [N]  (N labs, a positive whole number)")
            n = int(args[0])
        pool = gcp("nocreate")
        if pool is None:
            pool = parpool(n)
        elif n is not None and n != pool.numlabs:
            raise UsageError(f"a pool with {pool.numlabs} labs is open; close it first (gcp().close()) "
                             f"to start pmode with {n}")
        if not self.pmode_on:
            self.shell.input_transformers_cleanup.append(cells.pmode_transform)
            self.pmode_on = True
        print(f"pmode: every cell now runs on {pool.numlabs} labs; %pmode exit returns to the client.")

    def _exit(self) -> None:
        if not self.pmode_on:
            print("pmode is not running.")
            return
        try:
            self.shell.input_transformers_cleanup.remove(cells.pmode_transform)
        except ValueError:
            pass
        self.pmode_on = False
        print("pmode ended; cells run at the client again (the pool stays open).")

    def _copy(self, line: str) -> None:
        pool = gcp()
        try:
            cmd = parse(f"pmode {line}", pool.numlabs)
        except CommandError as exc:
            raise UsageError(str(exc)) from None
        try:
            if cmd.name == "lab2client":
                print(cells.lab2client(self.shell.user_ns, cmd.labvar, cmd.labs[0], cmd.clientvar))
            else:
                print(cells.client2lab(self.shell.user_ns, cmd.clientvar, cmd.labs, cmd.labvar))
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext spmdlab``."""
    ipython.register_magics(SpmdMagics)
    ipython.set_custom_exc((SpmdError, KeyboardInterrupt), _show_error)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext spmdlab``: pmode ends; magics stay registered (IPython cannot remove them)."""
    try:
        ipython.input_transformers_cleanup.remove(cells.pmode_transform)
    except ValueError:
        pass
    ipython.set_custom_exc((), None)
