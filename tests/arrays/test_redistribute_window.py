"""``redistribute`` between 1-D layouts (either dimension, uneven partitions, labs with
nothing) and 2dbc through the staging window, where each lab packs its chunks for the
others into its own segment: every pair both ways on 1-5 labs, for dtypes whose bytes
the packing must carry as they are (complex, non-native byte order, 2-byte ints),
compared with numpy on the source array."""
import sys

import cloudpickle
import numpy as np
import pytest
from support.redistribute_checks import grids

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
    spmd_run,
)

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the checks run on the labs

pytestmark = pytest.mark.timeout(300)

DTYPES = ("complex128", ">f8", "<i2", ">c8")


def _one_d(shape, n):
    out = []
    for d in (1, 2):
        m = shape[d - 1]
        out += [codistributor1d(d), codistributor1d(d, [0] * (n - 1) + [m], shape)]
        if n > 1:
            out.append(codistributor1d(d, [m // 2 + m % 2] + [0] * (n - 2) + [m // 2], shape))
    return out


def _two_dbc(n):
    return [codistributor2dbc(g, b) for g in grids(n) for b in (1, 3, 64)] + [codistributor2dbc(None, 2, "col")]


def _check(shapes):
    """Every 1-D <-> 2dbc pair both ways for every dtype: the new local part is the
    source array's region, and gathering gives the source array back."""
    n, lab = numlabs(), labindex()
    pairs = 0
    for shape in shapes:
        for dtype in DTYPES:
            values = np.arange(np.prod(shape)).reshape(shape) * (1 + 1j) + 0.5
            A = (values if np.dtype(dtype).kind == "c" else values.real).astype(dtype)
            ones, twos = _one_d(shape, n), _two_dbc(n)
            for src, dst in [(a, b) for a in ones for b in twos] + [(b, a) for a in ones for b in twos]:
                E = redistribute(codistributed(A, src), dst)
                want = dst.complete(shape, n)
                assert getCodistributor(E) == want
                part = getLocalPart(E)
                assert part.dtype == np.dtype(dtype), (part.dtype, dtype)
                assert np.array_equal(part, A[np.ix_(*want.localIndices(lab, n))]), (shape, dtype, src, dst)
                assert np.array_equal(gather(E), A), (shape, dtype, src, dst)
                pairs += 1
    from spmdlab.lab import comm
    assert n == 1 or comm.staging_bytes() > 0  # the parts went through the window
    return pairs


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_one_d_and_2dbc_both_ways_for_every_dtype(pools, n):
    pairs = list(spmd_run(_check, [(13, 17), (70, 150)], pool=pools(n)))
    assert len(set(pairs)) == 1 and pairs[0] >= 2 * len(DTYPES) * 2 * 3 * 4
