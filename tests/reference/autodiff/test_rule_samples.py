"""Every gradient rule against PyTorch autograd on the samples registered beside it
(reference/autodiff/samples.py): one test over ``supported_ops()``, so a rule added without samples
fails ``test_every_rule_has_samples`` instead of passing untested. The family files keep the special
cases (hand-built nodes, ties, stashing); this file makes sure each rule is reached at all."""
import pytest
import torch

from reference.autodiff.registry import rule_replaced, samples_of, supported_ops

FLOAT64 = dict(rtol=1e-7, atol=1e-9)
# Ops onnxruntime's CPU kernels lack float64 for (HardSwish: its function body's HardSigmoid; Celu: ONNX
# types it float only, so the export casts around it): float32 samples, checked with the Conv tests' bound
# (far below a misplaced contribution, order 1).
FLOAT32 = dict(rtol=1e-4, atol=1e-4)
FLOAT32_ONLY = {
    "AveragePool", "Celu", "Col2Im", "Conv", "ConvTranspose", "Elu", "Erf", "Gelu", "GlobalAveragePool",
    "GlobalMaxPool", "HardSigmoid", "HardSwish", "InstanceNormalization", "LeakyRelu", "PRelu", "Resize", "Selu",
    "Softplus",
}
# Ops no plain torch function exports to (or whose forward cannot match eager), each with why; their
# rules are checked on hand-built graphs in the family files named.
EXEMPT = {
    "Bernoulli": "a random draw: onnxruntime's outputs differ from torch's (at probabilities 0 and 1 too)",
    "CastLike": "torch exports Cast, never CastLike (test_autodiff_elementwise.py)",
    "SpaceToDepth": "PixelUnshuffle exports a Reshape/Transpose chain (test_autodiff_spatial.py::test_dcr_pair)",
    "Sum": "torch never emits Sum; the builder's accumulation does (test_autodiff_builder.py)",
    "com.microsoft.MatMulBnb4": "custom-domain op of the 4-bit layers, no plain torch function (tests/reference/bnb4)",
}
CASES = [pytest.param(op, sample, id=f"{op}-{sample.name or index}")
         for op in supported_ops() for index, sample in enumerate(samples_of(op))]


def check(harness, sample):
    args, more = sample.draw()
    tolerances = FLOAT64 if args[0].dtype == torch.float64 else FLOAT32
    return harness.check_gradients(sample.fn, args, wrt_args=sample.wrt, more_args=more, **tolerances)


@pytest.mark.parametrize("op_type, sample", CASES)
def test_each_rule_matches_autograd_on_its_samples(op_type, sample, harness):
    """The sample's outputs and gradients match eager at every size, and its graph holds the op (else
    another rule was checked)."""
    assert sample.draw()[0][0].dtype == torch.float64 or op_type in FLOAT32_ONLY, "float64 samples, please"
    exported = harness.op_types(check(harness, sample).exported.model)
    assert op_type.rpartition(".")[2] in exported, f"the sample exports {sorted(set(exported))}, no {op_type}"


def without_samples(samples=samples_of) -> list[str]:
    """The rules ``samples`` gives none for, exemptions aside."""
    return [op for op in supported_ops() if not samples(op) and op not in EXEMPT]


def test_every_rule_has_samples():
    missing = without_samples()
    assert not missing, f"gradient rules without samples (add samples=(Sample(...),) to their gradient_rule): {missing}"
    stale = [op for op in EXEMPT if samples_of(op) or op not in supported_ops()]
    stale += sorted(FLOAT32_ONLY - set(supported_ops()))
    assert not stale, f"exemptions naming no rule, or a rule that has samples: {stale}"


def test_a_rule_without_samples_is_named():
    assert without_samples(lambda op: () if op == "CumSum" else samples_of(op)) == ["CumSum"]


def test_a_wrong_rule_fails_its_samples(harness):
    """CumSum's rule without ``reverse`` (its gradient summed the same way as the forward) is caught."""
    def cumsum_grad_same_direction(ctx, node):
        return {0: ctx.op("CumSum", node.grad(), ctx.forward(node.input(1)), exclusive=node.attr("exclusive"))}

    with rule_replaced("CumSum", cumsum_grad_same_direction), pytest.raises(AssertionError, match="d/din0"):
        check(harness, samples_of("CumSum")[0])
