"""Hypothesis strategy for layer stacks: a module, its seeded inputs and a loss, from random blocks.

One small strategy per block kind (see :mod:`ortcheck.strategies.blocks`), combined with
``st.one_of`` inside ``st.lists``. Every choice lists its simplest option first, so failures shrink
to one block of the simplest kind on the narrowest features, batch 1, no sequence axis.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import torch
import torch.nn.functional as F
from hypothesis import strategies as st
from torch import nn

from ortcheck.models.seeding import build_seeded
from ortcheck.strategies import blocks
from ortcheck.strategies.blocks import (
    ACTIVATIONS, Activation, Attention, Block, Dropout, Features, HalfStorage, LayerNorm, Linear, QLoRA,
    ResidualMLP, Tokens, TransformerLayer,
)

BLOCK_KINDS = ("linear", "activation", "layernorm", "dropout", "residual_mlp", "attention")  # simplest first
INPUT_KINDS = ("features", "tokens")
LOSS_KINDS = ("mse", "cross_entropy")
HIDDEN_SIZES = (4, 8, 16, 32)
VOCAB_SIZES = (8, 16)
HEADS = (1, 2)
MLP_EXPANSIONS = (1, 2)
LOSS_SEED = 1234  # targets depend on the output shape only: the loss is the same function for every run


@dataclasses.dataclass(frozen=True)
class LayerStack:
    """``input`` feeding ``blocks`` in order, trained on ``loss_kind`` (``"mse"`` to a seeded target,
    ``"cross_entropy"`` with the last axis as classes). ``seq=None``: inputs have no sequence axis.
    ``qlora``: the built stack's linears become 4-bit with LoRA adapters, the rest frozen."""

    input: Features | Tokens
    blocks: tuple[Block, ...]
    batch: int = 1
    seq: int | None = None
    loss_kind: str = "mse"
    qlora: QLoRA | None = None

    def __post_init__(self):
        if self.loss_kind not in LOSS_KINDS:
            raise ValueError(f"unknown loss kind {self.loss_kind!r}; valid: {', '.join(LOSS_KINDS)}")
        if self.seq is None and any(block.needs_sequence for block in self.blocks):
            raise ValueError("attention blocks need a sequence axis: give seq")

    @property
    def out_width(self) -> int:
        width = self.input.width
        for block in self.blocks:
            width = block.out_width(width)
        return width

    @property
    def dynamic_axes(self) -> tuple[str, ...]:
        """Names of the leading axes that may change between calls (the rest are feature widths)."""
        return ("batch", "sequence") if self.seq else ("batch",)

    def leading_shape(self, batch: int | None = None) -> tuple[int, ...]:
        return (batch or self.batch,) + ((self.seq,) if self.seq else ())

    def build_module(self, seed: int = 0) -> nn.Sequential:
        """The stack as an ``nn.Sequential`` whose weights depend only on ``seed``."""
        def assemble():
            modules, width = self.input.modules(), self.input.width
            for block in self.blocks:
                modules.append(block.build(width))
                width = block.out_width(width)
            module = nn.Sequential(*modules)
            return self.qlora.apply(module) if self.qlora else module

        return build_seeded(assemble, seed)

    def make_inputs(self, seed: int = 0, batch: int | None = None, requires_grad: bool = True) -> tuple[torch.Tensor]:
        """Seeded inputs (float features require grad unless told otherwise); ``batch`` overrides the stack's."""
        generator = torch.Generator().manual_seed(seed)
        return (self.input.make(self.leading_shape(batch), generator, requires_grad),)

    def loss(self, outputs: torch.Tensor) -> torch.Tensor:
        """Scalar loss of the module's output against targets seeded from its shape."""
        generator = torch.Generator().manual_seed(LOSS_SEED)
        if self.loss_kind == "mse":
            target = torch.randn(outputs.shape, generator=generator).to(outputs)
            return F.mse_loss(outputs, target)
        classes = outputs.shape[-1]
        target = torch.randint(0, classes, outputs.shape[:-1], generator=generator).to(outputs.device)
        return F.cross_entropy(outputs.reshape(-1, classes), target.reshape(-1))

    def step(self, module: nn.Module, inputs: Sequence[torch.Tensor]) -> dict:
        """One forward and backward of ``module`` on ``inputs`` (gradients cleared first): the
        output, the loss and every input and parameter gradient, as the suites compare them."""
        for p in module.parameters():
            p.grad = None
        outputs = module(*inputs)
        loss = self.loss(outputs)
        loss.backward()
        grads = {f"input {i}": t.grad for i, t in enumerate(inputs) if t.requires_grad}
        grads.update((name, p.grad) for name, p in module.named_parameters())
        return {"output": outputs, "loss": loss, "gradients": grads}

    def describe(self) -> str:
        """One line, e.g. ``features(4) -> linear(8) -> relu -> mse [batch=2, seq=3]``."""
        chain = " -> ".join([str(self.input), *map(str, self.blocks), self.loss_kind])
        qlora = f" as {self.qlora}" if self.qlora else ""
        return f"{chain}{qlora} [batch={self.batch}, seq={self.seq}]"


