"""Rules whose formulas fp32 tolerances could blur, checked in float64 (where onnxruntime's CPU
kernels support it: not Erf/exact Gelu, not InstanceNormalization). LayerNorm takes their statistics in the backward graph,
in the input's type: float64 here, with means far above the spread where a one-pass variance cancels."""
import pytest
import torch
import torch.nn.functional as F

f64 = torch.float64


def r(*shape):
    return torch.randn(*shape, dtype=f64)


CASES = {
    "softmax": (lambda x: x.softmax(-1), [r(2, 3, 4)], (0,)),
    "log_softmax": (lambda x: x.log_softmax(1), [r(2, 3, 4)], (0,)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [r(2, 3)], (0,)),
    "sigmoid_tanh": (lambda x: torch.sigmoid(x) * torch.tanh(x), [r(2, 3)], (0,)),
    "cross_entropy": (lambda x, t: F.cross_entropy(x, t, ignore_index=0), [r(4, 3), torch.tensor([0, 2, 1, 2])], (0,)),
    "batched_matmul_broadcast": (torch.matmul, [r(2, 1, 3, 4), r(5, 4, 2)], (0, 1)),
    "div_pow_broadcast": (lambda a, b: (a / b) ** 3, [r(2, 3), torch.rand(3, dtype=f64) + 0.5], (0, 1)),
    "layer_norm_two_features": (lambda x: F.layer_norm(x, (2,)), [r(6, 2) * 0.3 + 7], (0,)),
    "layer_norm_affine": (lambda x, w, b: F.layer_norm(x, (3, 4), w, b), [r(2, 3, 4) + 50, r(3, 4), r(3, 4)],
                          (0, 1, 2)),
}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_float64(case, harness):
    fn, args, wrt = CASES[case]
    harness.check_gradients(fn, args, wrt_args=wrt)
