"""The MATLAB documentation's codistributed-array examples, printing what each lab stores.

1. An 80 x 1000 matrix codistributed by its default layout: by columns, 250 per lab.
      MATLAB:  spmd, A = zeros(80, 1000); D = codistributed(A), end
2. redistribute: the same matrix moved from columns to rows.
      MATLAB:  spmd, D = redistribute(D, codistributor1d(1)), end
3. codistributed.build: every lab makes its own local part (filled with its lab
   number), and build() declares the pieces one N x N array.
      MATLAB:  codistr = codistributor1d(2, codistributor1d.defaultPartition(N), [N N]);
               L = labindex * ones(N, codistr.Partition(labindex));
               D = codistributed.build(L, codistr);   nnz(D == D')
4. 2-D block-cyclic: an 8 x 8 matrix in blocks of 3 over a 2 x 2 lab grid
   (codistributor2dbc([2 2], 3)); other pool sizes use codistributor2dbc.defaultLabGrid.

Each step is its own spmd block, as in the documentation, and each lab describes its
part of D with repr(D), whose first line is MATLAB's "This lab stores ..." text.

Note the numbering (docs/design.md §1): labs are 1..numlabs and dimensions are MATLAB's
(codistributor1d(2) is columns), but the indices a lab reports are 0-based numpy
indices, so MATLAB's "D(:,1:250)" prints as "D[:, 0:250]".

Every layout is checked against one computed in serial numpy, and every gather
against the original array.

Run:  python examples/distribute_and_redistribute.py [--labs N] [--size N]
"""
import numpy as np

from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    gather,
    getCodistributor,
    getLocalPart,
    globalIndices,
    labindex,
    numlabs,
    parpool,
    redistribute,
    spmd,
)

from common import check, check_equal, labs_text, parse_args, report

args = parse_args(__doc__, size=1000, size_help="N of the codistributed.build example (an N x N matrix)")
N = args.size
# The documentation fills A with zeros; numbering the elements shows where each one goes.
A = np.arange(80 * 1000, dtype=np.float64).reshape(80, 1000)
B = np.arange(64).reshape(8, 8)


def show(title, about):
    """Print each lab's description of D, in lab order (list() of a Composite)."""
    print(title)
    for k, text in enumerate(list(about), 1):
        print(f"  Lab {k}: {text}")


with parpool(args.labs) as pool:
    labs = pool.numlabs

    # 1. Default layout: codistributor1d over the last non-singleton dimension (columns).
    with spmd():
        D = codistributed(A)
        about = repr(D).splitlines()[0]            # "This lab stores D[:, 0:250]."
        step1_parts = getLocalPart(D)
    show(f"1. D = codistributed(A), A 80x1000, on {labs_text(labs)}:", about)
    step1_parts, step1 = list(step1_parts), gather(D)

    # 2. The D of step 1 (a `distributed` at the client, the same codistributed array on
    #    the labs) moved to rows.
    with spmd():
        D = redistribute(D, codistributor1d(1))
        about = repr(D).splitlines()[0]
        step2_parts = getLocalPart(D)
    show("2. D = redistribute(D, codistributor1d(1)): the same matrix by rows:", about)
    step2_parts, step2 = list(step2_parts), gather(D)

    # 3. build from local parts.
    with spmd():
        codistr = codistributor1d(2, codistributor1d.defaultPartition(N), (N, N))
        L = labindex() * np.ones((N, codistr.Partition[labindex() - 1]))  # Partition is a list: 0-based
        D = codistributed.build(L, codistr)
        symmetric = int((D == D.T).sum())           # MATLAB: nnz(D == D')
        about = repr(D).splitlines()[0]
        step3_width = L.shape[1]
    show(f"3. D = codistributed.build(L, codistr), {N}x{N}, lab k's columns filled with k:", about)
    print(f"   nnz(D == D.T) = {symmetric[1]}")
    step3_widths, step3_nnz, step3 = list(step3_width), symmetric[1], gather(D)

    # 4. 2-D block-cyclic, blocks of 3.
    with spmd():
        grid = [2, 2] if numlabs() == 4 else codistributor2dbc.defaultLabGrid(numlabs())
        D = codistributed(B, codistributor2dbc(grid, 3))
        about = repr(D).splitlines()[0]
        step4_part = getLocalPart(D)
        step4_rows, step4_cols = globalIndices(D, 1), globalIndices(D, 2)
    layout = getCodistributor(D)
    show(f"4. D = codistributed(B, {layout}), B 8x8 holding 0..63:", about)
    step4_parts, step4_rows, step4_cols, step4 = list(step4_part), list(step4_rows), list(step4_cols), gather(D)
    for k, part in enumerate(step4_parts, 1):
        print(f"  Lab {k}'s local part:")
        print("    " + np.array2string(part).replace("\n", "\n    "))

# ---- the self-check: every layout recomputed in serial numpy -----------------------
# 1-D default partition: the first (m % labs) labs get one extra, as np.array_split does.
cols = np.array_split(np.arange(1000), labs)
rows = np.array_split(np.arange(80), labs)
check_equal("step 1: lab k stores A[:, its columns]", np.concatenate([p.ravel() for p in step1_parts]),
            np.concatenate([A[:, c].ravel() for c in cols]))
check_equal("step 1: gather(D) is A", step1, A)
check_equal("step 2: lab k stores A[its rows, :]", np.concatenate(step2_parts), np.concatenate([A[r] for r in rows]))
check_equal("step 2: gather(D) is A", step2, A)

parts = np.array_split(np.arange(N), labs)
serial = np.concatenate([np.full((N, len(c)), k, dtype=float) for k, c in enumerate(parts, 1)], axis=1)
check_equal("step 3: columns per lab", step3_widths, [len(c) for c in parts])
check_equal("step 3: gather(D) is the serial matrix", step3, serial)
check_equal("step 3: nnz(D == D') as numpy counts it", step3_nnz, np.count_nonzero(serial == serial.T))

# 2-D block-cyclic: block i of rows goes to grid row i mod p, block j of columns to grid
# column j mod q; 'row' orientation numbers the labs along the grid rows, so lab k sits
# at grid row (k-1) // q, grid column (k-1) % q.
p, q = layout.LabGrid
for k in range(1, labs + 1):
    r_k = np.flatnonzero((np.arange(8) // 3) % p == (k - 1) // q)
    c_k = np.flatnonzero((np.arange(8) // 3) % q == (k - 1) % q)
    got_r, got_c = step4_rows[k - 1], step4_cols[k - 1]
    check(f"step 4: lab {k} stores rows {r_k.tolist()} and columns {c_k.tolist()}",
          np.array_equal(got_r, r_k) and np.array_equal(got_c, c_k),
          f"globalIndices says rows {got_r.tolist()} and columns {got_c.tolist()}")
    check_equal(f"step 4: lab {k}'s local part is B[rows, columns]", step4_parts[k - 1], B[np.ix_(r_k, c_k)])
check_equal("step 4: gather(D) is B", step4, B)
report()
