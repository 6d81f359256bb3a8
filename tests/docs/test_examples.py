"""The teaching examples in examples/: each runs as a script on a real pool (small sizes,
several pool sizes) and must report that its self-check against serial numpy passed.

Every example ends with ``self-check passed: N comparisons with serial numpy`` after N
``  ok: ...`` lines, or prints ``SELF-CHECK FAILED: ...`` on stderr and exits with 1.
"""
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

import pytest
from support.processes import ROOT, child_pythonpath, run_script

pytestmark = pytest.mark.timeout(180)

EXAMPLES = os.path.join(ROOT, "examples")
TIMEOUT = 120  # seconds per script; the defaults take ~1-2 s, but the machine is shared

# (example, arguments, a regular expression its output must contain)
CASES = [
    ("hello_labs", ["--size", "3"], r"Lab 4: Hello from lab 4 of 4\n"),
    ("hello_labs", ["--labs", "2"], r"Lab 2: Hello from lab 2 of 2\n"),
    ("monte_carlo_pi", ["--size", "200000", "--chunks", "16"],
     r"pi ~ 3\.1\d+ from 200,000 darts[\s\S]*time: 4 labs [\d.]+ s, 1 lab [\d.]+ s -> speed-up [\d.]+x"),
    ("monte_carlo_pi", ["--labs", "3", "--size", "100000"], r"hits per lab: \[\d+, \d+, \d+\]"),
    ("heat_equation_1d", ["--size", "30", "--steps", "200"], r"30 points over 4 labs \(points per lab \[8, 8, 7, 7\]\)"),
    ("heat_equation_1d", ["--labs", "3", "--size", "9", "--steps", "50"], r"over 3 labs"),
    ("game_of_life", ["--size", "16", "--generations", "30"], r"lab 4: 12:16\); \d+ cells alive"),
    ("game_of_life", ["--labs", "3", "--size", "7", "--generations", "12"], r"lab 3: 5:7\)"),
    ("game_of_life", ["--labs", "1", "--size", "6", "--generations", "5"], r"over 1 lab "),
    ("matrix_multiply", ["--size", "9", "--block", "2"],
     r"lab 1 stores rows \[0:2, 4:6, 8:9\] x columns \[0:2, 4:6, 8:9\] of C \(local part \(5, 5\)\)"),
    ("matrix_multiply", ["--labs", "2", "--size", "70", "--block", "8"], r"LabGrid=\[1, 2\]"),
    ("jacobi_solver", ["--size", "40"], r"Jacobi on 4 labs: \d+ iterations"),
    ("jacobi_solver", ["--labs", "3", "--size", "7"], r"lab 3: 5:7"),
    ("jacobi_solver", ["--labs", "3", "--size", "2"], r"lab 2: 1:2; lab 3: none\n"),  # a lab without rows
    ("distribute_and_redistribute", ["--size", "12"],
     r"Lab 4: This lab stores D\[:, 750:1000\]\.[\s\S]*Lab 1: This lab stores D\[0:20, :\]\.[\s\S]*"
     r"Lab 2: This lab stores blocks of size 3 of D: rows \[0:3, 6:8\], columns \[3:6\]\."),
    ("distribute_and_redistribute", ["--labs", "3", "--size", "5"], r"Lab 3: This lab stores D\[:, 667:1000\]\."),
    ("reduction_patterns", ["--size", "50"], r"gop\(np\.matmul, \[\[k, 1\], \[1, 0\]\]\) on lab k, in lab order: "
                                              r"\[\[43, 10\], \[30, 7\]\]"),
    ("reduction_patterns", ["--labs", "2", "--size", "5"], r"in lab order: \[\[3, 1\], \[2, 1\]\]"),
    ("spectral_poisson", ["--size", "32"], r"32 x 32 grid over 4 labs, by columns: lab 1: 0:8; lab 2: 8:16"),
    ("spectral_poisson", ["--labs", "3", "--size", "11"], r"lab 3: 8:11\nmax \|u - exact\|"),
    ("linear_solve", ["--size", "6", "--block", "4"],
     r"lab grid 2 x 2, blocks of 4 x 4\n  lab 1 stores rows \[0:4, 8:12, 16:20, 24:28, 32:36\][\s\S]*"
     r"    3 4 3 4 3 4 3 4 3\n"),
    ("linear_solve", ["--labs", "2", "--size", "9", "--block", "8"], r"on 2 labs: lab grid 1 x 2"),
    ("pca", ["--size", "80", "--features", "8"], r"PCA of 80 samples x 8 features on 4 labs"),  # TSQR svd
    ("pca", ["--labs", "3", "--size", "10", "--features", "6", "--top", "2"],  # 2dbc svd (not tall)
     r"variance of the top components \(svd of the data\): +\[31\.99"),
    ("poisson_pcg", ["--size", "20"], r"n = 400 unknowns, nnz = 1920, rows per lab: lab 1: 0:100;[\s\S]*"
                                      r"pcg \+ block ILU on 4 labs: flag 0, \d+ iterations"),
    ("poisson_pcg", ["--labs", "3", "--size", "5"], r"lab 3: 17:25\n"),
    ("parallel_io", ["--size", "100"], r"100 x 40 dataset over 4 labs; in the 2dbc layout \(blocks of 16 x 16\) "
                                       r"lab 1 read a local part of 52 x 24"),
    ("parallel_io", ["--labs", "2", "--size", "10", "--cols", "3"], r"lab 1 read a local part of 10 x 3"),
    ("data_analysis", ["--size", "200"], r"200 x 4 table over 4 labs; 184 complete rows, kept rows per lab: "
                                         r"\[45, 45, 49, 45\]"),
    ("data_analysis", ["--labs", "3", "--size", "7"], r"7 x 4 table over 3 labs"),
    ("hybrid_threads", ["--labs", "1", "--threads", "2", "--size", "400000"],
     r"1 lab x 2 threads each[\s\S]*used up to 2 threads per lab \(parts of 400,000 elements"),
    ("hybrid_threads", ["--labs", "2", "--size", "1200000"],
     r"distributed\.rand\(4\): 1 lab holds it; distributed of 1,200,000 elements: 2 labs hold it"),
]


