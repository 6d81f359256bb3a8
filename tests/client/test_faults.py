"""The client <-> lab seam under faults: each case gives one clear error (or works) and
leaves the pool usable (cases a-k)."""
import io
import os
import sys
import time

import cloudpickle
import numpy as np
import pytest
from support.processes import run_script

import spmdlab
from spmdlab import SpmdError, gplus, labindex, labReceive, labSend, spmd, spmd_run

pytestmark = pytest.mark.timeout(180)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def still_works(pool) -> None:
    """The next block returns its own values."""
    with spmd(pool=pool):
        mine = labindex() * 100 + 7
        total = gplus(labindex())
    assert [mine[lab] for lab in range(1, pool.numlabs + 1)] == [100 * lab + 7 for lab in range(1, pool.numlabs + 1)]
    assert total[1] == pool.numlabs * (pool.numlabs + 1) // 2


# ---- a: lab exceptions the client cannot rebuild ------------------------------------------

TWO_ARGS = """class TwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a}+{b}")
"""


def test_a_lab_exceptions_the_client_cannot_rebuild_arrive_as_text(pool2, tmp_path):
    shared, lab_only = tmp_path / "shared", tmp_path / "labonly"
    shared.mkdir()
    lab_only.mkdir()
    (shared / "twoargs_mod.py").write_text(TWO_ARGS)
    (lab_only / "labonly_mod.py").write_text("class LabOnlyError(Exception):\n    pass\n")
    sys.path.insert(0, str(shared))
    try:
        shared_dir, lab_dir = str(shared), str(lab_only)
        with pytest.raises(SpmdError) as info:
            with spmd(pool=pool2):
                class Oops(Exception):
                    pass

                raise Oops(f"made in the block {labindex() * 0}")
        assert str(info.value).startswith(f'Error detected on labs 1 and 2:\nTraceback (most recent call last):\n'
                                          f'  File "{__file__}", line ')
        assert str(info.value).endswith('    raise Oops(f"made in the block {labindex() * 0}")\n'
                                        'Oops: made in the block 0')
        assert info.value.errors[1].exception is None
        still_works(pool2)

        with pytest.raises(SpmdError) as info:
            with spmd(pool=pool2):
                import sys as _sys

                _sys.path.insert(0, shared_dir)
                import twoargs_mod

                raise twoargs_mod.TwoArgs(1, 2)
        assert str(info.value).startswith("Error detected on labs 1 and 2:\nTraceback (most recent call last):\n")
        assert str(info.value).endswith("    raise twoargs_mod.TwoArgs(1, 2)\nTwoArgs: 1+2")
        assert info.value.errors[2].exception is None  # TwoArgs("1+2") cannot be called
        still_works(pool2)

        with pytest.raises(SpmdError) as info:
            with spmd(pool=pool2):
                import sys as _sys

                _sys.path.insert(0, lab_dir)
                import labonly_mod

                raise labonly_mod.LabOnlyError("only the labs know this class")
        assert str(info.value).endswith("LabOnlyError: only the labs know this class")
        assert info.value.errors[1].exception is None
        still_works(pool2)
    finally:
        sys.path.remove(str(shared))


# ---- b: lab values that cannot be pickled -------------------------------------------------

@pytest.mark.parametrize("make, type_name, why", [
    ("__import__('threading').Lock()", "lock", "cannot pickle '_thread.lock' object"),
    ("(i for i in range(3))", "generator", "cannot pickle 'generator' object"),
    ("__import__('socket').socket()", "socket", "cannot pickle 'socket' object"),
])
def test_b_a_lab_value_that_cannot_be_pickled_gives_an_error_naming_it(pool2, make, type_name, why):
    with spmd(pool=pool2):
        bad = eval(make)
        kept = labindex() + 40
    start = time.monotonic()
    with pytest.raises(SpmdError) as info:
        bad[2]
    assert time.monotonic() - start < 2
    assert str(info.value) == (f"Error detected on lab 2:\nTypeError: lab 2's value of type {type_name} "
                               f"cannot be sent to the client: {why}")
    assert kept[2] == 42
    with spmd(pool=pool2):
        still_there = type(bad).__name__
    assert still_there[2] == type_name
    returned = spmd_run(lambda: (i for i in range(labindex())), pool=pool2)
    with pytest.raises(SpmdError, match="lab 1's value of type generator cannot be sent to the client"):
        returned[1]
    still_works(pool2)


