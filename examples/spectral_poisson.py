"""Periodic Poisson equation by FFT: np.fft.fft2 / ifft2 on a codistributed grid.

    u_xx + u_yy = f  on [0, 2 pi)^2, periodic,   mean(u) = 0

In Fourier space the Laplacian is a multiplication: the coefficient of exp(i(kx x + ky y))
is multiplied by -(kx^2 + ky^2). So

    u = ifft2( -fft2(f) / (kx^2 + ky^2) )      (the (0, 0) coefficient set to 0)

The grid is codistributed by columns; each lab holds some columns, all rows. fft2 first
transforms along the rows' direction (axis 0, whole on every lab: no communication),
then one all-to-all puts whole rows on each lab for the transform along axis 1, and one
more brings the result back to columns (the slab decomposition). Each lab then divides
its own coefficients by -(kx^2 + ky^2), knowing which ones it holds from globalIndices,
and ifft2 transforms back the same way. The grid never sits whole on one lab.

The right-hand side comes from a known solution u = sin(x) cos(2y) + 0.3 cos(3x + y) - ...;
the result must equal the same computation in numpy on the whole grid, and the exact u
(spectral accuracy: to rounding).

Run:  python examples/spectral_poisson.py [--labs N] [--size POINTS_PER_SIDE]
"""
import numpy as np

from spmdlab import codistributed, gather, getCodistributor, getLocalPart, globalIndices, parpool, spmd

from common import check, check_close, labs_text, parse_args, ranges, report

args = parse_args(__doc__, size=64, size_help="grid points per side (at least 11: the modes go up to 5)",
                  min_size=11, one_per_lab="column")
n = args.size
h = 2 * np.pi / n


def exact_u(x, y):
    return np.sin(x) * np.cos(2 * y) + 0.3 * np.cos(3 * x + y) - 0.1 * np.sin(5 * y)


def rhs(x, y):
    """f = laplacian of exact_u."""
    return -5 * np.sin(x) * np.cos(2 * y) - 3.0 * np.cos(3 * x + y) + 2.5 * np.sin(5 * y)


def wavenumbers(n):
    """kx or ky of each FFT coefficient index 0..n-1 (0, 1, ..., -2, -1)."""
    return np.fft.fftfreq(n, d=1.0 / n)


with parpool(args.labs):
    with spmd():
        # Each lab builds its own columns of f: rows all, columns from globalIndices.
        F = codistributed.zeros(n, n)
        cols = globalIndices(F, 2)
        x = (np.arange(n) * h)[:, None]
        y = (cols * h)[None, :]
        F = codistributed.build(rhs(x, y), getCodistributor(F))

        Fhat = np.fft.fft2(F)                      # same layout as F: by columns
        kx = wavenumbers(n)[globalIndices(Fhat, 1)][:, None]
        ky = wavenumbers(n)[globalIndices(Fhat, 2)][None, :]
        k2 = kx ** 2 + ky ** 2
        k2[k2 == 0] = np.inf                        # the mean: -fhat / inf = 0
        Uhat = codistributed.build(-getLocalPart(Fhat) / k2, getCodistributor(Fhat))
        U = np.fft.ifft2(Uhat).real
        mine = ranges(globalIndices(U, 2))

    u = gather(U)
    owned = list(mine)

# Serial numpy on the whole grid.
X, Y = np.meshgrid(np.arange(n) * h, np.arange(n) * h, indexing="ij")
fh = np.fft.fft2(rhs(X, Y))
KX, KY = np.meshgrid(wavenumbers(n), wavenumbers(n), indexing="ij")
K2 = KX ** 2 + KY ** 2
K2[0, 0] = np.inf
serial = np.fft.ifft2(-fh / K2).real

print(f"{n} x {n} grid over {labs_text(len(owned))}, by columns: "
      + "; ".join(f"lab {k}: {c}" for k, c in enumerate(owned, start=1)))
err = float(np.max(np.abs(u - exact_u(X, Y))))
print(f"max |u - exact| = {err:.1e}")
check_close("parallel u equals serial numpy u", u, serial, rtol=1e-10, atol=1e-12)
check("u is the exact solution to rounding (spectral accuracy)", err < 1e-10, f"max error {err:.3g}")
report()
