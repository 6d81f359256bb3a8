"""The lab process: its entry point (``python -m spmdlab.lab``), the server that runs the
client's requests (:mod:`.server`), MPI (:mod:`.comm`, the only importer of mpi4py) and the
MATLAB message-passing API (:mod:`.messaging`).

``lazy_comm`` is :mod:`.comm`, imported on first use: importing spmdlab at the client
(``from spmdlab import labSend, codistributed``) must not load or initialise MPI. The array
package reaches MPI only through it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["lazy_comm"]


class _LazyComm:
    """The ``comm`` module, imported on first use."""

    def __getattr__(self, name: str) -> Any:
        from . import comm as real

        value = getattr(real, name)
        if callable(value) or name == "MPI":
            setattr(self, name, value)  # functions and the MPI module: looked up once
        return value


if TYPE_CHECKING:
    from . import comm as lazy_comm  # typed as the module it stands for
else:
    lazy_comm = _LazyComm()
