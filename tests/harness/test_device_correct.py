"""Every model, subject and strategy of the harness makes its tensors on the module's device.

The first GPU run found the harness's own 4-bit layer indexing a CPU code book with codes on cuda
(every bnb4 property and the ``qlora`` case failed, in eager). No GPU runs here, so each subject is
moved to ``meta`` (a device every torch build has, holding no data) and runs one forward, loss and
backward under :class:`SameDevice`, a dispatch mode failing any aten op whose tensor arguments sit
on two devices. A tensor made on the CPU inside a forward, a loss or a backward (a code book, a
mask, a target) meets the module's meta tensors there and fails naming the op, as it would on the
first GPU. Afterwards the loss, every gradient, parameter and buffer must be on meta too.

Why meta plus a mode, not meta alone: meta kernels check devices less than CUDA's (indexing a CPU
tensor with meta indices passes; the 4-bit bug failed only later, by luck of the next op). The mode
applies one rule to every op: a 0-d CPU tensor is a scalar any device accepts (as on CUDA), nothing
else crosses (stricter than CUDA where it copies quietly: CPU indices into a cuda tensor). Why not a fake "cuda" (``FakeTensorMode``): a CPU-only torch can't move a module there.
Values drawn on the CPU from a seeded generator and then moved (inputs, targets, cotangents) are
fine: they are moved before any op mixes them, so the mode accepts them.

Meta computes no values, so what needs values stays out: the float64 oracle (the transition
scenario's device moves are checked in tests/stateful), and the Hugging Face models (transformers'
code, not the harness's; hf.py only configures it).
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from typing import Any, Callable

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from ortcheck.checks.runs import fresh_leaves
from ortcheck.convergence import cases
from ortcheck.models import bloom, semantics, small
from ortcheck.models.linear4bit import (
    BITSANDBYTES_BLOCK_SIZES, FP4, KERNELS, NF4, ORT_CPU_BLOCK_SIZES, QUANT_TYPE_NAMES, Linear4Bit, quantize_linears,
)
from ortcheck.models.seeding import build_seeded
from ortcheck.models.transition_subject import TransitionSubject
from ortcheck.nested import leaves
from ortcheck.stateful.inputs import Inputs
from ortcheck.strategies.layer_stacks import layer_stacks, transformer_stacks
from ortcheck.strategies.nn_layers import LAYERS, NAMES
from ortcheck.strategies.ops import OPS, op_cases
from ortcheck.strategies.qlora import bnb4_stacks, qlora_stacks

DEVICE = torch.device("meta")


class MixedDevices(RuntimeError):
    """An op was given tensors on two devices."""


class SameDevice(TorchDispatchMode):
    """Fails an op whose tensor arguments sit on more than one device (0-d CPU tensors are scalars)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        devices = {str(t.device) for t in tensors if not (t.device.type == "cpu" and t.dim() == 0)}
        if len(devices) > 1:
            shapes = ", ".join(f"{t.device}{list(t.shape)}" for t in tensors)
            raise MixedDevices(f"{func} mixes devices {sorted(devices)}: {shapes}")
        return func(*args, **kwargs)


@dataclasses.dataclass
class Subject:
    """A module, the data of one call (nested, made anywhere) and the step: ``loss(module, data)``."""

    module: nn.Module
    data: Any
    loss: Callable[[nn.Module, Any], torch.Tensor]


def assert_runs_on(subject: Subject, device: torch.device = DEVICE) -> None:
    """Move module and data to ``device``; forward, loss and backward under :class:`SameDevice`;
    every output, parameter gradient and input gradient on ``device``."""
    module = subject.module.to(device)
    data = fresh_leaves(subject.data, device)
    with SameDevice():
        loss = subject.loss(module, data)
        loss.backward()
    assert loss.device == device, f"the loss is on {loss.device}"
    grads = {name: p.grad for name, p in module.named_parameters() if p.grad is not None}
    grads |= {f"input {i}": t.grad for i, t in enumerate(leaves(data))
              if isinstance(t, torch.Tensor) and t.grad is not None}
    wrong = {name: str(g.device) for name, g in grads.items() if g.device != device}
    assert not wrong, f"gradients off {device}: {wrong}"
    state = {name: str(t.device) for name, t in module.state_dict().items() if t.device != device}
    assert not state, f"parameters or buffers off {device} after the step: {state}"


