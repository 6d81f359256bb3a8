"""Parallel I/O: every lab reads and writes only its own part of a file.

The MATLAB original (datastores and save/load of distributed arrays):

    spmd
        D = codistributed.rand(n, m, codistributor1d(1));   % rows over the labs
    end
    save('data.mat', 'D');                                  % one file
    spmd
        E = load('data.mat');                               % read back ...
        E = redistribute(E.D, codistributor2dbc());         % ... in another layout
        colmeans = mean(E, 1);
    end

Here a dataset is built on the labs and written as one .npy file (each lab writes its
rows at their offsets with MPI-IO), read back in a 2-D block-cyclic layout (each lab
reads only its blocks), reduced (column means), and the result written to zarr and
HDF5 and read back. Every step is checked against numpy on the whole array.

Run:  python examples/parallel_io.py [--labs N] [--size ROWS]
"""
import os
import shutil
import tempfile

import h5py
import numpy as np
import zarr

import spmdlab
from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    gather,
    getLocalPart,
    labindex,
    numlabs,
    parpool,
    spmd,
)

from common import check, check_close, check_equal, labs_text, parse_args, report

args = parse_args(__doc__, size=600, size_help="rows of the dataset", cols=(40, "columns of the dataset"))
rows, cols = args.size, args.cols
folder = tempfile.mkdtemp(prefix="spmdlab-parallel-io-")
data = os.path.join(folder, "data.npy")
means_zarr = os.path.join(folder, "means.zarr")
means_h5 = os.path.join(folder, "means.h5")


def dataset(i, j):
    """Element (i, j) of the dataset, from its global indices: any lab can make any part."""
    return np.sin(0.01 * i) * np.cos(0.1 * j) + 0.001 * i * j


with parpool(args.labs):
    with spmd():
        # 1. Build the dataset by rows, each lab its own rows, and save it as ONE .npy file.
        by_rows = codistributor1d(1, codistributor1d.defaultPartition(rows), (rows, cols))
        mine = by_rows.globalIndices(1, labindex(), numlabs())
        D = codistributed.build(dataset(*np.ix_(mine, np.arange(cols))), by_rows)
        spmdlab.save(data, D)  # or np.save(data, D)

        # 2. Read it back in another layout: 2-D block-cyclic, blocks of 16 x 16. Each lab
        #    reads only its blocks (an MPI-IO file view of them).
        E = codistributed.load(data, codistributor2dbc(None, 16))
        block_part = getLocalPart(E).shape

        # 3. A reduction, and the result written back, to zarr and HDF5.
        colmeans = E.mean(axis=0)
        spmdlab.to_zarr(colmeans, means_zarr)
        spmdlab.to_hdf5(colmeans, means_h5, "colmeans")

    # At the client, the same names work on `distributed` arrays (the labs do the work).
    F = spmdlab.from_zarr(means_zarr)
    G = spmdlab.from_hdf5(means_h5, "colmeans")
    back, back_h5 = gather(F), gather(G)
    lab1_part = block_part[1]

# Serial numpy: the same dataset and reduction.
A = dataset(*np.ix_(np.arange(rows), np.arange(cols)))
print(f"{rows} x {cols} dataset over {labs_text(args.labs)}; in the 2dbc layout (blocks of 16 x 16) lab 1 "
      f"read a local part of {lab1_part[0]} x {lab1_part[1]}")
check_equal("np.load reads the file the labs wrote", np.load(data), A)
check_close("column means (read back from zarr)", back, A.mean(axis=0))
check_equal("zarr reads the labs' zarr array", zarr.open_array(means_zarr, mode="r")[...], back)
with h5py.File(means_h5, "r") as f:
    check_equal("h5py reads the labs' HDF5 dataset", f["colmeans"][...], back_h5)
check("no temporary file left", not [f for f in os.listdir(folder) if ".spmdlab-" in f])
shutil.rmtree(folder)
report()
