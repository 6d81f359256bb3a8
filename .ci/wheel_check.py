"""The installed wheel, in a virtualenv holding only it and its dependencies, run from
outside the checkout (``.ci/run``): every module of ``spmdlab`` and ``spmdlab_repl``
imports (a module for an optional extra may lack only that extra), then a user's first
steps work: a pool, an spmd block, a solve, an FFT, ``pmode --help``."""
from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import subprocess
import sys
import sysconfig

import numpy as np

OPTIONAL = {"IPython", "matplotlib"}  # the notebook magics' and plot_layout's extras


def import_every_module() -> None:
    import spmdlab
    import spmdlab_repl

    site = sysconfig.get_paths()["purelib"]
    for package in (spmdlab, spmdlab_repl):
        assert package.__file__.startswith(site), f"{package.__name__} imported from {package.__file__}, not {site}"
        names = [package.__name__] + [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
        for name in names:
            try:
                importlib.import_module(name)
            except ImportError as exc:
                missing = [m for m in OPTIONAL if m in str(exc) and importlib.util.find_spec(m) is None]
                if not missing:
                    raise
                print(f"  {name} needs the optional {missing[0]}, not installed here")
        print(f"{package.__name__}: {len(names)} modules")


def first_steps() -> None:
    from spmdlab import distributed, gather, labindex, parpool, spmd

    rng = np.random.default_rng(0)
    A = rng.random((60, 60)) + 60 * np.eye(60)
    b = rng.random(60)
    with parpool(2):
        with spmd():
            who = labindex()
        assert list(who) == [1, 2], list(who)
        D = distributed(A)
        x = gather(np.linalg.solve(D, b))
        assert np.allclose(x, np.linalg.solve(A, b)), "solve"
        F = gather(np.fft.fft2(D))
        assert np.allclose(F, np.fft.fft2(A)), "fft2"
    print("a pool, an spmd block, a solve and an FFT: ok")
    pmode = os.path.join(os.path.dirname(sys.executable), "pmode")
    result = subprocess.run([pmode, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "pmode start [N]" in result.stdout, result.stdout + result.stderr
    print("pmode --help: ok")


if __name__ == "__main__":
    import_every_module()
    first_steps()
