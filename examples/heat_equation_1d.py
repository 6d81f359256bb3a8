"""1-D heat equation: explicit finite differences on a codistributed vector with a halo.

    u_t = u_xx on [0, 1],   u(0, t) = u(1, t) = 0,   u(x, 0) = sin(pi x) + 0.5 sin(3 pi x)

Each step replaces every inner point by u[i] + r (u[i-1] - 2 u[i] + u[i+1]), with
r = dt / dx^2 <= 1/2 for stability. The vector is codistributed with a halo of one
point: lab k stores its own contiguous piece plus one copy of each neighbour's nearest
point, and updateHalos(u) refreshes those copies from their owners (one message to each
neighbour, nothing else):

    lab k-1  [ ......... a | b ]      lab k  [ a | b ......... c | d ]      lab k+1  [ c | d ......... ]
                                             (a and d: lab k's halo, owned by its neighbours)

So each step is two lines: refresh the halo, then update every point that has both
neighbours in the local part (at the ends of the whole vector u(0) and u(1) stay fixed).
The README shows the hand-written labSendReceive version this replaces.

The result must equal the same scheme run serially on the whole vector in numpy, and
approximate the exact solution exp(-pi^2 t) sin(pi x) + 0.5 exp(-9 pi^2 t) sin(3 pi x).

Run:  python examples/heat_equation_1d.py [--labs N] [--size POINTS] [--steps STEPS]
"""
import numpy as np

from spmdlab import (
    codistributed,
    codistributor1d,
    gather,
    getLocalPart,
    parpool,
    spmd,
    updateHalos,
)

from common import check, check_close, labs_text, parse_args, report

args = parse_args(__doc__, size=101, size_help="grid points, boundaries included", min_size=3, one_per_lab="point",
                  steps=(1000, "time steps"))
npoints, steps = args.size, args.steps
dx = 1.0 / (npoints - 1)
r = 0.4                 # dt / dx^2: the explicit scheme is stable for r <= 0.5
dt = r * dx * dx


def initial(x):
    return np.sin(np.pi * x) + 0.5 * np.sin(3 * np.pi * x)


def explicit_step(u, r):
    """New values of u[1:-1] (the points with both neighbours in u), serial or parallel."""
    return u[1:-1] + r * (u[:-2] - 2.0 * u[1:-1] + u[2:])


with parpool(args.labs):
    with spmd():
        # The grid and the initial condition, built on the labs in the halo layout: every
        # lab computes only its own piece (numpy ufuncs on a codistributed array keep its
        # layout, halo included).
        halo = codistributor1d(1, None, (npoints,), halo=1)
        x = codistributed.linspace(0.0, 1.0, npoints, codist=halo)
        u = initial(x)
        mine = getLocalPart(u)          # the stored array itself: writes go into u
        for step in range(steps):
            updateHalos(u)              # each halo point from the lab that owns it
            mine[1:-1] = explicit_step(mine, r)

    # u is codistributed on every lab, so at the client it is a `distributed` array;
    # gather() brings the whole vector here (each point from its owner, once).
    result = gather(u)
    sizes = u.codistributor.Partition

# Serial numpy: the same scheme on the whole vector.
xs = np.linspace(0.0, 1.0, npoints)
v = initial(xs)
for step in range(steps):
    v[1:-1] = explicit_step(v, r)
t = steps * dt
exact = np.exp(-np.pi ** 2 * t) * np.sin(np.pi * xs) + 0.5 * np.exp(-9 * np.pi ** 2 * t) * np.sin(3 * np.pi * xs)

print(f"{npoints} points over {labs_text(len(sizes))} (points per lab {sizes}), {steps} steps to t = {t:.4f}: "
      f"u(1/2) = {result[npoints // 2]:.6f}, max |u - exact| = {np.max(np.abs(result - exact)):.1e}")
check_close("parallel u equals serial numpy u", result, v, rtol=0, atol=1e-12)
# The scheme is second order in space: its error is a modest multiple of dx^2.
err = np.max(np.abs(result - exact))
check(f"u is within 10 dx^2 = {10 * dx * dx:.1e} of the exact solution", err < 10 * dx * dx, f"max error {err:.3g}")
report()
