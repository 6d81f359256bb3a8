"""MATLAB's names for the numerics on distributed arrays (docs/design.md §7): each works
inside ``spmd`` on codistributed arrays, at the client on ``distributed`` arrays (the call
runs on the labs), and on plain numpy arrays. numpy's own names (``np.fft.fft2``,
``np.linalg.solve``, ...) reach the same code through ``__array_function__``.
"""
from __future__ import annotations

from .codist import fft_matlab
from .distributed import on_labs

__all__ = ["fft", "fft2", "fftn", "ifft", "ifft2", "ifftn"]

fft = on_labs(fft_matlab.matlab_fft)
ifft = on_labs(fft_matlab.matlab_ifft)
fft2 = on_labs(fft_matlab.matlab_fft2)
ifft2 = on_labs(fft_matlab.matlab_ifft2)
fftn = on_labs(fft_matlab.matlab_fftn)
ifftn = on_labs(fft_matlab.matlab_ifftn)
