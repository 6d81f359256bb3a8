"""Numeric text files on the labs (pbdBASE's parallel reader): ``read_csv`` splits the
file into byte ranges, moves each range's start to the next line start, and every lab
parses its own range (``np.loadtxt``, in blocks of at most the staging buffer) into its
rows of a row-distributed array, allocated once; ``write_csv`` counts every lab's text
in a first formatting pass, then writes the rows slab by slab (at most the staging
buffer) at their offsets (an exclusive scan of the sizes) in collective MPI-IO rounds,
full precision (``repr`` of each value), so ``np.loadtxt`` reads back the same values.
"""
from __future__ import annotations

import io
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...layouts.codistributor import codistributor1d
from ..array import codistributed, getLocalPart
from ..base import here, need
from ..collectives import allgather_objects
from ..reshard import changeMode
from ..transfer import redistribute
from .agree import agree, report
from .boxes import commit
from .mpiio import File, item_type, no_sigxfsz, staging_bytes
from .npy import temporary_name

__all__ = ["read_csv", "write_csv", "line_start", "skip_lines"]

_SCAN = 1 << 16


def skip_lines(f: Any, count: int) -> int:
    """The byte offset after the first ``count`` lines of the open binary file ``f``."""
    f.seek(0)
    for _ in range(count):
        if not f.readline():
            break
    return f.tell()


def line_start(f: Any, p: int, first: int, size: int) -> int:
    """The first line start at or after byte ``p`` (lines start at ``first`` and after
    each newline)."""
    if p <= first:
        return first
    if p >= size:
        return size
    f.seek(p - 1)
    pos = p - 1
    while True:
        block = f.read(_SCAN)
        if not block:
            return size
        k = block.find(b"\n")
        if k >= 0:
            return pos + k + 1
        pos += len(block)


