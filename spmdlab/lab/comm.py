"""The one module that owns the labs' MPI communicators, and the interruptible wait.

The labs never use ``COMM_WORLD`` directly: ``base`` is a ``Dup`` of it, and the
communicator blocks use (``current``) is a ``Dup`` of ``base``, renewed after a block
ended abnormally so stale messages and abandoned requests of that block cannot match
anything later. ``spmd(n)`` blocks use a communicator over labs 1..n, made by those labs
alone (``Create_group``).

Every wait is a nonblocking request polled together with the abort flag the interrupt
thread sets, so Ctrl-C, another lab's error or a timeout end it within milliseconds.

It also owns the one other MPI object labs keep: per block communicator, a window of
memory the labs of one machine share (``staging``), which ``redistribute`` reuses.
"""
from __future__ import annotations

import math
import os
import time

import mpi4py

# Only the main thread calls MPI, but "multiple" (mpi4py's default) is faster here: MPICH's
# blocking progress then yields the CPU, which matters with more labs than cores (a raw
# Alltoallv of 80 MB on 4 labs / 2 cores: 12 ms funneled, 6 ms multiple).
mpi4py.rc.thread_level = "multiple"
mpi4py.rc.initialize = True
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from .. import runtime  # noqa: E402
from .. import settings  # noqa: E402
from . import waits  # noqa: E402

__all__ = ["init", "renew", "renewals", "enter_block", "block", "world_size", "abandon", "track", "untrack",
           "send_to_self", "wait", "wait_all", "wait_every", "probe", "grid_comms", "private_comm", "Staging",
           "labs_comm", "free_labs_comm", "within", "block_or_none",
           "staging", "staging_bytes", "ANY_SOURCE", "ANY_TAG", "MPI",
           "make_control", "control_post", "control_rest", "control_send", "control_gather", "control_ready"]

_base: MPI.Intracomm | None = None
_current: MPI.Intracomm | None = None
_subcomms: dict[int, MPI.Intracomm] = {}
# (id(block communicator), grid key) -> (row communicator, column communicator) of a
# process grid (dense linear algebra); freed on renewal
_grid_comms: dict[tuple, tuple] = {}
_block: MPI.Intracomm | None = None
# id(block communicator) -> the library's duplicate of it for point-to-point moves
_private: dict[int, MPI.Intracomm] = {}
# Requests of aborted operations, with their buffers and the renewal they were abandoned
# before: (request, buffers, renewal). Kept until the request has completed (a cancelled
# receive at once; a send once matched), so MPI can never write into reused memory, or
# until it has outlived _QUARANTINE renewals: then it is one no message can ever complete
# and it is released (see _reap). A request of None holds an MPI object whose Free
# failed (a communicator, a window), retried at each renewal.
_graveyard: list = []
_renewals = 0
_QUARANTINE = 2
# Nonblocking operations started and not yet waited for (pipelined broadcasts, exchanges
# kept one step ahead): key -> (request, buffers). One an abort leaves here goes to the
# graveyard at the next renewal.
_in_flight: dict = {}
# Sends to this lab itself, not waited for (a large one completes only when received).
_self_sends: list = []
_staging_limit = 0  # bytes per lab; 0: no staging windows


def init() -> tuple[int, int]:
    """Initialise the communicators; return ``(rank, size)`` of the whole job."""
    global _base, _current, _staging_limit
    _base = MPI.COMM_WORLD.Dup()
    _current = _base.Dup()
    node = _base.Split_type(MPI.COMM_TYPE_SHARED)
    waits.init(MPI, abandon, node.Get_size())
    node.Free()
    _make_private(_current)
    _unlink_shared_files()
    _staging_limit = int(settings.load().staging_mb * 2 ** 20)
    if _staging_limit:
        _note_node(_current)
    return _base.Get_rank(), _base.Get_size()


