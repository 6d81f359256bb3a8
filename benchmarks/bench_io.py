"""Data in and out (issue 26) timed against its baselines in the same run, 2 labs.

    flock /work/wt/bench.lock python benchmarks/bench_io.py [--gb 1] [--csv-mb 100] [--repeat 3]

Rows (medians of ``--repeat``; lab-side times from a barrier until the last lab is done):
- ``spmdlab.load`` of a ``--gb`` GB float64 .npy into 2 labs (default layout: rows) vs
  ``np.load`` in one process and vs raw ``MPI.File.Read_at_all`` of the same bytes at 2
  ranks (each rank its contiguous half); from the page cache, and cold (the file's pages
  dropped with ``posix_fadvise(DONTNEED)`` before each read, which touches no other file);
- ``spmdlab.save`` vs ``np.save`` of the same array in one process;
- ``to_zarr`` / ``from_zarr`` of a quarter of it vs zarr's own write/read of the same array
  with the same chunks in one process;
- ``read_csv`` of a ``--csv-mb`` MB numeric CSV vs ``np.loadtxt`` in one process.
Peak memory per lab: the growth of VmHWM (peak RSS, reset with /proc/self/clear_refs)
during one load, against the lab's part.

Targets (issue 26): load >= 2.0x np.load and >= 0.7x raw MPI-IO; save >= 1.5x np.save;
zarr >= 1.0x; read_csv >= 1.5x np.loadtxt.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import spmdlab


def drop(path: str) -> None:
    """Drop ``path``'s pages from the page cache (a directory: every file in it)."""
    files = [path] if os.path.isfile(path) else [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]
    for p in files:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def at_client(fn, repeat: int, cold: str | None = None, fresh: str | None = None) -> float:
    """Median seconds of ``fn``; ``cold``: drop that file's pages first; ``fresh``: delete
    that file or folder first (outside the timing)."""
    import shutil

    times = []
    for _ in range(repeat):
        if cold:
            drop(cold)
        if fresh and os.path.exists(fresh):
            shutil.rmtree(fresh) if os.path.isdir(fresh) else os.remove(fresh)
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def on_labs(case: str, path: str, repeat: int, cold: bool, extra: object = None) -> list:
    """Runs on every lab: the seconds of each repeat of ``case`` (barrier to barrier)."""
    import os
    import time

    import numpy as np

    import spmdlab
    from spmdlab import codistributed, labBarrier, labindex
    from spmdlab.lab import comm as _comm

    MPI = _comm.MPI
    times = []
    for _ in range(repeat):
        if cold and labindex() == 1:
            drop(path)
        if case in ("save", "raw_write", "to_zarr") and labindex() == 1 and os.path.exists(path):
            # a new file each time, the old one deleted outside the timing (as for np.save)
            import shutil

            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        labBarrier()
        t = time.perf_counter()
        if case == "load":
            codistributed.load(path)
        elif case == "load_rows":
            codistributed.load(path, spmdlab.codistributor1d(1))
        elif case == "raw":
            with open(path, "rb") as f:
                np.lib.format.read_magic(f)
                shape, _, dtype = np.lib.format.read_array_header_1_0(f)
                offset = f.tell()
            rows = shape[0] // 2
            mine = np.empty((rows,) + tuple(shape[1:]), dtype)
            fh = MPI.File.Open(_comm.block(), path, MPI.MODE_RDONLY)
            fh.Read_at_all(offset + (labindex() - 1) * mine.nbytes, mine)
            fh.Close()
        elif case == "raw_write":
            n = extra.shape[0] // 2
            mine = np.ascontiguousarray(spmdlab.getLocalPart(extra))
            fh = MPI.File.Open(_comm.block(), path, MPI.MODE_WRONLY | MPI.MODE_CREATE)
            fh.Write_at_all(128 + (labindex() - 1) * n * mine[0].nbytes, mine)
            fh.Close()
        elif case == "save":
            spmdlab.save(path, extra)
        elif case == "to_zarr":
            spmdlab.to_zarr(extra, path)
        elif case == "from_zarr":
            spmdlab.from_zarr(path)
        elif case == "read_csv":
            spmdlab.read_csv(path)
        labBarrier()
        times.append(time.perf_counter() - t)
    return times


def peak_load(path: str) -> tuple:
    """``(peak RSS growth, part bytes)`` of one load on this lab, in MB."""
    import spmdlab
    from spmdlab import codistributed, getLocalPart

    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
        return 0.0

    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = status("VmRSS")
    D = codistributed.load(path, spmdlab.codistributor1d(1))
    return status("VmHWM") - before, getLocalPart(D).nbytes / 2 ** 20


def median_labs(pool, case, path, repeat, cold=False, extra=None) -> float:
    got = spmdlab.spmd_run(on_labs, case, path, repeat, cold, extra, pool=pool, timeout=3600)
    return statistics.median(max(got[lab][k] for lab in range(1, len(got) + 1)) for k in range(repeat))


