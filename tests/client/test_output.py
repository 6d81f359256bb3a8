"""Lab output reaches the client labelled, per stream, in order."""
import sys

import pytest

from spmdlab import labindex, spmd

pytestmark = pytest.mark.timeout(120)


def test_stdout_and_stderr_labelled_and_separate(pool4, capsys):
    with spmd(pool=pool4):
        print("out", labindex())
        print("err", labindex(), file=sys.stderr)
        for k in range(3):
            print(f"line {k}")
    out, err = capsys.readouterr()
    for lab in range(1, 5):
        assert f"Lab {lab}: out {lab}\n" in out
        assert f"Lab {lab}: err {lab}\n" in err
        assert f"Lab {lab}: err" not in out
        lines = [line for line in out.splitlines() if line.startswith(f"Lab {lab}: line")]
        assert lines == [f"Lab {lab}: line {k}" for k in range(3)]


def test_output_streams_while_the_block_runs(pool2):
    import time

    seen = []
    from spmdlab.protocol.messages import Block

    def sink(lab, stream, text):
        seen.append((time.monotonic(), lab, text))

    start = time.monotonic()
    pool2.run(Block(source="import time\nprint('early', flush=True)\ntime.sleep(1.0)\nprint('late')\n"),
              sink=sink)
    early = [t for t, lab, text in seen if "early" in text]
    late = [t for t, lab, text in seen if "late" in text]
    assert len(early) == 2 and len(late) == 2
    assert max(early) - start < 0.8 <= min(late) - start
