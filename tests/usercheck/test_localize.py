"""The localizer names the op a positive control breaks and the module that calls it: the three
gradient-rule controls on zoo architectures, and Where's (whose wrong branch no zoo model trains) on
a small gated model; and the CLI's reproduction reproduces."""
import copy
import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from controls.gradient_rules import (SigmoidGradFromInput, SoftmaxGradWithoutSum, TanhGradWithoutSquare,
                                     WhereGradToWrongBranch)
from ortcheck import cli
from ortcheck.impls.base import Observations
from ortcheck.impls.eager import EagerImpl
from ortcheck.models import hf
from ortcheck.usercheck import check_model, zoo
from ortcheck.usercheck.localize import SEVERAL_STEPS
from ortcheck.usercheck.result import Localization, OpFinding
from tests.usercheck import targets

needs_transformers = pytest.mark.skipif(hf.unavailable_reason() is not None, reason=str(hf.unavailable_reason()))


@pytest.mark.parametrize("control, architecture, op, function, module", [
    pytest.param(SoftmaxGradWithoutSum, "gpt2", "Softmax", "softmax", "transformer.h.0.attn",
                 marks=needs_transformers),
    pytest.param(TanhGradWithoutSquare, "gpt2", "Tanh", "tanh", "transformer.h.0.mlp.act",
                 marks=needs_transformers),
    pytest.param(SigmoidGradFromInput, "llama", "Sigmoid", "silu", "model.layers.0.mlp.act_fn",
                 marks=needs_transformers),
])
def test_a_broken_op_is_named_with_its_module_on_a_zoo_model(control, architecture, op, function, module):
    result = check_model(getattr(zoo, architecture), getattr(zoo, f"{architecture}_batch"), zoo.loss,
                         impl=control(), checks=("gradients",))
    located = result.localization
    assert located is not None and located.module == module, result.format()
    assert located.op is not None and op in located.op.onnx_ops and located.op.function.endswith(function), result.format()
    assert "where float64 eager gives" in located.op.failure


REPO = Path(__file__).resolve().parents[2]


def test_where_with_both_branches_training_is_localized():
    result = check_model(targets.gated, targets.batch, impl=WhereGradToWrongBranch(), checks=("gradients",))
    located = result.localization
    assert located.module == "gate" and located.op.onnx_ops[-1] == "Where", result.format()
    assert ("inner", "pass") in located.tree and ("gate.left", "pass") in located.tree


def test_a_correct_pipeline_is_not_localized():
    assert check_model(targets.gated, targets.batch, impl="reference", checks=("gradients",)).localization is None


