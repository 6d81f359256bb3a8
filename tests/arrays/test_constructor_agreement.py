"""Every codistributed constructor refuses a size, dtype or layout that differs between
labs, with one error on every lab naming them (issue 19, item 4)."""
import numpy as np
import pytest

from spmdlab import SpmdError, codistributed, codistributor1d, codistributor2dbc, gather, labindex, spmd

pytestmark = pytest.mark.timeout(120)


def test_rand_with_a_size_that_differs_between_labs_is_refused_on_every_lab(pool4):
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool4):
            D = codistributed.rand(500 + labindex(), 500, codist=codistributor2dbc())
    err = info.value
    assert sorted(err.errors) == [1, 2, 3, 4]
    text = str(err)
    assert "Error detected on labs 1-4:" in text, text
    assert "codistributed.rand: every lab must ask for the same size, dtype and layout" in text
    for lab in range(1, 5):
        assert f"lab {lab}: size ({500 + lab}, 500), dtype float64, codistributor2dbc(" in text, text
    with spmd(pool=pool4):
        D = codistributed.rand(50, 50, codist=codistributor2dbc())
        total = gather(D).sum()
    assert abs(total[1] - total[2]) < 1e-9


@pytest.mark.parametrize("make", [
    "codistributed.zeros(8, 6 + (labindex() == 3))",
    "codistributed.ones(8, 6, codist=codistributor1d(1) if labindex() == 2 else codistributor1d(2))",
    "codistributed.eye(6, dtype=np.float32 if labindex() == 4 else np.float64)",
    "codistributed.randn(4 + labindex(), 3)",
    "codistributed.randi(9, 5, 5 + labindex() // 3)",
    "codistributed.nan(3, 3 + labindex())",
    "codistributed.true(6, 6, codist=codistributor2dbc() if labindex() == 1 else None)",
    "codistributed.colon(1, 10 + labindex())",
    "codistributed.linspace(0, 1, 20 + (labindex() > 2))",
])
def test_every_constructor_checks_that_the_labs_agree(pool4, make):
    ns = {"codistributed": codistributed, "codistributor1d": codistributor1d,
          "codistributor2dbc": codistributor2dbc, "labindex": labindex, "np": np}
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool4):
            D = eval(make, ns)
    assert sorted(info.value.errors) == [1, 2, 3, 4]
    assert "every lab must ask for the same size, dtype and layout" in str(info.value)


def test_the_same_request_on_every_lab_still_builds(pool4):
    with spmd(pool=pool4):
        D = codistributed.ones(7, 5, codist=codistributor2dbc())
        E = codistributed.linspace(0, 1, 11)
        s = D.sum()
    assert float(s[1]) == 35.0
    np.testing.assert_allclose(gather(E), np.linspace(0, 1, 11))
