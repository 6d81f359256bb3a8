"""A lab keeps the memory of large arrays it frees for the next ones, and gives it back
once idle (``SPMDLAB_KEEP_MEMORY``, ``lab/memory.py``)."""
import platform
import time

import pytest

import spmdlab
from spmdlab import settings, spmd_run
from spmdlab.lab import memory

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the policy is glibc's switches")]

MB = 2**20


def fill_faults(mb: int) -> int:
    """On a lab: the page faults of filling a new ``mb`` MB array (freed afterwards)."""
    import resource

    import numpy as np

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = np.empty(mb * MB // 8)
    a.fill(1.0)
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    del a
    return grew


def refill_faults(mb: int) -> tuple:
    """On a lab: fill a new ``mb`` MB array, free it, fill another; the page faults of
    the second fill, and the lab's resident MB after the first was freed."""
    fill_faults(mb)
    held = rss_mb()
    return fill_faults(mb), held


def rss_mb(pid: str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def lab_rss(pool) -> dict:
    return {lab: rss_mb(str(pid)) for lab, pid in pool.pids.items()}


def test_a_freed_array_s_pages_serve_the_next_one_without_faults():
    """By default the second 200 MB array reuses the first's mapped pages (no faults);
    with ``keep_memory=0`` each one is mapped afresh, as glibc does by itself."""
    kept, fresh = spmdlab.Pool(2), spmdlab.Pool(2, keep_memory=0)
    try:
        spmd_run(refill_faults, 8, pool=kept)  # warm: imports and the heap's first growth
        for lab, (grew, held) in enumerate(spmd_run(refill_faults, 200, pool=kept), 1):
            assert grew < 20, (lab, grew)
            assert held > 180, (lab, held)  # the freed array stays mapped
        for lab, (grew, _) in enumerate(spmd_run(refill_faults, 200, pool=fresh), 1):
            assert grew > 40, (lab, grew)  # 100 faults of 2 MB pages at the least, 51,200 of 4 kB ones
    finally:
        kept.close()
        fresh.close()


def test_kept_memory_goes_back_after_the_idle_seconds():
    pool = spmdlab.Pool(2, keep_memory=2)
    try:
        spmd_run(refill_faults, 8, pool=pool)
        base = lab_rss(pool)
        spmd_run(refill_faults, 300, pool=pool)
        held = lab_rss(pool)
        assert all(held[lab] > base[lab] + 250 for lab in held), (base, held)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(v > base[k] + 100 for k, v in lab_rss(pool).items()):
            time.sleep(0.2)
        assert all(v < base[k] + 100 for k, v in lab_rss(pool).items()), (base, lab_rss(pool))
        assert [g for g, _ in spmd_run(refill_faults, 300, pool=pool)]  # still usable
    finally:
        pool.close()


def test_a_long_block_keeps_its_memory_past_the_idle_seconds():
    """The idle clock runs between requests only: a block longer than the setting keeps
    reusing what it freed."""
    pool = spmdlab.Pool(1, keep_memory=0.5)

    def long_block() -> tuple:
        fill_faults(200)
        time.sleep(1.5)  # past the setting, inside the block
        return fill_faults(200), rss_mb()

    try:
        spmd_run(refill_faults, 8, pool=pool)
        grew, held = spmd_run(long_block, pool=pool)[1]
        assert grew < 20 and held > 180, (grew, held)
    finally:
        pool.close()


@pytest.mark.nompi
def test_the_setting_is_seconds_zero_or_more(monkeypatch):
    assert settings.load().keep_memory == 10.0
    assert settings.load(keep_memory=0).keep_memory == 0.0
    monkeypatch.setenv("SPMDLAB_KEEP_MEMORY", "inf")
    assert settings.load().keep_memory == float("inf")
    assert settings.load().lab_environment()["SPMDLAB_KEEP_MEMORY"] == "inf"
    monkeypatch.setenv("SPMDLAB_KEEP_MEMORY", "soon")
    with pytest.raises(ValueError, match="SPMDLAB_KEEP_MEMORY='soon' is not valid"):
        settings.load()
    monkeypatch.delenv("SPMDLAB_KEEP_MEMORY")
    with pytest.raises(ValueError, match=r"keep_memory \(SPMDLAB_KEEP_MEMORY, seconds\) must be 0 or more, got -1"):
        settings.load(keep_memory=-1)
    with pytest.raises(ValueError, match="must be 0 or more, got nan"):
        settings.load(keep_memory=float("nan"))
    with pytest.raises(TypeError, match="must be a number, got str"):
        settings.load(keep_memory="10")


@pytest.mark.nompi
def test_zero_changes_nothing():
    assert memory.keep_freed(0, lambda: False) is None
