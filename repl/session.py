"""The pmode session: what one complete input does, with no terminal involved.

:class:`PmodeSession` owns the pool, the client-side namespace (for ``pmode client``,
``lab2client`` and ``client2lab``), the layout and the completion cache. ``handle(text)``
runs a ``pmode`` command or sends the code to every lab and prints the per-lab result
through a :class:`~spmdlab.pmode.output.Printer`.
"""
from __future__ import annotations

import linecache
import threading
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import spmdlab
from spmdlab.client.execute import Outcome, run_block
from spmdlab.errors import LabDiedError, PoolError, SpmdError, SpmdTimeoutError
from spmdlab.pmode import commands, copies, inputs, tracebacks
from spmdlab.pmode.commands import Command, CommandError
from spmdlab.pmode.output import Collector, Printer, Ticker, grid_columns, nlabs
from spmdlab.protocol.messages import Reply

from . import completion

WORKSPACE = "pmode"
# Client-side names not imported on the labs (they start pools or hold lab handles).
_CLIENT_ONLY = {"spmd", "spmd_run", "parpool", "gcp", "delete", "Pool", "Composite", "exist", "distributed",
                "plot_layout", "load_ipython_extension", "unload_ipython_extension"}
NUMPY_LINEWIDTH = 75  # numpy's default, restored on the labs when the grid layout is left


def lab_imports() -> str:
    """The import block run on every lab when the session (or a restarted pool) starts."""
    names = [n for n in getattr(spmdlab, "__all__", []) if n not in _CLIENT_ONLY]
    lines = ["import numpy as np"]
    if names:
        lines.append(f"from spmdlab import {', '.join(names)}")
    return "\n".join(lines) + "\n"


def register_source(filename: str, source: str) -> None:
    """Put typed input into ``linecache`` so tracebacks (and ``spmd``) can show its lines."""
    text = source if source.endswith("\n") else source + "\n"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)


