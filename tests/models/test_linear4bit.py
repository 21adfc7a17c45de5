"""The 4-bit layer the suites use as eager: its code books, its quantizer, its math in float64, what
its backward keeps and gives, and the graph it exports to."""
import io

import numpy as np
import onnx
import pytest
import torch
from hypothesis import given

from ortcheck.models.linear4bit import (CODE_BOOKS, FP4, NF4, Linear4Bit, dequantize_4bit, quantize_4bit,
                                        quantize_linears, use_kernel)
from ortcheck.strategies.bnb4 import weights_4bit


def test_code_books_are_bitsandbytes_tables():
    """Transcribed independently of reference/; the two copies must agree bit for bit."""
    from reference.bnb4 import TABLES

    for quant_type, name in ((NF4, "nf4"), (FP4, "fp4")):
        assert np.array_equal(CODE_BOOKS[quant_type].numpy().view(np.uint32),
                              np.asarray(TABLES[name], np.float32).view(np.uint32)), name


@given(weights_4bit(kinds=("normal", "zeros", "constant_blocks", "outliers")))
def test_quantizer_picks_a_nearest_code(weight):
    w = weight.tensor()
    data, absmax = quantize_4bit(w, weight.block_size, weight.quant_type_id)
    assert data.numel() == (w.numel() + 1) // 2 and absmax.numel() == -(-w.numel() // weight.block_size)
    table = CODE_BOOKS[weight.quant_type_id].double()
    scale = absmax.double().repeat_interleave(weight.block_size)[:w.numel()]
    x = w.reshape(-1).double()
    normalized = torch.where(scale == 0, 0.0, x / torch.where(scale == 0, 1.0, scale))
    got = (dequantize_4bit(data, absmax.double(), tuple(w.shape), weight.block_size, weight.quant_type_id)
           .reshape(-1) / torch.where(scale == 0, 1.0, scale))
    nearest = (normalized[:, None] - table[None, :]).abs().min(dim=1).values
    assert torch.all((got - normalized).abs() <= nearest + 1e-12)


def _layer(quant_type=NF4, bias=True, rank=2, shape=(5, 7), block_size=16):
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(shape, generator=generator)
    return Linear4Bit(weight, torch.randn(shape[0], generator=generator) if bias else None, block_size, quant_type,
                      lora_rank=rank, lora_alpha=4.0)


@pytest.mark.parametrize("quant_type", [NF4, FP4])
def test_forward_and_backward_are_the_formula_in_float64(quant_type):
    layer = _layer(quant_type).double()
    x = torch.randn(3, 7, dtype=torch.float64, requires_grad=True)
    w = layer.dequantized()
    expected = x @ w.T + layer.bias + 2.0 * (x @ layer.lora_a.T) @ layer.lora_b.T
    assert torch.allclose(layer(x), expected, rtol=1e-12, atol=1e-12)
    grad = torch.randn(3, 5, dtype=torch.float64)
    layer(x).backward(grad)
    assert torch.allclose(x.grad, grad @ (w + 2.0 * layer.lora_b @ layer.lora_a), rtol=1e-12, atol=1e-12)
    assert torch.allclose(layer.bias.grad, grad.sum(0))
    assert layer.weight.grad is None and not layer.weight.requires_grad


def test_backward_keeps_only_the_packed_weight_and_absmax():
    layer = _layer(rank=0, bias=False)
    saved = []
    x = torch.randn(3, 7, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        layer(x)
    kept = sorted(((t.dtype, tuple(t.shape)) for t in saved), key=str)
    assert kept == sorted([(torch.uint8, tuple(layer.weight.shape)), (torch.float32, tuple(layer.absmax.shape))],
                          key=str), "bitsandbytes keeps the packed weight (and its absmax) only"


def test_quantize_linears_freezes_everything_but_biases_and_adapters():
    model = quantize_linears(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 2)),
                             lora_rank=1)
    trainable = sorted(name for name, p in model.named_parameters() if p.requires_grad)
    assert trainable == ["0.bias", "0.lora_a", "0.lora_b", "2.bias", "2.lora_a", "2.lora_b"]


def test_unknown_kernel_and_quant_type_are_clear_errors():
    with pytest.raises(ValueError, match="unknown 4-bit kernel 'cuda'"):
        use_kernel(torch.nn.Sequential(_layer()), "cuda")
    with pytest.raises(ValueError, match="unknown quant_type 3"):
        _layer(quant_type=3)


@pytest.mark.parametrize("training, mode", [(True, 1), (False, 0)])
def test_exports_to_matmulbnb4(training, mode):
    layer = _layer().train(training)
    buffer = io.BytesIO()
    torch.onnx.export(layer, (torch.randn(2, 7),), buffer, dynamo=False, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL)
    (node,) = [n for n in onnx.load_model_from_string(buffer.getvalue()).graph.node if n.op_type == "MatMulBnb4"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert node.domain == "com.microsoft"
    assert attrs == {"K": 7, "N": 5, "block_size": 16, "quant_type": NF4, "training_mode": mode}
