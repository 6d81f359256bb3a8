"""Analysis of a distributed table, with the numpy calls a serial script makes: drop the
rows that have a missing value (a boolean mask of rows, pbdR's na.exclude), sort a
column, its median and percentiles, a histogram, and the rows picked by an index array
(the five largest values). Each result is checked against numpy on the whole table.

The table (rows: samples, columns: measurements) comes from a .npy file that each lab
reads its own rows of (spmdlab.load, MPI-IO), so it is never whole on one process: give
one with --file, or the script writes one (seeded, with some NaNs) to a temporary folder.
 - keep = ~np.isnan(T).any(axis=1) is a codistributed mask of the rows; T[keep] keeps
   each kept row on the lab that read it (the result follows the mask: nothing moves);
 - np.sort of a column is a parallel sample sort (regular sampling, one all-to-all);
   np.median and np.percentile select their order statistics without sorting;
 - np.argsort gives global row numbers, and C[top] fetches those rows from their labs;
 - results that numpy gives as arrays (percentiles, histogram counts) are codistributed
   arrays too: gather() brings them whole to every lab.

Run:  python examples/data_analysis.py [--labs N] [--size rows] [--cols c] [--file table.npy]
"""
import os
import tempfile

import numpy as np

import spmdlab
from spmdlab import codistributor1d, gather, getLocalPart, parpool, spmd

from common import check, check_close, check_equal, labs_text, parse_args, report

args = parse_args(__doc__, size=1000, size_help="number of rows of the table when it is made", min_size=1,
                  cols=(4, "columns of the table when it is made"), file=("", "a .npy table to read instead"))

with tempfile.TemporaryDirectory() as folder:
    path = args.file
    if not path:
        rng = np.random.default_rng(11)
        table = np.round(rng.normal(50.0, 15.0, size=(args.size, args.cols)), 1)  # one decimal: many ties
        table[rng.random(table.shape) < 0.02] = np.nan                            # missing values
        path = os.path.join(folder, "table.npy")
        np.save(path, table)
    whole = np.load(path)  # the serial reference

    with parpool(args.labs) as pool:
        with spmd():
            T = spmdlab.load(path, codistributor1d(1))      # by rows: each lab reads its own
            keep = ~np.isnan(T).any(axis=1)                 # a codistributed mask of the rows
            C = T[keep]                                     # the complete rows
            rows_here = getLocalPart(C).shape[0]
            col = C[:, 0]
            s = np.sort(col)
            med = np.median(col)
            pct = np.percentile(col, [5, 25, 75, 95])
            counts, edges = np.histogram(col, bins=8)
            top = np.argsort(col, kind="stable")[-5:]      # global row numbers of the 5 largest
            best = C[top]
            kept, s_all, best_all = gather(C), gather(s), gather(best)
            pct_all, counts_all, edges_all = gather(pct), gather(counts), gather(edges)
        labs = pool.numlabs
        shares = [rows_here[k] for k in range(1, labs + 1)]
        got = dict(kept=kept[1], sorted=s_all[1], median=med[1], pct=pct_all[1], counts=counts_all[1],
                   edges=edges_all[1], best=best_all[1])

complete = whole[~np.isnan(whole).any(axis=1)]
print(f"{whole.shape[0]} x {whole.shape[1]} table over {labs_text(labs)}; "
      f"{complete.shape[0]} complete rows, kept rows per lab: {shares}")
print(f"column 0: median {got['median']:.2f}, 5/25/75/95th percentiles {np.array2string(got['pct'], precision=2)}")
print("histogram counts:", got["counts"].tolist())

check_equal("the rows without NaN (T[keep]) equal numpy's", got["kept"], complete)
check("each lab kept the complete rows it read", shares == [int((~np.isnan(part).any(axis=1)).sum())
                                                      for part in np.array_split(whole, labs)], f"shares {shares}")
check_equal("np.sort of the column equals numpy's", got["sorted"], np.sort(complete[:, 0]))
check_close("np.median equals numpy's", got["median"], np.median(complete[:, 0]))
check_close("np.percentile equals numpy's", got["pct"], np.percentile(complete[:, 0], [5, 25, 75, 95]))
want_counts, want_edges = np.histogram(complete[:, 0], bins=8)
check_equal("np.histogram's counts equal numpy's", got["counts"], want_counts)
check_close("np.histogram's bin edges equal numpy's", got["edges"], want_edges)
want_top = np.argsort(complete[:, 0], kind="stable")[-5:]
check_equal("the rows picked by argsort's last five indices equal numpy's", got["best"], complete[want_top])
report()
