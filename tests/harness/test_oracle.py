"""The float64 oracle's bound (ortcheck/checks/oracle.py) on hand-made runs."""
import math
import pickle
import sys

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

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


# ---- the verdict against its definition, element by element -------------------------------------

SPECIALS = (math.nan, math.inf, -math.inf, 0.0)


def _element_by_element(runs):
    """The verdict's numbers as the module docstring defines them, one element at a time in Python:
    over the elements where the exact and eager values are finite, the worst implementation error
    (NaN counting as infinite, the first worst if tied) and its place, and the largest eager error,
    nudged eager error and nudge of the truth (where the nudged runs are finite), exact value."""
    values = {run: [float(v) for v in tensor.double().reshape(-1)] for run, tensor in runs.items()}
    worst, place, eager_error, sensitivity, largest = -1.0, None, 0.0, 0.0, 0.0
    for i, (a, e, x) in enumerate(zip(values["actual"], values["eager"], values["exact"])):
        if not (math.isfinite(x) and math.isfinite(e)):
            continue
        error = abs(a - x)  # as torch.nan_to_num(nan=inf) leaves it: NaN -> inf, inf -> the largest float
        error = math.inf if math.isnan(error) else sys.float_info.max if math.isinf(error) else error
        if error > worst:
            worst, place = error, i
        eager_error, largest = max(eager_error, abs(e - x)), max(largest, abs(x))
        n, nx = values["nudged"][i], values["nudged_exact"][i]
        if math.isfinite(n) and math.isfinite(nx):
            eager_error, sensitivity = max(eager_error, abs(n - nx)), max(sensitivity, abs(nx - x))
    if place is None:
        return None
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(place), runs["actual"].shape))
    return (worst, eager_error, sensitivity, torch.finfo(torch.float32).eps * largest, index,
            values["actual"][place], values["exact"][place], values["eager"][place])


@given(shape=st.lists(st.integers(1, 4), max_size=3), data=st.data())
def test_the_verdict_is_its_definition_element_by_element(shape, data):
    """``judge`` computes on whole tensors, skipping its masks where everything is finite (it runs for
    every tensor of every check); on any mix of finite and non-finite runs its numbers must be
    the definition's, where eager and the implementation agree on what is not finite."""
    generator = torch.Generator().manual_seed(data.draw(st.integers(0, 99)))
    exact = torch.randn(shape, dtype=torch.float64, generator=generator)

    def run(dtype, near=True):
        values = exact.clone().reshape(-1)
        for i in range(values.numel()):
            kind = data.draw(st.sampled_from(["same", "near", "special"] if near else ["same", "special"]))
            values[i] = values[i] * (1 + 3e-7) if kind == "near" else (
                data.draw(st.sampled_from(SPECIALS)) if kind == "special" else values[i])
        return values.reshape(shape).to(dtype)

    runs = {"exact": run(torch.float64, near=False), "eager": run(torch.float32), "nudged": run(torch.float32),
            "nudged_exact": run(torch.float64)}
    runs["actual"] = torch.where(torch.isfinite(runs["exact"]) & torch.isfinite(runs["eager"]), run(torch.float32),
                                 runs["eager"])  # not finite where eager is not: no structural mismatch
    verdict = judge(runs)
    expected = _element_by_element(runs)
    if expected is None:
        assert verdict is None
        return
    found = (verdict.impl_error, verdict.eager_error, verdict.sensitivity, verdict.ulp, verdict.index,
             verdict.actual, verdict.exact, verdict.eager)
    assert all(f == e or (math.isnan(f) and math.isnan(e)) for f, e in zip(found, expected)), (found, expected)
