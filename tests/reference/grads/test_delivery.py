"""The two ways gradients reach torch compute the same numbers; delivery as produced hands each
gradient over between stages and lets the backward's values go as it goes."""
import copy

import pytest
import torch

from ortcheck.models.bloom import BloomConfig, build_bloom, causal_lm_loss, example_input_ids
from reference import Options, ReferenceModule
from reference.runtime.staged_backward import StagedBackward

CONFIG = BloomConfig(num_layers=2)


def bloom_grads(mem_efficient: bool, **backward) -> tuple[dict, object]:
    wrapped = ReferenceModule(build_bloom(CONFIG, seed=0), Options(mem_efficient_grad=mem_efficient))
    ids = example_input_ids(CONFIG, seed=0, batch=2)
    causal_lm_loss(wrapped(ids), ids).backward(**backward)
    return {name: p.grad for name, p in wrapped.named_parameters()}, wrapped


def test_staged_and_whole_backward_give_the_same_gradients_bit_for_bit():
    whole, _ = bloom_grads(False)
    staged, wrapped = bloom_grads(True)
    assert len(wrapped._compiled[True].runner.staged) > len(staged) // 2  # cut, not one stage
    assert whole.keys() == staged.keys()
    assert all(torch.equal(whole[name], staged[name]) for name in whole)


@pytest.fixture
def stage_log(monkeypatch):
    """(stage index, number of live values) per stage run."""
    log = []
    run = StagedBackward.run

    def logged(self, index, live):
        log.append(("stage", index, len(live)))
        return run(self, index, live)

    monkeypatch.setattr(StagedBackward, "run", logged)
    return log


def test_each_gradient_is_accumulated_before_the_next_stage_runs(stage_log):
    model = build_bloom(CONFIG, seed=0)
    wrapped = ReferenceModule(model, Options(mem_efficient_grad=True))
    for name, p in model.named_parameters():
        p.register_post_accumulate_grad_hook(lambda p, name=name: stage_log.append(("accumulated", name)))
    ids = example_input_ids(CONFIG, seed=0, batch=2)
    causal_lm_loss(wrapped(ids), ids).backward()
    runner = wrapped._compiled[True].runner
    got = [event[:2] for event in stage_log]
    stages = len(runner.staged_by_stage)
    # token ids need no gradient: the tail stage (what leads to the inputs' gradients) never runs
    assert [e for e in got if e[0] == "stage"] == [("stage", index) for index in range(stages - 1)]
    assert not runner.staged_by_stage[-1]
    position = {event: i for i, event in enumerate(got)}
    for index, names in enumerate(runner.staged_by_stage[:-1]):
        assert names
        for name in names:
            at = position[("accumulated", name.removeprefix("module."))]
            assert position[("stage", index)] < at
            assert index + 2 == stages or at < position[("stage", index + 1)]
    live = [event[2] for event in stage_log if event[0] == "stage"]
    assert live[-1] < live[0]  # stashed activations go as their last reader runs


def test_autograd_grad_captures_without_touching_dot_grad_and_backward_inputs_selects():
    model = build_bloom(CONFIG, seed=0)
    eager = copy.deepcopy(model)
    wrapped = ReferenceModule(model, Options(mem_efficient_grad=True))
    ids = example_input_ids(CONFIG, seed=0, batch=2)
    params = [p for _, p in model.named_parameters()]
    grads = torch.autograd.grad(causal_lm_loss(wrapped(ids), ids), params)
    assert all(p.grad is None for p in params)
    expected = torch.autograd.grad(causal_lm_loss(eager(ids), ids), list(eager.parameters()))
    assert all(torch.allclose(g, e, rtol=1e-4, atol=1e-6) for g, e in zip(grads, expected))
    causal_lm_loss(wrapped(ids), ids).backward(inputs=params[:1])
    assert params[0].grad is not None and all(p.grad is None for p in params[1:])