# ---- one strategy per block kind


def linear_blocks(hidden_sizes: Sequence[int] = HIDDEN_SIZES) -> st.SearchStrategy[Linear]:
    return st.sampled_from(hidden_sizes).map(Linear)


def activation_blocks(kinds: Sequence[str] = tuple(ACTIVATIONS)) -> st.SearchStrategy[Activation]:
    return st.sampled_from(kinds).map(Activation)


def layernorm_blocks() -> st.SearchStrategy[LayerNorm]:
    return st.just(LayerNorm())


def dropout_blocks(dropout_ps: Sequence[float] = (0.0,)) -> st.SearchStrategy[Dropout]:
    return st.sampled_from(dropout_ps).map(Dropout)


def residual_mlp_blocks(expansions: Sequence[int] = MLP_EXPANSIONS) -> st.SearchStrategy[ResidualMLP]:
    return st.builds(ResidualMLP, st.sampled_from(expansions), st.booleans())


def attention_blocks(heads: Sequence[int] = HEADS, head_dims: Sequence[int] = (2, 4, 8),
                     dropout_ps: Sequence[float] = (0.0,)) -> st.SearchStrategy[Attention]:
    return st.builds(Attention, st.sampled_from(heads), st.sampled_from(head_dims), st.booleans(),
                     st.none() | st.sampled_from(dropout_ps))


def transformer_blocks(heads: Sequence[int] = HEADS, head_dims: Sequence[int] = (2, 4, 8),
                       dropout_ps: Sequence[float] = (0.0,)) -> st.SearchStrategy[TransformerLayer]:
    return st.builds(TransformerLayer, st.sampled_from(heads), st.sampled_from(head_dims),
                     st.sampled_from(MLP_EXPANSIONS), st.none() | st.sampled_from(dropout_ps))


def half_storage_blocks(hidden_sizes: Sequence[int] = HIDDEN_SIZES) -> st.SearchStrategy[HalfStorage]:
    return st.builds(HalfStorage, st.sampled_from(hidden_sizes))


def stack_blocks(kinds: Sequence[str] = BLOCK_KINDS, hidden_sizes: Sequence[int] = HIDDEN_SIZES,
           dropout_ps: Sequence[float] = (0.0,)) -> st.SearchStrategy[Block]:
    """One block of the given kinds (see :data:`BLOCK_KINDS`), simplest kind first whatever the order given."""
    _check_known("block kinds", kinds, BLOCK_KINDS)
    head_dims = tuple(size for size in hidden_sizes if size <= 8) or (min(hidden_sizes),)
    builders = {
        "linear": lambda: linear_blocks(hidden_sizes),
        "activation": activation_blocks,
        "layernorm": layernorm_blocks,
        "dropout": lambda: dropout_blocks(dropout_ps),
        "residual_mlp": residual_mlp_blocks,
        "attention": lambda: attention_blocks(head_dims=head_dims, dropout_ps=dropout_ps),
    }
    return st.one_of([builders[kind]() for kind in BLOCK_KINDS if kind in kinds])


def stack_inputs(kinds: Sequence[str] = INPUT_KINDS, hidden_sizes: Sequence[int] = HIDDEN_SIZES,
           vocab_sizes: Sequence[int] = VOCAB_SIZES) -> st.SearchStrategy[Features | Tokens]:
    """What feeds the first block: float features, or integer tokens through an embedding."""
    _check_known("input kinds", kinds, INPUT_KINDS)
    widths = st.sampled_from(hidden_sizes)
    builders = {
        "features": lambda: st.builds(Features, widths),
        "tokens": lambda: st.builds(Tokens, st.sampled_from(vocab_sizes), widths),
    }
    return st.one_of([builders[kind]() for kind in INPUT_KINDS if kind in kinds])


