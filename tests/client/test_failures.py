"""Failures never hang and never kill the client."""
import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from support.processes import assert_gone, child_pythonpath, run_script

import spmdlab
from spmdlab import LabDiedError, SpmdError, SpmdTimeoutError, gplus, labBarrier, labindex, labReceive, spmd

pytestmark = pytest.mark.timeout(120)


def still_works(pool) -> None:
    with spmd(pool=pool):
        total = gplus(labindex())
    assert total[1] == pool.numlabs * (pool.numlabs + 1) // 2


@pytest.mark.parametrize("wait", ["labReceive()", "gplus(1)", "labBarrier()"])
def test_one_lab_raises_while_others_wait(pool4, wait):
    start = time.monotonic()
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool4):
            if labindex() == 2:
                raise ValueError("bad value on two")
            exec(wait, {"labReceive": labReceive, "gplus": gplus, "labBarrier": labBarrier})
    assert time.monotonic() - start < 5
    text = str(info.value)
    assert text.startswith("Error detected on lab 2:\n")
    assert 'raise ValueError("bad value on two")' in text
    assert "\nValueError: bad value on two\n\nLabs 1, 3 and 4 were stopped because of this error:\n" in text
    assert list(info.value.errors) == [2]
    assert isinstance(info.value.errors[2].exception, ValueError)
    still_works(pool4)


def test_error_keeps_the_replies_of_labs_that_finished(pool4):
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool4):
            x = 1 / (labindex() - 3)
    assert sorted(info.value.errors) == [3]
    assert sorted(info.value.replies) == [1, 2, 4]
    assert all(reply.kind == "done" for reply in info.value.replies.values())


def test_identical_errors_collapse_and_distinct_ones_are_listed(pool4):
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool4):
            1 / 0
    assert str(info.value).startswith("Error detected on labs 1-4:\n")
    assert str(info.value).count("ZeroDivisionError") == 1
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool4):
            labBarrier()
            raise KeyError(labindex() % 2)
    text = str(info.value)
    assert "Error detected on labs 1 and 3:" in text and "KeyError: 1" in text
    assert "Error detected on labs 2 and 4:" in text and "KeyError: 0" in text
    still_works(pool4)


def test_timeout_names_the_waiting_labs(pool4):
    start = time.monotonic()
    with pytest.raises(SpmdTimeoutError) as info:
        with spmd(pool=pool4, timeout=1):
            if labindex() == 1:
                labReceive(2)
            elif labindex() == 2:
                labReceive(1, 3)
            elif labindex() == 3:
                while True:
                    pass
    assert 0.9 < time.monotonic() - start < 5
    text = str(info.value)
    assert "timed out after 1 s; labs 1-3 had not finished" in text
    assert "lab 1: waiting in labReceive(source=2, tag=any)" in text
    assert "lab 2: waiting in labReceive(source=1, tag=3)" in text
    assert "lab 3: running line" in text
    still_works(pool4)


def test_stale_messages_of_an_aborted_block_do_not_leak(pool2):
    with pytest.raises(SpmdError):
        with spmd(pool=pool2):
            if labindex() == 1:
                spmdlab.labSend("stale", 2)
                raise RuntimeError("stop")
            labBarrier()
    with spmd(pool=pool2):
        ready = spmdlab.labProbe()
    assert ready[2] is False


@pytest.mark.parametrize("how, status", [
    ("os._exit(7)", "exit status 7"),
    ("os.kill(os.getpid(), signal.SIGKILL)", "killed by SIGKILL, exit status -9"),
    ("ctypes.string_at(0)", "killed by SIGSEGV, exit status -11"),
])
def test_lab_death_is_reported_and_a_fresh_pool_follows(how, status):
    pool = spmdlab.Pool(3)
    old = pool
    with spmd(pool=pool):
        kept = labindex()
    start = time.monotonic()
    with pytest.raises(LabDiedError) as info:
        with spmd(pool=pool):
            import ctypes
            if labindex() == 2:
                exec(how, {"os": os, "signal": signal, "ctypes": ctypes})
            labBarrier()
    assert time.monotonic() - start < 2.5
    assert str(info.value).startswith(f"Lab 2 died ({status}).")
    assert info.value.__suppress_context__  # no internal ChannelClosed traceback above it
    assert "the next spmd block starts a fresh pool" in str(info.value)
    assert pool.state == "dead"
    dead_pids = [old._proc.pid]
    with pytest.warns(RuntimeWarning, match="lab variables|were lost") as caught:
        still_works(pool)
    assert caught[0].filename == __file__  # the user's `with spmd()` line, not ours
    with pytest.raises(SpmdError, match="values were lost"):
        kept[1]
    pool.close()
    assert_gone(pool)
    for pid in dead_pids:
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_a_lab_dying_while_the_client_still_feeds_another_is_reported_as_its_death():
    """Lab 1 gets the block first and dies at once; MPI's launcher takes the other labs
    down while the client is still sending them a large input. That send fails because
    the other end went away, which is the labs' death (LabDiedError naming lab 1), not
    a message the client cut short (it was reported as that, a PoolError, under load)."""
    pool = spmdlab.Pool(3)
    try:
        big = np.ones(25_000_000)  # 200 MB to each lab in turn
        for _ in range(2):
            with pytest.raises(LabDiedError) as info:
                with spmd(pool=pool):
                    if labindex() == 1:
                        os._exit(3)
                    total = big.sum()
            assert "Lab 1 died (exit status 3)" in str(info.value), str(info.value)
            assert not any(chan.broken for chan in pool.main.values())
        with spmd(pool=pool):
            total = labindex()
        assert total[3] == 3
    finally:
        pool.close()


