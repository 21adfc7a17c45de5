"""Layer stacks: seeded, well-shaped, trainable everywhere, exportable with the pipelines' command,
configurable, and shrinking to one simple block."""
import onnx
import pytest
import torch
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from ortcheck.models import export_training_graph, op_types, run_exported
from ortcheck.profiles import scaled
from ortcheck.strategies import blocks
from ortcheck.strategies.blocks import (
    Activation, Attention, Dropout, Features, LayerNorm, Linear, ResidualMLP, Tokens,
)
from ortcheck.strategies.layer_stacks import BLOCK_KINDS, LayerStack, layer_stacks

FIND = settings(max_examples=2000, database=None, derandomize=True)
# that a kind is drawn at all: the first draw that has it will do (shrinking it took most of the time)
REACHES = settings(FIND, phases=[Phase.generate])
SEEDS = st.integers(0, 2**16)

# Every op type a stack may export to: common ops every gradient builder is expected to know.
COMMON_OPS = {
    "Add", "Cast", "Concat", "Constant", "Div", "Dropout", "Gather", "Gelu", "Gemm", "Greater",
    "LayerNormalization", "MatMul", "Range", "Relu", "Reshape", "Shape", "Sigmoid", "Softmax", "Tanh",
    "Transpose", "Unsqueeze", "Where",
}


