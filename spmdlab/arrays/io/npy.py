"""``.npy`` files on the labs: ``load`` (any layout) and ``save`` (``np.save``'s format),
each lab reading and writing only its own part at its offsets with MPI-IO (reads of
parts made of short stretches of the file through memory maps instead: ``mapped.py``).

The header (numpy's format: magic, version, a dict of ``descr``, ``fortran_order``,
``shape``) is read by every lab and compared; lab 1 writes it. The data follow as one
contiguous array in C or Fortran order, which file views made of the lab's selections
address directly (ROMIO two-phase collective I/O, as HDF5's MPI-IO driver uses it). A
file is written under a temporary name in the same folder and renamed when every lab has
written its part, so a failed save never leaves a file that looks complete.
"""
from __future__ import annotations

import io
import os
import secrets
from typing import Any

import numpy as np

from ..array import codistributed
from ..base import Chunks, check_codist_arg, complete, here, need, parts_of
from ..reshard import changeMode
from .agree import agree, report
from .mapped import read_mapped
from .mpiio import LONG_RUN, File, contig_strides, item_type, no_sigxfsz, region_type
from .plan import check_layout_fits, min_run_bytes, owned, part_shape, rounds, stored
from .twophase import fits_two_phase, read_two_phase

__all__ = ["load", "save", "read_header", "header_bytes", "temporary_name", "conclude", "check_dtype_io",
           "build_result"]


def check_dtype_io(dtype: np.dtype) -> str | None:
    """Why ``dtype`` cannot be read or written element by element, or None."""
    if dtype.names is not None:
        return (f"structured dtype {dtype} is not supported (only plain element types): load the file with "
                "np.load and codistribute each field")
    if dtype.hasobject:
        return f"dtype {dtype} holds Python objects, which a file of raw elements cannot"
    return None


def read_header(path: str) -> tuple:
    """``(shape, fortran, descr, offset, file size)`` of a .npy file; ValueError if the
    file is not one, is truncated, or holds a dtype the labs cannot read."""
    fmt = np.lib.format
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        try:
            version = fmt.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = fmt.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = fmt.read_array_header_2_0(f)
            else:
                shape, fortran, dtype = _read_v3(f, version)
        except (ValueError, EOFError, OSError) as exc:
            raise ValueError(f"not a .npy file, or its header is damaged ({exc})") from None
        offset = f.tell()
    why = check_dtype_io(dtype)
    if why:
        raise TypeError(why)
    need_bytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if size < offset + need_bytes:
        raise ValueError(f"the file is truncated: its header says shape {tuple(shape)} {dtype} "
                         f"({need_bytes} bytes of data) but only {max(size - offset, 0)} bytes follow")
    return tuple(int(s) for s in shape), bool(fortran), fmt.dtype_to_descr(dtype), offset, size


def _read_v3(f: Any, version: tuple) -> tuple:
    """A version 3.0 header (utf-8 field names): numpy has no public reader for it."""
    impl = getattr(np.lib, "_format_impl", None) or np.lib.format
    return impl._read_array_header(f, version)


def header_bytes(shape: tuple, dtype: np.dtype, fortran: bool = False) -> bytes:
    """The header ``np.save`` writes for an array of ``shape`` and ``dtype``."""
    fmt = np.lib.format
    d = {"descr": fmt.dtype_to_descr(dtype), "fortran_order": fortran, "shape": tuple(shape)}
    buf = io.BytesIO()
    try:
        fmt.write_array_header_1_0(buf, d)
    except ValueError:
        buf = io.BytesIO()
        fmt.write_array_header_2_0(buf, d)
    return buf.getvalue()


def build_result(parts: list, dtype: np.dtype, target: Any, n: int) -> Any:
    local = Chunks(parts, dtype) if target.isChunked(n) else parts[0]
    return codistributed.from_parts(local, target)


def _layout(codist: Any, shape: tuple, n: int, what: str, path: str) -> Any:
    check_codist_arg(codist, what)
    why = check_layout_fits(codist, shape, n, path) if codist is not None else \
        ("the file holds a 0-d array (a scalar); load it with np.load" if not shape else None)
    if why:
        raise ValueError(f"{what} {path!r}: {why}")
    try:
        return complete(codist, shape, n)
    except ValueError as exc:
        raise ValueError(f"{what} {path!r}: {exc}") from None


