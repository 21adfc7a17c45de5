"""The float64 oracle's bound (ortcheck/checks/oracle.py) on hand-made runs."""
import math
import pickle

import pytest
import torch

from ortcheck.checks.oracle import FACTOR, OracleError, assert_tensor_matches_oracle, judge


def runs(actual, exact=(1.0, 2.0), nudged_exact=(1.0, 2.0)):
    exact = torch.tensor(exact, dtype=torch.float64)
    eager = exact.float()
    return {"actual": torch.tensor(actual), "eager": eager, "exact": exact,
            "nudged": eager.clone(), "nudged_exact": torch.tensor(nudged_exact, dtype=torch.float64)}


def test_a_value_far_off_fails_and_a_close_one_passes():
    assert not judge(runs([1.0, 2.5])).ok
    assert judge(runs([1.0, 2.0])).ok


def test_a_non_finite_nudged_run_bounds_nothing_instead_of_everything():
    """Operands one ulp away that overflow gave an infinite 'sensitivity', so an infinite bound
    that passed any value (a wrong Softmax gradient on gpt2 did)."""
    verdict = judge(runs([1.0, 2.5], nudged_exact=(1.0, math.inf)))
    assert math.isfinite(verdict.bound) and verdict.bound < 0.5 / FACTOR
    assert not verdict.ok


def test_a_value_beyond_the_bound_raises_by_how_much():
    """The margin is what a multi-sample check reports its worst sample by (test_opinfo.py)."""
    verdict = judge(runs([1.0, 2.5]))
    assert verdict.margin == pytest.approx(verdict.impl_error / verdict.bound) and verdict.margin > 1
    with pytest.raises(OracleError, match=r"implementation error \S+ > bound") as raised:
        assert_tensor_matches_oracle(runs([1.0, 2.5]))
    assert isinstance(raised.value, AssertionError) and raised.value.verdict.margin == verdict.margin
    raised.value.add_note("likely cause: ...")
    carried = pickle.loads(pickle.dumps(raised.value))  # as a subprocess hands it back
    assert (type(carried), str(carried), carried.verdict, carried.__notes__) == \
        (OracleError, str(raised.value), raised.value.verdict, ["likely cause: ..."])