def _unlink_shared_files() -> None:
    """Remove the names of the files behind MPICH's shared memory in /dev/shm.

    MPICH removes its main one only in ``MPI_Finalize``, and labs end with ``os._exit``
    or are killed, so every pool left a few MB of RAM (tmpfs) behind until reboot. Once
    all labs have mapped it (they all took part in the ``Dup`` before this), the name
    can go: the mappings stay valid."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(maxsplit=5)[5].strip() for line in maps if " /dev/shm/mpich_shm_" in line}
    except OSError:  # not Linux
        return
    for path in paths:
        if not path.endswith("(deleted)"):
            try:
                os.unlink(path)
            except OSError:  # another lab of this machine was first
                pass


def renew() -> None:
    """Replace the pool communicator after an aborted block. Collective over all labs,
    so the client sends every block to every lab. The old communicators are freed (MPI
    releases each once its pending operations are done), so aborted blocks leak none.

    A blocking ``Dup``: MPICH's ``Idup`` here can complete on some labs and never on
    another while schedules of the aborted block's nonblocking collectives are still
    pending (seen with an abandoned ``Iallreduce``). Every lab gets here (the client
    sends each block to all labs and waits for all replies first), so it cannot hang."""
    global _current, _renewals
    _free_staging()
    old = [_current, *_subcomms.values()]
    _subcomms.clear()
    for request, keep in _self_sends:
        abandon(request, keep)
    for requests, keep in _in_flight.values():
        _give_up(requests if isinstance(requests, list) else [requests], keep)
    _self_sends.clear()
    _in_flight.clear()
    _free_grid_comms()
    for c in list(_labs_comms):
        _forget(c)
    for private in _private.values():
        _free(private)
    _private.clear()
    _current = _base.Dup()
    _make_private(_current)
    for c in old:
        _free(c)
    _renewals += 1
    _reap()
    if _staging_limit:
        _note_node(_current)


def renewals() -> int:
    """How many times the communicators were renewed (the same count on every lab)."""
    return _renewals


def _free(c) -> None:
    """Free an MPI communicator (or a staging window); kept for a retry if MPI refuses."""
    try:
        c.free() if isinstance(c, Staging) else c.Free()
    except MPI.Exception:
        _graveyard.append((None, c, _renewals))


def _reap() -> None:
    """Drop the abandoned requests that have completed, with their buffers, and release
    those that outlived ``_QUARANTINE`` renewals (called from ``renew``, just after its
    blocking ``Dup``).

    Why releasing one is safe: an operation of an aborted block whose parts every lab had
    posted completes within moments, as every lab runs MPI's progress engine (in
    ``renew``'s collectives, each reap's ``Test`` and every later wait). One still pending
    after two renewals, each a collective all labs reach only after leaving the aborted
    block, waits for a part a lab never posted and never will (its block is over and the
    communicator freed), so no message can match it and MPI never writes its buffers: the
    request is freed (MPI drops it on completion, i.e. never, in a few hundred bytes) and
    the buffers go. Without this every block aborted inside a factorization kept its
    panel buffers for good (issue 19)."""
    alive = []
    for request, keep, born in _graveyard:
        if request is None:
            try:
                keep.free() if isinstance(keep, Staging) else keep.Free()
            except MPI.Exception:
                alive.append((request, keep, born))
            continue
        try:
            if request.Test():
                continue
        except MPI.Exception:
            continue  # completed with an error (a truncated message, say)
        if _renewals - born < _QUARANTINE:
            alive.append((request, keep, born))
            continue
        try:
            request.Free()
        except MPI.Exception:
            pass  # the handle is dropped with its Python object
    _graveyard[:] = alive


def enter_block(nlabs: int) -> MPI.Intracomm | None:
    """Select the communicator for a block on labs 1..nlabs (None if this lab sits out)."""
    global _block
    size = _current.Get_size()
    rank = _current.Get_rank()
    if nlabs <= 0 or nlabs >= size:
        _block = _current
    elif rank >= nlabs:
        _block = None
    else:
        if nlabs not in _subcomms:
            group = _current.Get_group().Range_incl([(0, nlabs - 1, 1)])
            _subcomms[nlabs] = _current.Create_group(group, tag=nlabs)
            _make_private(_subcomms[nlabs])
            group.Free()
            if _staging_limit:
                _note_node(_subcomms[nlabs])
        _block = _subcomms[nlabs]
    return _block


def block() -> MPI.Intracomm:
    """The communicator of the running block."""
    if _block is None:
        raise RuntimeError("lab messaging works only inside an spmd block on a lab")
    return _block


def world_size() -> int:
    return _current.Get_size()


def abandon(request: MPI.Request, keep: tuple = ()) -> None:
    """Keep an unfinished request and its buffers alive until it completes (or is
    released as one that never can, see ``_reap``)."""
    _graveyard.append((request, keep, _renewals))


def track(key: object, requests, keep: tuple) -> None:
    """Note started operations (a request or a list) not waited for yet (a pipelined
    broadcast): if the block is aborted before :func:`untrack`, the next renewal
    abandons them with their buffers."""
    _in_flight[id(key)] = (requests, keep)


def untrack(key: object) -> None:
    """The operation noted with ``track(key, ...)`` has been waited for."""
    _in_flight.pop(id(key), None)


def send_to_self(requests: list, keep: tuple) -> None:
    """Leave sends to this lab itself running: they complete when it receives them."""
    _self_sends[:] = [(r, k) for r, k in _self_sends if not r.Test()]
    _self_sends.extend((r, keep) for r in requests)


# --------------------------------------------------------------------------- waits
# (lab/waits.py: a blocking MPI wait beside a wake-up receive the abort flag completes)
wait = waits.wait
wait_all = waits.wait_all
wait_every = waits.wait_every
probe = waits.probe
_give_up = waits.give_up


# --------------------------------------------------------------------------- process grids
def grid_comms(key: tuple, myrow: int, mycol: int, what: str) -> tuple[MPI.Intracomm, MPI.Intracomm]:
    """The row and column communicators of a 2-D process grid over the running block's
    labs (ScaLAPACK's BLACS row/column scopes): ``(row, col)``, where ``row`` holds the
    labs of grid row ``myrow`` ranked by grid column and ``col`` the labs of grid column
    ``mycol`` ranked by grid row.

    Collective: every lab of the block calls it with the same ``key`` (it names the grid,
    e.g. ``(nprow, npcol, orientation)``) and its own coordinates. Made once per block
    communicator and key (cached), freed in :func:`renew`. ``Comm.Split`` blocks, so the
    labs first meet in an interruptible barrier: a lab that failed before getting here
    aborts the others there instead of leaving them stuck in the split."""
    c = block()
    k = (id(c),) + tuple(key)
    found = _grid_comms.get(k)
    if found is not None:
        return found
    wait(c.Ibarrier(), what)
    row = c.Split(myrow, mycol)
    col = c.Split(mycol, myrow)
    _grid_comms[k] = (row, col)
    return row, col


def private_comm(what: str = "") -> MPI.Intracomm:
    """The library's own duplicate of the running block's communicator, for its
    point-to-point messages (halo updates, chunk moves), so that they can never match a
    user's ``labReceive`` of any tag. Made with the block communicator itself (every lab
    takes part in that), never lazily: a lab with nothing to send must not have to join
    a collective the others start."""
    return _private[id(block())]


def _make_private(c: MPI.Intracomm) -> None:
    _private[id(c)] = c.Dup()


def _free_grid_comms() -> None:
    """Free the process-grid communicators (from ``renew``: every lab frees the same
    ones, in the order they were made). ``Free`` only releases the handle; MPI keeps
    the communicator until operations abandoned on it are done."""
    for pair in list(_grid_comms.values()):
        for c in pair:
            _free(c)
    _grid_comms.clear()


# --------------------------------------------------------------------------- sub-grid communicators
_labs_comms: list[MPI.Intracomm] = []  # communicators of process grids on some labs (labs_comm)


def labs_comm(ranks: tuple[int, ...], what: str) -> MPI.Intracomm | None:
    """A communicator over the running block's ranks ``ranks`` (0-based, in that rank
    order), for a process grid on some of the labs (BLACS' ``blacs_gridmap``): the new
    communicator on those labs, None on the others.

    Collective over the block (``Comm.Split``), after an interruptible barrier so a lab
    that failed before getting here aborts the others instead of leaving them in the
    split. Members also make its private duplicate and note whether it is on one machine
    (collectives over the new communicator, which only its members take part in), so
    every operation of the library runs on it inside :func:`within`. Freed by
    :func:`free_labs_comm` or at the next renewal."""
    c = block()
    wait(c.Ibarrier(), what)
    me = c.Get_rank()
    color = 0 if me in ranks else MPI.UNDEFINED
    sub: MPI.Intracomm = c.Split(color, ranks.index(me) if me in ranks else 0)
    if sub == MPI.COMM_NULL:
        return None
    _make_private(sub)
    if _staging_limit:
        _note_node(sub)
    _labs_comms.append(sub)
    return sub


def _forget(c: MPI.Intracomm) -> None:
    """Free ``c`` and everything made from it (private duplicate, grid row/column
    communicators, staging window, node communicator)."""
    key = id(c)
    for k in [k for k in _grid_comms if k[0] == key]:
        for x in _grid_comms.pop(k):
            _free(x)
    st = _staging.pop(key, None)
    if st is not None:
        _free(st)
    node = _nodes.pop(key, None)
    if node is not None:
        _free(node)
    private = _private.pop(key, None)
    if private is not None:
        _free(private)
    if c in _labs_comms:
        _labs_comms.remove(c)
    _free(c)


def free_labs_comm(c: MPI.Intracomm) -> None:
    """Release a communicator from :func:`labs_comm` (BLACS' ``blacs_gridexit``); only
    its members call it. Nothing if the renewal after an error already freed it."""
    if any(x is c for x in _labs_comms):
        _forget(c)


def block_or_none() -> MPI.Intracomm | None:
    """The running block's communicator, None outside a block."""
    return _block


class within:
    """``with within(c):`` runs the library on communicator ``c`` (from :func:`labs_comm`)
    as if it were the block's: ``block()``, ``labindex()`` and ``numlabs()`` are those of
    ``c`` until the ``with`` ends. Operations on an array living on some labs run so."""

    def __init__(self, c: MPI.Intracomm) -> None:
        self.c = c
        self.saved: tuple = ()

    def __enter__(self) -> MPI.Intracomm:
        global _block
        self.saved = (_block, runtime.state.index, runtime.state.size)
        _block = self.c
        runtime.state.index, runtime.state.size = self.c.Get_rank() + 1, self.c.Get_size()
        return self.c

    def __exit__(self, *exc: object) -> None:
        global _block
        _block, runtime.state.index, runtime.state.size = self.saved


# --------------------------------------------------------------------------- staging
class Staging:
    """Memory every lab of a block can read: one segment per lab, in one window that MPI
    allocated in memory the labs' machine shares."""

    def __init__(self, comm: MPI.Intracomm, node: MPI.Intracomm, sizes: list[int]) -> None:
        self.comm, self.node, self.sizes = comm, node, sizes
        self.win = MPI.Win.Allocate_shared(sizes[node.Get_rank()], 1, comm=node)
        self._segments = [np.frombuffer(self.win.Shared_query(k)[0], np.uint8)[:sizes[k]]
                          for k in range(len(sizes))]

    def segment(self, rank: int) -> np.ndarray:
        """Lab ``rank``'s segment (0-based rank in the block) as uint8."""
        return self._segments[rank]

    def sync(self, what: str) -> None:
        """An interruptible barrier: what a lab wrote before it, every lab sees after it
        (the window is in the unified memory model; the barrier's atomics order it)."""
        wait(self.comm.Ibarrier(), what)

    def free(self) -> None:
        self._segments = []
        self.win.Free()


_nodes: dict[int, MPI.Intracomm] = {}  # id(block communicator) -> the same labs, if on one machine
_staging: dict[int, Staging] = {}  # id(block communicator) -> its window


def staging(sizes: list[int], what: str) -> Staging | None:
    """The block's staging window with segments of at least ``sizes[k]`` bytes for lab k
    (0-based), made or grown if needed; None when the block's labs are on several
    machines or a segment would exceed ``SPMDLAB_STAGING_MB``. Collective: every lab of
    the block calls it with the same sizes, so all take the same path."""
    if _staging_limit == 0 or max(sizes, default=0) > _staging_limit:
        return None
    c = block()
    key = id(c)
    node = _nodes.get(key)
    if node is None:
        return None
    old = _staging.get(key)
    if old is not None and all(s <= h for s, h in zip(sizes, old.sizes)):
        return old
    # Freeing and allocating a window are blocking collectives: a lab that failed before
    # getting here would leave the others stuck in them for good, so meet first in an
    # interruptible barrier (another lab's error aborts it).
    wait(c.Ibarrier(), what)
    # segments rounded to 64 bytes keep every segment aligned for any dtype
    grown = [64 * math.ceil(max(s, h) / 64) for s, h in zip(sizes, old.sizes if old else [0] * len(sizes))]
    if old is not None:
        del _staging[key]
        old.free()
    _staging[key] = Staging(c, node, grown)
    return _staging[key]


def staging_bytes() -> int:
    """Bytes of this lab's segment of the running block's staging window (0: none)."""
    st = _staging.get(id(block()))
    return st.sizes[block().Get_rank()] if st is not None else 0


def _note_node(c: MPI.Intracomm) -> None:
    """Record whether the labs of communicator ``c`` share one machine (collective; called
    where ``c`` is made, when every lab of it is there anyway)."""
    node = c.Split_type(MPI.COMM_TYPE_SHARED)
    if node.Get_size() == c.Get_size():
        _nodes[id(c)] = node
    else:
        _free(node)


def _free_staging() -> None:
    """Free every staging window (collective: only from ``renew``, where all labs are)."""
    for key, st in list(_staging.items()):
        del _staging[key]
        _free(st)
    for node in _nodes.values():
        _free(node)
    _nodes.clear()


ANY_SOURCE = MPI.ANY_SOURCE
ANY_TAG = MPI.ANY_TAG


# --------------------------------------------------------------------------- control tree
# The tree fan-out (docs/design.md §10b) on a communicator no block uses, never renewed:
# every lab joins every broadcast and gather whatever its block did, so they complete.
_control: MPI.Intracomm | None = None
_FIRST = 4096  # bytes of the first broadcast: an 8-byte length and the request's start


def make_control() -> None:
    """Make the control communicator (collective over the whole job, at start-up)."""
    global _control
    _control = _base.Dup()


def _settle(request: MPI.Request) -> None:
    """Wait for a control-tree request, not abortable: yield, then sleep up to 1 ms."""
    spin_until = time.perf_counter() + waits.YIELD_SECONDS
    delay = 2e-5
    while not request.Test():
        if time.perf_counter() < spin_until:
            os.sched_yield()
        else:
            time.sleep(delay)
            delay = min(delay * 1.5, 1e-3)


def control_post() -> tuple[MPI.Request, bytearray]:
    """On a lab other than lab 1: start receiving the next broadcast request."""
    buf = bytearray(_FIRST)
    return _control.Ibcast([buf, MPI.BYTE], root=0), buf


def control_rest(first: bytearray) -> bytes:
    """The whole request whose first broadcast ``first`` has completed."""
    size = int.from_bytes(first[:8], "little")
    if size <= _FIRST - 8:
        return bytes(first[8:8 + size])
    rest = bytearray(size - (_FIRST - 8))
    _settle(_control.Ibcast([rest, MPI.BYTE], root=0))
    return bytes(first[8:]) + bytes(rest)


def control_send(data: bytes) -> None:
    """On lab 1: broadcast the request ``data`` to every lab (see :func:`control_rest`)."""
    first = bytearray(_FIRST)
    first[:8] = len(data).to_bytes(8, "little")
    first[8:8 + min(len(data), _FIRST - 8)] = data[:_FIRST - 8]
    _settle(_control.Ibcast([first, MPI.BYTE], root=0))
    if len(data) > _FIRST - 8:
        _settle(_control.Ibcast([bytearray(data[_FIRST - 8:]), MPI.BYTE], root=0))


def control_gather(slot: bytes) -> bytearray | None:
    """Gather every lab's fixed-size ``slot`` at lab 1: the slots in rank order there,
    None elsewhere."""
    out = bytearray(len(slot) * _control.Get_size()) if _control.Get_rank() == 0 else None
    recv = [out, MPI.BYTE] if out is not None else None
    _settle(_control.Igather([slot, MPI.BYTE], recv, root=0))
    return out


def control_ready(request: MPI.Request) -> bool:
    """True once the broadcast :func:`control_post` started has arrived."""
    return bool(request.Test())