def load(path: Any, codist: Any = None) -> Any:
    """The array in the .npy file ``path``, codistributed with ``codist`` (default: the
    default codistributor1d); each lab reads only its own part."""
    what = "spmdlab.load"
    path = os.fspath(path)
    lab, n = here()
    header, mine = None, None
    try:
        header = read_header(path)
    except Exception as exc:  # reported by every lab alike, below
        mine = report(exc)
    headers = agree(mine, what, path, header)
    if any(h[:4] != headers[0][:4] for h in headers):
        detail = "; ".join(f"lab {k + 1}: shape {h[0]}, {h[2]}" for k, h in enumerate(headers))
        raise ValueError(f"{what} {path!r}: the labs see different files under this name ({detail})")
    shape, fortran, descr, offset, _ = headers[0]
    dtype = np.lib.format.descr_to_dtype(descr)
    target = _layout(codist, shape, n, what, path)
    sels = stored(target, lab, n)
    parts = [np.empty(part_shape(sel), dtype=dtype, order="F" if fortran else "C") for sel in sels]
    if fits_two_phase(target, shape, fortran, n):
        read_two_phase(path, offset, dtype, shape, target, parts[0], what)
    elif min_run_bytes(target, n, dtype.itemsize, fortran, "stored") < LONG_RUN:
        read_mapped(path, offset, dtype, shape, fortran, sels, parts, what)
    else:
        _rounds(path, False, offset, dtype, shape, fortran, target, parts, what)
    return build_result(parts, dtype, target, n)


def _rounds(path: str, write: bool, offset: int, dtype: np.dtype, shape: tuple, fortran: bool, target: Any,
            parts: list, what: str) -> None:
    """Every lab moves its parts (read: stored arrays; write: owned pieces) in rounds."""
    lab, n = here()
    item = item_type(dtype.itemsize)
    fstrides = contig_strides(shape, dtype.itemsize, fortran)
    todo = owned(target, lab, n) if write else [(k, sel, None) for k, sel in enumerate(stored(target, lab, n))]
    fh = File(path, write, what, min_run_bytes(target, n, dtype.itemsize, fortran, "owned" if write else "stored"))
    try:
        for r in range(rounds(target, n, "owned" if write else "stored")):
            if r >= len(todo) or 0 in part_shape(todo[r][1]):
                fh.transfer(write, offset, item, None, None, 0, item)
                continue
            k, gsel, lsel = todo[r]
            buf = parts[k]
            if not (buf.flags.c_contiguous or buf.flags.f_contiguous):
                buf = np.ascontiguousarray(buf)  # a strided view: written from a copy
            ftype = region_type(gsel, fstrides, item, fortran, shape)
            if lsel is None:
                mtype, count = item, int(buf.size)
            else:
                mtype, count = region_type(lsel, buf.strides, item, fortran, buf.shape), 1
            try:
                fh.transfer(write, offset, item, ftype, buf, count, mtype)
            finally:
                ftype.Free()
                if mtype is not item:
                    mtype.Free()
    finally:
        fh.close()
        item.Free()
    if fh.short:
        raise OSError(fh.short)


def temporary_name(path: str) -> str:
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.spmdlab-{secrets.token_hex(4)}.tmp")


def save(path: Any, D: Any) -> None:
    """Write ``D`` to the .npy file ``path`` (``.npy`` added as ``np.save`` does), each
    lab writing only the elements it owns; ``np.load(path)`` gives ``gather(D)``."""
    what = "spmdlab.save"
    D = need(D, what)
    path = os.fspath(path)
    if not path.endswith(".npy"):
        path += ".npy"
    why = check_dtype_io(D.dtype)
    if why:
        raise TypeError(f"{what} {path!r}: {why}")
    if D.mode != "replica":
        D = changeMode(D, "replica")
    lab, n = here()
    no_sigxfsz()
    head = header_bytes(D.shape, D.dtype)
    mine, tmp = None, None
    if lab == 1:
        try:
            tmp = temporary_name(path)
            with open(tmp, "wb") as f:
                f.write(head)
        except Exception as exc:
            mine = report(exc)
    tmp = agree(mine, what, path, tmp)[0]
    parts = parts_of(D)
    failure = None
    try:
        _rounds(tmp, True, len(head), D.dtype, D.shape, False, D.codistributor, parts, what)
    except Exception as exc:
        failure = report(exc)
    conclude(tmp, path, failure, what, len(head) + D.nbytes)


def conclude(tmp: str, path: str, failure: Any, what: str, size: int | None = None) -> None:
    """Agree on the outcome; rename the temporary file into place or remove it. Lab 1
    first checks the file has ``size`` bytes (a short write the file system did not report)."""
    lab, _ = here()
    if lab == 1 and failure is None and size is not None:
        try:
            have = os.path.getsize(tmp)
            if have != size:
                failure = ("OSError", f"the written file has {have} of its {size} bytes (disk full or file size "
                                      "limit reached)")
        except OSError as exc:
            failure = report(exc)
    agreed_failure = None
    try:
        agree(failure, what, path)
    except Exception as exc:
        agreed_failure = exc
    mine = None
    if lab == 1:
        try:
            if agreed_failure is None:
                os.replace(tmp, path)
            else:
                os.remove(tmp)
        except Exception as exc:
            mine = report(exc)
    if agreed_failure is not None:
        raise agreed_failure
    agree(mine, what, path)
