"""Convergence in mixed precision: the GradScaler's skipped steps, the golden files per dtype, and
the gate catching a run that trains in float32 where eager trained under autocast."""
import dataclasses

import pytest
import torch

from ortcheck import impls
from ortcheck.checks import FACTOR
from ortcheck.convergence import cases, gate, golden, runner, workflow
from ortcheck.convergence.curves import CaseRun, Curve
from ortcheck.convergence.steps import train_steps
from ortcheck.convergence.tolerance import FP32_STEPS, CurveTolerance
from ortcheck.convergence.training import TrainingConfig

EAGER = impls.get("eager")


def short(name: str, steps: int = 6, **training) -> cases.Case:
    case = cases.get(name)
    return dataclasses.replace(case, training=dataclasses.replace(case.training, steps=steps, **training))


@pytest.mark.parametrize("field, value, message", [("autocast", "float64", "unknown autocast dtype 'float64'"),
                                                   ("loss_scale", 1000.0, "power of two"),
                                                   ("loss_scale", -2.0, "power of two")])
def test_bad_precision_settings_are_refused_naming_them(field, value, message):
    with pytest.raises(ValueError, match=message):
        TrainingConfig(steps=1, **{field: value})


def test_mixed_precision_goldens_sit_beside_their_float32_case_one_file_per_dtype(tmp_path):
    case = short("bloom_lm_bfloat16", steps=2)
    outcome = workflow.check(case, EAGER, steps=2, golden_root=tmp_path, update=True)
    assert outcome.updated and outcome.golden_path == tmp_path / "bloom_lm" / "eager-cpu-bfloat16.json"
    recorded = golden.load(outcome.golden_path)
    assert recorded.dtype == "bfloat16" and recorded.run.fingerprint["dtype"] == "bfloat16"
    assert recorded.config["autocast"] == "bfloat16"
    assert "autocast" not in cases.get("bloom_lm").config(40)  # float32 goldens keep their configuration


def test_the_gradscaler_skips_a_step_whose_scaled_gradients_overflow_and_the_gate_names_it():
    case = cases.get("mlp")
    batches = case.batches(0, 3)
    torch.manual_seed(0)
    training = dataclasses.replace(case.training, steps=3, autocast="float16", loss_scale=2.0 ** 100)
    found = train_steps(case.loss, case.build(), batches, 0, "cpu", training)
    assert found.skipped_steps[0] == 0  # 2**100 overflows any float16 gradient
    eager = CaseRun("mlp", "eager", "cpu", [found], {}, {})
    stepped = CaseRun("mlp", "x", "cpu", [dataclasses.replace(found, skipped_steps=[])], {}, {})
    result = gate.compare(eager, stepped, CurveTolerance({"loss": FP32_STEPS}))
    assert f"GradScaler skipped steps [] (a scaled gradient overflowed), eager skipped {found.skipped_steps}" in result.message()
    assert "no margin" in gate.oracle_parity({"eager": eager, "actual": eager}).message()


@pytest.mark.parametrize("name", ["bloom_lm_float16", "bloom_lm_bfloat16", "qlora_bfloat16"])
def test_a_learning_rate_ten_percent_off_fails_the_oracle_in_mixed_precision(name):
    """The gate's resolution in half precision (measured: a 1% learning rate moves bloom_lm 272x the
    scale in float16, 29x in bfloat16, under the bound of 32; 10% moves all three 83x to 2690x).
    The learning rate itself is compared exactly, so its rows are left out here: the loss and the
    gradient norm alone must leave the bound."""
    case = cases.get(name)
    runs = runner.run_all(case, EAGER, training=dataclasses.replace(case.training, lr=case.training.lr * 1.1))
    result = gate.oracle_parity(runs, exact_metrics=())
    assert not result.ok and result.oracle_ratio > 2 * FACTOR, result.summary()
    assert workflow.parity(case, runner.run_all(case, EAGER)).ok