def weighted_sum(out) -> torch.Tensor:
    """A loss reaching every element of every float output, each with its own (device-following) weight."""
    return sum((t * semantics.cotangent(t)).sum() for t in tree_leaves(out)
               if isinstance(t, torch.Tensor) and t.is_floating_point())


def _called(module: nn.Module, data) -> torch.Tensor:
    args, kwargs = data
    return weighted_sum(module(*args, **kwargs))


# ---- the models


def _case_subject(name: str) -> Subject:
    case = cases.get(name)
    inputs, target = case.batches(0, 1)[0]
    return Subject(build_seeded(case.build, 0), (inputs, target), lambda m, d: case.loss(m(*d[0]), d[1]))


def _linear4bit(quant_type: int, bias: bool, lora_rank: int, packed_as: str, kernel: str) -> Subject:
    if kernel == "bitsandbytes":
        pytest.importorskip("bitsandbytes")
    generator = torch.Generator().manual_seed(0)
    weight, b = torch.randn(5, 7, generator=generator), torch.randn(5, generator=generator)
    block_size = BITSANDBYTES_BLOCK_SIZES[0] if kernel == "bitsandbytes" else ORT_CPU_BLOCK_SIZES[0]
    layer = build_seeded(lambda: Linear4Bit(weight, b if bias else None, block_size, quant_type, lora_rank,
                                            lora_alpha=2.0, kernel=kernel, packed_as=packed_as), 0)
    return Subject(layer, ((torch.randn(3, 7, generator=generator).requires_grad_(),), {}), _called)


LINEAR4BIT = {f"linear4bit-{kernel}-{QUANT_TYPE_NAMES[q]}-bias{int(b)}-lora{r}-{p}": (q, b, r, p, kernel)
              for kernel, q, b, r, p in itertools.product(KERNELS, (NF4, FP4), (False, True), (0, 2),
                                                          ("parameter", "buffer"))}


def _transition_subject(**changes) -> Subject:
    args, kwargs = dataclasses.replace(Inputs(), **changes).make(seed=0, device=str(DEVICE))
    return Subject(build_seeded(TransitionSubject, 0), (args, kwargs), _called)


TRANSITION_INPUTS = {"plain": {}, "rank3": {"rank": 3}, "float16": {"dtype": "float16"}, "no_y": {"with_y": False},
                     "flag": {"flag": True}, "sum": {"reduction": "sum"}, "mean": {"reduction": "mean"},
                     "repeats": {"repeats": 2}, "factor": {"factor": 0.5}}


def _semantics(module: nn.Module) -> Subject:
    return Subject(module, ((semantics.example_input(0),), {}), _called)


MODELS: dict[str, Callable[[], Subject]] = {
    **{f"case-{name}": (lambda name=name: _case_subject(name)) for name in cases.names()},
    **{name: (lambda spec=spec: _linear4bit(*spec)) for name, spec in LINEAR4BIT.items()},
    **{f"transition-{name}": (lambda c=c: _transition_subject(**c)) for name, c in TRANSITION_INPUTS.items()},
    "bloom": lambda: Subject(bloom.build_bloom(), bloom.example_input_ids(bloom.BloomConfig()),
                             lambda m, ids: bloom.causal_lm_loss(m(ids), ids)),
    "mlp_with_unused": lambda: Subject(small.mlp_with_unused(3, 4, 2, unused=True), ((torch.randn(2, 3),), {}),
                                       _called),
    "semantics-plain": lambda: _semantics(semantics.plain(0)),
    **{f"semantics-{kind}-nested{int(nested)}": (lambda k=kind, n=nested: _semantics(semantics.with_state(k, n, 0)))
       for kind in semantics.STATE_KINDS for nested in (False, True)},
    **{f"semantics-function-{feature}": (lambda f=feature: _semantics(semantics.with_function(f, 0)))
       for feature in semantics.FUNCTION_FEATURES},
    "semantics-in_parent": lambda: _semantics(semantics.in_parent(0, ["first", "middle", "last"])),
}


@pytest.mark.parametrize("name", MODELS)
def test_a_model_runs_on_the_device_it_is_moved_to(name):
    assert_runs_on(MODELS[name]())


