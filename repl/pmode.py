"""``pmode start [N]``: the interactive parallel REPL (console script ``pmode``).

In a terminal: a prompt_toolkit prompt (``P>> ``) with highlighting, history, Tab
completion and a toolbar. With piped stdin: blocks are read as the Python REPL reads
them and the per-lab output is printed plain, so sessions can be scripted; the exit
status is 1 if any input failed.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from spmdlab.pmode import commands, inputs
from spmdlab.pmode.commands import LAYOUTS
from spmdlab.pmode.output import Printer, nlabs

from .session import PmodeSession

USAGE = """\
pmode start [N]          open the parallel REPL on a fresh pool of N labs
                         (default: SPMDLAB_NUM_LABS, else the number of CPUs)
pmode help               this text

options (after start): --layout stacked|grid, --stream-after SECONDS,
                       --echo (piped input: show each input after P>>, for transcripts)"""


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pmode", usage=USAGE, add_help=False)
    parser.error = _usage_error  # type: ignore[method-assign]
    parser.add_argument("action", nargs="?", default="start")
    parser.add_argument("where", nargs="*", help="[local] [N]")
    parser.add_argument("--layout", choices=LAYOUTS, default="stacked")
    parser.add_argument("--stream-after", type=float, default=None)
    parser.add_argument("--echo", action="store_true", help="piped input: print each input after P>> (transcripts)")
    parser.add_argument("-h", "--help", action="store_true")
    args = parser.parse_args(argv)
    if args.action.isdigit():  # `pmode 4`
        args.where.insert(0, args.action)
        args.action = "start"
    words = [w for w in args.where if w != "local"]  # MATLAB: pmode start local 4
    if len(words) > 1 or (words and not words[0].isdigit()) or (words and int(words[0]) < 1):
        _usage_error(f"the number of labs must be one whole number, at least 1 (e.g. pmode start 4); "
                     f"got {' '.join(args.where)!r}")
    args.n = int(words[0]) if words else None
    return args


def _usage_error(message: str) -> None:
    """A two-line error, not the whole usage text: what was wrong and where to look."""
    print(f"pmode: {message}\n(pmode help lists the commands)", file=sys.stderr)
    raise SystemExit(2)


def _on_signal(signum, frame) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pmode`` console script."""
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    if args.help or args.action == "help":
        print(USAGE)
        print()
        print(commands.HELP)
        return 0
    if args.action in ("exit", "quit", "close"):
        print("pmode: no session to end here; type `pmode exit` at the P>> prompt", file=sys.stderr)
        return 2
    if args.action != "start":
        print(f"pmode: unknown action {args.action!r}; use pmode start [N]\n(pmode help lists the commands)",
              file=sys.stderr)
        return 2
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    color = interactive and not os.environ.get("NO_COLOR")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)  # run the clean-up below, so no lab is left behind
    from spmdlab import PoolError, parpool

    printer = Printer(sys.stdout, color, live=interactive)
    started = time.monotonic()
    if interactive:
        printer.line("Starting a pool of " + (nlabs(args.n) if args.n else "labs") + " ...", "info")
    try:
        pool = parpool(args.n)
    except (PoolError, ValueError) as exc:
        print(f"pmode: could not start the labs: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    stream_after = args.stream_after if args.stream_after is not None else (1.0 if interactive else None)
    session = PmodeSession(pool, printer, layout=args.layout, stream_after=stream_after)
    try:
        session.start()
        if interactive:
            _interactive(session, time.monotonic() - started)
        else:
            _piped(session, args.echo)
    except KeyboardInterrupt:
        return 130
    finally:
        session.close()
    return 1 if (session.had_error and not interactive) else 0


def _interactive(session: PmodeSession, seconds: float) -> None:
    from . import terminal

    session.printer.line(f"Connected to {nlabs(session.pool.numlabs)} in {seconds:.1f} s. "
                         "Every input runs on all labs.\n"
                         "`pmode help` lists the commands; Ctrl-D or `pmode exit` leaves.", "info")
    prompt = terminal.make_prompt("P>> ", "pmode_history", complete=session.names.complete, toolbar=session.status)
    terminal.prompt_loop(prompt, session.handle, lambda: session.finished)


def _piped(session: PmodeSession, echo: bool = False) -> None:
    for block in inputs.iter_blocks(sys.stdin):
        if echo:
            lines = block.split("\n")
            shown = ["P>> " + lines[0]] + ["... " + line for line in lines[1:]]
            if len(lines) > 1:
                shown.append("...")
            session.printer.line("\n".join(shown))
        session.handle(block)
        if session.finished:
            break


if __name__ == "__main__":
    sys.exit(main())
