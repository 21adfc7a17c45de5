"""Graphs traced under ``torch.autocast``: what the exporter gets wrong there, each through the whole
reference against eager in the same region (the dtype of every output, and values within a few units of
the half type's roundoff)."""
import copy

import pytest
import torch
import torch.nn.functional as F

from reference import ReferenceModule


class ScaledAttention(torch.nn.Module):
    """transformers' sdpa path: projections (half under autocast) and an explicit float scale."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.qkv(x).unflatten(-1, (3, 2, 4)).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, scale=0.5)


class NormAfterLinear(torch.nn.Module):
    """A half activation meeting float32 parameters: torch's LayerNorm kernel takes the mix."""

    def __init__(self):
        super().__init__()
        self.linear, self.norm = torch.nn.Linear(8, 8), torch.nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.linear(x))


class ReflectPadAfterLinear(torch.nn.Module):
    """A half activation reflect-padded: autocast computes the padding in float32 below the
    ``aten::pad`` the trace records (the trace alone returned it in half)."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return F.pad(self.linear(x), (2, 1), mode="reflect")


class QLoRALinear(torch.nn.Module):
    """A 4-bit layer with adapters: its product on autocast's list, traced through a custom Function."""

    def __init__(self):
        super().__init__()
        from ortcheck.models.linear4bit import NF4, quantize_linears

        self.inner = quantize_linears(torch.nn.Sequential(torch.nn.Linear(8, 8)), 64, NF4, lora_rank=2, lora_alpha=4.0)

    def forward(self, x):
        return self.inner(x)


@pytest.mark.parametrize("build", [ScaledAttention, NormAfterLinear, ReflectPadAfterLinear, QLoRALinear],
                         ids=lambda b: b.__name__)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_a_graph_traced_under_autocast_computes_as_eager(build, dtype):
    torch.manual_seed(0)
    eager = build()
    reference = ReferenceModule(copy.deepcopy(eager))
    x = torch.randn(2, 3, 8)
    with torch.autocast("cpu", dtype=dtype):
        want, got = eager(x), reference(x)
    assert got.dtype == want.dtype
    scale = want.float().abs().max().item()
    assert (got.float() - want.float()).abs().max().item() <= 4 * torch.finfo(dtype).eps * scale


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_layer_norm_on_mixed_dtypes_exports_a_valid_graph(dtype):
    """Valid ONNX as exported (CUDA sessions run it without the CPU's half-in-float32 form): one type
    for the LayerNormalization's input, scale and bias (onnxruntime refused the half input bound to
    float32 parameters: "Type parameter (T) of Optype (LayerNormalization) bound to different types")."""
    from reference import nested_io
    from reference.export.exporter import export_module
    from reference.runtime.kernel_forms.nodes import tensor_types

    x = torch.randn(2, 3, 8)
    tensors, schema = nested_io.flatten(((x,), {}))
    with torch.autocast("cpu", dtype=dtype):
        exported = export_module(NormAfterLinear(), tensors, schema, training=True)
    types = {name: t.elem_type for name, t in tensor_types(exported.model).items()}
    types.update({t.name: t.data_type for t in exported.model.graph.initializer})
    norms = [n for n in exported.model.graph.node if n.op_type == "LayerNormalization"]
    assert norms and all(len({types[name] for name in n.input if name}) == 1 for n in norms), (
        [[(name, types.get(name)) for name in n.input] for n in norms])
