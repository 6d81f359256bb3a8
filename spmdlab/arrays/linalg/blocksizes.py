"""Block-size defaults of the dense factorizations, per operation and lab grid, from a
measured table.

The factorizations keep a 2dbc input's block size (its layout is the caller's); an
input in any other layout is redistributed to the default grid with the block size
:func:`default_blocksize` picks here. ``TABLE`` maps ``(operation, nprow, npcol)`` to
the block size that was fastest in ``benchmarks/bench_linalg.py`` (solve, cholesky:
``--labs 1 2 --blocks 64 128 256``) and ``benchmarks/bench_linalg_qr.py`` (QR R-only,
``--square 4096 --blocks 64 128``): N = 4096 float64, one BLAS thread per lab, medians
of 3, ours and numpy in turns. ``MEASURED`` keeps the times (seconds per block size)
the choice was made from, with the load average of the run; README's linear-algebra
section has the full tables. A grid the table does not name falls back to the entry of
the nearest measured grid shape (by lab count, then squareness), then to
:data:`FALLBACK`.

Why the winners differ: a wider block makes each trailing-update GEMM (k = nb) faster
and cuts the per-step Python and message costs, but makes the panel factorization,
which look-ahead must hide behind the update, longer and the load balance between
the grid columns coarser (ScaLAPACK's users' guide recommends 32-64 for the same
reasons; LU and QR, whose panels and updates are relatively cheap per column,
gain most from 128 on a loaded machine, Cholesky's half-sized updates do not).
"""
from __future__ import annotations

from typing import Dict, Sequence, Tuple

__all__ = ["TABLE", "MEASURED", "FALLBACK", "operation_of", "default_blocksize"]

FALLBACK = 64

# (operation, nprow, npcol) -> block size
TABLE: Dict[Tuple[str, int, int], int] = {
    ("lu", 1, 1): 64, ("lu", 1, 2): 64, ("lu", 2, 1): 64,
    ("cholesky", 1, 1): 64, ("cholesky", 1, 2): 64, ("cholesky", 2, 1): 64,
    ("qr", 1, 1): 64, ("qr", 1, 2): 64, ("qr", 2, 1): 64,
}

# (operation, nprow, npcol) -> ({block size: seconds}, load average, date of the run)
MEASURED: Dict[Tuple[str, int, int], Tuple[Dict[int, float], float, str]] = {
    # README, quiet machine, 2026-11-23 03:55 UTC (solve = LU + two triangular solves)
    ("lu", 1, 2): ({64: 0.73, 128: 0.85, 256: 1.03}, 1.5, "2026-11-23"),
    ("lu", 2, 1): ({64: 0.98, 128: 1.17, 256: 1.38}, 1.5, "2026-11-23"),
    ("cholesky", 1, 2): ({64: 0.44, 128: 0.47, 256: 0.48}, 1.5, "2026-11-23"),
    ("cholesky", 2, 1): ({64: 0.50, 128: 0.63, 256: 0.73}, 1.5, "2026-11-23"),
    # bench_linalg_qr.py --square 4096 --blocks 64 128, 2026-11-28 06:45-06:53 UTC, load
    # 4.2 rising to 10 during the run (issue 23's code); the same run's older code gave
    # 2.68 s at 64 and 2.25 s at 128 at load 10: under that load the two cannot be told
    # apart, so QR keeps 64, the quiet machine's choice for the 2dbc QR at N = 2000
    ("qr", 1, 2): ({64: 4.66, 128: 8.02}, 4.2, "2026-11-28"),
}

_OPERATIONS = (("chol", "cholesky"), ("qr", "qr"), ("lstsq", "qr"), ("mldivide", "lu"),
               ("mrdivide", "lu"), ("solve", "lu"), ("inv", "lu"), ("det", "lu"))


def operation_of(what: str) -> str:
    """The table's operation for a caller's name (``'numpy.linalg.solve'`` -> ``'lu'``);
    ``''`` for one the table does not know."""
    name = what.rsplit(".", 1)[-1].lower()
    if name == "lu":
        return "lu"
    for key, op in _OPERATIONS:
        if key in name:
            return op
    return ""


def default_blocksize(what: str, labgrid: Sequence[int]) -> int:
    """The measured block size for the operation named ``what`` on ``labgrid``."""
    op = operation_of(what)
    r, c = int(labgrid[0]), int(labgrid[1])
    hit = TABLE.get((op, r, c))
    if hit is not None:
        return hit
    known = [(abs(a * b - r * c), abs(a - b - (r - c)), nb) for (o, a, b), nb in TABLE.items() if o == op]
    return min(known)[2] if known else FALLBACK