def _shm_files(pool) -> set:
    """The /dev/shm files MPICH made for this pool's labs (from their memory maps; other
    pools on the machine make theirs meanwhile, so nothing else is counted)."""
    paths = set()
    for pid in pool.pids.values():
        try:
            with open(f"/proc/{pid}/maps") as maps:
                paths |= {line.split(maxsplit=5)[5].strip().removesuffix(" (deleted)")
                          for line in maps if " /dev/shm/mpich_shm_" in line}
        except OSError:
            pass
    return paths


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/dev/shm and /proc are Linux's")
def test_pools_leave_no_shared_memory_files_behind():
    """MPICH's files in /dev/shm (RAM) go once the labs have mapped them: a closed pool, a
    killed one and the staging window of redistribute leave nothing behind."""
    pool = spmdlab.Pool(3)
    mapped = set()
    try:
        with spmd(pool=pool):
            from spmdlab import codistributed, codistributor2dbc, redistribute

            E = redistribute(codistributed(np.ones((300, 300))), codistributor2dbc())
        mapped |= _shm_files(pool)
        with pytest.raises(LabDiedError):
            with spmd(pool=pool):
                if labindex() == 2:
                    os.kill(os.getpid(), signal.SIGKILL)
                labBarrier()
        with pytest.warns(RuntimeWarning, match="were lost"):
            still_works(pool)
        mapped |= _shm_files(pool)
    finally:
        pool.close()
    assert mapped, "no MPICH shared-memory file seen: the check checks nothing"
    assert sorted(p for p in mapped if os.path.exists(p)) == []


CTRL_C_SCRIPT = """
import os, signal, threading, time, numpy as np
import spmdlab
from spmdlab import spmd, labindex, labReceive, gplus
pool = spmdlab.parpool(4)

def press_ctrl_c(after):
    threading.Timer(after, os.kill, (os.getpid(), signal.SIGINT)).start()

for kind in ["loop", "receive", "numpy"]:
    press_ctrl_c(0.7)
    start = time.monotonic()
    try:
        with spmd():
            if kind == "loop":
                while True:
                    pass
            elif kind == "receive":
                labReceive()
            else:
                np.linalg.eigvals(np.random.rand(3000, 3000))
        print("NOT INTERRUPTED", kind)
    except KeyboardInterrupt:
        print("INTERRUPTED", kind, round(time.monotonic() - start - 0.7, 2), flush=True)
    with spmd():
        s = gplus(1)
    print("AFTER", kind, s[1], flush=True)
pool.close()
"""


def test_ctrl_c_interrupts_loops_receives_and_numpy_calls():
    result = run_script(CTRL_C_SCRIPT, timeout=90)
    lines = result.stdout.splitlines()
    for kind in ["loop", "receive", "numpy"]:
        delay = [float(line.split()[2]) for line in lines if line.startswith(f"INTERRUPTED {kind}")]
        assert delay and delay[0] < 2.0, result.stdout + result.stderr
        assert f"AFTER {kind} 4" in lines
    assert "NOT INTERRUPTED" not in result.stdout


def test_killed_client_leaves_no_process():
    script = ("import spmdlab, time\n"
              "pool = spmdlab.parpool(4)\n"
              "print(pool._proc.pid, *pool.pids.values(), flush=True)\n"
              "with spmdlab.spmd():\n"
              "    import time\n"
              "    time.sleep(100)\n")
    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 5
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in pids if os.path.exists(f"/proc/{p}")
                 and open(f"/proc/{p}/stat").read().split()[2] != "Z"]
    assert alive == []


def test_subset_block_after_an_error_does_not_hang(pool4):
    """The communicator renewal after an error is collective over all labs, even when
    the next block runs on labs 1..2 only."""
    with pytest.raises(SpmdError):
        with spmd(pool=pool4):
            raise ValueError("x")
    with spmd(2, pool=pool4, timeout=10):
        pair = gplus(1)
    assert pair[1] == 2
    still_works(pool4)


