"""Gradients of the spatial rearrangements and poolings (Pad, AveragePool, GlobalAveragePool,
GlobalMaxPool, Resize, DepthToSpace/SpaceToDepth) against PyTorch autograd, at the export size and
a second size (nothing baked). Pad and the pixel shuffles run in float64 with the default (tight)
bound; onnxruntime's CPU AveragePool, Resize, global pools and ConvTranspose have no float64
kernels, so those run in float32 with the Conv tests' bound (1e-4: far below a misplaced
contribution, order 1)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper
from torch import nn

from reference.autodiff import build_gradient_graphs

BOUND = dict(rtol=1e-4, atol=1e-4)
f64 = dict(dtype=torch.float64)


def _x(dims, size, **kw):
    return torch.randn(2, 3, *[size + d for d in range(dims)], **kw)


@pytest.mark.parametrize("layer", [
    lambda: nn.ZeroPad1d((1, 2)), lambda: nn.ZeroPad2d((2, 0, 1, 3)), lambda: nn.ConstantPad3d((1, 0, 2, 1, 0, 1), 0.5),
    lambda: nn.ReflectionPad1d((2, 1)), lambda: nn.ReflectionPad2d((1, 3, 2, 0)), lambda: nn.ReflectionPad3d(1),
    lambda: nn.ReplicationPad1d((3, 1)), lambda: nn.ReplicationPad2d((0, 4, 2, 1)),
    lambda: nn.ReplicationPad3d((1, 2, 0, 1, 2, 0)),
    lambda: nn.CircularPad1d((2, 1)), lambda: nn.CircularPad2d((1, 2, 2, 1)),
], ids=["zero1d", "zero2d", "const3d", "reflect1d", "reflect2d", "reflect3d", "edge1d", "edge2d", "edge3d",
        "circular1d", "circular2d"])
def test_pad_layers(layer, harness):
    module = layer()
    dims = int(type(module).__name__[-2])  # ...Pad1d/2d/3d
    harness.check_gradients(module, [_x(dims, 4, **f64)], more_args=[[_x(dims, 6, **f64)]])


def test_pad_negative_crops(harness):
    harness.check_gradients(lambda x: F.pad(x, (-1, 2, 1, -2)), [_x(2, 4, **f64)], more_args=[[_x(2, 6, **f64)]])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("axes", [None, [-1, 1]], ids=["all_axes", "axes_input"])
def test_pad_node_with_run_time_pads(mode, axes, harness):
    """Hand-built Pad-18 nodes with the pads a graph input (known only at run time), the axes input,
    and wrap (which no torch layer exports), against torch's padding of the last two axes."""
    x = torch.randn(2, 3, 5, **f64)
    pads = [2, 1, 0, 2] if axes else [0, 1, 2, 0, 2, 0]  # (begin, end): (1, 2) on axis 1, (2, 0) on axis 2
    inputs = ["x", "pads", ""] + (["axes"] if axes else [])
    model = harness.make_model(
        [helper.make_node("Pad", inputs, ["y"], mode=mode)],
        [("x", TensorProto.DOUBLE, ["a", "b", "c"]), ("pads", TensorProto.INT64, [len(pads)])],
        [("y", TensorProto.DOUBLE, None)],
        [helper.make_tensor("axes", TensorProto.INT64, [2], axes)] if axes else [],
    )
    torch_mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}[mode]
    tx = x.clone().requires_grad_()
    y = F.pad(tx[None], (2, 0, 1, 2), mode=torch_mode)[0]
    seed = torch.randn(y.shape, **f64)
    (want,) = torch.autograd.grad(y, tx, seed)
    outputs, grads = harness.run_gradient_graphs(build_gradient_graphs(model, ["x"]),
                                                 {"x": x.numpy(), "pads": np.array(pads, np.int64)}, [seed.numpy()])
    torch.testing.assert_close(torch.from_numpy(outputs[0]), y.detach())
    torch.testing.assert_close(torch.from_numpy(grads["x"]), want)



