"""Property: recompute changes no number, applies what was asked, and saves what it claims.

Checks: the memory optimizer, on generated pre-LN transformer stacks (with and without dropout; levels 1 and
2 also under `torch.autocast` float16 and bfloat16), every level and configs drawn from the plans the
implementation reports: outputs, loss and gradients bitwise equal to no recompute (level 0's distance from
eager is `test_grad_parity`'s); plans ON exactly as configured and applied as often as asked; the tensors
saved for backward shrink by exactly the report's claimed saving; transformer layer inputs stay stashed at
levels 1/2; malformed config entries are refused by name; `bloom_lm` trains bit for bit as at level 0

The memory optimizer trades stashed activations for recomputation in backward. For transformer
stacks (``ortcheck.strategies.layer_stacks.transformer_stacks``, dropout on and off), every level,
and configs drawn from the plans the implementation itself reports:
- outputs, loss and every gradient are bitwise equal to the same implementation without recompute:
  a recompute that draws a new dropout mask, or rounds differently, fails;
- the plans shown ON are exactly the configured ones, each applied as many times as asked;
  level 1 applies every strategy-1 plan and keeps each transformer layer's input stashed;
- the bytes kept between forward and backward (the saved tensors themselves) drop by what the
  report claims for this batch, less the small values it lists as kept in their place.
Runs are seeded alike (onnxruntime's dropout seed included), so both draw the same masks.
"""
from __future__ import annotations

import copy
import dataclasses
import functools

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ortcheck.convergence import cases, runner
from ortcheck.checks import assert_bitwise_equal, kept_tensors
from ortcheck.checks.autocast import DTYPES as AUTOCAST_DTYPES, autocast_region, dtype_name
from ortcheck.convergence.determinism import Determinism, applied
from ortcheck.impls import Capability
from ortcheck.models.bloom import BloomConfig, build_bloom, causal_lm_loss, example_input_ids
from ortcheck.profiles import costly
from ortcheck.strategies.blocks import Tokens, TransformerLayer
from ortcheck.strategies.layer_stacks import LayerStack, stack_example, transformer_stacks
from ortcheck.strategies.recompute import expected_applied, recompute_configs

pytestmark = pytest.mark.requires(Capability.RECOMPUTE)

LEVELS = (0, 1, 2)
DROPOUT_PS = (0.0, 0.1)


def heavy(test):
    """A tenth of the profile's examples: each exports the model two or three times."""
    return costly(0.1)(test)


@dataclasses.dataclass
class Step:
    values: dict         # output, loss, gradients
    kept_bytes: int      # saved for backward, parameters and inputs left out
    kept: list           # the saved tensors themselves


def train_step(module: torch.nn.Module, stack: LayerStack, inputs, seed: int, device: str) -> Step:
    """One seeded forward and backward (every RNG, onnxruntime's included, seeded alike)."""
    with applied(Determinism.for_device(device, seed), device), kept_tensors([*module.parameters(), *inputs]) as kept:
        values = stack.step(module, inputs)
    return Step(values, kept.nbytes, kept.tensors)


class Pair:
    """The same model wrapped twice, without recompute and then (:meth:`with_recompute`) with it, run on
    the same inputs. The baseline's step runs once (:attr:`expected`): it gives both the plans a
    config is drawn from and the values the variant must equal, so the baseline is exported once."""

    def __init__(self, impl, base_options, stack: LayerStack, seed: int):
        self.impl, self.stack, self.seed, self.device = impl, stack, seed, base_options.device
        self.eager = stack.build_module(seed).to(self.device)
        self.base_options = base_options
        self.baseline = impl.wrap(copy.deepcopy(self.eager), base_options)
        self.inputs = [t.to(self.device) for t in stack.make_inputs(seed)]

    def with_recompute(self, **recompute) -> "Pair":
        self.recompute = recompute
        self.options = dataclasses.replace(self.base_options, **recompute)
        self.variant = self.impl.wrap(copy.deepcopy(self.eager), self.options)
        return self

    @functools.cached_property
    def expected(self) -> Step:
        """The baseline's step (once: a second would accumulate onto its gradients)."""
        return self.run(self.baseline)

    def plans(self) -> list[tuple[str, int, int]]:
        """Plans the implementation reports for the baseline after its step, as (name, strategy, freq)."""
        self.expected
        report = self.impl.memory_plans(self.baseline)
        assert report is not None, f"{self.impl.name} reports no memory-optimizer plans after a training step"
        return [(plan.name, plan.strategy, plan.freq) for plan in report.plans]

    def run(self, module) -> Step:
        inputs = [t.detach().clone().requires_grad_(t.requires_grad) for t in self.inputs]
        return train_step(module, self.stack, inputs, self.seed, self.device)


