"""Conway's Game of Life on a codistributed grid: rows split over the labs, with a halo row.

The board is a torus (the top row touches the bottom row, the left column the right
one). It is codistributed by rows with a halo of one row (codistributor1d(1, [], size,
halo=1)): lab k stores a band of whole rows plus a copy of the nearest row of the lab
above and of the lab below, and updateHalos(G) refreshes those copies from their
owners before each generation (a cell's next state depends on its 8 neighbours):

    lab k-1  [ ...rows... ; L ]          lab k  [ L' ; F ...rows... B ; F' ]          lab k+1  [ F' ; ... ]
                                         (L' and F': copies of L and F', kept by updateHalos)

A halo exists only between neighbouring pieces of the array, so the torus' seam (the
bottom row of lab numlabs above the top row of lab 1) is one labSendReceive between
those two labs (with one lab, its own rows). After the given number of generations the
board must be identical, cell for cell, to the same rule applied serially in numpy.

Run:  python examples/game_of_life.py [--labs N] [--size ROWS] [--generations G]
"""
import numpy as np

from spmdlab import (
    codistributed,
    codistributor1d,
    gather,
    getLocalPart,
    labindex,
    labSendReceive,
    numlabs,
    parpool,
    spmd,
    updateHalos,
)

from common import check, check_equal, labs_text, parse_args, report

args = parse_args(__doc__, size=48, size_help="rows of the square board", min_size=3, one_per_lab="row",
                  generations=(100, "generations to run"), seed=(7, "random seed of the start board"))
rows, generations = args.size, args.generations

# The start board, made at the client: about a quarter of the cells alive, plus a glider.
board = np.random.default_rng(args.seed).random((rows, rows)) < 0.25
board[:3, :3] = [[0, 1, 0], [0, 0, 1], [1, 1, 1]]


def life_step(padded):
    """The next generation of padded[1:-1]; padded has one extra (halo) row above and
    below. Columns wrap around: np.roll along axis 1."""
    neighbours = np.zeros((padded.shape[0] - 2, padded.shape[1]), dtype=np.int8)
    for dr in (-1, 0, 1):
        band = padded[1 + dr: padded.shape[0] - 1 + dr].astype(np.int8)
        for dc in (-1, 0, 1):
            if (dr, dc) != (0, 0):
                neighbours += np.roll(band, dc, axis=1)
    alive = padded[1:-1]
    return (neighbours == 3) | (alive & (neighbours == 2))


with parpool(args.labs):
    with spmd():
        # board is a client value: every lab gets a copy, and codistributed() keeps only
        # this lab's band of rows and its halo rows.
        G = codistributed(board, codistributor1d(1, None, board.shape, halo=1))
        band = getLocalPart(G)                          # the stored array: writes go into G
        me, n = labindex(), numlabs()
        for generation in range(generations):
            updateHalos(G)                              # the halo rows between neighbours
            # The torus' seam: lab 1's row above is lab n's last row, and lab n's row
            # below is lab 1's first row (lab 1 has no halo above, lab n none below).
            if n == 1:
                padded = np.vstack([band[-1:], band, band[:1]])
            elif me == 1:
                padded = np.vstack([labSendReceive(n, n, band[:1]), band])
            elif me == n:
                padded = np.vstack([band, labSendReceive(1, 1, band[-1:])])
            else:
                padded = band
            band[1 if me > 1 else 0:len(band) - (1 if me < n else 0)] = life_step(padded)
        population = int(G.sum())                       # a reduction: each cell once, halos ignored

    final = gather(G)
    ends = np.cumsum(G.codistributor.Partition)         # each lab's own rows, start:end
    owned = [(int(e - p), int(e)) for p, e in zip(G.codistributor.Partition, ends)]
    alive = population[1]

# Serial numpy: the same rule on the whole board, wrapping rows with np.pad.
serial = board.copy()
for generation in range(generations):
    serial = life_step(np.pad(serial, ((1, 1), (0, 0)), mode="wrap"))

print(f"{rows}x{rows} torus over {labs_text(len(owned))} (rows per lab: "
      f"{', '.join(f'lab {k}: {a}:{b}' for k, (a, b) in enumerate(owned, 1))}); "
      f"{int(board.sum())} cells alive at the start, {alive} after {generations} generations")
check_equal(f"the board after {generations} generations equals serial numpy's", final, serial)
check("the population (G.sum() on the labs) matches", alive == int(serial.sum()),
      f"labs count {alive}, serial numpy {int(serial.sum())}")
report()