def test_timeout_gives_up_on_a_lab_stuck_in_compiled_code():
    """A lab that cannot be interrupted (one long numpy call) does not hold a timed-out
    block beyond the grace period; the next block waits for it or restarts the pool."""
    pool = spmdlab.Pool(2)
    try:
        with spmd(pool=pool):  # made first: under load, making it took longer than the timeout
            A = np.random.default_rng(0).random((2500, 2500))
        start = time.monotonic()
        with pytest.raises(SpmdTimeoutError) as info:
            with spmd(pool=pool, timeout=0.5):
                if labindex() == 2:
                    np.linalg.eigvals(A)
        assert time.monotonic() - start < 5
        assert "lab 2: busy and not stopping (in compiled code?)" in str(info.value)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the pool may be restarted
            with spmd(pool=pool, timeout=60):
                s = gplus(labindex())
        assert s[1] == 3
    finally:
        pool.close()


def test_error_while_other_labs_block_in_raw_mpi_does_not_hang(monkeypatch):
    """Labs blocked for good in a blocking MPI call that the failed lab never joins are
    given up on: the error comes back, and the next block restarts the pool."""
    monkeypatch.setattr(spmdlab.client.collect, "ERROR_GIVE_UP", 1.0)
    pool = spmdlab.Pool(3)
    try:
        start = time.monotonic()
        with pytest.raises(SpmdError) as info:
            with spmd(pool=pool):
                from spmdlab.lab import comm

                if labindex() == 2:
                    raise RuntimeError("lab 2 never joins")
                comm.block().Barrier()  # blocking: no interrupt reaches it
        assert time.monotonic() - start < 10
        assert "Error detected on lab 2:" in str(info.value)
        assert list(info.value.errors) == [2]
        with pytest.warns(RuntimeWarning, match=r"labs 1 and 3 did not stop after the error \(busy in "
                                                r"compiled code\); restarting the pool\."):
            still_works(pool)
        # with timeout=, the error's wait for the other labs ends with the timeout
        monkeypatch.setattr(spmdlab.client.collect, "ERROR_GIVE_UP", 60.0)
        start = time.monotonic()
        with pytest.raises(SpmdError, match="lab 2 never joins"):
            with spmd(pool=pool, timeout=1):
                from spmdlab.lab import comm

                if labindex() == 2:
                    raise RuntimeError("lab 2 never joins")
                comm.block().Barrier()
        assert time.monotonic() - start < 10
        with pytest.warns(RuntimeWarning, match="did not stop after the error"):
            still_works(pool)
    finally:
        pool.close()


def test_error_markers_line_up_in_source_without_a_final_newline(pool2):
    """Typed input (REPLs) may lack a final newline; tracebacks still point at the code."""
    from spmdlab.protocol.messages import Block

    with pytest.raises(SpmdError) as info:
        pool2.run(Block(source="x = 1\ny = x + None", filename="<typed>"))
    lines = str(info.value).splitlines()
    code = lines.index("    y = x + None")
    if sys.version_info >= (3, 11):  # error markers exist from Python 3.11 on
        assert lines[code + 1] == "        ~~^~~~~~"


def test_a_lab_stopped_while_importing_keeps_its_packages_whole(pool2, tmp_path):
    """A lab stopped in the middle of an import (the sparse package, imported lazily by
    ``from spmdlab import *``, once) must not be left with a package whose finished
    submodules are no longer its attributes: every later block on that lab failed with
    "module 'spmdlab.arrays.sparse' has no attribute 'ops'"."""
    pkg = tmp_path / "slowpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import sub as _sub\nimport time\ntime.sleep(1.5)\nfrom . import other\n")
    (pkg / "sub.py").write_text("x = 41\n")
    (pkg / "other.py").write_text("y = 1\n")
    folder = str(tmp_path)
    start = time.monotonic()
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool2):
            import sys
            sys.path.insert(0, folder)
            if labindex() == 1:
                time.sleep(0.3)
                raise ValueError("stop the other lab")
            import slowpkg
    assert list(info.value.errors) == [1]
    assert time.monotonic() - start < 10
    with spmd(pool=pool2):
        import slowpkg
        total = slowpkg.sub.x + slowpkg.other.y
    assert [total[1], total[2]] == [42, 42]
    still_works(pool2)


def test_an_import_that_hangs_is_still_stopped_and_loads_whole_next_time(pool2, tmp_path):
    pkg = tmp_path / "hungpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import sub as _sub\nimport os, time\n"
                                     "while not os.path.exists(os.path.join(os.path.dirname(__file__), 'go')):\n"
                                     "    time.sleep(0.05)\n")
    (pkg / "sub.py").write_text("x = 41\n")
    folder = str(tmp_path)
    start = time.monotonic()
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool2):
            import sys
            sys.path.insert(0, folder)
            if labindex() == 1:
                raise ValueError("stop the other lab")
            import hungpkg
    elapsed = time.monotonic() - start
    assert 4 < elapsed < 15, elapsed  # the import had its grace (lab/imports.py), then was stopped
    assert "lab 2: running line 4 of" in str(info.value) and "hungpkg/__init__.py" in str(info.value)
    (pkg / "go").write_text("")
    with spmd(pool=pool2):
        import hungpkg
        x = hungpkg.sub.x
    assert [x[1], x[2]] == [41, 41]
