"""Pipelined slab transposes through the labs' shared staging window (one machine).

The transposes of the slab decomposition (an n1 x n2 matrix between the layout by
columns and the layout by rows) done in chunks, each chunk's local FFT fused in, as
in P3DFFT and mpi4py-fft (D. Pekurovsky, "P3DFFT: a framework for parallel
computations of Fourier transforms in three dimensions", SIAM J. Sci. Comput. 34
(2012); L. Dalcin, M. Mortensen, D. Keyes, "Fast parallel multidimensional FFT using
advanced MPI", JPDC 128 (2019)):

- each lab transforms one chunk of its part (``pre``: the local FFT along the axis it
  holds whole, the four-step's twiddles) straight into its own segment of the block's
  staging window (``comm.staging``), where it is still in cache;
- after a nonblocking barrier, every lab copies the piece it owns of every lab's
  chunk from their segments into its new part: one copy, where a message exchange
  copies four times (pack, MPI in and out of its shared memory, unpack);
- four chunk buffers per lab and one ``Ibarrier`` per chunk let a lab transform chunk
  t while the barrier of chunk t - 1 completes: lab A writes chunk t into buffer t % 4
  after its barrier t - 2 completed, so every lab had posted barrier t - 2, after
  reading chunk t - 4 (chunk t - 3 may still be read then: three buffers are not
  enough).

Every lab of the block calls with the same shapes and partitions (a collective), so
all see the same number of chunks. ``None`` from :func:`window` means no staging
window (labs on several machines, or ``SPMDLAB_STAGING_MB`` too small): the callers
then use the message exchanges of ``fft.exchange``.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
import scipy.fft as sfft

from ...lab import lazy_comm as comm
from ..base import here

try:  # scipy.fft's own kernel, which takes out=: a chunk transformed straight into its buffer
    from scipy.fft._pocketfft import pypocketfft as _pocketfft
except ImportError:  # pragma: no cover - another scipy: a copy and scipy.fft in place
    _pocketfft = None

__all__ = ["CHUNK_BYTES", "ENABLED", "cols_to_rows", "copy", "fft_into", "rows_to_cols", "window"]

# One chunk of one lab: about 1 MB, so that it stays in cache between its transform and
# its copies (measured on 2 labs, fft2 4096^2: CPU per lab 0.39 s at 4 MB, 0.29 s at
# 1 MB, 0.37 s at 512 kB, where the barriers start to cost).
CHUNK_BYTES = 1 << 20
MIN_CHUNKS, SMALL_BYTES = 8, 256 << 10
ENABLED = True  # False: always the message exchanges (benchmarks compare both)
_BUFFERS = 4

Pre = Callable[[np.ndarray, np.ndarray, int], None]  # (chunk of the source, its buffer, first index)


def _bounds(n: int, chunks: int) -> list[int]:
    """``chunks + 1`` boundaries splitting range(n) as evenly as possible."""
    return [n * t // chunks for t in range(chunks + 1)]


def _chunks(longest: int, per_line: int, item: int) -> int:
    """How many chunks split ``longest`` lines of ``per_line`` elements: pieces of about
    ``CHUNK_BYTES``, and at least ``MIN_CHUNKS`` for a part above ``SMALL_BYTES`` (so
    the window's four buffers stay well below one part: memory per lab)."""
    line = max(1, per_line * item)
    total = longest * line
    least = MIN_CHUNKS if total > SMALL_BYTES else 1
    return max(1, min(longest, max(least, math.ceil(total / CHUNK_BYTES))))


def window(chunk_bytes: int, what: str) -> Optional[Any]:
    """The block's staging window with room for four chunks of ``chunk_bytes`` per lab,
    or None (no window: use messages). Collective."""
    if not ENABLED:
        return None
    _, p = here()
    return comm.staging([_BUFFERS * chunk_bytes] * p, what)


def _run(st: Any, chunks: int, chunk_bytes: int, produce: Callable[[int, np.ndarray], None],
         consume: Callable[[int, int, np.ndarray], None], what: str) -> None:
    """The chunk loop: ``produce(t, mine)`` fills this lab's buffer for chunk t;
    ``consume(t, k, theirs)`` takes this lab's piece of lab k's chunk t (0-based k)."""
    lab, p = here()
    c = comm.block()
    segs = [st.segment(k) for k in range(p)]

    def buf(k: int, t: int) -> np.ndarray:
        off = (t % _BUFFERS) * chunk_bytes
        return segs[k][off:off + chunk_bytes]

    def take(t: int) -> None:
        for j in range(p):  # the others' chunks first, starting from the next lab
            k = (lab - 1 + j + 1) % p
            consume(t, k, buf(k, t))

    barriers: list = []
    done = 0  # barriers[:done] completed; comm.wait abandons the one it was waiting for

    def passed(t: int) -> None:
        nonlocal done
        done = t + 1
        comm.wait(barriers[t], what)

    try:
        for t in range(chunks):
            produce(t, buf(lab - 1, t))
            barriers.append(c.Ibarrier())
            if t:
                passed(t - 1)
                take(t - 1)
        passed(chunks - 1)
        take(chunks - 1)
    except BaseException:  # an abort: the barriers not waited for yet stay MPI's until they end
        for request in barriers[done:]:
            comm.abandon(request)
        raise
    comm.wait(c.Ibarrier(), what)  # nobody writes a buffer again while another lab reads it


def _offsets(part: Sequence[int]) -> list[int]:
    return [0, *np.cumsum(part).tolist()]


def _plan(split: Sequence[int], line: int, item: int, what: str) -> tuple:
    """``(chunks, chunk bytes, staging window or None, each lab's chunk bounds)`` for moving
    parts of ``split[k]`` whole lines of ``line`` elements each, in the same number of chunks
    on every lab."""
    chunks = _chunks(max(split), line, item)
    per_chunk = max(math.ceil(c / chunks) for c in split)
    chunk_bytes = max(64, per_chunk * line * item)
    return chunks, chunk_bytes, window(chunk_bytes, what), [_bounds(c, chunks) for c in split]


def _pipelined(local: np.ndarray, src_shape: Tuple[int, int], axis: int, split: Sequence[int],
               out_shape: Tuple[int, int], pre: Pre, place: Callable[[np.ndarray, int, int, int, np.ndarray], None],
               what: str) -> Optional[np.ndarray]:
    """What both transposes share (P3DFFT's and mpi4py-fft's pipelining, see the module):
    this lab's part ``local``, seen as ``src_shape``, is cut along ``axis`` into chunks of
    whole lines (lab k holds ``split[k]`` lines; every lab the same number of chunks); each
    chunk goes through ``pre(src, buf, a0)`` into this lab's buffer, and ``place(out, k, a0,
    a1, block)`` puts lines ``a0:a1`` of lab k's part (``block``, a view of its buffer) into
    this lab's new part ``out`` (``out_shape``). None when there is no staging window."""
    lab, _ = here()
    me = lab - 1
    dtype = local.dtype
    item = dtype.itemsize
    line = src_shape[1 - axis]
    chunks, chunk_bytes, st, bounds = _plan(split, line, item, what)
    if st is None:
        return None
    out = np.empty(out_shape, dtype=dtype)
    src = local.reshape(src_shape)

    def block(buf: np.ndarray, h: int) -> np.ndarray:
        """A buffer seen as a chunk of ``h`` lines."""
        return buf[:h * line * item].view(dtype).reshape((h, line) if axis == 0 else (line, h))

    def produce(t: int, mine: np.ndarray) -> None:
        a0, a1 = bounds[me][t], bounds[me][t + 1]
        if a1 > a0:
            pre(src[a0:a1] if axis == 0 else src[:, a0:a1], block(mine, a1 - a0), a0)

    def consume(t: int, k: int, theirs: np.ndarray) -> None:
        a0, a1 = bounds[k][t], bounds[k][t + 1]
        if a1 > a0 and out.size:
            place(out, k, a0, a1, block(theirs, a1 - a0))

    _run(st, chunks, chunk_bytes, produce, consume, what)
    return out


def cols_to_rows(local: np.ndarray, n1: int, n2: int, rows: Sequence[int], cols: Sequence[int],
                 pre: Pre, what: str) -> Optional[np.ndarray]:
    """This lab's part by rows ``(rows[me], n2)`` of the n1 x n2 matrix whose part by
    columns is ``local`` ``(n1, cols[me])``, with ``pre(src, buf, j0)`` applied to each
    chunk of whole columns first (``src`` the columns ``j0:j0 + w`` of ``local``,
    ``buf`` an ``(n1, w)`` buffer it must fill; ``pre`` may not change ``local``).
    None when there is no staging window (nothing done)."""
    lab, _ = here()
    me = lab - 1
    r0, c0 = _offsets(rows), _offsets(cols)

    def place(out: np.ndarray, k: int, j0: int, j1: int, block: np.ndarray) -> None:
        np.copyto(out[:, c0[k] + j0:c0[k] + j1], block[r0[me]:r0[me + 1]])

    return _pipelined(local, (n1, cols[me]), 1, cols, (rows[me], n2), pre, place, what)


def rows_to_cols(local: np.ndarray, n1: int, n2: int, rows: Sequence[int], cols: Sequence[int],
                 pre: Pre, what: str, transpose: bool = False) -> Optional[np.ndarray]:
    """This lab's part by columns ``(n1, cols[me])`` (its transpose ``(cols[me], n1)``,
    contiguous, when ``transpose``) of the n1 x n2 matrix whose part by rows is ``local``
    ``(rows[me], n2)``, with ``pre(src, buf, i0)`` applied to each chunk of whole rows
    first (``src`` the rows ``i0:i0 + h``, ``buf`` an ``(h, n2)`` buffer to fill).
    None when there is no staging window (nothing done)."""
    lab, _ = here()
    me = lab - 1
    r0, c0 = _offsets(rows), _offsets(cols)

    def place(out: np.ndarray, k: int, i0: int, i1: int, block: np.ndarray) -> None:
        mine = block[:, c0[me]:c0[me + 1]]
        if transpose:
            np.copyto(out[:, r0[k] + i0:r0[k] + i1], mine.T)
        else:
            np.copyto(out[r0[k] + i0:r0[k] + i1], mine)

    shape: Tuple[int, int] = (cols[me], n1) if transpose else (n1, cols[me])
    return _pipelined(local, (rows[me], n2), 0, rows, shape, pre, place, what)


def copy(src: np.ndarray, buf: np.ndarray, first: int) -> None:
    """The ``pre`` of a plain transpose: the chunk as it is."""
    np.copyto(buf, src)


_INORM = {("backward", True): 0, ("backward", False): 2, ("ortho", True): 1, ("ortho", False): 1,
          ("forward", True): 2, ("forward", False): 0}


def fft_into(src: np.ndarray, buf: np.ndarray, axes: Sequence[int], forward: bool, norm: Optional[str],
             workers: int) -> None:
    """``buf[...] =`` the complex FFT of ``src`` (same shape) along ``axes`` with numpy's
    ``norm``: along the last axis scipy.fft's pocketfft kernel writing into ``buf`` (no
    copy of the chunk first: 0.065 s against 0.077 s for 2048 x 4096 in chunks of 128
    rows); along others a copy and ``scipy.fft.fftn`` in place (the copy makes the
    lines of ``buf`` contiguous, which pays: 0.095 s against 0.111 s for 4096 x 2048
    in chunks of 16 columns)."""
    how = norm or "backward"
    last = tuple(axes) == (src.ndim - 1,)
    if last and _pocketfft is not None and src.dtype == buf.dtype and src.dtype.kind == "c":
        _pocketfft.c2c(src, tuple(axes), forward, _INORM[(how, forward)], buf, workers)
        return
    np.copyto(buf, src)
    f = sfft.fftn if forward else sfft.ifftn
    r = f(buf, axes=list(axes), norm=how, overwrite_x=True, workers=workers)
    if not np.may_share_memory(r, buf):
        np.copyto(buf, r)
