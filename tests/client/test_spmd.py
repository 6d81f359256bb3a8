"""`with spmd():` blocks on real pools: transparency, write-back, lab subsets, source checks."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from support.processes import child_pythonpath, run_script

import spmdlab
from spmdlab import Composite, labindex, numlabs, spmd, spmd_run

pytestmark = pytest.mark.timeout(120)


def helper_square(v):
    return v * v


class Point:
    def __init__(self, x):
        self.x = x


def test_design_seed_example(pool4):
    n = 1000
    with spmd(pool=pool4):
        x = labindex() * n
        A = np.zeros((80, 1000))
    assert isinstance(x, Composite)
    assert [x[i] for i in range(1, 5)] == [1000, 2000, 3000, 4000]
    assert A[3].shape == (80, 1000)


def test_values_modules_functions_lambdas_classes_go_in(pool4):
    offset = 7
    arr = np.arange(6).reshape(2, 3)
    square = lambda v: v ** 2
    point = Point(3)
    with spmd(pool=pool4):
        a = offset + labindex()
        b = arr.sum() * labindex()
        c = square(labindex()) + helper_square(2)
        d = point.x
        e = np.__name__
        f = os.getpid()
    assert list(a) == [8, 9, 10, 11]
    assert list(b) == [15, 30, 45, 60]
    assert list(c) == [5, 8, 13, 20]
    assert list(d) == [3, 3, 3, 3]
    assert list(e) == ["numpy"] * 4
    assert len(set(f)) == 4 and os.getpid() not in set(f)


def test_composite_goes_in_as_each_labs_element(pool4):
    with spmd(pool=pool4):
        x = labindex() * 10
    with spmd(pool=pool4):
        y = x + 1
    assert list(y) == [11, 21, 31, 41]
    c = Composite(pool=pool4)
    for i in range(1, 5):
        c[i] = np.full(2, i)
    with spmd(pool=pool4):
        s = int(c.sum())
    assert list(s) == [2, 4, 6, 8]


def test_function_locals_are_written_back(pool4):
    def work(k):
        before = "client"
        with spmd(pool=pool4):
            r = labindex() + k
        return r, before

    r, before = work(100)
    assert before == "client"
    assert list(r) == [101, 102, 103, 104]


def test_spmd_in_a_loop_accumulates(pool4):
    total = 0
    for step in range(3):
        with spmd(pool=pool4):
            part = labindex() * step
        total += sum(part)
    assert total == 10 * (0 + 1 + 2)


def test_imports_defs_and_classes_stay_on_the_labs():
    result = run_script("""
import numpy as np
import spmdlab
pool = spmdlab.parpool(2)
with spmdlab.spmd():
    import math as np
    def local_f():
        return 1
    class K:
        pass
    v = np.floor(2.5) + local_f()
print("NP", np.__name__, "local_f" in globals(), "K" in globals(), list(v))
pool.close()
""")
    assert "NP numpy False False [3, 3]" in result.stdout, result.stderr


def test_spmd_n_runs_on_the_first_n_labs(pool4):
    with spmd(2, pool=pool4):
        w = (labindex(), numlabs())
        g = spmdlab.gplus(1)
    assert w[1] == (1, 2) and w[2] == (2, 2)
    assert g[2] == 2
    assert not w.exist(3) and not w.exist(4)
    assert len(w) == 4
    with pytest.raises(spmdlab.NoDataError, match="lab 3 has no data"):
        w[3]


def test_spmd_m_n_and_bad_counts(pool4):
    with spmd(2, 8, pool=pool4):
        k = numlabs()
    assert k[1] == 4
    with pytest.raises(ValueError, match="spmd\\(5\\) needs 5 labs but the pool has 4"):
        with spmd(5, pool=pool4):
            z = 1
    with pytest.raises(ValueError, match="at least 6 labs"):
        with spmd(6, 9, pool=pool4):
            z = 1
    with pytest.raises(ValueError, match="exceeds the maximum"):
        spmd(3, 2)
    with pytest.raises(ValueError, match="whole numbers"):
        spmd(-1)


def test_spmd_zero_runs_on_the_client():
    with spmd(0):
        q = labindex() + numlabs() + 40
        pid = os.getpid()
    assert isinstance(q, Composite)
    assert len(q) == 1 and q[1] == 42 and pid[1] == os.getpid()


def test_function_form(pool4):
    c = spmd_run(lambda a, b=0: labindex() * a + b, 10, b=1, pool=pool4)
    assert list(c) == [11, 21, 31, 41]
    with spmd(pool=pool4):
        base = labindex()
    d = spmd_run(lambda v: v * 2, base, pool=pool4)
    assert list(d) == [2, 4, 6, 8]
    e = spmd_run(lambda: numlabs(), n=3, pool=pool4)
    assert e[3] == 3 and not e.exist(4)


def test_forbidden_statement_rejected_before_anything_runs(tmp_path):
    result = run_script("""
