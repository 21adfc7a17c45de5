"""onnxruntime's ``com.microsoft::MatMulBnb4`` (CPU), which the 4-bit layers export to: its output
against the float64 oracle of ``A @ dequant(B)ᵀ`` on generated shapes, and clear errors for what
the kernel refuses.

Finding (onnxruntime 1.31.1, and 1.19.2: the ort119 environment runs this file too): the CPU kernel ignores ``transB=0``. It
dequantizes B as ``[N, K]`` and always multiplies by its transpose (``MlasGemmBatch(..., CblasTrans,
...)`` in ``matmul_bnb4.cc``), so ``A[M, N] @ dequant(B)`` comes out wrong (errors ~18 on unit
normal data). #18131 builds the 4-bit layer's input gradient from exactly that call.
"""
import numpy as np
import onnxruntime as ort
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper

from ortcheck.checks import assert_tensor_matches_oracle, nudged
from ortcheck.strategies.bnb4 import ORT_CPU_BLOCK_SIZES, Weight4Bit, weights_4bit
from reference.bnb4 import dequantize, quantize
from reference.runtime import threads


def matmul_bnb4(a: torch.Tensor, weight: Weight4Bit, trans_b: int, training_mode: int = 0, block_size=None,
                quant_type=None) -> torch.Tensor:
    block_size = block_size or weight.block_size
    packed = quantize(weight.tensor(), block_size, weight.quant_type_id)
    attrs = dict(K=weight.k, N=weight.n, block_size=block_size,
                 quant_type=weight.quant_type_id if quant_type is None else quant_type,
                 transB=trans_b, training_mode=training_mode)
    node = helper.make_node("MatMulBnb4", ["A", "B", "absmax"], ["Y"], domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], "bnb4", [
        helper.make_tensor_value_info("A", TensorProto.FLOAT, [None] * a.dim()),
        helper.make_tensor_value_info("B", TensorProto.UINT8, [None]),
        helper.make_tensor_value_info("absmax", TensorProto.FLOAT, [None])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17),
                                                                  helper.make_opsetid("com.microsoft", 1)])
    options = threads.configure(ort.SessionOptions())  # the process's pool once the reference made one
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"A": a.numpy(), "B": packed.data.numpy(), "absmax": packed.absmax.numpy()})
    return torch.from_numpy(y)


def oracle_runs(actual: torch.Tensor, a: torch.Tensor, w: torch.Tensor) -> dict:
    moved = nudged(a, seed=1)
    return {"actual": actual, "eager": a @ w, "exact": a.double() @ w.double(), "nudged": moved @ w,
            "nudged_exact": moved.double() @ w.double()}


@given(weight=weights_4bit(block_sizes=ORT_CPU_BLOCK_SIZES, max_dim=40), rows=st.integers(1, 5),
       batch=st.sampled_from([(), (2,)]), training_mode=st.integers(0, 1), seed=st.integers(0, 2**16))
def test_trans_b_1_computes_a_times_the_dequantized_weight_transposed(weight, rows, batch, training_mode, seed):
    a = torch.randn(*batch, rows, weight.k, generator=torch.Generator().manual_seed(seed))
    w = dequantize(quantize(weight.tensor(), weight.block_size, weight.quant_type_id))
    actual = matmul_bnb4(a, weight, trans_b=1, training_mode=training_mode)
    assert_tensor_matches_oracle(oracle_runs(actual, a, w.T), path="MatMulBnb4(transB=1)")


@pytest.mark.xfail(strict=True, reason="onnxruntime's CPU MatMulBnb4 ignores transB=0 (see the module docstring)")
@pytest.mark.parametrize("training_mode", [0, 1])
def test_trans_b_0_computes_a_times_the_dequantized_weight(training_mode):
    weight = Weight4Bit(16, 32, 16, "nf4")
    a = torch.randn(4, weight.n, generator=torch.Generator().manual_seed(0))
    w = dequantize(quantize(weight.tensor(), weight.block_size, weight.quant_type_id))
    actual = matmul_bnb4(a, weight, trans_b=0, training_mode=training_mode)
    assert_tensor_matches_oracle(oracle_runs(actual, a, w), path="MatMulBnb4(transB=0)")


@pytest.mark.parametrize("block_size", [8, 24, 512, 4096])
def test_a_block_size_the_kernel_lacks_is_a_clear_error(block_size):
    weight = Weight4Bit(4, 8, 16, "nf4")
    with pytest.raises(Exception, match="only block size 16, 32, 64, 128, 256 are supported"):
        matmul_bnb4(torch.ones(2, 8), weight, trans_b=1, block_size=block_size)


def test_an_unknown_quant_type_is_a_clear_error():
    with pytest.raises(Exception, match="Invalid quant_type, only 0 \\(FP4\\) and 1 \\(NF4\\) are supported"):
        matmul_bnb4(torch.ones(2, 8), Weight4Bit(4, 8, 16, "nf4"), trans_b=1, quant_type=2)
