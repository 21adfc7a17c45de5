"""4-bit layers and stacks: frozen NF4/FP4 linears mixed with the other blocks, and QLoRA models.

Simplest first: one NF4 layer, block 16, plain normal weights, with bias, no adapters; a QLoRA
model of rank 1. Block sizes default to what onnxruntime's CPU ``MatMulBnb4`` accepts (16-256),
the kernel the reference pipeline runs; sizes cover odd widths and ones no block size divides.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from hypothesis import strategies as st

from ortcheck.strategies.blocks import Bnb4Linear, Linear, QLoRA
from ortcheck.strategies.bnb4 import ORT_CPU_BLOCK_SIZES, QUANT_TYPES
from ortcheck.strategies.layer_stacks import BLOCK_KINDS, LayerStack, layer_stacks

LAYER_WEIGHT_KINDS = ("normal", "zeros", "constant_blocks", "outliers")  # "tiny"/"huge" over/underflow a product
ODD_WIDTHS = (3, 4, 5, 8, 17, 33)
LORA_RANKS = (0, 1, 2, 4)


def bnb4_linear_blocks(widths: Sequence[int] = ODD_WIDTHS, block_sizes: Sequence[int] = ORT_CPU_BLOCK_SIZES,
                       lora_ranks: Sequence[int] = LORA_RANKS, packed_as: Sequence[str] = ("parameter",),
                       ) -> st.SearchStrategy[Bnb4Linear]:
    return st.builds(Bnb4Linear, st.sampled_from(widths), st.sampled_from(block_sizes),
                     st.sampled_from(list(QUANT_TYPES)), st.sampled_from(LAYER_WEIGHT_KINDS), st.booleans(),
                     st.sampled_from(lora_ranks), st.sampled_from(packed_as))


def qlora_specs(block_sizes: Sequence[int] = ORT_CPU_BLOCK_SIZES, lora_ranks: Sequence[int] = (1, 2, 4),
                ) -> st.SearchStrategy[QLoRA]:
    return st.builds(QLoRA, st.sampled_from(block_sizes), st.sampled_from(list(QUANT_TYPES)),
                     st.sampled_from(lora_ranks), st.sampled_from((2.0, 1.0, 16.0)))


def bnb4_stacks(block_sizes: Sequence[int] = ORT_CPU_BLOCK_SIZES, max_other_blocks: int = 3,
                max_4bit_layers: int = 2, packed_as: Sequence[str] = ("parameter",)) -> st.SearchStrategy[LayerStack]:
    """Stacks with 1..``max_4bit_layers`` 4-bit linears placed among up to ``max_other_blocks`` others."""
    others = layer_stacks(BLOCK_KINDS, min_blocks=0, max_blocks=max_other_blocks, hidden_sizes=ODD_WIDTHS[:4])
    layers = st.lists(bnb4_linear_blocks(block_sizes=block_sizes, packed_as=packed_as), min_size=1,
                      max_size=max_4bit_layers)
    return _with_blocks_inserted(others, layers)


def qlora_stacks(block_sizes: Sequence[int] = ORT_CPU_BLOCK_SIZES, max_blocks: int = 3,
                 ) -> st.SearchStrategy[LayerStack]:
    """QLoRA models: a drawn stack with at least one Linear, every Linear then 4-bit with adapters."""
    stacks = layer_stacks(BLOCK_KINDS, min_blocks=0, max_blocks=max_blocks - 1, hidden_sizes=ODD_WIDTHS[:4])
    linear = st.sampled_from(ODD_WIDTHS).map(Linear)
    with_linear = _with_blocks_inserted(stacks, st.lists(linear, min_size=1, max_size=1))
    return st.builds(lambda stack, spec: dataclasses.replace(stack, qlora=spec), with_linear, qlora_specs(block_sizes))


def _with_blocks_inserted(stacks, block_lists) -> st.SearchStrategy[LayerStack]:
    @st.composite
    def build(draw):
        stack = draw(stacks)
        blocks = list(stack.blocks)
        for block in draw(block_lists):
            blocks.insert(draw(st.integers(0, len(blocks))), block)
        return dataclasses.replace(stack, blocks=tuple(blocks))

    return build()