def _recompute_options(draw, pair: Pair, level: int) -> dict:
    if level:
        return {"memory_opt_level": level}
    plans = pair.plans()
    if not plans:
        return {"memory_opt_level": 0}
    return {"memory_opt_config": draw(recompute_configs(plans), label="memory_opt_config")}


def stacks():
    return transformer_stacks(dropout_ps=DROPOUT_PS)


def _canonical_stack(dropout: float | None) -> LayerStack:
    return LayerStack(Tokens(16, 8), (TransformerLayer(2, 4, 2, dropout), TransformerLayer(2, 4, 2, dropout)),
                      batch=2, seq=5, loss_kind="cross_entropy")


# Run before the drawn stacks, so every run covers two transformer layers with every plan applied.
CANONICAL = _canonical_stack(0.1)
CANONICAL_WITHOUT_DROPOUT = _canonical_stack(None)


def _canonical_options(pair: Pair, level: int) -> dict:
    """Level 1/2 as they are; level 0 with every reported plan at count 1 ("the first N" matters)."""
    if level:
        return {"memory_opt_level": level}
    return {"memory_opt_config": tuple(f"{name}:{strategy}:1" for name, strategy, _ in pair.plans())}


def for_canonical_and_drawn(check, canonical=CANONICAL, stack_strategy=None):
    """A test running ``check(pair, level)`` on the implementation's manifest examples (``(stack,
    seed, recompute options)``), the canonical stack, then drawn stacks."""
    def test(impl, options, level, manifest_examples):
        for text in manifest_examples:
            stack, seed, recompute = stack_example(text)
            check(Pair(impl, options, stack, seed).with_recompute(**recompute), level)
        pair = Pair(impl, options, canonical, 0)
        check(pair.with_recompute(**_canonical_options(pair, level)), level)

        @heavy
        @given(stack=stacks() if stack_strategy is None else stack_strategy, seed=st.integers(0, 2**16), data=st.data())
        def drawn(stack, seed, data):
            pair = Pair(impl, options, stack, seed)
            check(pair.with_recompute(**_recompute_options(data.draw, pair, level)), level)

        drawn()

    test.__doc__ = check.__doc__
    return test


def _no_number_changes(pair: Pair, level: int):
    """Outputs, loss and gradients bitwise equal to no recompute. With dropout, the same seed must give
    the same masks: a recomputed Dropout reuses the forward's. (How close level 0 is to eager is
    ``test_grad_parity``'s property over the same blocks; checking it again here would fail recompute
    for a kernel's precision that recompute cannot change.)"""
    expected, actual = pair.expected, pair.run(pair.variant)
    assert_bitwise_equal(actual.values, expected.values, path=f"{pair.recompute}")


def _applied_as_asked(pair: Pair, level: int):
    """Plans ON are exactly the configured ones (level 1: every strategy-1 plan; level 2: also
    strategy 2), each applied as often as asked."""
    pair.run(pair.variant)
    report = pair.impl.memory_plans(pair.variant)
    shown = {(p.name, p.strategy): p for p in report.plans}
    if level == 0:
        plans = [(p.name, p.strategy, p.freq) for p in report.plans]
        want = expected_applied(pair.recompute.get("memory_opt_config", ()), plans)
    else:
        want = {key: plan.freq for key, plan in shown.items() if plan.strategy <= level}
    on = {key for key, plan in shown.items() if plan.enabled}
    assert on == set(want), f"plans ON {sorted(on)} != configured {sorted(want)}\n{report.table}"
    for key, count in want.items():
        assert shown[key].applied == count, f"{key}: applied {shown[key].applied}, asked {count}\n{report.table}"


