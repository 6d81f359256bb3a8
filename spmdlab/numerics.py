"""MATLAB's names for the numerics on distributed arrays (docs/design.md §7): each works
inside ``spmd`` on codistributed arrays, at the client on ``distributed`` arrays (the call
runs on the labs), and on plain numpy arrays where numpy has the same function. numpy's
own names (``np.fft.fft2``, ``np.linalg.solve``, ...) reach the same code through
``__array_function__``. Importing this module imports scipy: ``spmdlab`` loads it on
first use of one of these names.
"""
from __future__ import annotations

from typing import Any, Callable

from .arrays import linalg
from .arrays.adapt import on_plain
from .arrays.fft import matlab as fft_matlab
from .client.distributed import on_labs as _on_labs


def on_labs(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` at the client and on the labs, for arrays in any layout (``adapt.on_plain``)."""
    return _on_labs(on_plain(fn))


__all__ = ["fft", "fft2", "fftn", "ifft", "ifft2", "ifftn",
           "mldivide", "mrdivide", "lu", "chol", "inv", "det", "solve_triangular",
           "qr", "lstsq", "svd", "eig", "pinv", "rank", "cond", "norm", "trace", "triu", "tril"]

fft = on_labs(fft_matlab.matlab_fft)
ifft = on_labs(fft_matlab.matlab_ifft)
fft2 = on_labs(fft_matlab.matlab_fft2)
ifft2 = on_labs(fft_matlab.matlab_ifft2)
fftn = on_labs(fft_matlab.matlab_fftn)
ifftn = on_labs(fft_matlab.matlab_ifftn)

mldivide = on_labs(linalg.mldivide)
mrdivide = on_labs(linalg.mrdivide)
lu = on_labs(linalg.lu)
chol = on_labs(linalg.chol)
inv = on_labs(linalg.inv)
det = on_labs(linalg.det)
solve_triangular = on_labs(linalg.solve_triangular)
qr = on_labs(linalg.qr)
lstsq = on_labs(linalg.lstsq)
svd = on_labs(linalg.svd)
eig = on_labs(linalg.eig)
pinv = on_labs(linalg.pinv)
rank = on_labs(linalg.rank)
cond = on_labs(linalg.cond)
norm = on_labs(linalg.norm)
trace = on_labs(linalg.trace)
triu = on_labs(linalg.triu)
tril = on_labs(linalg.tril)