def parameters(module):
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def same_tensors(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@given(layer_stacks(), SEEDS)
def test_same_seed_gives_same_weights_inputs_and_loss_and_leaves_global_rng_alone(stack, seed):
    rng_before = torch.random.get_rng_state()
    first, second = stack.build_module(seed), stack.build_module(seed)
    assert torch.equal(torch.random.get_rng_state(), rng_before)
    assert same_tensors(parameters(first), parameters(second))
    (x1,), (x2,) = stack.make_inputs(seed), stack.make_inputs(seed)
    assert torch.equal(x1, x2)
    assert torch.equal(stack.loss(first(x1)), stack.loss(second(x2)))


@given(layer_stacks(), SEEDS)
def test_different_seeds_give_different_weights(stack, seed):
    a, b = parameters(stack.build_module(seed)), parameters(stack.build_module(seed + 1))
    assert not a or not same_tensors(a, b)


@given(layer_stacks(), st.integers(1, 5))
def test_outputs_have_the_stacks_shape_and_a_finite_scalar_loss(stack, batch):
    (x,) = stack.make_inputs(0, batch=batch)
    assert x.shape[: len(stack.leading_shape())] == stack.leading_shape(batch)
    out = stack.build_module(0)(x)
    assert out.shape == stack.leading_shape(batch) + (stack.out_width,)
    loss = stack.loss(out)
    assert loss.dim() == 0 and torch.isfinite(loss)


@given(layer_stacks())
def test_loss_backpropagates_to_every_parameter_and_float_input(stack):
    module = stack.build_module(0)
    (x,) = stack.make_inputs(0)
    stack.loss(module(x)).backward()
    for name, p in module.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    assert x.grad is not None if x.is_floating_point() else not x.requires_grad


@scaled(0.3)
@given(layer_stacks())
def test_every_stack_exports_to_common_ops(stack):
    graph = export_training_graph(stack.build_module(0), stack.make_inputs(0), stack.dynamic_axes)
    assert set(op_types(graph)) <= COMMON_OPS


# one small stack per block kind and variant, with the op it must export to
EXPORT_CASES = {
    "linear_2d": (LayerStack(Features(4), (Linear(8),)), "Gemm"),
    "linear_3d": (LayerStack(Features(4), (Linear(8),), seq=3), "MatMul"),
    "layernorm": (LayerStack(Features(4), (LayerNorm(),), seq=3), "LayerNormalization"),
    "relu": (LayerStack(Features(4), (Activation("relu"),)), "Relu"),
    "tanh": (LayerStack(Features(4), (Activation("tanh"),)), "Tanh"),
    "sigmoid": (LayerStack(Features(4), (Activation("sigmoid"),)), "Sigmoid"),
    "gelu": (LayerStack(Features(4), (Activation("gelu"),)), "Gelu"),
    "gelu_tanh": (LayerStack(Features(4), (Activation("gelu_tanh"),)), "Gelu"),
    "dropout": (LayerStack(Features(4), (Dropout(0.0),)), "Dropout"),
    "residual_mlp": (LayerStack(Features(4), (ResidualMLP(2, pre_norm=True),), seq=3), "Add"),
    "attention": (LayerStack(Features(8), (Attention(2, 4, causal=False),), seq=3), "Softmax"),
    "causal_attention": (LayerStack(Features(8), (Attention(2, 4, causal=True),), seq=3), "Where"),
    "attention_dropout": (LayerStack(Features(8), (Attention(2, 4, causal=False, dropout=0.0),), seq=3), "Dropout"),
    "tokens": (LayerStack(Tokens(8, 4), (Linear(4),), seq=3), "Gather"),
}


@pytest.mark.parametrize("case", EXPORT_CASES)
def test_each_block_exports_and_runs_in_onnxruntime_at_other_sizes(case):
    stack, expected_op = EXPORT_CASES[case]
    module = stack.build_module(0)
    graph = export_training_graph(module, stack.make_inputs(0, batch=2), stack.dynamic_axes)
    onnx.checker.check_model(graph)
    ops = set(op_types(graph))
    print(case, sorted(ops))
    assert expected_op in ops and ops <= COMMON_OPS
    if stack.seq:  # a longer sequence too: the sequence axis is dynamic
        stack = LayerStack(stack.input, stack.blocks, stack.batch, stack.seq + 2, stack.loss_kind)
    inputs = stack.make_inputs(1, batch=3)
    torch.testing.assert_close(run_exported(graph, inputs), module(*inputs).detach())


def test_shrinks_to_a_single_simplest_attention_block():
    found = find(layer_stacks(), lambda s: any(isinstance(b, Attention) for b in s.blocks), settings=FIND)
    assert found == LayerStack(Features(4), (Attention(1, 4, causal=False),), batch=1, seq=1, loss_kind="mse")


def test_shrinks_deep_stacks_to_the_simplest_blocks():
    found = find(layer_stacks(), lambda s: len(s.blocks) >= 3, settings=FIND)
    assert found == LayerStack(Features(4), (Linear(4),) * 3)


@pytest.mark.parametrize("kind", BLOCK_KINDS)
def test_every_block_kind_is_generated(kind):
    spec_type = {"linear": Linear, "activation": Activation, "layernorm": LayerNorm, "dropout": Dropout,
                 "residual_mlp": ResidualMLP, "attention": Attention}[kind]
    find(layer_stacks(), lambda s: any(type(b) is spec_type for b in s.blocks), settings=REACHES)


@pytest.mark.parametrize("activation", blocks.ACTIVATIONS)
def test_every_activation_and_tokens_and_both_losses_are_generated(activation):
    find(layer_stacks(), lambda s: Activation(activation) in s.blocks and isinstance(s.input, Tokens)
         and s.loss_kind == "cross_entropy", settings=REACHES)


@given(layer_stacks())
def test_defaults_are_ci_sized(stack):
    assert 1 <= len(stack.blocks) <= 4 and stack.batch <= 4 and (stack.seq or 0) <= 8
    widths = [stack.input.width] + [b.out for b in stack.blocks if isinstance(b, Linear)]
    assert max(widths) <= 32
    assert all(b.p == 0 for b in stack.blocks if isinstance(b, Dropout))
    assert all(b.dropout in (None, 0) for b in stack.blocks if isinstance(b, Attention))


@given(layer_stacks(block_kinds=["attention", "dropout"], input_kinds=["tokens"], loss_kinds=["cross_entropy"],
                    min_blocks=2, max_blocks=2, hidden_sizes=(8,), max_batch=2, max_seq=3, dropout_ps=(0.5,)))
def test_options_are_honoured(stack):
    assert isinstance(stack.input, Tokens) and stack.input.width == 8 and stack.loss_kind == "cross_entropy"
    assert len(stack.blocks) == 2 and all(type(b) in (Attention, Dropout) for b in stack.blocks)
    assert stack.batch <= 2 and (stack.seq or 0) <= 3
    assert all(b.p == 0.5 for b in stack.blocks if isinstance(b, Dropout))
    assert all(b.dropout in (None, 0.5) for b in stack.blocks if isinstance(b, Attention))


def test_dropout_above_zero_is_reached_when_asked():
    find(layer_stacks(dropout_ps=(0.0, 0.25)), lambda s: Dropout(0.25) in s.blocks, settings=REACHES)
    find(layer_stacks(dropout_ps=(0.0, 0.25)), lambda s: any(getattr(b, "dropout", None) == 0.25 for b in s.blocks),
         settings=REACHES)


@pytest.mark.parametrize("kwargs", [dict(block_kinds=["conv"]), dict(input_kinds=[]), dict(loss_kinds=["l1"]),
                                    dict(dropout_ps=(1.0,)), dict(min_blocks=3, max_blocks=2),
                                    dict(hidden_sizes=(0,))])
def test_invalid_options_fail_clearly(kwargs):
    with pytest.raises(ValueError):
        layer_stacks(**kwargs)


def test_attention_without_a_sequence_axis_is_rejected():
    with pytest.raises(ValueError, match="sequence"):
        LayerStack(Features(4), (Attention(1, 4, causal=True),))


@given(layer_stacks())
def test_repr_rebuilds_the_stack_and_describe_names_every_block(stack):
    namespace = {name: getattr(blocks, name) for name in dir(blocks)} | {"LayerStack": LayerStack}
    assert eval(repr(stack), namespace) == stack
    description = stack.describe()
    assert all(str(b) in description for b in stack.blocks)


def test_layer_stacks_is_public():
    from ortcheck.strategies import layer_stacks as public

    assert public is layer_stacks
