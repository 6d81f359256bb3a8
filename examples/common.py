"""What every example shares: its command line and its self-check against serial numpy.

Every example takes the same options

    --labs N    labs in the local pool (default 4)
    --size S    the problem size (each example says what it means; small by default)

and ends by comparing what the labs computed with a plain serial numpy computation.
Each comparison that holds prints ``  ok: ...``; the last line of a good run is
``self-check passed: ...``. The first comparison that fails prints
``SELF-CHECK FAILED: ...`` on stderr and ends the script with exit status 1 (the
``with parpool(...)`` block around it still closes the pool).

These helpers run at the client only. (They would work on the labs too: spmdlab puts
the script's directory on the labs' ``sys.path``, so they could import this module.)
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

_passed: list[str] = []


def parse_args(doc: str | None, size: int, size_help: str, *, min_size: int = 1, one_per_lab: str | None = None,
               **options) -> argparse.Namespace:
    """The example's command line: ``--labs``, ``--size`` and its own ``options``, given as
    ``name=(default, help)`` (``--name`` on the command line, typed like ``default``).
    ``--size`` must be at least ``min_size``, and with ``one_per_lab`` (what is being
    split, e.g. "row") at least ``--labs``, so that every lab gets one."""
    lines = (doc or "").strip().splitlines()
    parser = argparse.ArgumentParser(description=lines[0] if lines else None)
    parser.add_argument("--labs", type=int, default=4, metavar="N",
                        help="number of labs in the local pool (default 4)")
    parser.add_argument("--size", type=int, default=size, metavar="S", help=f"{size_help} (default {size})")
    for name, (default, text) in options.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default,
                            help=f"{text} (default {default})")
    args = parser.parse_args()
    if args.labs < 1:
        parser.error(f"--labs must be at least 1 (labs are numbered 1..N), got {args.labs}")
    need = max(min_size, args.labs if one_per_lab else 1)
    if args.size < need:
        why = f" so that each of the {args.labs} labs holds a {one_per_lab}" if one_per_lab and need == args.labs else ""
        parser.error(f"--size must be at least {need}{why}, got {args.size}")
    return args


def fail(what: str, detail: str = "") -> None:
    """Report a failed comparison and stop with exit status 1."""
    print(f"SELF-CHECK FAILED: {what}" + (f": {detail}" if detail else ""), file=sys.stderr)
    sys.exit(1)


def check(what: str, ok: bool, detail: str = "") -> None:
    """``ok`` must be true; ``detail`` says what was found when it is not."""
    if not ok:
        fail(what, detail)
    _passed.append(what)
    print(f"  ok: {what}")


def check_equal(what: str, got, want) -> None:
    """``got`` must equal ``want`` exactly (same shape, same values)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        fail(what, f"shape {got.shape}, serial numpy gives {want.shape}")
    wrong = np.argwhere(got != want)
    first = tuple(int(i) for i in wrong[0]) if len(wrong) else ()
    check(what, len(wrong) == 0, f"{len(wrong)} of {got.size} elements differ, the first at index {first}")


def check_close(what: str, got, want, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    """``got`` must match ``want`` to within rounding: |got - want| <= atol + rtol |want|."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        fail(what, f"shape {got.shape}, serial numpy gives {want.shape}")
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        fail(what, f"max |difference| {err:.3g} is above atol={atol:g} + rtol={rtol:g} * |serial value|")
    check(f"{what} (max |difference| {err:.1e})", True)


def report() -> None:
    """The last line of a good run."""
    print(f"self-check passed: {len(_passed)} comparisons with serial numpy")


def labs_text(n: int) -> str:
    """'1 lab', '4 labs'."""
    return f"{n} lab{'s' if n != 1 else ''}"


def ranges(indices) -> str:
    """0-based global indices as compact Python slices: [0, 1, 2, 6, 7] -> '0:3, 6:8'."""
    ix = np.asarray(indices).ravel()
    if ix.size == 0:
        return "none"
    breaks = np.flatnonzero(np.diff(ix) != 1) + 1
    return ", ".join(f"{int(r[0])}:{int(r[-1]) + 1}" for r in np.split(ix, breaks))