def _blocks(f: Any, lo: int, hi: int) -> Iterator[bytes]:
    """The bytes [lo, hi) of ``f`` in whole lines, blocks of at most a sixteenth of the
    staging buffer unless a line is longer: a block is held as bytes, as str, and by the
    parser's StringIO as 4 bytes a character, beside the rows it parses to."""
    limit = max(staging_bytes() // 16, 1 << 16)
    f.seek(lo)
    pos, carry = lo, b""
    while pos < hi:
        block = carry + f.read(min(limit, hi - pos))
        pos = min(hi, pos + limit)
        cut = block.rfind(b"\n") + 1 if pos < hi else len(block)
        carry = block[cut:]
        if cut:
            yield block[:cut]
    if carry:
        yield carry


def _count_lines(f: Any, lo: int, hi: int) -> int:
    """The lines in bytes [lo, hi) (a last line without its newline counts): at least
    the rows there, as blank lines hold none."""
    lines = 0
    for block in _blocks(f, lo, hi):
        lines += block.count(b"\n") + (not block.endswith(b"\n"))
    return lines


def _parse(f: Any, lo: int, hi: int, delimiter: str, dtype: Any) -> np.ndarray | None:
    """The rows in bytes [lo, hi), parsed block by block (``np.loadtxt``'s C parser)
    straight into the part, allocated once for the lines counted first and shrunk in
    place (``realloc``) if blank lines held no rows: the part and one block, no join."""
    part: np.ndarray | None = None
    rows = 0
    lines = _count_lines(f, lo, hi)
    for text in _blocks(f, lo, hi):
        if not text.strip():
            continue
        try:
            got = np.loadtxt(io.StringIO(text.decode()), delimiter=delimiter, dtype=dtype, ndmin=2)
        except ValueError as exc:
            raise ValueError(f"in bytes {lo}..{hi} of the file: {exc}") from None
        if part is None:
            part = np.empty((lines, got.shape[1]), dtype=dtype)
        elif got.shape[1] != part.shape[1]:
            raise ValueError(f"in bytes {lo}..{hi} of the file: rows of {part.shape[1]} and of "
                             f"{got.shape[1]} columns")
        part[rows:rows + got.shape[0]] = got
        rows += got.shape[0]
        del got
    if part is not None and rows < part.shape[0]:
        part.resize((rows, part.shape[1]), refcheck=False)
    return part


def read_csv(path: Any, delimiter: str = ",", skiprows: int = 0, dtype: Any = float) -> Any:
    """The numbers of the text file ``path`` (one row a line, ``delimiter`` between
    values, the first ``skiprows`` lines skipped) as an array distributed by rows; one
    column gives a 1-D array, as ``np.loadtxt``."""
    what = "spmdlab.read_csv"
    path = os.fspath(path)
    lab, n = here()
    dtype = np.dtype(dtype)
    mine, meta, rows = None, None, None
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            first = skip_lines(f, int(skiprows))
            meta = (size, first)
            span = size - first
            lo = line_start(f, first + span * (lab - 1) // n, first, size)
            hi = line_start(f, first + span * lab // n, first, size)
            rows = _parse(f, lo, hi, delimiter, dtype)
    except Exception as exc:
        mine = report(exc)
    shapes = agree(mine, what, path, (meta, None if rows is None else rows.shape))
    if any(m[0] != shapes[0][0] for m in shapes):
        raise ValueError(f"{what} {path!r}: the labs see different files under this name")
    widths = {s[1][1] for s in shapes if s[1] is not None}
    if len(widths) > 1:
        detail = "; ".join(f"lab {k + 1}: {s[1][1]}" for k, s in enumerate(shapes) if s[1] is not None)
        raise ValueError(f"{what} {path!r}: the rows do not all have the same number of columns ({detail})")
    cols = widths.pop() if widths else 1
    counts = [0 if s[1] is None else s[1][0] for s in shapes]
    if rows is None:
        rows = np.empty((0, cols), dtype=dtype)
    if cols == 1:
        codist = codistributor1d(1, counts, (sum(counts),))
        return codistributed.from_parts(rows.reshape(-1), codist)
    codist = codistributor1d(1, counts, (sum(counts), cols))
    return codistributed.from_parts(rows, codist)


def _text(rows: np.ndarray, delimiter: str) -> bytes:
    """Rows as lines of ``repr``-exact values (shortest round-trip for floats)."""
    if rows.size == 0:
        return b"" if rows.shape[0] == 0 else b"\n" * rows.shape[0]
    values = rows.astype(np.int64) if rows.dtype == bool else rows
    kind = values.dtype.kind
    one = "%d" if kind in "iu" else "%r"
    line = delimiter.join([one] * values.shape[1]) + "\n"
    flat = values.ravel().tolist()
    if kind == "c":
        flat = [f"{z.real!r}{z.imag:+r}j" for z in flat]
        line = line.replace("%r", "%s")
    return ((line * values.shape[0]) % tuple(flat)).encode()


def write_csv(path: Any, D: Any, delimiter: str = ",") -> None:
    """Write ``D`` (1-D: one value a line; 2-D: one row a line) as text, each lab its own
    rows at their offsets; ``np.loadtxt(path, delimiter=...)`` gives back ``gather(D)``."""
    what = "spmdlab.write_csv"
    D = need(D, what)
    path = os.fspath(path)
    if D.ndim not in (1, 2) or D.dtype.kind not in "biufc":
        raise ValueError(f"{what} {path!r}: writes 1-D or 2-D arrays of numbers, got {D.ndim}-D {D.dtype}")
    if D.mode != "replica":
        D = changeMode(D, "replica")
    lab, n = here()
    c = D.codistributor
    if not (isinstance(c, codistributor1d) and c.Dimension == 1 and not c.Halo):
        D = redistribute(D, codistributor1d(1))
    no_sigxfsz()
    local = getLocalPart(D).reshape(-1, 1) if D.ndim == 1 else getLocalPart(D)
    slabs = _slabs(local)
    sizes = allgather_objects(sum(len(_text(local[a:b], delimiter)) for a, b in slabs), what)
    rounds = max(allgather_objects(len(slabs), what))
    mine, tmp = None, None
    if lab == 1:
        try:
            tmp = temporary_name(path)
            open(tmp, "wb").close()
        except Exception as exc:
            mine = report(exc)
    tmp = agree(mine, what, path, tmp)[0]
    mine = None
    try:
        _write_slabs(tmp, local, slabs, rounds, sum(sizes[:lab - 1]), delimiter, what)
        if lab == 1 and os.path.getsize(tmp) != sum(sizes):
            raise OSError(f"the written file has {os.path.getsize(tmp)} of its {sum(sizes)} bytes "
                          "(disk full or file size limit reached)")
    except Exception as exc:
        mine = report(exc)
    commit(tmp, path, mine, what)


def _slabs(local: np.ndarray) -> list[tuple]:
    """Row ranges whose text, with Python's float objects on the way, fits the staging
    buffer (about 100 bytes a value)."""
    step = max(1, staging_bytes() // max(1, 100 * local.shape[1]))
    return [(a, min(a + step, local.shape[0])) for a in range(0, local.shape[0], step)]


def _write_slabs(tmp: str, local: np.ndarray, slabs: list[tuple], rounds: int, offset: int,
                 delimiter: str, what: str) -> None:
    """Each lab's rows from byte ``offset`` (an exclusive scan of the labs' text sizes,
    counted in a first formatting pass), one slab a collective round: the text is
    formatted twice so that no lab holds more than one slab of it."""
    fh = File(tmp, True, what)
    byte = item_type(1)
    try:
        for r in range(rounds):
            data = _text(local[slice(*slabs[r])], delimiter) if r < len(slabs) else b""
            buf = np.frombuffer(data, dtype=np.uint8) if data else np.empty(0, np.uint8)
            fh.transfer(True, offset, byte, byte, buf, len(data), byte)
            offset += len(data)
            del data, buf
    finally:
        byte.Free()
        fh.close()
    if fh.short:
        raise OSError(fh.short)
