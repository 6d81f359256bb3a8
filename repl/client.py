"""``spmdlab``: a Python REPL at the client in which ``with spmd():`` blocks work.

The stock prompt cannot run ``with spmd():`` because spmd reads the body's source and
the stock prompt keeps none. Here every input is registered in ``linecache`` under a
unique file name (``<spmdlab-3>``) before it is compiled and run, so spmd finds it. Lab
output appears as ``Lab N: <line>`` (the library's own printing of spmd output).
"""
from __future__ import annotations

import argparse
import ast
import os
import signal
import sys
import traceback
import warnings
from typing import Any

from spmdlab.pmode import inputs
from spmdlab.pmode.output import nlabs

from . import completion
from .session import register_source

_HIDDEN = (os.path.dirname(os.path.abspath(__file__)) + os.sep,)
BANNER = ("spmdlab {version} on Python {py}: a Python prompt where `with spmd():` blocks run on the labs.\n"
          "Already done: from spmdlab import *; import numpy as np. Ctrl-D leaves.")


class ClientConsole:
    """Runs client-REPL inputs in one namespace, as the Python REPL does."""

    def __init__(self, namespace: dict[str, Any] | None = None):
        self.namespace = namespace if namespace is not None else {"__name__": "__main__"}
        self.count = 0
        self.had_error = False

    def preload(self) -> None:
        """``from spmdlab import *`` and ``import numpy as np`` into the namespace."""
        self.run_source("from spmdlab import *\nimport numpy as np\n")
        self.count = 0

    def run_source(self, source: str) -> None:
        """Compile and run one complete input; print expression values and tracebacks."""
        if not source.strip():
            return
        self.count += 1
        filename = f"<spmdlab-{self.count}>"
        register_source(filename, source)  # spmd reads `with spmd():` bodies from here
        try:
            tree = ast.parse(source, filename, "exec")
            code = compile(ast.Interactive(body=tree.body), filename, "single")
        except (SyntaxError, ValueError, OverflowError) as exc:
            self.had_error = True
            sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
            return
        try:
            exec(code, self.namespace)
        except SystemExit:
            raise
        except BaseException as exc:  # KeyboardInterrupt too: report it and keep the session
            self.had_error = True
            self.show_exception(exc)

    def show_exception(self, exc: BaseException) -> None:
        """Print a traceback without this REPL's frames nor the library's: a misused spmd
        (``spmd(3)`` on 2 labs) shows the user's line and the message, not spmd's insides."""
        import spmdlab

        hidden = _HIDDEN + (os.path.dirname(os.path.abspath(spmdlab.__file__)) + os.sep,)
        tb = traceback.TracebackException.from_exception(exc)
        _trim(tb, hidden)
        text = "".join(tb.format())
        if not tb.stack:
            text = text.replace("Traceback (most recent call last):\n", "", 1)
        sys.stderr.write(text)
        sys.stderr.flush()

    @staticmethod
    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        """``warnings.showwarning`` for this REPL: a warning pointing at a typed input
        (``<spmdlab-3>:1``, e.g. the pool restart notice) is one plain line."""
        if str(filename).startswith("<spmdlab-"):
            (file or sys.stderr).write(f"{category.__name__}: {message}\n")
        else:
            (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))

    def complete(self, text: str) -> tuple[str, list[str]]:
        """Tab completion from the client namespace (no lab involved)."""
        parts = completion.split(text)
        if parts is None:
            return "", []
        obj, prefix = parts
        return prefix, completion.matches(completion.local_names(self.namespace, obj) or [], prefix, obj)


def _trim(tb: traceback.TracebackException, hidden: tuple[str, ...]) -> bool:
    """Drop frames under ``hidden`` from ``tb`` and the exceptions chained to it; an
    implicitly chained spmdlab exception with no user frame left (the library's internal
    ChannelClosed behind a LabDiedError) is dropped. True if ``tb`` keeps a frame."""
    tb.stack = traceback.StackSummary.from_list(
        [f for f in tb.stack if not os.path.abspath(f.filename).startswith(hidden)])
    if tb.__cause__ is not None:  # `raise ... from e` is the user's choice: kept
        _trim(tb.__cause__, hidden)
    context = tb.__context__
    if context is not None and not _trim(context, hidden) \
            and getattr(context.exc_type, "__module__", "").startswith("spmdlab"):
        tb.__context__ = None
    return bool(tb.stack)


def _toolbar() -> str:
    from spmdlab import gcp

    pool = gcp(create=False)
    if pool is None:
        return " no pool yet (the first spmd block starts one) | Ctrl-D leaves"
    return f" pool: {nlabs(pool.numlabs)} | {pool.state} | Ctrl-D leaves"


def _on_signal(signum, frame) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``spmdlab`` console script."""
    parser = argparse.ArgumentParser(prog="spmdlab", description="A Python REPL where `with spmd():` works.")
    parser.add_argument("-n", "--labs", type=int, default=None, help="start a pool of this many labs now")
    parser.add_argument("-q", "--quiet", action="store_true", help="no banner")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    import spmdlab

    console = ClientConsole()
    console.preload()
    warnings.showwarning = console.show_warning
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if interactive and not args.quiet:
        print(BANNER.format(version=spmdlab.__version__, py=sys.version.split()[0]))
    try:
        if args.labs is not None:
            spmdlab.parpool(args.labs)
        if interactive:
            from . import terminal

            prompt = terminal.make_prompt(">>> ", "client_history", complete=console.complete, toolbar=_toolbar)
            terminal.prompt_loop(prompt, console.run_source, lambda: False)
        else:
            for block in inputs.iter_blocks(sys.stdin):
                console.run_source(block)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    except (spmdlab.PoolError, ValueError) as exc:
        print(f"spmdlab: could not start the labs: {exc}", file=sys.stderr)
        return 1
    finally:
        pool = spmdlab.gcp(create=False)
        if pool is not None:
            pool.close()
    return 1 if (console.had_error and not interactive) else 0


if __name__ == "__main__":
    sys.exit(main())
