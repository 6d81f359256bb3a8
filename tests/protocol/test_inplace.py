"""Array parts on the wire without staging copies (issue 22): a strided region is sent
piece by piece from its own memory and arrives as the same array; a receiver that names
the place of a buffer gets it written straight there (the reply then reads ``PLACED``),
and only for the request it asked about, at the size it expected."""
from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from spmdlab.protocol.channel import Channel, _advance, dumps
from spmdlab.protocol.inplace import MIN_PIECE, PLACED, Part, Pieces, pieces

pytestmark = [pytest.mark.nompi, pytest.mark.timeout(60)]


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    ends = Channel(a), Channel(b)
    yield ends
    for end in ends:
        end.close()


def send_in_thread(chan, obj, epoch=7):
    """Send ``obj`` from another thread (a large message fills the socket's buffer)."""
    t = threading.Thread(target=chan.send, args=(obj, False, epoch))
    t.start()
    return t


REGIONS = [
    (lambda A: A[:, 100:700], (40, 1000)),      # a column block: runs of 4800 bytes
    (lambda A: A[3:17, :], (40, 1000)),         # rows: contiguous
    (lambda A: A[:, 1:5], (40, 1000)),          # runs of 32 bytes: packed
    (lambda A: A[2:30, 64:256, :], (32, 300, 4)),  # 3-D, the middle axis cut: runs of 6 KB
    (lambda A: A[:, :0], (40, 1000)),           # empty
]


@pytest.mark.parametrize("cut, shape", REGIONS)
def test_a_part_arrives_as_the_region(pair, cut, shape):
    A = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    t = send_in_thread(pair[0], Part(cut(A)))
    got = pair[1].recv()
    t.join()
    assert isinstance(got, np.ndarray) and got.dtype == A.dtype
    assert np.array_equal(got, cut(A))


def test_a_strided_part_is_sent_from_its_memory_not_packed():
    A = np.arange(400.0 * 2000).reshape(400, 2000)
    frames = dumps(Part(A[:, 100:700]))
    raws = frames[2:]
    assert len(raws) == 1 and isinstance(raws[0], Pieces) and len(raws[0]) == 400
    assert all(np.shares_memory(np.frombuffer(p, np.float64), A) for p in list(raws[0])[:3])
    assert b"".join(bytes(p) for p in raws[0]) == A[:, 100:700].tobytes()


@pytest.mark.parametrize("cut, shape", [REGIONS[0], REGIONS[1], REGIONS[3]])
def test_a_named_place_is_filled_straight(pair, cut, shape):
    A = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    out = np.zeros(shape)
    region = cut(out)
    asked = []

    def place(epoch, nbuf, size):
        asked.append((epoch, nbuf, size))
        return pieces(region), PLACED

    t = send_in_thread(pair[0], Part(cut(A)), epoch=7)
    got = pair[1].recv(place)
    t.join()
    assert got is PLACED and asked == [(7, 1, region.nbytes)]
    assert np.array_equal(region, cut(A))
    rest = np.ones(shape, bool)
    cut(rest)[...] = False  # everything outside the region untouched
    assert not out[rest].any()


def test_a_place_declined_reads_the_buffer_as_usual(pair):
    A = np.arange(200000.0).reshape(100, 2000)
    t = send_in_thread(pair[0], Part(A[:, 500:1500]))
    got = pair[1].recv(lambda epoch, nbuf, size: None)
    t.join()
    assert np.array_equal(got, A[:, 500:1500])


def test_messages_without_one_buffer_never_ask_for_a_place(pair):
    asked = []
    pair[0].send({"a": 1, "b": np.arange(3), "c": np.arange(4)})
    got = pair[1].recv(lambda *a: asked.append(a))
    assert asked == [] and np.array_equal(got["c"], np.arange(4))


def test_pieces_split_at_runs_and_refuse_short_ones():
    A = np.zeros((10, 2000))
    assert len(pieces(A)) == 1 and len(pieces(A[2:5])) == 1
    assert [len(p) for p in pieces(A[:, 10:1010])] == [8000] * 10
    assert pieces(A[:, :MIN_PIECE // 8 - 1]) is None
    assert pieces(A[::2, :]) is not None and len(pieces(A[::2, :])) == 5
    assert pieces(A[:, ::2]) is None  # no contiguous run at all
    assert len(pieces(A[:0])) == 0 and pieces(A[:0]).nbytes == 0


def test_pieces_come_in_batches_of_at_most_iov_max_views():
    A = np.arange(3000 * 200.0).reshape(3000, 200)
    parts = pieces(A[:, 50:150])
    batches = list(parts.batches(1024))
    assert [len(b) for b, _ in batches] == [1024, 1024, 952] and parts.nbytes == 3000 * 800
    assert [n for _, n in batches] == [1024 * 800, 1024 * 800, 952 * 800]
    assert b"".join(bytes(v) for b, _ in batches for v in b) == A[:, 50:150].tobytes()


def test_advance_resumes_inside_the_piece_a_short_transfer_stopped_in():
    views = [memoryview(bytearray(10)), memoryview(bytearray(5)), memoryview(bytearray(7))]
    assert _advance(views, 0, 12) == 1 and len(views[1]) == 3
    assert _advance(views, 1, 3) == 2 and len(views[2]) == 7
    assert _advance(views, 2, 7) == 3