import spmdlab
from spmdlab import spmd
pool = spmdlab.parpool(2)
for i in range(3):
    try:
        with spmd():
            print("SHOULD NOT RUN")
            break
    except SyntaxError as e:
        print("REJECTED", e.msg, e.lineno)
        break
print("SPAWNED", pool.state)
pool.close()
""")
    assert "REJECTED 'break' is not allowed in an spmd block (outside a loop inside it) 9" in result.stdout
    assert "SHOULD NOT RUN" not in result.stdout
    assert "SPAWNED idle" in result.stdout


def test_unreadable_source_error_and_function_form_in_python_c():
    code = ("import spmdlab\n"
            "pool = spmdlab.parpool(2)\n"
            "try:\n"
            "    with spmdlab.spmd():\n"
            "        x = 1\n"
            "except spmdlab.SpmdSourceError as e:\n"
            "    print('ERR', e)\n"
            "print('RUN', list(spmdlab.spmd_run(lambda: spmdlab.labindex())))\n"
            "pool.close()\n")
    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert "ERR spmd reads the body" in result.stdout, result.stderr
    assert "spmd_run(fn, *args)" in result.stdout
    assert "RUN [1, 2]" in result.stdout


def test_works_in_ipython():
    pytest.importorskip("IPython")  # a test dependency; installed by .ci/run
    code = ("from IPython.core.interactiveshell import InteractiveShell\n"
            "sh = InteractiveShell.instance()\n"
            "sh.run_cell('import spmdlab\\npool = spmdlab.parpool(2)')\n"
            "sh.run_cell('k = 5\\nwith spmdlab.spmd():\\n    v = spmdlab.labindex() + k\\n')\n"
            "sh.run_cell('print(\"IPY\", list(v))\\npool.close()')\n")
    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert "IPY [6, 7]" in result.stdout, result.stdout + result.stderr


def test_spmd_without_a_pool_starts_the_default_pool():
    result = run_script("""
import os
os.environ["SPMDLAB_NUM_LABS"] = "3"
from spmdlab import spmd, numlabs, gcp
with spmd():
    n = numlabs()
print("N", n[1], gcp().numlabs)
""")
    assert "N 3 3" in result.stdout, result.stderr
    assert re.fullmatch(r"Starting parallel pool with 3 labs \.\.\. connected in \d+\.\d s\n", result.stderr)
    quiet = run_script("import os\nos.environ['SPMDLAB_NUM_LABS'] = '2'\nos.environ['SPMDLAB_QUIET'] = '1'\n"
                       "from spmdlab import spmd\nwith spmd():\n    pass\n")
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_parpool_context_manager_gcp_and_tcp():
    if spmdlab.gcp("nocreate") is not None:  # a second parpool raises, as in MATLAB
        with pytest.raises(spmdlab.PoolError, match="already open; close it first"):
            spmdlab.parpool(2)
    with spmdlab.parpool(2, host="127.0.0.1", replace=True) as pool:
        assert spmdlab.gcp() is pool and pool.NumWorkers == 2
        with spmd():
            v = labindex()
        assert list(v) == [1, 2]
    assert pool.state == "closed"
    assert spmdlab.gcp(create=False) is None and spmdlab.gcp("nocreate") is None
    with pytest.raises(ValueError, match="positive whole number"):
        spmdlab.parpool(0)
    with pytest.raises(TypeError, match="unknown pool option 'bogus'"):
        spmdlab.parpool(2, bogus=1)