def test_pad_constant_value_gradient(harness):
    """The constant value (a graph input here; torch takes a float) receives the sum of dY over the
    padded positions: y = pad(x, 0) + v·pad(0, 1) in torch."""
    x, value = torch.randn(2, 3, 4, **f64), torch.tensor(0.7, **f64)
    pads = [0, 1, -1, 0, 0, 2]  # (1, 0) on axis 1, (-1, 2) on axis 2
    model = harness.make_model(
        [helper.make_node("Pad", ["x", "pads", "v"], ["y"], mode="constant")],
        [("x", TensorProto.DOUBLE, ["a", "b", "c"]), ("pads", TensorProto.INT64, [6]), ("v", TensorProto.DOUBLE, [])],
        [("y", TensorProto.DOUBLE, None)],
    )
    tx, tv = x.clone().requires_grad_(), value.clone().requires_grad_()
    torch_pads = (-1, 2, 1, 0)
    y = F.pad(tx, torch_pads) + tv * F.pad(torch.zeros_like(x), torch_pads, value=1.0)
    seed = torch.randn(y.shape, **f64)
    want = torch.autograd.grad(y, (tx, tv), seed)
    outputs, grads = harness.run_gradient_graphs(
        build_gradient_graphs(model, ["x", "v"]),
        {"x": x.numpy(), "pads": np.array(pads, np.int64), "v": value.numpy()}, [seed.numpy()])
    torch.testing.assert_close(torch.from_numpy(outputs[0]), y.detach())
    torch.testing.assert_close(torch.from_numpy(grads["x"]), want[0])
    torch.testing.assert_close(torch.from_numpy(np.asarray(grads["v"])), want[1])

AVG = {1: nn.AvgPool1d, 2: nn.AvgPool2d, 3: nn.AvgPool3d}


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("config", [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=2, stride=2, ceil_mode=True),  # the last window reads past the end
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(3, 2, 1), stride=(1, 2, 3), padding=(1, 0, 0)),
], ids=str)
def test_avg_pool(dims, config, harness):
    config = {k: v[:dims] if isinstance(v, tuple) else v for k, v in config.items()}
    size = 7 if dims < 3 else 5
    harness.check_gradients(AVG[dims](**config), [_x(dims, size)], more_args=[[_x(dims, size + 2)]], **BOUND)


def test_avg_pool_divisor_override_is_dropped_by_the_exporter(harness):
    """torch's TorchScript exporter emits AveragePool without the divisor: the forward differs from
    eager, so there is no gradient to match (recorded here so a fixed exporter shows up)."""
    exported = harness.export(nn.AvgPool2d(2, divisor_override=3), [_x(2, 4)])
    (pool,) = [n for n in exported.model.graph.node if n.op_type == "AveragePool"]
    assert {a.name for a in pool.attribute} == {"kernel_shape", "strides", "pads", "ceil_mode", "count_include_pad"}


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_global_average_pool(dims, harness):
    module = {1: nn.AdaptiveAvgPool1d, 2: nn.AdaptiveAvgPool2d, 3: nn.AdaptiveAvgPool3d}[dims](1)
    assert "GlobalAveragePool" in harness.op_types(harness.export(module, [_x(dims, 3)]).model)
    harness.check_gradients(module, [_x(dims, 3)], more_args=[[_x(dims, 5)]], **BOUND)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_global_max_pool_routes_ties_to_the_first(dims, harness):
    """AdaptiveMaxPool to size 1 exports to GlobalMaxPool; PyTorch gives the whole gradient to the
    first maximum (values rounded to halves so ties are common)."""
    module = {1: nn.AdaptiveMaxPool1d, 2: nn.AdaptiveMaxPool2d, 3: nn.AdaptiveMaxPool3d}[dims](1)
    assert "GlobalMaxPool" in harness.op_types(harness.export(module, [_x(dims, 3)]).model)
    ties = [(_x(dims, size) * 2).round().clamp(max=1) / 2 for size in (3, 4)]
    assert all((t == t.amax(dim=tuple(range(2, 2 + dims)), keepdim=True)).sum() > 2 * 3 for t in ties)
    harness.check_gradients(module, ties[:1], more_args=[ties[1:]], **BOUND)