def _kept_bytes_drop_as_claimed(pair: Pair, level: int):
    """The tensors saved for backward shrink by the report's claimed saving less its kept leaves."""
    before, after = pair.expected, pair.run(pair.variant)
    report = pair.impl.memory_plans(pair.variant)
    assert report.applied_saving_bytes is not None, f"{pair.impl.name} reports no saving for the applied plans"
    claimed = report.applied_saving_bytes - (report.kept_leaf_bytes or 0)
    assert before.kept_bytes - after.kept_bytes == claimed, (
        f"kept {before.kept_bytes} -> {after.kept_bytes} bytes (drop {before.kept_bytes - after.kept_bytes}), "
        f"report claims {report.applied_saving_bytes} saved less {report.kept_leaf_bytes} kept\n{report.table}")


test_recompute_changes_no_number = pytest.mark.parametrize("level", LEVELS)(
    for_canonical_and_drawn(_no_number_changes, CANONICAL_WITHOUT_DROPOUT, transformer_stacks()))
test_recompute_with_dropout_changes_no_number = pytest.mark.parametrize("level", LEVELS)(
    for_canonical_and_drawn(_no_number_changes, CANONICAL, transformer_stacks(dropout_ps=(0.1,))))
test_applied_plans_are_what_was_asked = pytest.mark.parametrize("level", LEVELS)(for_canonical_and_drawn(_applied_as_asked))
test_kept_bytes_drop_by_the_claimed_saving = pytest.mark.requires(Capability.KEPT_TENSORS_VISIBLE)(
    pytest.mark.parametrize("level", LEVELS)(for_canonical_and_drawn(_kept_bytes_drop_as_claimed)))


@pytest.mark.parametrize("autocast", AUTOCAST_DTYPES, ids=dtype_name)
@pytest.mark.parametrize("level", (1, 2))
def test_recompute_under_autocast_changes_no_number(impl, options, level, autocast, manifest_examples):
    """Mixed precision: under ``torch.autocast`` the levels still change no number (each level's
    graphs hold the same casts; what is recomputed rounds as it did the first time). The manifest's
    examples (``(stack, seed)``) run first."""
    def check(stack, seed):
        with autocast_region(options.device, autocast):
            _no_number_changes(Pair(impl, options, stack, seed).with_recompute(memory_opt_level=level), level)

    for text in manifest_examples:
        check(*stack_example(text)[:2])

    @heavy
    @given(stack=transformer_stacks(), seed=st.integers(0, 2**16))
    def drawn(stack, seed):
        check(stack, seed)

    drawn()


@pytest.mark.requires(Capability.KEPT_TENSORS_VISIBLE)
@pytest.mark.parametrize("level", (1, 2))
def test_layer_inputs_stay_stashed(impl, options, level):
    """Layer-wise recompute keeps every transformer layer's input: the value the pipeline kept
    for it without recompute is still kept, bit for bit. Layer inputs are found by value from
    eager's forward pre-hooks, so the stacks have no dropout (eager would draw other masks) and no
    float16 round trip (eager's values can sit a float16 step away)."""
    @heavy
    @given(stack=transformer_stacks(half_storage=False), seed=st.integers(0, 2**16))
    def drawn(stack, seed):
        pair = Pair(impl, options, stack, seed).with_recompute(memory_opt_level=level)
        layer_inputs = _layer_inputs(pair)
        before, after = pair.expected, pair.run(pair.variant)
        for k, value in enumerate(layer_inputs):
            mine = [t for t in before.kept if _close(t, value)]
            assert mine, f"transformer layer {k}: its input is not kept even without recompute"
            assert any(any(_same_bits(t, m) for m in mine) for t in after.kept), (
                f"transformer layer {k}: its input is no longer kept at level {level}")

    drawn()


