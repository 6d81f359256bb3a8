"""Process hygiene, security and the inter-node code paths on one machine:
nothing outlives a killed client, the authkey stays with the pool's own code,
start-up cannot be stalled, TCP and IPv6 work, and MPICH without shared memory between
labs takes the cross-machine path."""
import glob
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import cloudpickle
import numpy as np
import pytest
from support.processes import child_pythonpath, processes_with

import spmdlab
from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    gather,
    labindex,
    labReceive,
    labSend,
    redistribute,
    spmd_run,
)

pytestmark = pytest.mark.timeout(180)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _marked(mark: str) -> list[str]:
    """Live processes whose environment holds ``SPMDLAB_HYGIENE=mark``."""
    return processes_with("SPMDLAB_HYGIENE", mark, skip_self=False)


def _start_client(script: str, tmp_path, extra_env=None) -> tuple[subprocess.Popen, str]:
    mark = uuid.uuid4().hex
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, PYTHONPATH=child_pythonpath(), SPMDLAB_HYGIENE=mark, TMPDIR=str(tmp), **(extra_env or {}))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env,
                            cwd=str(tmp_path))
    return proc, mark


def _wait_gone(mark: str, within: float) -> list[str]:
    deadline = time.monotonic() + within
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _marked(mark)


BUSY_CLIENT = """
import spmdlab
pool = spmdlab.parpool(2)
print("STARTED", flush=True)
spmdlab.spmd_run(lambda: sum(range(10**11)))  # every lab in compiled code, holding its GIL
"""


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_client_leaves_nothing_even_with_labs_in_compiled_code(tmp_path, how):
    proc, mark = _start_client(BUSY_CLIENT, tmp_path)
    try:
        assert proc.stdout.readline() == "STARTED\n"
        time.sleep(1.0)  # the labs are inside sum() now
        assert len(_marked(mark)) >= 6  # mpiexec, hydra proxy, 2 shims, 2 labs (and the client)
        proc.send_signal(how)
        proc.wait(timeout=10)
        assert _wait_gone(mark, 10) == []
        assert os.listdir(tmp_path / "tmp") == []
    finally:
        proc.kill()
        proc.wait()


DROPPED_POOL = """
import gc, os, sys
import spmdlab
pool = spmdlab.Pool(2)
print("RUNNING", os.listdir(os.environ["TMPDIR"]), flush=True)
del pool
gc.collect()
print("DROPPED", flush=True)
sys.stdin.readline()
"""


