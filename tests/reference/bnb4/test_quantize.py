"""The bnb4 stage alone: the bytes onnxruntime's quantizer writes, and the code book's own rules
checked against float64 copies of the tables (nearest code, ties to the lower one, round trip,
idempotence, the packing layout)."""
import numpy as np
import pytest
import torch
from hypothesis import example, given

from ortcheck.strategies.bnb4 import ORT_CPU_BLOCK_SIZES, Weight4Bit, weights_4bit
from reference.bnb4 import QUANT_TYPES, TABLES, Packed, dequantize, quantize
from reference.bnb4.quantize import unpack_codes

onnxruntime_quantize = pytest.importorskip("onnxruntime.capi._pybind_state").quantize_matmul_bnb4


def ort_quantize(w: torch.Tensor, block_size: int, quant_type: int):
    n, k = w.shape
    data = np.zeros((n * k + 1) // 2, np.uint8)
    absmax = np.zeros(-(-n * k // block_size), np.float32)
    onnxruntime_quantize(data, w.numpy(), absmax, block_size, quant_type, n, k)
    return data, absmax


@given(weights_4bit(block_sizes=ORT_CPU_BLOCK_SIZES))
@example(Weight4Bit(3, 5, 16, "nf4"))      # odd element count: the last byte's low nibble is the code of 0
@example(Weight4Bit(5, 7, 16, "fp4", "constant_blocks"))  # blocks span rows, partial last block
def test_bytes_and_absmax_are_onnxruntimes(weight):
    w = weight.tensor()
    packed = quantize(w, weight.block_size, weight.quant_type_id)
    data, absmax = ort_quantize(w, weight.block_size, weight.quant_type_id)
    assert np.array_equal(packed.data.numpy(), data), f"{int((packed.data.numpy() != data).sum())} bytes differ"
    assert np.array_equal(packed.absmax.numpy(), absmax)


def _float64_table(quant_type: int) -> np.ndarray:
    return np.asarray(TABLES[QUANT_TYPES[quant_type]], dtype=np.float64)


@given(weights_4bit())
def test_each_value_gets_a_nearest_code_and_round_trips_within_half_a_gap(weight):
    w = weight.tensor()
    packed = quantize(w, weight.block_size, weight.quant_type_id)
    table = _float64_table(weight.quant_type_id)
    numel = w.numel()
    codes = unpack_codes(packed.data, numel).numpy()
    absmax = np.repeat(packed.absmax.numpy().astype(np.float64), weight.block_size)[:numel]
    x = w.reshape(-1).numpy().astype(np.float64)
    normalized = np.divide(x, absmax, out=np.zeros_like(x), where=absmax != 0)
    distance = np.abs(table[codes] - normalized)
    nearest = np.abs(table[None, :] - normalized[:, None]).min(axis=1)
    slack = 4 * np.finfo(np.float32).eps  # x * float32(1/absmax) rounds twice
    assert np.all(distance <= nearest + slack), "a value did not get the nearest code"
    sorted_table = np.sort(np.unique(table))
    half_gap = np.max(np.diff(sorted_table)) / 2
    error = np.abs(dequantize(packed).reshape(-1).numpy().astype(np.float64) - x)
    assert np.all(error <= (half_gap + slack) * absmax + 1e-45)


@given(weights_4bit())
def test_quantizing_a_dequantized_weight_changes_nothing(weight):
    """dequant(quant(dequant(q))) == dequant(q). The codes match too, except FP4's -0 (code 8), which
    dequantizes to -0.0 and quantizes back to +0 (code 0): x < 0 is false for -0.0."""
    packed = quantize(weight.tensor(), weight.block_size, weight.quant_type_id)
    once = dequantize(packed)
    again = quantize(once, weight.block_size, weight.quant_type_id)
    assert torch.equal(dequantize(again), once) and torch.equal(again.absmax, packed.absmax)
    numel = once.numel()
    before, after = unpack_codes(packed.data, numel), unpack_codes(again.data, numel)
    negative_zero = (before == 8) & (after == 0) if weight.quant_type == "fp4" else torch.zeros_like(before, dtype=torch.bool)
    assert torch.equal(before[~negative_zero], after[~negative_zero])


@pytest.mark.parametrize("quant_type", [0, 1])
def test_a_value_exactly_between_two_codes_gets_the_lower_one(quant_type):
    table = np.sort(np.unique(_float64_table(quant_type)))
    for low, high in zip(table[:-1], table[1:]):
        middle = np.float32((low + high) / 2)
        if quant_type == 0 and low < 0:
            continue  # FP4 quantizes |x|: for negatives "lower" is the smaller magnitude, checked below
        w = torch.tensor([[1.0, float(middle)]])  # absmax 1: the value itself is the normalized one
        value = dequantize(quantize(w, 16, quant_type))[0, 1].item()
        assert value in (np.float32(low), np.float32(high))
        if middle == np.float32((np.float32(low) + np.float32(high)) / 2) and quant_type == 1:
            assert value == np.float32(low), f"tie at {middle} went up"


def test_the_layout_is_high_nibble_first_over_the_flat_weight():
    w = torch.tensor([[1.0, -1.0, 0.0], [1.0, 0.0, -1.0]])  # one block of 16 spans both rows
    packed = quantize(w, 16, 1)  # NF4: -1 -> code 0, 0 -> 7, 1 -> 15
    assert packed.data.tolist() == [0xF0, 0x7F, 0x70] and packed.absmax.tolist() == [1.0]
    assert torch.equal(dequantize(packed), w)


@pytest.mark.parametrize("block_size, quant_type, message", [
    (15, 1, "block_size must be an even number"), (0, 1, "block_size must be an even number"),
    (16, 2, "unknown quant_type 2; valid: 0 \\(FP4\\), 1 \\(NF4\\)"),
])
def test_invalid_block_sizes_and_quant_types_are_refused(block_size, quant_type, message):
    with pytest.raises(ValueError, match=message):
        quantize(torch.ones(2, 2), block_size, quant_type)
    with pytest.raises(ValueError, match=message):
        dequantize(Packed(torch.zeros(2, dtype=torch.uint8), torch.ones(1), (2, 2), block_size, quant_type))