RESIZE = [
    dict(scale_factor=2, mode="nearest"),
    dict(scale_factor=3, mode="nearest"),
    dict(scale_factor=1.5, mode="nearest"),
    dict(scale_factor=0.5, mode="nearest"),
    dict(size="fixed", mode="nearest"),
    dict(scale_factor=2, mode="linear"),
    dict(scale_factor=2, mode="linear", align_corners=True),
    dict(scale_factor=0.6, mode="linear"),
    dict(size="fixed", mode="linear"),
    dict(size="fixed", mode="linear", align_corners=True),
    dict(scale_factor=2, mode="cubic"),
    dict(size="fixed", mode="cubic", align_corners=True),
]


@pytest.mark.parametrize("dims, config", [(dims, config) for config in RESIZE for dims in (1, 2, 3)
                                          if config["mode"] != "cubic" or dims == 2], ids=str)
def test_resize(config, dims, harness):
    """F.interpolate with scales (constant) and sizes (Shape-computed) exports Resize; linear means
    linear/bilinear/trilinear by rank, cubic exists only in 2d."""
    config = dict(config, mode={1: "", 2: "bi", 3: "tri"}[dims] + config["mode"] if config["mode"] != "nearest"
                  else "nearest")
    if config.get("size") == "fixed":
        config["size"] = (7, 4, 5)[:dims]
    runner = harness.check_gradients(lambda x: F.interpolate(x, **config), [_x(dims, 4)], more_args=[[_x(dims, 5)]],
                                     **BOUND)
    # one matrix per resized axis: batch and channel axes (scale 1, or sizes sliced from Shape) are skipped
    assert sum(map(harness.op_types(runner.graphs.backward).count, ("MatMul", "FusedMatMul", "Gemm"))) == dims


@pytest.mark.parametrize("block", [2, 3])
def test_pixel_shuffle_and_unshuffle(block, harness):
    """PixelShuffle exports DepthToSpace (CRD); PixelUnshuffle a Reshape/Transpose chain. Both
    inverted, and the DCR/SpaceToDepth pair on a hand-built graph."""
    shuffle = nn.PixelShuffle(block)
    assert "DepthToSpace" in harness.op_types(harness.export(shuffle, [torch.randn(1, 2 * block * block, 2, 3)]).model)
    channels = 2 * block * block
    harness.check_gradients(shuffle, [torch.randn(2, channels, 2, 3, **f64)],
                            more_args=[[torch.randn(1, channels, 3, 1, **f64)]])
    harness.check_gradients(nn.PixelUnshuffle(block), [torch.randn(2, 2, 2 * block, 3 * block, **f64)],
                            more_args=[[torch.randn(1, 2, block, 2 * block, **f64)]])


@pytest.mark.parametrize("op", ["DepthToSpace", "SpaceToDepth"])
def test_dcr_pair(op, harness):
    block = 2
    shape = [2, 8, 2, 3] if op == "DepthToSpace" else [2, 2, 4, 6]
    mode = {"mode": "DCR"} if op == "DepthToSpace" else {}
    model = harness.make_model([helper.make_node(op, ["x"], ["y"], blocksize=block, **mode)],
                               [("x", TensorProto.DOUBLE, ["n", "c", "h", "w"])], [("y", TensorProto.DOUBLE, None)])
    x = torch.randn(*shape, **f64, requires_grad=True)
    if op == "DepthToSpace":  # DCR: depth split as (block, block, channels)
        n, c, h, w = shape
        y = x.reshape(n, block, block, c // 4, h, w).permute(0, 3, 4, 1, 5, 2).reshape(n, c // 4, h * block, w * block)
    else:
        y = F.pixel_unshuffle(x, block).reshape(2, 2, 4, 2, 3).transpose(1, 2).reshape(2, 8, 2, 3)
    seed = torch.randn(y.shape, **f64)
    (want,) = torch.autograd.grad(y, x, seed)
    outputs, grads = harness.run_gradient_graphs(build_gradient_graphs(model, ["x"]), {"x": x.detach().numpy()},
                                                 [seed.numpy()])
    torch.testing.assert_close(torch.from_numpy(outputs[0]), y.detach())
    torch.testing.assert_close(torch.from_numpy(grads["x"]), want)