@pytest.fixture(autouse=True)
def real_defaults(monkeypatch):
    """The examples run as users run them: conftest's SPMDLAB_DISTRIBUTE_SIZE=0 (which
    keeps the other tests' small arrays spread) is not theirs."""
    monkeypatch.delenv("SPMDLAB_DISTRIBUTE_SIZE", raising=False)


def run_example(name: str, args: list) -> subprocess.CompletedProcess:
    """Run an example as a user does, from a folder of their own (not the checkout, whose
    spmdlab/ would be what the labs import: they start with ``python -m`` there)."""
    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    with tempfile.TemporaryDirectory() as cwd:
        return subprocess.run([sys.executable, os.path.join(EXAMPLES, f"{name}.py"), *args], capture_output=True,
                              text=True, timeout=TIMEOUT, cwd=cwd, env=env)


def test_every_example_has_a_case():
    scripts = {f[:-3] for f in os.listdir(EXAMPLES) if f.endswith(".py") and f != "common.py"}
    assert scripts == {name for name, _, _ in CASES}
    assert len(scripts) >= 8


@pytest.mark.parametrize("name, args, expected", CASES, ids=[f"{n} {' '.join(a)}" for n, a, _ in CASES])
def test_example_passes_its_self_check(name, args, expected):
    r = run_example(name, args)
    out = r.stdout
    assert r.returncode == 0, f"exit status {r.returncode}\nstdout:\n{out}\nstderr:\n{r.stderr}"
    assert "SELF-CHECK FAILED" not in out + r.stderr
    last = out.rstrip("\n").splitlines()[-1]
    match = re.fullmatch(r"self-check passed: (\d+) comparisons with serial numpy", last)
    assert match, f"last line: {last!r}\n{out}"
    assert int(match.group(1)) == len(re.findall(r"^  ok: ", out, re.M)) >= 2
    assert re.search(expected, out), f"{expected!r} not in:\n{out}"
    assert "Traceback" not in r.stderr, r.stderr


def test_a_failed_self_check_exits_1_with_a_clear_message_and_closes_the_pool():
    code = f"""
import sys
sys.path.insert(0, {EXAMPLES!r})
import numpy as np
from common import check_close, check_equal, report
from spmdlab import labindex, parpool, spmd

with parpool(2):
    with spmd():
        x = np.arange(3.0) * labindex()
    check_equal("lab 1's x", x[1], [0.0, 1.0, 2.0])
    check_close("lab 2's x", x[2], [0.0, 2.0, 5.0])
report()
"""
    r = run_script(code, timeout=TIMEOUT)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "  ok: lab 1's x\n" in r.stdout
    assert "self-check passed" not in r.stdout
    assert r.stderr.strip().splitlines()[-1] == (
        "SELF-CHECK FAILED: lab 2's x: max |difference| 1 is above "
        "atol=1e-12 + rtol=1e-10 * |serial value|")


def test_check_helpers_report_shape_and_element_mismatches(capsys):
    spec = importlib.util.spec_from_file_location("examples_common", os.path.join(EXAMPLES, "common.py"))
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    with pytest.raises(SystemExit) as info:
        common.check_equal("shape", [1, 2], [1, 2, 3])
    assert info.value.code == 1
    with pytest.raises(SystemExit):
        common.check_equal("values", [[1, 2], [3, 4]], [[1, 2], [3, 5]])
    err = capsys.readouterr().err
    assert "SELF-CHECK FAILED: shape: shape (2,), serial numpy gives (3,)" in err
    assert "SELF-CHECK FAILED: values: 1 of 4 elements differ, the first at index (1, 1)" in err
    assert common.ranges([0, 1, 2, 6, 7]) == "0:3, 6:8" and common.ranges([]) == "none"


def test_bad_options_are_refused_before_any_pool_starts():
    r = run_example("heat_equation_1d", ["--labs", "0"])
    assert r.returncode == 2 and "--labs must be at least 1" in r.stderr
    r = run_example("game_of_life", ["--labs", "4", "--size", "3"])
    assert r.returncode == 2 and "--size must be at least 4 so that each of the 4 labs holds a row, got 3" in r.stderr
    r = run_example("heat_equation_1d", ["--labs", "1", "--size", "2"])
    assert r.returncode == 2 and "--size must be at least 3, got 2" in r.stderr
