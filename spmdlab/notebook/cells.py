"""What the notebook magics do, without IPython: ``%%spmd`` cells, pmode cells, options.

:mod:`spmdlab.notebook.magics` is the thin IPython adapter; everything here takes plain strings,
dicts and streams, so it is tested without a kernel.

- ``%%spmd [-n N] [-m M] [--timeout S]``: the cell is a ``with spmd(...):`` body. It is
  checked as one (no ``return``, no nested spmd), the client names it reads are sent, and
  the names it assigns come back as Composites / distributed arrays in the namespace.
- pmode cells (after ``%pmode start``): the same, with the REPL's grouped output
  (``Labs 1-4:``), the value of a trailing expression shown per lab, and numpy as ``np``
  and the lab API (``labindex``, ``gplus`` ...) available on the labs without imports.
"""
from __future__ import annotations

import ast
import shlex
import sys
from collections import ChainMap
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, TextIO

from ..client.blocksource import Body, check, names_read, names_written
from ..client.composite import Composite
from ..client.execute import run_block
from ..client.pool import gcp
from ..client.spmd import block_size, check_counts, run_body
from ..errors import SpmdError, display_names, labs_verb
from ..pmode import copies, inputs, tracebacks
from ..pmode.output import Collector, Printer
from ..protocol.messages import Done, Reply
from ..protocol.values import is_handle

__all__ = ["SpmdOptions", "parse_options", "parse_cell", "run_cell", "run_pmode_cell", "pmode_transform",
           "lab_defaults", "lab2client", "client2lab", "USAGE"]

USAGE = "usage: %%spmd [-n N] [-m M] [--timeout SECONDS]   (spmd(N), spmd(M, N), timeout=SECONDS)"


@dataclass
class SpmdOptions:
    """``-n N`` (at most / exactly N labs), ``-m M`` (at least M), ``--timeout S``."""

    m: int | None = None
    n: int | None = None
    timeout: float | None = None
    pmode: bool = False  # a pmode cell: grouped output, lab API defaults, body from line 1

    def spmd_args(self) -> tuple[int | None, int | None]:
        """The ``spmd(m, n)`` arguments: ``-n 2`` is ``spmd(2)``, ``-m 2 -n 4`` ``spmd(2, 4)``."""
        if self.m is None:
            return self.n, None
        return self.m, self.n


def _number(word: str, kind: type, flag: str) -> Any:
    try:
        value = kind(word)
    except ValueError:
        raise ValueError(f"{flag} takes a number, got {word!r}; {USAGE}") from None
    if value < 0 or (kind is float and value == 0):
        raise ValueError(f"{flag} must be positive, got {word}; {USAGE}")
    return value


def parse_options(line: str) -> SpmdOptions:
    """The options on a ``%%spmd`` line.

    >>> parse_options("-n 2 --timeout 5")
    SpmdOptions(m=None, n=2, timeout=5.0, pmode=False)
    """
    opts = SpmdOptions()
    words = shlex.split(line)
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--pmode":
            opts.pmode = True
            i += 1
            continue
        flag, eq, value = word.partition("=")
        if flag not in ("-n", "-m", "--timeout"):
            raise ValueError(f"unknown option {word!r}; {USAGE}")
        if not eq:
            if i + 1 >= len(words):
                raise ValueError(f"{flag} needs a value; {USAGE}")
            value = words[i + 1]
            i += 1
        i += 1
        if flag == "--timeout":
            opts.timeout = _number(value, float, flag)
        else:
            setattr(opts, flag[1], _number(value, int, flag))
    if opts.m is not None and opts.n is not None and opts.m > opts.n:
        raise ValueError(f"-m {opts.m} is more than -n {opts.n}; {USAGE}")
    return opts


def parse_cell(cell: str, filename: str, firstlineno: int) -> Body:
    """The cell as the checked body of a ``with spmd():`` block (SyntaxError as there)."""
    source = cell if cell.endswith("\n") else cell + "\n"
    padded = "\n" * (firstlineno - 1) + source
    tree = ast.parse(padded, filename)
    lines = padded.splitlines(True)
    check(tree.body, filename, lines)
    return Body(filename, source, firstlineno, names_read(tree.body), names_written(tree.body))


def lab_defaults() -> dict[str, Any]:
    """What pmode cells find on the labs without imports: numpy as np and the lab API."""
    import numpy

    import spmdlab

    client_only = {"spmd", "spmd_run", "parpool", "gcp", "Pool", "Composite", "exist", "distributed", "plot_layout",
                   "load_ipython_extension", "unload_ipython_extension"}
    names = {n: getattr(spmdlab, n) for n in spmdlab.__all__ if n not in client_only}
    names["np"] = numpy
    return names