def test_a_pool_leaves_nothing_in_tmpdir_while_it_runs_or_once_dropped(tmp_path):
    mark = uuid.uuid4().hex
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, PYTHONPATH=child_pythonpath(), SPMDLAB_HYGIENE=mark, TMPDIR=str(tmp_path / "tmp"))
    proc = subprocess.Popen([sys.executable, "-c", DROPPED_POOL], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout.readline() == "RUNNING []\n"
        assert proc.stdout.readline() == "DROPPED\n"
        deadline = time.monotonic() + 10
        while len(_marked(mark)) > 1 and time.monotonic() < deadline:  # the client itself stays
            time.sleep(0.1)
        assert len(_marked(mark)) == 1, _marked(mark)
        assert os.listdir(tmp_path / "tmp") == []
    finally:
        proc.kill()
        proc.wait()


# ---- security ------------------------------------------------------------------------

def _environment_seen(key_hex: str):
    """On a lab: where the authkey can be read by user code."""
    with open("/proc/self/environ", "rb") as f:
        own = key_hex.encode() in f.read()
    with open(f"/proc/{os.getppid()}/environ", "rb") as f:  # the shim
        shim = key_hex.encode() in f.read()
    child = subprocess.run(["env"], capture_output=True, text=True).stdout
    return ("SPMDLAB_AUTHKEY" in os.environ, own, shim, key_hex in child, "SPMDLAB_AUTHKEY" in child)


def test_the_authkey_is_not_visible_to_lab_code_or_its_subprocesses(pool2):
    seen = spmd_run(_environment_seen, pool2._authkey.hex(), pool=pool2)
    assert list(seen) == [(False, False, False, False, False)] * 2


SILENT_CONNECTIONS = """
import glob, os, socket, threading, time
import spmdlab

socks = []

def connect_silently():
    deadline = time.monotonic() + 20
    while not glob.glob(os.environ["TMPDIR"] + "/spmdlab-*/pool.sock") and time.monotonic() < deadline:
        time.sleep(0.001)
    path = glob.glob(os.environ["TMPDIR"] + "/spmdlab-*/pool.sock")[0]
    for _ in range(8):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        socks.append(s)  # never answers the challenge

threading.Thread(target=connect_silently, daemon=True).start()
start = time.monotonic()
pool = spmdlab.parpool(2)
print("STARTED", len(socks), round(time.monotonic() - start, 1) < 5, flush=True)
print("RESULT", list(spmdlab.spmd_run(spmdlab.labindex)), flush=True)
pool.close()
"""


def test_silent_connections_cannot_stall_the_start(tmp_path):
    proc, mark = _start_client(SILENT_CONNECTIONS, tmp_path)
    try:
        out, _ = proc.communicate(timeout=60)
        assert out.splitlines() == ["STARTED 8 True", "RESULT [1, 2]"]
    finally:
        proc.kill()
        proc.wait()


def _lab_work():
    """Messaging and a redistribute across the labs; True if every result is right."""
    n = spmdlab.numlabs()
    labSend(labindex() * 11, labindex() % n + 1)
    got = labReceive((labindex() - 2) % n + 1)
    A = np.arange(60.0).reshape(6, 10)
    E = redistribute(codistributed(A, codistributor1d(2)), codistributor2dbc())
    return got == ((labindex() - 2) % n + 1) * 11 and bool(np.array_equal(gather(E), A))


def _ipv6_loopback() -> bool:
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
        return True
    except OSError:
        return False


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "::1", "::", "localhost"])
def test_labs_connect_over_tcp_on_any_host_setting(host, monkeypatch):
    if ":" in host and not _ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    monkeypatch.setenv("SPMDLAB_HOST", host)
    pool = spmdlab.Pool(3)
    try:
        assert spmdlab.protocol.messages.split_address(pool._address) is not None  # TCP, not a socket path
        assert list(spmd_run(_lab_work, pool=pool)) == [True, True, True]
        D = spmdlab.distributed(np.arange(12.0), pool=pool)
        assert gather(D * 2).tolist() == (np.arange(12.0) * 2).tolist()
    finally:
        pool.close()


def test_a_host_that_cannot_be_listened_on_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("SPMDLAB_HOST", "192.0.2.254")  # TEST-NET-1: not this machine's
    with pytest.raises(spmdlab.PoolError, match=r"^cannot listen on SPMDLAB_HOST='192.0.2.254': "):
        spmdlab.Pool(2)


def _listening_sockets(pids: list[int]) -> dict[str, list[str]]:
    """The TCP listening sockets of ``pids``: inode -> local addresses."""
    inodes: dict[int, set[str]] = {}
    for pid in pids:
        for fd in glob.glob(f"/proc/{pid}/fd/*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.setdefault(int(target[8:-1]), set()).add(str(pid))
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[9]) in inodes:  # LISTEN
                    found.setdefault(fields[1], []).extend(sorted(inodes[int(fields[9])]))
    return found


def _is_loopback(hex_address: str) -> bool:
    host = hex_address.split(":")[0]
    if len(host) == 8:
        return host.endswith("7F")  # 127.x.x.x, little-endian
    return host == "00000000000000000000000001000000"


def test_a_local_pool_listens_on_no_external_interface_but_hydras_port(pool2):
    labs = list(pool2.pids.values()) + list(pool2._job.shim_pids.values())
    launcher = [pool2._proc.pid]
    ours = _listening_sockets(labs)
    hydra = _listening_sockets(launcher)
    external = {address: pids for address, pids in ours.items() if not _is_loopback(address) and address not in hydra}
    assert external == {}


def test_mpich_without_shared_memory_takes_the_cross_machine_path(monkeypatch):
    monkeypatch.setenv("MPIR_CVAR_NOLOCAL", "1")
    pool = spmdlab.Pool(3)
    try:
        def staged():
            from spmdlab.lab import comm

            ok = _lab_work()
            return ok, comm.staging_bytes(), len(comm._nodes)

        assert list(spmd_run(staged, pool=pool)) == [(True, 0, 0)] * 3
    finally:
        pool.close()