@pytest.mark.parametrize("what", semantics.CHANGES)
def test_a_user_change_to_a_subject_stays_on_its_device(what):
    """The module-semantics actions bring values (weights, blocks, a state_dict): on the subject's device."""
    subject = semantics.plain(0).to(DEVICE)
    semantics.change(what, 0, seed=1)("eager", subject, subject)
    assert_runs_on(Subject(subject, ((semantics.example_input(0),), {}), _called))


def test_quantizing_a_model_on_a_device_keeps_it_there():
    """``quantize_linears`` on a model already moved (QLoRA on a model loaded on the GPU)."""
    model = build_seeded(lambda: nn.Sequential(nn.Linear(7, 5), nn.Tanh(), nn.Linear(5, 3)), 0).to(DEVICE)
    with SameDevice():
        quantize_linears(model, block_size=16, lora_rank=2)
    assert_runs_on(Subject(model, ((torch.randn(2, 7).requires_grad_(),), {}), _called))


# ---- the strategies' subjects: a few drawn examples of each

DRAWS = settings(max_examples=5, derandomize=True, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow])
STACKS = {"layer_stacks": layer_stacks(), "transformer_stacks": transformer_stacks(),
          "bnb4_stacks": bnb4_stacks(), "qlora_stacks": qlora_stacks()}


@pytest.mark.parametrize("strategy", STACKS)
def test_a_layer_stack_runs_on_the_device_it_is_moved_to(strategy):
    @DRAWS
    @given(stack=STACKS[strategy])
    def check(stack):
        assert_runs_on(Subject(stack.build_module(0), stack.make_inputs(0), lambda m, x: stack.loss(m(*x))))

    check()


# Layers torch itself cannot run on meta, in every draw: no meta kernel, or eager reads a value.
TORCH_WITHOUT_META = {
    "MultiMarginLoss": "torch has no meta kernel for aten::multi_margin_loss_backward",
    "MultiLabelMarginLoss": "torch has no meta kernel for aten::multilabel_margin_loss",
    "CTCLoss": "torch has no meta kernel for aten::_ctc_loss",
    "AdaptiveLogSoftmaxWithLoss": "its forward checks the targets' range with .item()",
    "GaussianNLLLoss": "its forward checks the variance with torch.any(var < 0) and .item()",
    "Transformer": "its forward reads the masks' values (.item()) to detect a causal mask",
}
# ... and in some draws (BatchNorm with momentum=None reads float(num_batches_tracked)): such draws are discarded
_META_READ = re.compile(r"cannot be called on meta tensors")


@pytest.mark.parametrize("layer", [pytest.param(name, marks=pytest.mark.skip(reason=f"{TORCH_WITHOUT_META[name]}: no "
                                                                               "meta run to check devices with"))
                                   if name in TORCH_WITHOUT_META else name for name in NAMES])
def test_a_catalogued_layer_runs_on_the_device_it_is_moved_to(layer):
    @settings(DRAWS, max_examples=2)
    @given(drawn=LAYERS[layer])
    def check(drawn):
        generator = torch.Generator().manual_seed(0)
        inputs = tuple(spec.make(generator) for spec in drawn.inputs)
        module = build_seeded(drawn.module, 0)
        try:
            assert_runs_on(Subject(module.eval() if drawn.eval else module, (inputs, {}), _called))
        except RuntimeError as error:
            assume(not _META_READ.search(str(error)))
            raise

    check()


@pytest.mark.parametrize("op", OPS)
def test_a_catalogued_op_runs_on_the_device_it_is_moved_to(op):
    @settings(DRAWS, max_examples=2)
    @given(case=op_cases(op))
    def check(case):
        inputs = case.make_inputs(0, str(DEVICE))
        assert_runs_on(Subject(nn.Module(), inputs, lambda _, x: weighted_sum(case.call(*x))))

    check()


# ---- the mode itself


def test_the_mode_refuses_a_cpu_tensor_meeting_a_device_tensor():
    """What every check above relies on: mixing fails, a 0-d CPU scalar does not (as on CUDA)."""
    x = torch.randn(3, device=DEVICE)
    with SameDevice():
        x * torch.tensor(2.0)
        with pytest.raises(MixedDevices, match="aten.index"):
            torch.arange(4.0)[torch.zeros(2, dtype=torch.long, device=DEVICE)]
        with pytest.raises(MixedDevices, match="aten.mul"):
            x * torch.ones(3)