def run_cell(cell: str, namespace: MutableMapping[str, Any], opts: SpmdOptions, filename: str,
             firstlineno: int, sink: Callable[[int, str, str], None] | None = None, echo: bool = False,
             defaults: Mapping[str, Any] | None = None) -> dict[int, Reply]:
    """Run ``cell`` as an spmd body on the current pool (started if needed); the names it
    assigns are written into ``namespace``. Returns the labs' replies."""
    m, n = opts.spmd_args()
    check_counts(m, n)
    body = parse_cell(cell, filename, firstlineno)
    if m == 0 or n == 0:
        raise ValueError("%%spmd -n 0 would run the cell at the client: run it as a normal cell")
    pool = gcp()
    pool.ensure_running()
    nlabs = block_size(m, n, pool.numlabs)
    lookup = ChainMap(namespace, dict(defaults)) if defaults else namespace
    outcome = run_body(pool, body, nlabs, {}, lookup, timeout=opts.timeout, sink=sink, echo=echo)
    namespace.update(outcome.values)
    return outcome.replies


def _echo(reply: Reply) -> str | None:
    return reply.result.echo if reply.kind == "done" and isinstance(reply.result, Done) else None


class PmodeCellError(SpmdError):
    """A pmode cell failed on some labs; the per-lab tracebacks were shown with its output."""


def run_pmode_cell(cell: str, namespace: MutableMapping[str, Any], opts: SpmdOptions, filename: str,
                   firstlineno: int, stream: TextIO | None = None, stream_after: float | None = 1.0) -> None:
    """A cell after ``%pmode start``: run on all labs, output grouped as in the pmode REPL
    (``Labs 1-4:``), a trailing expression's value shown per lab (not after ``;``).
    A lab error is shown per lab in the output, then raised as :class:`PmodeCellError`."""
    pool = gcp()
    printer = Printer(stream if stream is not None else sys.stdout)
    collector = Collector(printer, list(range(1, pool.numlabs + 1)), "stacked", stream_after)
    try:
        replies = run_cell(cell, namespace, opts, filename, firstlineno, sink=collector.sink,
                           echo=not inputs.echo_suppressed(cell), defaults=lab_defaults())
    except SpmdError as exc:
        if not exc.errors:
            collector.finish()
            raise
        for lab, reply in sorted(exc.replies.items()):
            if _echo(reply) is not None:
                collector.add(lab, "echo", _echo(reply))
        for lab, err in exc.errors.items():
            collector.add(lab, "error", display_names(tracebacks.format_error(err)))
        collector.finish()
        labs = sorted(exc.errors)
        raise PmodeCellError(f"{labs_verb(labs, 'has', 'have')} raised an error (shown above)",
                             exc.errors, exc.replies).with_traceback(None) from None
    except BaseException:
        collector.finish()
        raise
    finally:
        collector.stop()
    for lab, reply in sorted(replies.items()):
        if _echo(reply) is not None:
            collector.add(lab, "echo", _echo(reply))
    collector.finish()


def pmode_transform(lines: list[str]) -> list[str]:
    """In pmode, a cell becomes ``%%spmd --pmode`` (kept as it is: ``%pmode ...`` lines,
    other cell magics, and empty cells); ``pmode exit`` typed as in the REPL is ``%pmode exit``."""
    text = "".join(lines)
    stripped = text.strip()
    if not stripped or stripped.startswith("%%") or stripped.startswith("%pmode"):
        return lines
    first = stripped.split(None, 1)
    if first[0] == "pmode" and "\n" not in stripped and (len(first) == 1 or first[1][:1].isalpha()):
        return [f"%{stripped}\n"]
    return ["%%spmd --pmode\n", *lines]


def lab2client(namespace: MutableMapping[str, Any], labvar: str, lab: int, clientvar: str) -> str:
    """``%pmode lab2client labvar lab clientvar``: lab ``lab``'s value of the Composite
    ``labvar`` into ``clientvar``; returns the message to show."""
    handle = namespace.get(labvar)
    if handle is not None and not isinstance(handle, Composite) and not is_handle(handle):
        handle = None  # a client value of that name: no lab variable
    try:
        namespace[clientvar] = copies.value_from_lab(handle, labvar, lab)
    except copies.CopyError:
        if handle is None:
            raise copies.CopyError(f"there is no lab variable {labvar!r} (assign it in a pmode cell first)") from None
        raise
    return copies.lab2client_message(labvar, lab, clientvar)


def client2lab(namespace: MutableMapping[str, Any], clientvar: str, labs: list[int], labvar: str) -> str:
    """``%pmode client2lab clientvar labs labvar``: the client value into ``labvar`` on
    ``labs`` (a Composite in the namespace; the other labs keep their values of it)."""
    if clientvar not in namespace:
        raise copies.CopyError(f"there is no client variable {clientvar!r}")
    pool = gcp()
    before = namespace.get(labvar)
    inputs = {labvar: before} if isinstance(before, Composite) else {}

    def bind(source: str, refs: dict[str, int]) -> Any:
        return run_block(pool, source=source, filename="<pmode-client2lab>", inputs=inputs, refs=refs,
                         outputs=[labvar], composites=True)

    outcome = copies.send_to_labs(pool, namespace[clientvar], labs, labvar, bind)
    namespace[labvar] = outcome.values[labvar]
    return copies.client2lab_message(clientvar, labvar, labs)