def _layer_inputs(pair: Pair) -> list[torch.Tensor]:
    """Each transformer layer's input in eager, captured by forward pre-hooks."""
    eager = copy.deepcopy(pair.eager)
    found, layers = [], [m for m, b in zip(eager[len(eager) - len(pair.stack.blocks):], pair.stack.blocks)
                         if isinstance(b, TransformerLayer)]
    handles = [layer.register_forward_pre_hook(lambda _, args: found.append(args[0].detach())) for layer in layers]
    with applied(Determinism.for_device(pair.device, pair.seed), pair.device):
        eager(*[t.detach() for t in pair.inputs])
    for handle in handles:
        handle.remove()
    return found


def _close(t: torch.Tensor, value: torch.Tensor) -> bool:
    return t.shape == value.shape and t.dtype == value.dtype and torch.allclose(t.detach(), value, rtol=1e-4, atol=1e-5)


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.detach(), b.detach())


@pytest.mark.parametrize("level", (1, 2))
def test_bloom_with_dropout_trains_bitwise_like_level_0(impl, options, level, request):
    """Three AdamW steps of the Bloom-like LM with dropout 0.1: every recomputed Dropout must
    reuse the forward's mask, so losses and parameters stay bit for bit those of level 0.
    The plan table is attached to the report (``ortcheck run`` writes it into summary.md)."""
    config = BloomConfig(dropout=0.1)
    eager = build_bloom(config, seed=0).to(options.device)
    results = {}
    for name, opts in (("level 0", options), (f"level {level}", dataclasses.replace(options, memory_opt_level=level))):
        module = impl.wrap(copy.deepcopy(eager), opts)
        optimizer = torch.optim.AdamW(module.parameters(), lr=1e-2)
        losses = []
        with applied(Determinism.for_device(options.device, 0), options.device):
            for step in range(3):
                ids = example_input_ids(config, seed=step, batch=2).to(options.device)
                optimizer.zero_grad()
                loss = causal_lm_loss(module(ids), ids)
                loss.backward()
                optimizer.step()
                losses.append(loss.detach())
        if name != "level 0" and (plans := impl.memory_plans(module)) is not None:
            request.node.user_properties.append(("memory_plans", f"Bloom-like LM (dropout 0.1), {plans.table}"))
        results[name] = {"losses": losses, "parameters": {k: p.detach() for k, p in module.named_parameters()}}
    assert_bitwise_equal(results[f"level {level}"], results["level 0"], path=f"level {level}")


@pytest.mark.parametrize("entry", ["Foo+:1:-1", "Gelu+:7:-1", "Gelu+:1", "Gelu+:1:-5"],
                         ids=["unknown_plan", "unknown_strategy", "two_fields", "count_below_-1"])
def test_a_malformed_config_entry_is_refused_by_name(impl, options, entry):
    """A config entry that can't be applied is an error naming it, at wrap or at the first training
    step, never silently ignored: a check run under it would pass without recomputing anything."""
    with pytest.raises(Exception) as raised:
        module = impl.wrap(CANONICAL.build_module(0).to(options.device),
                           dataclasses.replace(options, memory_opt_config=(entry,)))
        train_step(module, CANONICAL, [t.to(options.device) for t in CANONICAL.make_inputs(0)], 0, options.device)
    assert entry in str(raised.value), f"the error does not name the entry {entry!r}: {raised.value}"


@pytest.mark.parametrize("level", (1, 2))
def test_bloom_lm_curve_under_recompute_is_level_0s_bit_for_bit(impl, options, level):
    """The ``bloom_lm`` convergence case (40 AdamW steps) through the implementation at ``level``
    records the very losses, gradient norms and learning rates it records without recompute."""
    case = cases.get("bloom_lm")
    _, without = runner.run_pair(case, impl, options)
    _, with_recompute = runner.run_pair(case, impl, dataclasses.replace(options, memory_opt_level=level))
    assert_bitwise_equal([torch.tensor(c.metrics["loss"] + c.metrics["grad_norm"] + c.metrics["lr"], dtype=torch.float64)
                          for c in with_recompute.curves],
                         [torch.tensor(c.metrics["loss"] + c.metrics["grad_norm"] + c.metrics["lr"], dtype=torch.float64)
                          for c in without.curves], path=f"bloom_lm curve at level {level}")
