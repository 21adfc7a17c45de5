"""The runtime hands tensors to onnxruntime and back without copies, for every dtype we support."""
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from ortcheck.strategies import ALL_DTYPES
from reference.runtime import Session
from reference.runtime.tensors import from_ort, to_ort

_ONNX_TYPE = {torch.float32: TensorProto.FLOAT, torch.float64: TensorProto.DOUBLE, torch.float16: TensorProto.FLOAT16,
              torch.bfloat16: TensorProto.BFLOAT16, torch.int64: TensorProto.INT64, torch.int32: TensorProto.INT32,
              torch.bool: TensorProto.BOOL}


def identity_model(dtype: torch.dtype) -> onnx.ModelProto:
    elem = _ONNX_TYPE[dtype]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity",
                              [helper.make_tensor_value_info("x", elem, None)], [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0, 3), (2, 3)], ids=str)
def test_every_dtype_round_trips_through_a_session(dtype, shape):
    x = (torch.randn(shape) * 10).to(dtype)
    (y,) = Session(identity_model(dtype)).run([x])
    assert y.dtype == dtype and y.shape == x.shape
    assert torch.equal(y, x)


def test_inputs_are_shared_not_copied():
    x = torch.arange(6.0)
    value = to_ort(x)
    assert value.data_ptr() == x.data_ptr()
    assert from_ort(value).data_ptr() == x.data_ptr()


def test_non_contiguous_inputs_are_accepted():
    x = torch.randn(3, 4).t()
    (y,) = Session(identity_model(torch.float32)).run([x])
    assert torch.equal(y, x)


def test_unknown_device_is_rejected():
    with pytest.raises(ValueError, match="valid: cpu, cuda"):
        Session(identity_model(torch.float32), device="tpu")


@pytest.mark.gpu
def test_cuda_session_keeps_tensors_on_the_device():
    x = torch.randn(4, 4, device="cuda")
    (y,) = Session(identity_model(torch.float32), device="cuda").run([x])
    assert y.device.type == "cuda" and torch.equal(y, x)