def row(name: str, ours: float, base: float, what: str, target: float) -> None:
    print(f"{name:38s} {ours:8.3f} s  {what:28s} {base:8.3f} s  ratio {base / ours:5.2f}x  (target {target}x)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--csv-mb", type=float, default=100.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--only", nargs="*", default=["load", "save", "zarr", "csv"], help="which rows to time")
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-io-", dir=args.dir)
    print(f"load average {os.getloadavg()}, files in {folder}")
    cols = 1024
    rows = int(args.gb * 2 ** 30 / 8 / cols) // 2 * 2
    A = np.random.default_rng(0).standard_normal((rows, cols))
    path = os.path.join(folder, "a.npy")
    np.save(path, A)
    pool = spmdlab.Pool(2)
    try:
        spmdlab.spmd_run(on_labs, "load", path, 1, False, pool=pool)  # warm up
        if "load" in args.only:
            _load_rows(pool, path, A, args)
        if "save" in args.only:
            _save_rows(pool, path, folder, A, args)
        if "zarr" in args.only:
            _zarr_rows(pool, folder, A, rows, args)
        if "csv" in args.only:
            _csv_rows(pool, folder, A, args)
    finally:
        pool.close()
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    print(f"\nload average after: {os.getloadavg()}")


def _load_rows(pool, path, A, args):
    t_np = at_client(lambda: np.load(path), args.repeat)
    t_rows = median_labs(pool, "load_rows", path, args.repeat)
    t_ours = median_labs(pool, "load", path, args.repeat)
    t_raw = median_labs(pool, "raw", path, args.repeat)
    t_client = at_client(lambda: _client_load(pool, path), args.repeat)
    print(f"\n.npy of {A.nbytes / 2 ** 30:.2f} GiB, page cache")
    row("spmdlab.load, rows (2 labs)", t_rows, t_np, "np.load (1 process)", 2.0)
    row("spmdlab.load, rows (2 labs)", t_rows, t_raw, "raw Read_at_all (2 ranks)", 0.7)
    row("spmdlab.load, default: columns", t_ours, t_np, "np.load (1 process)", 2.0)
    row("spmdlab.load, columns, from client", t_client, t_np, "np.load (1 process)", 2.0)
    c_np = at_client(lambda: np.load(path), args.repeat, cold=path)
    c_rows = median_labs(pool, "load_rows", path, args.repeat, cold=True)
    c_raw = median_labs(pool, "raw", path, args.repeat, cold=True)
    print(f".npy of {A.nbytes / 2 ** 30:.2f} GiB, cold (pages dropped before each read)")
    row("spmdlab.load, rows (2 labs)", c_rows, c_np, "np.load (1 process)", 2.0)
    row("spmdlab.load, rows (2 labs)", c_rows, c_raw, "raw Read_at_all (2 ranks)", 0.7)
    peaks = spmdlab.spmd_run(peak_load, path, pool=pool)
    for lab in (1, 2):
        grew, part = peaks[lab]
        print(f"  lab {lab}: peak RSS grew {grew:.0f} MB for a part of {part:.0f} MB "
              f"(staging buffer {os.environ.get('SPMDLAB_STAGING_MB', '64')} MB)")


def _save_rows(pool, path, folder, A, args):
    D = spmdlab.spmd_run(spmdlab.codistributed.load, path, spmdlab.codistributor1d(1), pool=pool)
    out = os.path.join(folder, "b.npy")
    s_np = at_client(lambda: np.save(out, A), args.repeat, fresh=out)
    s_ours = median_labs(pool, "save", out, args.repeat, extra=D)
    s_raw = median_labs(pool, "raw_write", out + ".raw", args.repeat, extra=D)
    print()
    row("spmdlab.save (2 labs)", s_ours, s_np, "np.save (1 process)", 1.5)
    row("spmdlab.save (2 labs)", s_ours, s_raw, "raw Write_at_all (2 ranks)", 0.7)


def _zarr_rows(pool, folder, A, rows, args):
    import zarr

    Z = A[: rows // 4]
    DZ = spmdlab.distributed(Z, spmdlab.codistributor1d(1), pool=pool)
    zpath = os.path.join(folder, "z.zarr")
    spmdlab.to_zarr(DZ, zpath)
    chunks = zarr.open_array(zpath).chunks

    def zarr_write():
        zarr.create_array(os.path.join(folder, "zb.zarr"), data=Z, chunks=chunks, overwrite=True)

    z_w = at_client(zarr_write, args.repeat, fresh=os.path.join(folder, "zb.zarr"))
    o_w = median_labs(pool, "to_zarr", zpath, args.repeat, extra=DZ)
    z_r = at_client(lambda: zarr.open_array(zpath)[...], args.repeat)
    o_r = median_labs(pool, "from_zarr", zpath, args.repeat)
    print(f"\nzarr v3, {Z.nbytes / 2 ** 20:.0f} MiB, chunks {chunks}, default codecs (zstd)")
    row("spmdlab.to_zarr (2 labs)", o_w, z_w, "zarr write (1 process)", 1.0)
    row("spmdlab.from_zarr (2 labs)", o_r, z_r, "zarr read (1 process)", 1.0)


def _csv_rows(pool, folder, A, args):
    cpath = os.path.join(folder, "c.csv")
    crows = int(args.csv_mb * 2 ** 20 / (5 * 24))
    np.savetxt(cpath, A.reshape(-1)[: crows * 5].reshape(crows, 5), delimiter=",", fmt="%.17g")
    size = os.path.getsize(cpath) / 2 ** 20
    l_np = at_client(lambda: np.loadtxt(cpath, delimiter=","), max(1, args.repeat - 1))
    l_ours = median_labs(pool, "read_csv", cpath, max(1, args.repeat - 1))
    print(f"\nCSV of {size:.0f} MiB ({crows} rows x 5)")
    row("spmdlab.read_csv (2 labs)", l_ours, l_np, "np.loadtxt (1 process)", 1.5)


def _client_load(pool, path):
    """The client's call: a block on the labs, the array kept there as a distributed."""
    return spmdlab.spmd_run(spmdlab.codistributed.load, path, pool=pool)


if __name__ == "__main__":
    main()