def test_the_cli_writes_a_reproduction_that_reproduces(tmp_path, capsys):
    impl = "controls.gradient_rules:WhereGradToWrongBranch"
    code = cli.main(["check", "tests.usercheck.targets:gated", "--impl", impl, "--steps", "1",
                     "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1 and "smallest failing submodule: gate (Gate)" in out and "ONNX" in out
    assert (tmp_path / "check.json").is_file() and "first failing op" in (tmp_path / "check.md").read_text()
    page = (tmp_path / "check.html").read_text()
    assert "<img src='check.png'" in page and "smallest failing submodule: gate (Gate)" in page
    assert (tmp_path / "check.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    repro = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path / "repro", capture_output=True, text=True)
    assert repro.returncode == 1 and "where float64 eager gives" in repro.stdout, repro.stdout + repro.stderr
    # from anywhere else too, and it names no absolute path of this machine
    elsewhere = subprocess.run([sys.executable, str(tmp_path / "repro" / "repro.py")], cwd="/", capture_output=True, text=True)
    assert elsewhere.returncode == 1 and "where float64 eager gives" in elsewhere.stdout, elsewhere.stdout + elsewhere.stderr
    assert f"'{REPO}" not in (tmp_path / "repro" / "repro.py").read_text()  # relative roots, not this machine's


def test_a_saturated_sigmoid_gate_trains_like_eager_through_the_reference():
    """The reference builds Sigmoid from Exp; onnxruntime's kernel (ORTModule's) fails this gate's gradients."""
    result = check_model(targets.saturating_gate, targets.saturating_gate_batch, impl="reference", checks=("gradients",))
    assert result.ok, result.format()


def test_a_crash_is_localized_to_the_smallest_submodule_and_op_that_raise_it_alone():
    result = check_model(targets.with_an_unexportable_op, targets.batch, impl="reference", checks=("gradients",))
    located = result.localization
    assert not result.ok and located.module == "1.1" and located.module_type == "RunningMax", result.format()
    assert "ExportError" in located.failure and "cummax" in located.op.function, result.format()
    assert ("0", "pass") in located.tree and ("1.0", "pass") in located.tree


class _SegfaultsOnGates(EagerImpl):
    """Kills the process (as a segfault in native graph building would) when it wraps a Gate."""
    name = "segfaults_on_gates"

    def wrap(self, module, options=None):
        if any(isinstance(m, targets.Gate) for m in module.modules()):
            os.kill(os.getpid(), signal.SIGSEGV)
        return module


def test_a_crash_of_the_process_is_localized_to_the_submodule_that_crashes_alone():
    result = check_model(targets.gated, targets.batch, impl=_SegfaultsOnGates(), checks=("gradients",))
    located = result.localization
    assert result.outcomes[0].detail == "the implementation crashed (signal SIGSEGV)", result.format()
    assert located.module == "gate" and located.failure == "the implementation crashed (signal SIGSEGV)", result.format()
    assert ("inner", "pass") in located.tree and ("gate.left", "pass") in located.tree and located.op is None


def test_an_op_failing_alone_is_not_called_the_cause_of_a_failure_that_needs_several_steps():
    op = OpFinding(3, "torch.nn.functional.cross_entropy", ("SoftmaxCrossEntropyLoss",), ("/Loss",), ((16, 64), (16,)),
                   "the implementation crashed (signal SIGSEGV)")
    several = Localization("", "Qwen2MoeForCausalLM", SEVERAL_STEPS, (("", "FAIL"),), op, one_call_passes=True)
    assert not any(line.startswith("first failing op") for line in several.lines())
    assert any(line.startswith("an op failing alone in one call, a defect of its own") and "SIGSEGV" in line
               for line in several.lines())
    assert "first failing op: none fails alone in one call" in "\n".join(
        dataclasses.replace(several, op=None).lines())
    one_call = dataclasses.replace(several, failure="logits off", one_call_passes=False)
    assert any(line.startswith("first failing op: op #3") for line in one_call.lines())


def test_the_pictures_tree_places_each_module_under_its_nearest_checked_ancestor():
    from ortcheck.usercheck.picture import _rows

    located = Localization(module="blocks.0.attn", module_type="Attention", failure="", op=None,
                           tree=(("", "FAIL"), ("wte", "pass"), ("blocks.0", "FAIL"), ("blocks.0.attn", "FAIL"),
                                 ("blocks.0.mlp.fc", "pass")))
    placed = [(depth, label) for depth, label, _, _ in _rows(located)]
    assert placed == [(0, "(the model)"), (1, "wte"), (1, "blocks.0"), (2, "attn"), (2, "mlp.fc")]


class _TracedOnce(EagerImpl):
    """Traces the module at its first call (torch.jit.trace, sharing its parameters) and runs that
    trace from then on, as a pipeline that never re-exports would: gradients right, Python control
    flow frozen at the first call's sizes."""
    name = "traced_once"

    def wrap(self, module, options=None):
        proxy = copy.copy(module)  # the same parameters, the class's own forward

        def forward(*args):
            if module.__dict__.get("traced") is None:
                module.__dict__["traced"] = torch.jit.trace(proxy, args, check_trace=False)
            return module.__dict__["traced"](*args)

        module.forward = forward
        return module

    def observe(self, wrapped):
        built = int(wrapped.__dict__.get("traced") is not None)
        return Observations(exports=built, gradient_builds=built, sessions=built)


def test_a_new_batch_size_failure_is_localized_with_its_likely_cause(tmp_path):
    """Right at batch 2, wrong at 3 without a re-export: the verdict says the likely
    cause, the search runs both sizes on one wrap, and the eager runs show the branch on the size."""
    result = check_model(targets.size_branching, targets.batch, targets.mean_loss, impl=_TracedOnce(),
                         checks=("gradients", "new batch size"), report_dir=tmp_path)
    gradients, new_size = result.outcomes
    assert gradients.status == "pass" and new_size.status == "FAIL", result.format()
    assert new_size.detail.endswith("likely cause: the graph exported at batch 2 ran at batch 3 without a re-export, "
                                    "and something its trace fixed depends on the size"), new_size.detail
    located = result.localization
    assert located.module == "scale" and located.sizes == (2, 3) and ("lin", "pass") in located.tree, result.format()
    assert located.pointers[0].startswith("Python control flow on a size: it runs 1 op at batch 2 and 3 ops at batch 3")
    assert "torch.Tensor.shape" in located.pointers[0] and "smallest failing submodule at batch 2 then 3: scale" in \
        result.format()
    repro = subprocess.run([sys.executable, str(tmp_path / "repro" / "repro.py")], capture_output=True, text=True)
    assert repro.returncode == 1 and "at batch 3 (call 2)" in repro.stdout, repro.stdout + repro.stderr


def test_a_size_turned_into_a_number_is_pointed_at():
    from ortcheck.usercheck.localize import size_pointers
    from ortcheck.usercheck.targets import Batch

    class Flattens(torch.nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[0] * 2, -1)

    lines = size_pointers(Flattens(), [], [Batch((torch.randn(2, 4),), {}), Batch((torch.randn(3, 4),), {})], (2, 3))
    assert len(lines) == 1 and lines[0].startswith("op #1 torch.Tensor.reshape takes ((T, 4, -1), {}) at batch 2 and "
                                                   "((T, 6, -1), {}) at batch 3"), lines


def test_a_region_with_grad_disabled_is_pointed_at_and_an_op_failing_otherwise_is_not_the_cause():
    """A buffer updated under no_grad, through a pipeline that ignores no_grad: no op
    fails alone as the model does (a value off); the region is named, and the op that fails alone
    only in its structure (an output requiring grad) is listed apart, not called the first failing op."""
    from controls.gradients import IgnoresNoGradRegions

    result = check_model(targets.running_centre, targets.batch, targets.mean_loss, impl=IgnoresNoGradRegions(),
                         checks=("gradients",))
    located = result.localization
    assert located.module == "0" and located.op is None, result.format()
    assert any(p.startswith("ops #1-#3 ran with grad disabled") and "torch.Tensor.mul_" in p for p in located.pointers)
    assert any(p.startswith("also fails alone, another way") and "torch.Tensor.mean" in p for p in located.pointers)
    assert "first failing op: none of its own ops fails alone" in result.format()
