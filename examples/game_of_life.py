"""Conway's Game of Life on a codistributed grid: rows split over the labs, halo rows exchanged each step.

The board is a torus (the top row touches the bottom row, the left column the right
one). It is codistributed by rows (codistributor1d(1)): lab k stores a band of whole
rows. A cell's next state depends on its 8 neighbours, so before each generation a lab
needs the last row of the lab above and the first row of the lab below ("halo rows"):

    lab k-1  [ ...rows... ; L ]  --L-->  lab k  [ F ; ...rows... ; B ]  <--F'--  lab k+1  [ F' ; ... ]
                                         pads its band to [ L ; F ... B ; F' ]

On the torus the lab above lab 1 is lab numlabs, so every lab has both neighbours
(with one lab, it is its own neighbour). After the given number of generations the
board must be identical, cell for cell, to the same rule applied serially in numpy.

Run:  python examples/game_of_life.py [--labs N] [--size ROWS] [--generations G]
"""
import numpy as np

from spmdlab import (
    codistributed,
    codistributor1d,
    gather,
    getCodistributor,
    getLocalPart,
    globalIndices,
    labindex,
    labSendReceive,
    numlabs,
    parpool,
    spmd,
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
        # this lab's band of rows (MATLAB: codistributed(board, codistributor1d(1))).
        G = codistributed(board, codistributor1d(1))
        band = getLocalPart(G)
        my_rows = globalIndices(G, 1)                   # 0-based global row numbers
        above = (labindex() - 2) % numlabs() + 1        # labs are 1..numlabs; wrap around
        below = labindex() % numlabs() + 1
        for generation in range(generations):
            # My last row goes down while the row above mine comes in; then the reverse.
            halo_above = labSendReceive(below, above, band[-1:])
            halo_below = labSendReceive(above, below, band[:1])
            band = life_step(np.vstack([halo_above, band, halo_below]))
        G = codistributed.build(band, getCodistributor(G))
        population = int(G.sum())                       # a reduction over the whole grid

    final = gather(G)
    owned = [(int(r[0]), int(r[-1]) + 1) for r in my_rows]
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
