"""Graphs traced under ``torch.autocast``: what the exporter gets wrong there, each through the whole
reference against eager in the same region (the dtype of every output, and values within a few units of
the half type's roundoff)."""
import copy

import pytest
import torch
import torch.nn.functional as F

from reference import Options, ReferenceModule


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


class CrossEntropyAfterLinear(torch.nn.Module):
    """A half activation's cross entropy: CUDA's autocast widens the ``log_softmax`` inside the
    ``cross_entropy_loss`` the trace records (the loss came back in half where eager's is float32)."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        logits = self.linear(x)
        return F.cross_entropy(logits.flatten(0, -2), torch.arange(6, device=x.device) % 8)  # x: 2 x 3 x 8


class QLoRALinear(torch.nn.Module):
    """A 4-bit layer with adapters: its product on autocast's list, traced through a custom Function."""

    def __init__(self):
        super().__init__()
        from ortcheck.models.linear4bit import NF4, quantize_linears

        self.inner = quantize_linears(torch.nn.Sequential(torch.nn.Linear(8, 8)), 64, NF4, lora_rank=2, lora_alpha=4.0)

    def forward(self, x):
        return self.inner(x)


class QLoRAAfterLinear(QLoRALinear):
    """The 4-bit layer reading a value already in half (its scales must follow: a bfloat16 input
    with float32 scales was an invalid graph on CUDA, "T1 bound to different types")."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.inner(self.first(x))


@pytest.mark.parametrize("build", [ScaledAttention, NormAfterLinear, ReflectPadAfterLinear, CrossEntropyAfterLinear,
                                   QLoRALinear, QLoRAAfterLinear], ids=lambda b: b.__name__)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_a_graph_traced_under_autocast_computes_as_eager(build, dtype, device):
    """On the ``--device`` given: each device has its own autocast policy."""
    torch.manual_seed(0)
    eager = build().to(device)
    reference = ReferenceModule(copy.deepcopy(eager), Options(device=device))
    x = torch.randn(2, 3, 8, device=device)
    with torch.autocast(device, dtype=dtype):
        want, got = eager(x), reference(x)
    assert got.dtype == want.dtype
    scale = want.float().abs().max().item()
    assert (got.float() - want.float()).abs().max().item() <= 4 * torch.finfo(dtype).eps * scale


# per op, the inputs its ONNX schema binds to one type parameter
_ONE_TYPE = {"LayerNormalization": (0, 1, 2), "MatMulBnb4": (0, 2)}


@pytest.mark.parametrize("build", [NormAfterLinear, QLoRALinear, QLoRAAfterLinear], ids=lambda b: b.__name__)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_mixed_dtypes_export_a_valid_graph(build, dtype):
    """Valid ONNX as exported (CUDA sessions run float16 without the CPU's half-in-float32 form): one
    type for the inputs a schema binds together (onnxruntime refused a half LayerNormalization input
    bound to float32 parameters, and a bfloat16 MatMulBnb4 input with float32 scales: "Type parameter
    (T) of Optype (LayerNormalization) bound to different types")."""
    from reference import nested_io
    from reference.export.exporter import export_module
    from reference.runtime.kernel_forms.nodes import tensor_types

    torch.manual_seed(0)
    x = torch.randn(2, 3, 8)
    tensors, schema = nested_io.flatten(((x,), {}))
    with torch.autocast("cpu", dtype=dtype):
        exported = export_module(build(), tensors, schema, training=True)
    types = {name: t.elem_type for name, t in tensor_types(exported.model).items()}
    types.update({t.name: t.data_type for t in exported.model.graph.initializer})
    bound = [[n.input[i] for i in _ONE_TYPE[n.op_type] if i < len(n.input) and n.input[i]]
             for n in exported.model.graph.node if n.op_type in _ONE_TYPE]
    assert bound and all(len({types[name] for name in names}) == 1 for names in bound), (
        [[(name, types.get(name)) for name in names] for names in bound])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_a_linear_on_a_3d_half_input_rounds_once_as_eager(dtype):
    """ATen's linear of a 3-d input is one ``addmm`` (product plus bias, one rounding); exported as
    MatMul then Add it rounded the product first: one unit of the last place off in most elements
    (a bfloat16 stack's loss 52x the oracle's scale). Bitwise eager's, on the CPU."""
    torch.manual_seed(0)
    eager = torch.nn.Linear(4, 8)
    reference = ReferenceModule(copy.deepcopy(eager))
    x = torch.randn(2, 5, 4)
    with torch.autocast("cpu", dtype=dtype):
        want, got = eager(x), reference(x)
    assert got.dtype == want.dtype and torch.equal(got, want), (got - want).abs().max()