def test_b_pmode_lab2client_of_an_unpicklable_value(pool2):
    from spmdlab.pmode.output import Printer
    from spmdlab_repl.session import PmodeSession

    out = io.StringIO()
    session = PmodeSession(pool2, Printer(out), stream_after=None)
    session.start()
    session.handle("import threading; L = threading.Lock(); n = labindex()")
    start = time.monotonic()
    session.handle("pmode lab2client L 2 L")
    assert time.monotonic() - start < 2
    assert ("lab2client failed: Error detected on lab 2:\nTypeError: lab 2's value of type lock cannot be "
            "sent to the client: cannot pickle '_thread.lock' object") in out.getvalue()
    assert "compiled code" not in out.getvalue()
    session.handle("pmode lab2client n 2 m")
    assert session.client_ns["m"] == 2
    still_works(pool2)


# ---- c: client values the labs cannot unpickle ------------------------------------------

def test_c_a_client_value_the_labs_cannot_unpickle_names_the_module(pool2, tmp_path):
    (tmp_path / "clientonly_mod.py").write_text("class Thing:\n    pass\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import clientonly_mod

        thing = clientonly_mod.Thing()
        with pytest.raises(SpmdError) as info:
            with spmd(pool=pool2):
                got = thing
        assert str(info.value) == (
            "Error detected on labs 1 and 2:\nSpmdError: the lab could not unpickle what the client sent: "
            "ModuleNotFoundError: No module named 'clientonly_mod'")
        c = spmdlab.Composite(pool=pool2)
        with pytest.raises(SpmdError) as info:
            c[2] = thing
        assert str(info.value) == (
            "Error detected on lab 2:\nSpmdError: the lab could not unpickle what the client sent: "
            "ModuleNotFoundError: No module named 'clientonly_mod'")
        assert not c.exist(2)
        import threading

        lock = threading.Lock()
        with pytest.raises(TypeError) as info:
            with spmd(pool=pool2):
                got = lock
        assert str(info.value) == "spmd cannot send 'lock' (a lock) to the labs: cannot pickle '_thread.lock' object"
        still_works(pool2)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("clientonly_mod", None)


# ---- d: aborted blocks leak nothing --------------------------------------------------------

def _lab_resources():
    from spmdlab.lab import comm

    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return len(comm._graveyard), rss


def _interrupt_soon(after: float) -> None:
    import signal
    import threading

    threading.Timer(after, os.kill, (os.getpid(), signal.SIGINT)).start()


def test_d_two_thousand_aborted_blocks_leak_no_communicator_or_memory():
    pool = spmdlab.Pool(2)
    try:
        def abort_some(n_errors: int, n_timeouts: int, n_interrupts: int) -> None:
            for i in range(n_errors):
                with pytest.raises(SpmdError):
                    with spmd(pool=pool):
                        if labindex() == 2 and i % 20 == 1:
                            labReceive(1)  # aborted while waiting
                        raise ValueError("x")
            for _ in range(n_timeouts):
                with pytest.raises(spmdlab.SpmdTimeoutError):
                    with spmd(pool=pool, timeout=0.02):
                        labReceive()
            for _ in range(n_interrupts):
                _interrupt_soon(0.15)
                with pytest.raises(KeyboardInterrupt):
                    with spmd(pool=pool):
                        labReceive()

        abort_some(100, 5, 3)
        before = spmd_run(_lab_resources, pool=pool)
        before = [before[1], before[2]]
        abort_some(1900, 40, 20)
        after = spmd_run(_lab_resources, pool=pool)
        after = [after[1], after[2]]
        for (graves0, rss0), (graves1, rss1) in zip(before, after):
            assert graves1 <= graves0
            assert rss1 - rss0 < 16 << 20, (rss0, rss1)
        still_works(pool)
    finally:
        pool.close()


# ---- e: a large message to oneself -------------------------------------------------------

def test_e_labsend_of_a_large_array_to_oneself_then_receive(pool2):
    with spmd(pool=pool2, timeout=60):
        big = np.arange(2_000_000, dtype=np.float64) * labindex()
        labSend(big, labindex())
        back = labReceive(labindex())
        same = bool(np.array_equal(back, big))
        labSend(big[:10], [1, 2])
        first = labReceive(source=1)
        second = labReceive(source=2)
    assert same[1] and same[2]
    assert list(second[1]) == list(np.arange(10.0) * 2)
    assert list(first[2]) == list(np.arange(10.0))
    still_works(pool2)


# ---- f: nested spmd ---------------------------------------------------------------------

def _inner():
    with spmd():
        z = 1
    return 0


def _pools_on_lab():
    import spmdlab.client.pool as lab_pool

    return len(lab_pool._live_pools) + len(lab_pool._current)


def test_f_spmd_reached_on_a_lab_is_one_clear_error(pool2):
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool2):
            _inner()
    text = str(info.value)
    assert text.startswith("Error detected on labs 1 and 2:\n")
    assert text.endswith("RuntimeError: nested spmd: with spmd() was reached inside an spmd block, on a lab; "
                         "spmd blocks cannot be nested (run the inner code directly, it already runs on every lab)")
    assert "    _inner()" in text and "spmdlab/" not in text
    with pytest.raises(SpmdError, match="nested spmd: spmd_run was reached"):
        spmd_run(lambda: spmd_run(labindex), pool=pool2)
    with pytest.raises(SpmdError, match="nested spmd: parpool was reached"):
        spmd_run(lambda: spmdlab.parpool(2), pool=pool2)
    assert list(spmd_run(_pools_on_lab, pool=pool2)) == [0, 0]
    still_works(pool2)