class PmodeSession:
    """The state and behaviour of one pmode REPL session.

    ``pool`` is an ``spmdlab.Pool`` (or a stand-in with the same methods, for tests).
    """

    def __init__(self, pool: Any, printer: Printer, layout: str = "stacked",
                 stream_after: float | None = 1.0, complete_timeout: float = 1.0,
                 pool_factory: Callable[[int], Any] | None = None):
        self.pool = pool
        self.pool_factory = pool_factory or spmdlab.parpool
        self.printer = printer
        self.layout = layout
        self.stream_after = stream_after
        self.complete_timeout = complete_timeout
        self.client_ns: dict[str, Any] = {"__name__": "__pmode_client__", "__builtins__": __builtins__}
        self.count = 0  # code inputs run on the labs, named <pmode-N>
        self.client_count = 0  # `pmode client` inputs, named <pmode-client-N>
        self.finished = False
        self.had_error = False
        self._generation: int | None = None
        self._linewidth = NUMPY_LINEWIDTH  # numpy's print width on the labs
        self._death: LabDiedError | None = None  # a death seen by a completion lookup, not yet reported
        self._busy = threading.Lock()
        self.names = completion.NameCache(self._fetch_names)

    # ---- status -------------------------------------------------------------------

    @property
    def labs(self) -> list[int]:
        return list(range(1, self.pool.numlabs + 1))

    def status(self, running: float | None = None) -> str:
        """One line for the toolbar: ``pool: 4 labs | idle | layout stacked``; with
        ``running`` (seconds), the status line shown under a long command."""
        if running is not None:
            return f" pool: {nlabs(self.pool.numlabs)} | running {running:.0f} s | Ctrl-C interrupts "
        return f" pool: {nlabs(self.pool.numlabs)} | {self.pool.state} | layout {self.layout} | pmode help "

    # ---- the entry point ------------------------------------------------------------

    def handle(self, text: str) -> None:
        """Run one complete input: a ``pmode`` command or Python code for the labs."""
        if not text.strip():
            return
        try:
            try:
                cmd = commands.parse(text, self.pool.numlabs)
            except CommandError as exc:
                self.had_error = True
                self.printer.line(str(exc), "error")
                return
            if cmd is not None:
                self.command(cmd)
            else:
                self.run_code(text)
        except KeyboardInterrupt:
            self.printer.line("KeyboardInterrupt", "error")
        finally:
            self.names.clear()

    def command(self, cmd: Command) -> None:
        getattr(self, f"cmd_{cmd.name}")(cmd)

    # ---- running code on the labs -----------------------------------------------------

    def start(self) -> None:
        """Prepare the lab workspace (imports) before the first input."""
        with self._busy:
            try:
                self._prepare()
            except SpmdError as exc:
                self.printer.line(f"Setting up the labs failed: {exc}", "error")

    def _prepare(self, quiet: bool = False) -> None:
        """Restart a dead pool and (re)import the lab API into a fresh lab workspace.

        ``quiet`` drops the library's restart warning when the caller reports it itself.
        A pool found dead (its death noticed by a completion lookup, say) is reported first.
        """
        if self.pool.state == "dead" and not quiet:
            self.had_error = True
            self._announce_death()
            self._prepare(quiet=True)  # a failure propagates, reported like any failed start
            self.printer.line("The pool is running again; variables on the labs were lost.", "info")
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.pool.ensure_running()
        for w in caught if not quiet else []:
            self.printer.line(f"Warning: {w.message}", "warning")
        if self._generation != self.pool.generation:
            src = lab_imports()
            register_source("<pmode-init>", src)
            run_block(self.pool, source=src, filename="<pmode-init>", workspace=WORKSPACE,
                      sink=lambda lab, stream, text: None)
            self._generation = self.pool.generation
            self._linewidth = NUMPY_LINEWIDTH
        self._sync_linewidth()

    def numpy_linewidth(self) -> int:
        """numpy's print width on the labs: a grid column (so arrays fit their column), else
        numpy's default."""
        if self.layout != "grid":
            return NUMPY_LINEWIDTH
        return grid_columns(self.pool.numlabs, self.printer.width())[1]

    def _sync_linewidth(self) -> None:
        width = self.numpy_linewidth()
        if width != self._linewidth:
            src = f"__import__('numpy').set_printoptions(linewidth={width})\n"
            run_block(self.pool, source=src, filename="<pmode-layout>", workspace=WORKSPACE,
                      sink=lambda lab, stream, text: None)
            self._linewidth = width

    def run_block(self, collector: Collector | None, **block: Any) -> Outcome | None:
        """Run a block (``spmdlab.client.execute.run_block``'s keywords) on all labs in the pmode
        workspace, reporting errors, interrupts and lab deaths.

        Returns its outcome, or None when the block did not complete (already reported).
        """
        sink = collector.sink if collector else (lambda lab, stream, text: None)
        ticker: Ticker | None = None
        with self._busy:
            try:
                self._prepare()
                if collector is not None:
                    collector.arm()  # the clock starts once the labs are ready
                    ticker = Ticker(self.printer, self.status, after=self.stream_after or 1.0)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        return run_block(self.pool, workspace=WORKSPACE, sink=sink, **block)
                    finally:
                        if ticker is not None:
                            ticker.stop()
                        for w in caught:
                            self.printer.line(f"Warning: {w.message}", "warning")
            except LabDiedError as exc:
                self._after(collector)
                self._lab_died(exc)
            except SpmdTimeoutError as exc:
                self._after(collector)
                self.had_error = True
                self.printer.line(str(exc), "error")
            except PoolError as exc:  # the pool could not be (re)started
                self._after(collector)
                self.had_error = True
                self.printer.line(f"{type(exc).__name__}: {exc}", "error")
            except SpmdError as exc:
                self.had_error = True
                if collector is None or not exc.errors:
                    self._after(collector)
                    self.printer.line(str(exc), "error")
                else:
                    # Labs that finished before the error still show their value, when the
                    # library hands their replies over (``SpmdError.replies``, if present).
                    for lab, reply in sorted((getattr(exc, "replies", None) or {}).items()):
                        self._add_echo(collector, lab, reply)
                    for lab, err in exc.errors.items():
                        collector.add(lab, "error", tracebacks.format_error(err))
                    self._after(collector)
            except KeyboardInterrupt as exc:
                self._after(collector)
                self._interrupted(str(exc))
        return None

    def _interrupted(self, where: str = "") -> None:
        """After Ctrl-C: wait (briefly) until every lab has stopped, so the prompt comes back
        to a ready pool; labs stuck in compiled code make the library restart the pool.
        ``where`` is the library's account of where the labs were stopped."""
        self.had_error = True
        generation = self.pool.generation
        try:
            self._prepare()
        except KeyboardInterrupt:
            pass
        except SpmdError as exc:
            self.printer.line(f"KeyboardInterrupt; the pool could not be made ready: {exc}", "error")
            return
        if self.pool.generation != generation:
            self.printer.line("KeyboardInterrupt: the pool was restarted; variables on the labs were lost.", "error")
        else:
            self.printer.line("KeyboardInterrupt: the labs were interrupted; their variables are kept.", "error")
        if where:
            self.printer.line(where[:1].upper() + where[1:], "info")

    @staticmethod
    def _after(collector: Collector | None) -> None:
        if collector is not None:
            collector.finish()

    def _announce_death(self) -> None:
        """Say which lab died (if known) and that a new pool is being started."""
        text = str(self._death) if self._death is not None else "The labs stopped while pmode was idle."
        self._death = None
        cut = text.find(". The pool is gone")  # the library's advice is about spmd; ours follows
        self.printer.line(text[: cut + 1] if cut > 0 else text, "error")
        self.printer.line(f"Restarting the pool with {nlabs(self.pool.numlabs)} ...", "info")

    def _lab_died(self, exc: LabDiedError) -> None:
        self.had_error = True
        self._death = exc
        self._announce_death()
        try:
            self._prepare(quiet=True)
        except (SpmdError, OSError) as again:
            self.printer.line(f"The restart failed: {again}. Type `pmode restart` to try again.", "error")
            return
        self.printer.line("The pool is running again; variables on the labs were lost.", "info")

    def run_code(self, source: str) -> None:
        """Send ``source`` to every lab; show output, echoed values and errors per lab.

        The value of a trailing expression is shown unless the input ends with ``;``.
        """
        hint = commands.lab_hint(source)
        if hint is not None:
            self.had_error = True
            self.printer.line(hint, "info")
            return
        self.count += 1
        filename = f"<pmode-{self.count}>"
        # a final newline: without it, tracebacks put their ^^^ markers one column off
        source = source if source.endswith("\n") else source + "\n"
        register_source(filename, source)
        try:
            compile(source, filename, "exec")
        except (SyntaxError, ValueError, OverflowError) as exc:
            self.had_error = True
            self.printer.write([("error", "".join(traceback.format_exception_only(type(exc), exc)))])
            return
        collector = Collector(self.printer, self.labs, self.layout, self.stream_after)
        try:
            outcome = self.run_block(collector, source=source, filename=filename,
                                     echo=not inputs.echo_suppressed(source))
        finally:
            collector.stop()
        if outcome is None:
            return
        for lab, reply in sorted(outcome.replies.items()):
            self._add_echo(collector, lab, reply)
        collector.finish()

    @staticmethod
    def _add_echo(collector: Collector, lab: int, reply: Reply) -> None:
        """Show the value of a trailing expression a lab returned (``None`` is not shown)."""
        if reply.kind == "done" and reply.result.echo is not None:
            collector.add(lab, "echo", reply.result.echo)

    # ---- pmode commands ---------------------------------------------------------------

    def cmd_help(self, cmd: Command) -> None:
        self.printer.line(commands.HELP)

    def cmd_exit(self, cmd: Command) -> None:
        self.finished = True

    def cmd_start(self, cmd: Command) -> None:
        self.printer.line(f"pmode is already running with {nlabs(self.pool.numlabs)} "
                          "(`pmode restart` starts a fresh pool).", "info")

    def cmd_layout(self, cmd: Command) -> None:
        """Switch the layout; numpy's print width on the labs follows (a grid column)."""
        if cmd.layout:
            self.layout = cmd.layout
        self.printer.line(f"layout: {self.layout}", "info")

    def cmd_layoutmap(self, cmd: Command) -> None:
        """``pmode layout D``: which lab owns which part of D, in terminal colours."""
        from spmdlab.layouts.pictures import layout_text, ownership

        tmp, v = "__spmdlab_layout", cmd.labvar
        src = (f"try:\n    {tmp} = {v}\nexcept NameError:\n    {tmp} = 'undefined'\nelse:\n"
               f"    {tmp} = (getCodistributor({tmp}), {tmp}.shape) if iscodistributed({tmp}) else None\n")
        try:
            outcome = self.run_block(None, source=src, filename="<pmode-layout>", outputs=[tmp], composites=True)
            if outcome is None:
                return
            handle = outcome.values.get(tmp)
            with self._busy:
                value = handle[1] if handle is not None and handle.exist(1) else None
            if value is None or value == "undefined":
                self.had_error = True
                what = "defined" if value == "undefined" else "a codistributed array"
                self.printer.line(f"pmode layout: {cmd.labvar} is not {what} on the labs", "error")
                return
            text = layout_text(ownership(value[0], value[1]), width=max(8, self.printer.width() - 2),
                               color=self.printer.color)
            self.printer.write([("", text)])
        except (SpmdError, ValueError) as exc:
            self.had_error = True
            self.printer.line(f"pmode layout: {exc}", "error")

    def cmd_restart(self, cmd: Command) -> None:
        with self._busy:
            n = self.pool.numlabs
            self.printer.line(f"Restarting the pool with {n} labs ...", "info")
            try:
                self.pool.close()
                self.pool = self.pool_factory(n)
                self._generation = None
                self._prepare()
            except SpmdError as exc:
                self.printer.line(f"The restart failed: {exc}", "error")
                return
        self.printer.line("The pool is running; variables on the labs were cleared.", "info")

    def cmd_client(self, cmd: Command) -> None:
        """Run a line at the client; an expression's value is printed, as the Python REPL."""
        self.client_count += 1
        filename = f"<pmode-client-{self.client_count}>"
        register_source(filename, cmd.code)
        try:
            try:
                code = compile(cmd.code, filename, "eval")
                is_expr = True
            except SyntaxError:
                code = compile(cmd.code, filename, "exec")
                is_expr = False
            if is_expr:
                value = eval(code, self.client_ns)
                if value is not None:
                    self.printer.line(repr(value))
            else:
                exec(code, self.client_ns)
        except Exception as exc:
            self.had_error = True
            tb = traceback.TracebackException.from_exception(exc)
            tb.stack = traceback.StackSummary.from_list([f for f in tb.stack if f.filename == filename])
            self.printer.write([("error", "".join(tb.format()))])

    def cmd_lab2client(self, cmd: Command) -> None:
        lab = cmd.labs[0]
        outcome = self.run_block(None, filename="<pmode-lab2client>", outputs=[cmd.labvar], composites=True)
        if outcome is None:
            return
        try:
            with self._busy:
                self.client_ns[cmd.clientvar] = copies.value_from_lab(outcome.values.get(cmd.labvar), cmd.labvar, lab)
        except copies.CopyError as exc:
            self.had_error = True
            self.printer.line(f"lab2client: {exc}", "error")
            return
        except (SpmdError, KeyboardInterrupt) as exc:
            self.had_error = True
            self.printer.line(f"lab2client failed: {exc or type(exc).__name__}", "error")
            return
        self.printer.line(copies.lab2client_message(cmd.labvar, lab, cmd.clientvar), "info")

    def cmd_client2lab(self, cmd: Command) -> None:
        if cmd.clientvar not in self.client_ns:
            self.had_error = True
            self.printer.line(f"client2lab: there is no client variable {cmd.clientvar!r} "
                              "(set one with `pmode client name = value` or lab2client)", "error")
            return

        def bind(source: str, refs: dict[str, int]) -> Outcome | None:
            return self.run_block(None, source=source, filename="<pmode-client2lab>", refs=refs)

        try:
            with self._busy:
                self._prepare()
            outcome = copies.send_to_labs(self.pool, self.client_ns[cmd.clientvar], cmd.labs, cmd.labvar, bind,
                                          guard=self._busy)
        except LabDiedError as exc:
            self._lab_died(exc)
            return
        except (SpmdError, KeyboardInterrupt) as exc:
            self.had_error = True
            self.printer.line(f"client2lab failed: {exc or type(exc).__name__}", "error")
            return
        if outcome is not None:
            self.printer.line(copies.client2lab_message(cmd.clientvar, cmd.labvar, cmd.labs), "info")

    # ---- completion ------------------------------------------------------------------

    def _fetch_names(self, obj: str) -> list[str] | None:
        """Ask the labs for the names of ``obj`` (the workspace if empty); lab 1's answer.

        Runs on all labs (a block on a subset could meet a pending communicator renewal),
        with a short timeout; gives None when the pool is busy or the lookup fails.
        """
        if self.pool.state != "idle" or not self._busy.acquire(blocking=False):
            return None
        try:
            if self._generation != self.pool.generation:
                return None
            outcome = run_block(self.pool, source=completion.lab_query(obj), filename="<pmode-complete>",
                                workspace=WORKSPACE, echo=True, sink=lambda lab, stream, text: None,
                                timeout=self.complete_timeout)
            return completion.parse_echo(outcome.echoes.get(1))
        except LabDiedError as exc:
            self._death = exc  # reported (and the pool restarted) with the next command
            return []
        except (SpmdError, KeyboardInterrupt):
            return []
        finally:
            self._busy.release()

    # ---- the end ---------------------------------------------------------------------

    def close(self) -> None:
        """Shut the pool down; no lab process is left."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self.pool.close()
            except Exception:  # a broken pool still must not keep the REPL from exiting
                pass