def layer_stacks(block_kinds: Sequence[str] = BLOCK_KINDS, input_kinds: Sequence[str] = INPUT_KINDS,
                 loss_kinds: Sequence[str] = LOSS_KINDS, min_blocks: int = 1, max_blocks: int = 4,
                 hidden_sizes: Sequence[int] = HIDDEN_SIZES, vocab_sizes: Sequence[int] = VOCAB_SIZES,
                 max_batch: int = 4, max_seq: int = 8, dropout_ps: Sequence[float] = (0.0,),
                 ) -> st.SearchStrategy[LayerStack]:
    """Random :class:`LayerStack` s of ``min_blocks..max_blocks`` blocks.

    Dropout probabilities (dropout blocks and attention probabilities) come from ``dropout_ps``;
    the default ``(0.0,)`` keeps every stack deterministic, so parity with eager can be exact.
    Sizes list their preferred (smallest) value first: that is where shrinking goes.
    """
    _check_known("loss kinds", loss_kinds, LOSS_KINDS)
    if not 0 <= min_blocks <= max_blocks:
        raise ValueError(f"need 0 <= min_blocks <= max_blocks, got {min_blocks}, {max_blocks}")
    for name, values in (("hidden_sizes", hidden_sizes), ("vocab_sizes", vocab_sizes)):
        if not values or min(values) < 1:
            raise ValueError(f"{name} must be positive sizes, got {values!r}")
    if not dropout_ps or not all(0 <= p < 1 for p in dropout_ps):
        raise ValueError(f"dropout_ps must be probabilities in [0, 1), got {dropout_ps!r}")
    if max_batch < 1 or max_seq < 1:
        raise ValueError(f"max_batch and max_seq must be >= 1, got {max_batch}, {max_seq}")
    one_block = stack_blocks(block_kinds, hidden_sizes, dropout_ps)
    block_lists = st.lists(one_block, min_size=min_blocks, max_size=max_blocks)
    sequences = st.integers(1, max_seq)
    return _stacks(stack_inputs(input_kinds, hidden_sizes, vocab_sizes), block_lists, st.integers(1, max_batch),
                   sequences, st.none() | sequences, st.sampled_from(loss_kinds))


@st.composite
def _stacks(draw, sources, block_lists, batches, sequences, optional_sequences, losses) -> LayerStack:
    source = draw(sources)
    chosen = tuple(draw(block_lists))
    needs_sequence = any(block.needs_sequence for block in chosen)
    seq = draw(sequences if needs_sequence else optional_sequences)
    return LayerStack(source, chosen, draw(batches), seq, draw(losses))


def transformer_stacks(min_layers: int = 1, max_layers: int = 3, extra_block_kinds: Sequence[str] = BLOCK_KINDS,
                       max_extra_blocks: int = 2, dropout_ps: Sequence[float] = (0.0,),
                       hidden_sizes: Sequence[int] = HIDDEN_SIZES, max_batch: int = 3, max_seq: int = 6,
                       half_storage: bool = True) -> st.SearchStrategy[LayerStack]:
    """Stacks of ``min_layers..max_layers`` pre-LN transformer layers, with up to ``max_extra_blocks``
    other blocks (and half-storage blocks) mixed in: what layer-wise recompute has boundaries to find.
    Dropout probabilities come from ``dropout_ps`` (with dropout > 0 only implementation-vs-itself
    comparisons are deterministic); ``half_storage=False`` leaves out the float16 round trip, a step
    function eager can't be an element-wise reference through."""
    if not 1 <= min_layers <= max_layers:
        raise ValueError(f"need 1 <= min_layers <= max_layers, got {min_layers}, {max_layers}")
    head_dims = tuple(size for size in hidden_sizes if size <= 8) or (min(hidden_sizes),)
    layers = st.lists(transformer_blocks(head_dims=head_dims, dropout_ps=dropout_ps),
                      min_size=min_layers, max_size=max_layers)
    extra = stack_blocks(extra_block_kinds, hidden_sizes, dropout_ps)
    if half_storage:
        extra = st.one_of(extra, half_storage_blocks(hidden_sizes))
    extras = st.lists(extra, max_size=max_extra_blocks)
    return _transformer_stacks(stack_inputs(hidden_sizes=hidden_sizes), layers, extras, st.integers(1, max_batch),
                               st.integers(1, max_seq), st.sampled_from(LOSS_KINDS))


@st.composite
def _transformer_stacks(draw, sources, layers, extras, batches, sequences, losses) -> LayerStack:
    chosen = list(draw(layers))
    for block in draw(extras):  # each extra block goes before some layer, or after the last
        chosen.insert(draw(st.integers(0, len(chosen))), block)
    return LayerStack(draw(sources), tuple(chosen), draw(batches), draw(sequences), draw(losses))


def stack_example(text: str):
    """A recorded example (a manifest's ``examples``): Python text over the block specs and
    :class:`LayerStack`, e.g. ``(LayerStack(...), seed)``, evaluated back into values."""
    return eval(text, vars(blocks) | {"LayerStack": LayerStack})


def _check_known(what: str, given: Sequence[str], known: Sequence[str]) -> None:
    unknown = set(given) - set(known)
    if unknown or not given:
        raise ValueError(f"{what} {sorted(unknown) or 'empty'}: valid are {', '.join(known)}")