# ---- g: timeout is checked before anything is sent -------------------------------------

@pytest.mark.parametrize("timeout, error, message", [
    ("5", TypeError, "timeout must be a number of seconds or None, got str '5'"),
    (-1, ValueError, "timeout must be a positive, finite number of seconds, got -1"),
    (float("nan"), ValueError, "timeout must be a positive, finite number of seconds, got nan"),
    (0, ValueError, "timeout must be a positive, finite number of seconds, got 0"),
    (True, TypeError, "timeout must be a number of seconds or None, got bool True"),
])
def test_g_a_bad_timeout_is_refused_before_anything_is_sent(pool2, timeout, error, message):
    epochs_before = repr(pool2._epochs)
    with pytest.raises(error) as info:
        spmd(pool=pool2, timeout=timeout)
    assert str(info.value) == message
    with pytest.raises(error):
        spmd_run(labindex, pool=pool2, timeout=timeout)
    with pytest.raises(error):
        pool2.run(spmdlab.protocol.messages.Block(source="x = 1\n"), timeout=timeout)
    assert repr(pool2._epochs) == epochs_before  # nothing was sent
    still_works(pool2)
    assert pool2.stale_replies == 0


# ---- h: output the client's stdout cannot encode ---------------------------------------

def test_h_unencodable_lab_output_is_replaced_and_bytes_can_be_written(pool2, monkeypatch):
    raw = io.BytesIO()
    strict = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", strict)
    with spmd(pool=pool2):
        print("bad \udc80 char")
        sys.stdout.buffer.write(b"raw bytes \xff\n")
        sys.stdout.flush()
        v = labindex() + 10
    strict.flush()
    monkeypatch.undo()
    lines = sorted(raw.getvalue().decode("utf-8").splitlines())
    assert lines == ["Lab 1: bad ? char", "Lab 1: raw bytes \ufffd", "Lab 2: bad ? char", "Lab 2: raw bytes \ufffd"]
    assert [v[1], v[2]] == [11, 12]
    still_works(pool2)


# ---- i: MPI errors arrive as text ---------------------------------------------------------

MPI_ERROR_SCRIPT = """
import sys
import spmdlab
from spmdlab import spmd, labindex
pool = spmdlab.parpool(2)
try:
    with spmd():
        from mpi4py import MPI
        MPI.COMM_WORLD.send("x", dest=99)
except spmdlab.SpmdError as exc:
    print("ERROR", str(exc).splitlines()[0], sorted({line.split(":")[0] for line in str(exc).splitlines()
                                                     if line.startswith("mpi4py")}))
    print("EXCEPTION", exc.errors[1].exception)
with spmd():
    v = labindex()
print("AFTER", v[1], v[2])
print("MPI AT CLIENT", "mpi4py.MPI" in sys.modules, "mpi4py" in sys.modules)
pool.close()
"""


def test_i_an_mpi_exception_reaches_the_client_as_text_without_loading_mpi():
    result = run_script(MPI_ERROR_SCRIPT, timeout=120)
    assert result.stdout.splitlines() == ["ERROR Error detected on lab 1: ['mpi4py.MPI.Exception']",
                                          "EXCEPTION None", "AFTER 1 2",
                                          "MPI AT CLIENT False False"], result.stdout + result.stderr


# ---- j, k: Ctrl-C while labs wait, and again while they drain -----------------------------

CTRL_C_SCRIPT = """
import os, signal, threading, time, warnings
import numpy as np
import spmdlab
from spmdlab import spmd, labindex, labReceive
pool = spmdlab.parpool(2)

def press_ctrl_c(after):
    threading.Timer(after, os.kill, (os.getpid(), signal.SIGINT)).start()

press_ctrl_c(0.5)
try:
    with spmd():
        if labindex() == 1:
            labReceive(2)
        else:
            labReceive(1, 3)
except KeyboardInterrupt as exc:
    print("WAITING", repr(str(exc)))
with spmd():
    w = labindex() + 10
print("NEXT", w[1], w[2])

press_ctrl_c(0.5)
try:
    with spmd():
        if labindex() == 2:  # cannot be interrupted, as inside one long call into C
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            time.sleep(8)
        x = labindex()
except KeyboardInterrupt as exc:
    print("FIRST", repr(str(exc)))
press_ctrl_c(0.3)  # lands while the next block waits for lab 2 to stop
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        with spmd():
            y = labindex() * 100
        print("SECOND RAN", y[1], y[2])
    except KeyboardInterrupt:
        print("SECOND INTERRUPTED")
print("WARNINGS", [str(w.message) for w in caught])
with spmd():
    z = labindex() + 1000
print("AFTER", z[1], z[2], pool.stale_replies)
pool.close()
"""


