"""Lab-side checks of ``redistribute`` that more than one test module runs: every pair of
many layouts (incomplete ones included), compared with the source array."""
import sys

import cloudpickle
import numpy as np

from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    gather,
    getCodistributor,
    getLocalPart,
    labindex,
    numlabs,
    redistribute,
)

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the checks run on the labs

def grids(n):
    return [[r, n // r] for r in range(1, n + 1) if n % r == 0]


def layouts(shape, n):
    """Many codistributors for ``shape`` on ``n`` labs (incomplete ones included)."""
    out = [None]
    for d in range(1, len(shape) + 1):
        out.append(codistributor1d(d))
        m = shape[d - 1]
        part = [0] * n
        part[-1] = m  # everything on the last lab, zeros elsewhere
        out.append(codistributor1d(d, part, shape))
        if n > 1:
            part = [m // 2 + m % 2] + [0] * (n - 2) + [m // 2]
            out.append(codistributor1d(d, part))
    if len(shape) == 2:
        for grid in grids(n):
            for b in (1, 2, 3, 64):
                out.append(codistributor2dbc(grid, b))
        out.append(codistributor2dbc(None, 2, "col"))
    return out


def check_redistribute(shapes):
    n, lab = numlabs(), labindex()
    pairs = 0
    for shape in shapes:
        A = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 0.5
        all_layouts = layouts(shape, n)
        for src in all_layouts:
            D = codistributed(A, src)
            for dst in all_layouts:
                E = redistribute(D, dst)
                want = (dst or codistributor1d()).complete(shape, n)
                assert getCodistributor(E) == want
                assert np.array_equal(getLocalPart(E), A[np.ix_(*want.localIndices(lab, n))]), (shape, src, dst)
                pairs += 1
            # a round trip back to the source layout gives the same local part
            back = redistribute(redistribute(D, codistributor2dbc(None, 2) if len(shape) == 2
                                             else codistributor1d(1)), getCodistributor(D))
            assert np.array_equal(getLocalPart(back), getLocalPart(D))
            assert np.array_equal(gather(back), A)
    return pairs
