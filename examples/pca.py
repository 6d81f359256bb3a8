"""Principal component analysis of a distributed data matrix, two ways: the eigenvectors
of its covariance (np.linalg.eigh) and its SVD (np.linalg.svd).

The data matrix X (samples x features) is distributed by rows: each lab holds some
samples. X is centred with the column means (a sum over the labs), then
 - C = Xc^T Xc / (n - 1), the covariance (features x features), is a distributed
   product; np.linalg.eigh(C) reduces it to tridiagonal form on the labs' 2-D
   block-cyclic grid (ScaLAPACK's PDSYTRD), each lab computes the eigenvectors of its
   share of the spectrum, and the eigenvectors come back distributed;
 - np.linalg.svd(Xc) gives the same components as the rows of Vh and the variances as
   s^2 / (n - 1), without forming C (a tall X, n >= labs x f: TSQR, then the SVD of the
   small R; otherwise the bidiagonal reduction on the 2-D grid, PDGEBRD).
The top components are gathered and compared with numpy on the whole matrix (up to
the sign of each component).

Run:  python examples/pca.py [--labs N] [--size n_samples] [--features f] [--top k]
"""
import numpy as np

from spmdlab import codistributed, codistributor1d, gather, parpool, spmd

from common import check, check_close, labs_text, parse_args, report

args = parse_args(__doc__, size=400, size_help="number of samples (rows of X)", min_size=2,
                  features=(12, "number of features (columns of X)"), top=(3, "components to keep"))
n, f, k = args.size, args.features, min(args.top, args.features)

# data with a few strong directions: the same numbers on every lab (seeded), each lab keeps its rows
rng = np.random.default_rng(7)
directions = np.linalg.qr(rng.standard_normal((f, f)))[0]
scales = np.geomspace(10.0, 0.1, f)
data = (rng.standard_normal((n, f)) * scales) @ directions.T + 3.0

with parpool(args.labs) as pool:
    with spmd():
        X = codistributed(data, codistributor1d(1))      # by rows: each lab keeps its samples
        mean = np.sum(X, axis=0) / n                     # column means (a sum over the labs)
        Xc = X - mean
        C = (Xc.T @ Xc) / (n - 1)                        # the covariance, distributed
        w, V = np.linalg.eigh(C)                         # eigenvalues ascending, V distributed
        U, s, Vh = np.linalg.svd(Xc, full_matrices=False)
        Vh_all = gather(Vh)                              # (replicated already when X is tall: TSQR)
    labs = pool.numlabs
    evals, comps = w[1], gather(V)
    svals, rows = s[1], Vh_all[1]

top_eig = evals[::-1][:k]
top_vec = comps[:, ::-1][:, :k]
var_svd = svals[:k] ** 2 / (n - 1)
print(f"PCA of {n} samples x {f} features on {labs_text(labs)}")
print("variance of the top components (eigh of the covariance):", np.array2string(top_eig, precision=4))
print("variance of the top components (svd of the data):       ", np.array2string(var_svd, precision=4))
print(f"share of the total variance in the top {k}: {top_eig.sum() / evals.sum():.1%}")

want_w, want_V = np.linalg.eigh(np.cov(data, rowvar=False))
want_top = want_V[:, ::-1][:, :k]
check_close("the eigenvalues equal numpy's eigh of the whole covariance", evals, want_w, rtol=1e-10, atol=1e-10)
check_close("s^2/(n-1) from the distributed SVD equals them", var_svd, want_w[::-1][:k], rtol=1e-10)
signs = np.sign(np.sum(top_vec * want_top, axis=0))
check_close("the top components (eigh) equal numpy's up to sign", top_vec * signs, want_top, rtol=1e-8, atol=1e-8)
signs = np.sign(np.sum(rows[:k].T * want_top, axis=0))
check_close("the top components (svd) equal numpy's up to sign", rows[:k].T * signs, want_top, rtol=1e-8, atol=1e-8)
check("the components are orthonormal", np.allclose(top_vec.T @ top_vec, np.eye(k)))
report()
