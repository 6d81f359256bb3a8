"""Issue 27's bidiagonal reduction (``linalg/bidiag.py``, PDGEBRD): its index pieces
without MPI (each lab's per-panel starts and selections, the shares of the replicated
corrections) against brute force on many grids, then the reduction on real pools with
blocks wider than a panel (several panels per block, a block the panel width does not
divide), m > n, n not a multiple of the block, on 1 x p, p x 1 and 2 x 2 grids: the
reduction's singular values (with and without the reflectors kept) against numpy on the
gathered matrix, and the full SVD built on it (``U s Vh = A``, orthonormal U and V)."""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest

import spmdlab
from spmdlab import codistributed, codistributor2dbc, gather, spmd_run
from spmdlab.arrays.linalg import bidiag as BD
from spmdlab.arrays.linalg.grid import ProcessGrid

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the lab-side check travels by value

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


# --------------------------------------------------------------------------- no MPI
@pytest.mark.nompi
@pytest.mark.parametrize("grid", [(1, 1), (1, 2), (2, 1), (2, 2), (1, 3), (3, 2)])
@pytest.mark.parametrize("nb", [1, 3, 16, 64])
def test_axis_starts_selections_and_ownership(grid, nb):
    m, n = 150, 131
    c = codistributor2dbc(list(grid), nb, "row", (m, n))
    for lab in range(1, grid[0] * grid[1] + 1):
        g = ProcessGrid(c, lab=lab, numlabs=grid[0] * grid[1])
        for glob, size in ((g.global_rows(), m), (g.global_cols(), n)):
            for j0 in (0, 5, 64, 128, size - 3, size - 1):
                span = 34
                ax = BD._Axis(glob, j0, span)
                for k in range(span + 1):
                    assert ax.before[k] == int(np.sum(glob < j0 + k))
                    want = glob[glob >= j0 + k] - j0
                    got = np.arange(ax.sel[k].start, ax.sel[k].stop) if isinstance(ax.sel[k], slice) else ax.sel[k]
                    assert np.array_equal(got, want), (lab, j0, k)
                    if k < span:
                        assert ax.mine(k) == (j0 + k in set(glob.tolist()))
                        if ax.mine(k):
                            assert glob[ax.before[k]] == j0 + k


@pytest.mark.nompi
def test_shares_partition_the_range():
    for lo, hi in ((0, 0), (3, 4), (1, 2048), (5, 17)):
        for p in (1, 2, 3, 5):
            parts = [BD._share(lo, hi, k, p) for k in range(p)]
            cover = [i for s in parts for i in range(s.start, s.stop)]
            assert cover == list(range(lo, hi))
            assert max(s.stop - s.start for s in parts) - min(s.stop - s.start for s in parts) <= 1


# --------------------------------------------------------------------------- pools
def _tol(dt, m, n, A):
    dt = np.dtype(dt)
    eps = float(np.finfo(np.float32 if dt in (np.float32, np.complex64) else np.float64).eps)
    return 30 * max(m, n) * eps * max(1.0, float(np.abs(A).max())) * np.sqrt(min(m, n))


def _reduce_and_check(cases):
    """On the labs: per case, svd values and vectors of a 2dbc matrix against numpy."""
    bad = []
    for grid, nb, m, n, dt in cases:
        rng = np.random.default_rng(m * n + nb)
        A = rng.standard_normal((m, n))
        if np.dtype(dt).kind == "c":
            A = A + 1j * rng.standard_normal((m, n))
        A = A.astype(dt)
        D = codistributed(A, codistributor2dbc(list(grid), nb, "row", (m, n)))
        label = f"grid {grid} nb {nb} {m}x{n} {np.dtype(dt).name}"
        t = _tol(dt, m, n, A)
        want = np.linalg.svd(A.astype(np.complex128), compute_uv=False)
        g = ProcessGrid(spmdlab.getCodistributor(D)).connect("t")
        for keep in (False, True):
            bd = BD.gebrd(np.array(spmdlab.getLocalPart(D), copy=True), g, "t", keep=keep)
            s = BD.lasq1(bd.d, bd.e)
            if np.abs(s - want).max() > t:
                bad.append(f"{label} keep={keep}: values off by {np.abs(s - want).max():.2e} (tol {t:.1e})")
        U, s2, Vh = np.linalg.svd(D, full_matrices=False)
        Ug, Vg = gather(U), gather(Vh)
        k = min(m, n)
        if np.abs(s2 - want).max() > t:
            bad.append(f"{label}: values of the full svd off")
        if np.abs((Ug * s2) @ Vg - A).max() > t:
            bad.append(f"{label}: U s Vh != A ({np.abs((Ug * s2) @ Vg - A).max():.2e})")
        te = t / max(1.0, float(np.abs(A).max()))
        if np.abs(Ug.conj().T @ Ug - np.eye(k)).max() > te or np.abs(Vg @ Vg.conj().T - np.eye(k)).max() > te:
            bad.append(f"{label}: U or V not orthonormal")
    return bad


def _cases(p):
    grids = {2: [(1, 2), (2, 1)], 4: [(2, 2), (1, 4)]}[p]
    out = []
    for grid in grids:
        for k, (nb, m, n) in enumerate(((64, 200, 200), (40, 171, 130), (37, 90, 90), (64, 70, 70))):
            out.append((grid, nb, m, n, DTYPES[(k + len(out)) % 4]))
    return out


@pytest.mark.timeout(400)
@pytest.mark.parametrize("labs", [2, 4])
def test_blocks_wider_than_a_panel_against_numpy(pools, labs):
    """Blocks of 64 (four panels each), 40 and 37 (the last panel of a block narrower),
    n < grid x block, m > n, on 1 x p, p x 1, 2 x 2 grids and every dtype."""
    res = list(spmd_run(_reduce_and_check, _cases(labs), pool=pools(labs), timeout=350))
    bad = [f"lab {lab}: {msg}" for lab, msgs in enumerate(res, 1) for msg in msgs]
    assert not bad, "\n".join(bad[:20])