def test_j_k_ctrl_c_says_where_labs_waited_and_a_second_one_while_draining_recovers():
    result = run_script(CTRL_C_SCRIPT, timeout=150)
    lines = result.stdout.splitlines()
    assert lines[0] == ("WAITING 'the labs were interrupted:\\n  lab 1: waiting in labReceive(source=2, tag=any)"
                        "\\n  lab 2: waiting in labReceive(source=1, tag=3)'"), result.stdout + result.stderr
    assert lines[1] == "NEXT 11 12"
    assert lines[2] == ("FIRST 'the labs were interrupted:\\n  lab 2: busy and not stopping (in compiled code?)'")
    assert lines[3] in ("SECOND INTERRUPTED", "SECOND RAN 100 200")
    assert lines[4] == "WARNINGS ['lab 2 did not stop after Ctrl-C; restarting the pool.']", \
        result.stdout + result.stderr
    assert lines[5].startswith("AFTER 1001 1002 ")
    assert "Traceback" not in result.stderr, result.stderr


def test_k_an_error_says_where_the_other_labs_were_waiting(pool4):
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool4):
            if labindex() == 2:
                raise ValueError("two fails")
            if labindex() == 3:
                labReceive(4, 5)
            else:
                labReceive(2)
    assert str(info.value).endswith(
        "ValueError: two fails\n\nLabs 1, 3 and 4 were stopped because of this error:\n"
        "  lab 1: waiting in labReceive(source=2, tag=any)\n"
        "  lab 3: waiting in labReceive(source=4, tag=5)\n"
        "  lab 4: waiting in labReceive(source=2, tag=any)")
    assert info.value.stopped == {1: "waiting in labReceive(source=2, tag=any)",
                                  3: "waiting in labReceive(source=4, tag=5)",
                                  4: "waiting in labReceive(source=2, tag=any)"}
    still_works(pool4)


# ---- item 2: no frame is ever cut --------------------------------------------------------

LARGE_INPUT_SCRIPT = """
import os, signal, threading
import numpy as np
import spmdlab
from spmdlab import spmd, labindex
pool = spmdlab.parpool(2)
big = np.ones(8_000_000)
for delay in (0.002, 0.01, 0.03, 0.06):
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    try:
        try:  # the timer starts, and is done, inside the try: its SIGINT never lands outside
            timer.start()
            with spmd():
                s = float(big.sum())
        finally:
            timer.cancel()
            timer.join()
        print("RAN", s[1], s[2])
    except KeyboardInterrupt:
        print("INTERRUPTED")
    with spmd():
        mine = labindex() + 0.5
    print("NEXT", mine[1], mine[2])
print("STALE", pool.stale_replies, "STATE", pool.state)
pool.close()
"""


def test_2_ctrl_c_while_a_large_input_is_sent_never_cuts_the_frame():
    result = run_script(LARGE_INPUT_SCRIPT, timeout=150)
    lines = result.stdout.splitlines()
    assert len(lines) == 9, result.stdout + result.stderr
    for first, second in zip(lines[0:8:2], lines[1:8:2]):
        assert first in ("INTERRUPTED", "RAN 8000000.0 8000000.0")
        assert second == "NEXT 1.5 2.5"
    assert lines[8] == "STALE 0 STATE idle"
    assert "Traceback" not in result.stderr and "restarting" not in result.stderr, result.stderr


def test_2_a_send_cut_short_restarts_the_pool_with_a_warning():
    pool = spmdlab.Pool(2)
    try:
        generation = pool.generation
        with pytest.raises(TypeError):
            pool.main[2].send_frames([b"\0" * 20, b"x", object()])  # the head went, the rest cannot
        assert pool.main[2].broken
        with pytest.warns(RuntimeWarning, match=r"^a message to the labs was cut short; restarting the pool\.$"):
            still_works(pool)
        assert pool.generation == generation + 1
    finally:
        pool.close()


def test_2_a_reply_of_another_request_is_discarded_and_counted(pool2):
    from spmdlab.protocol import messages as protocol

    stray = protocol.Block(epoch=10**6, source="x = 'stray'\n")  # a request this pool never made
    pool2.main[1].send_frames(protocol.dumps(protocol.Exec(stray), epoch=stray.epoch))
    before = pool2.stale_replies
    still_works(pool2)
    assert pool2.stale_replies == before + 1
