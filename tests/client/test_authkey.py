"""Lab code cannot read the pool's authkey from any process's environment or command
line, from the lab up to the client, nor from a file (issue 19, item 4). The README's
Security section says exactly this."""
import os
import re

import pytest
from support.processes import ROOT

from spmdlab import spmd_run

pytestmark = pytest.mark.timeout(120)


def _where_the_key_is(key_hex: str, client: int):
    """On a lab: every process from this lab up to the client whose environment or
    command line holds the key (hex or raw), and whether the key file is still there."""
    found = []
    chain = []
    pid = os.getpid()
    while pid > 1:
        chain.append(pid)
        for part in ("environ", "cmdline"):
            with open(f"/proc/{pid}/{part}", "rb") as f:
                data = f.read()
            if key_hex.encode() in data or bytes.fromhex(key_hex) in data:
                found.append((pid, part))
        if pid == client:
            break
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    keyfile = os.environ.get("SPMDLAB_KEYFILE", "")
    return found, chain[-1] == client, len(chain), bool(keyfile) and os.path.exists(keyfile)


def test_no_process_from_lab_to_client_shows_the_key(pools):
    pool = pools(2)
    seen = spmd_run(_where_the_key_is, pool._authkey.hex(), os.getpid(), pool=pool)
    for lab in (1, 2):
        found, reached_client, length, keyfile_left = seen[lab]
        assert reached_client and length >= 4, seen[lab]  # lab, shim, hydra proxy, mpiexec, client
        assert found == [], f"lab {lab} can read the key in /proc/<pid>/{found}"
        assert not keyfile_left


def test_the_readme_says_what_lab_code_can_read():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    security = text[text.index("## Security"):]
    security = security[:security.index("\n## ", 5)]
    flat = re.sub(r"\s+", " ", security)
    local = flat.index("On one machine the key never appears in any process's environment or command line")
    remote = flat.index("With `SPMDLAB_HOST`, `SPMDLAB_MPIEXEC_ARGS` or `SPMDLAB_MPIEXEC`")
    assert local < remote
    assert "keep it in their environment" not in flat[:remote]  # the old claim, true only of remote pools
    assert "hydra's proxies keep it in their environment while the pool runs" in flat[remote:]
