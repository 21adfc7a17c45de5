"""BatchNorm and InstanceNorm exported with their running-statistic writes as graph outputs
(reference/export/norms.py): run call after call in onnxruntime, feeding each call the buffers the
previous one wrote, the graph gives eager's outputs and buffers (float64, batch sizes varying)."""
import copy

import onnxruntime
import pytest
import torch
from torch import nn

from reference import nested_io
from reference.export import export_module
from reference.runtime import threads

STATISTICS = ("running_mean", "running_var", "num_batches_tracked")


def _export(module, x, training):
    tensors, schema = nested_io.flatten(((x,), {}))
    return export_module(module, tensors, schema, training=training)


def _run(exported, module, x, state):
    """One call of the graph on ``state`` (key -> tensor): the output and the new state."""
    options = threads.configure(onnxruntime.SessionOptions())  # the process's pool once the reference made one
    session = onnxruntime.InferenceSession(exported.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    wanted = {value.name for value in session.get_inputs()}
    feeds = {exported.input_names[0]: x.numpy(),
             **{name: state[key].detach().numpy() for name, key in zip(exported.state_names, exported.state_keys)}}
    results = session.run(None, {name: value for name, value in feeds.items() if name in wanted})
    end = len(results) - len(exported.guard_values)  # the written buffers come before the guards
    written = dict(zip(exported.written_buffers, results[end - len(exported.written_buffers):end]))
    return torch.from_numpy(results[0]), {**state, **{key: torch.from_numpy(value) for key, value in written.items()}}


def _calls_match_eager(module, shapes, training=True):
    """The module's graph, exported once, called on inputs of ``shapes`` like the module itself."""
    module = module.double().train(training)
    eager = copy.deepcopy(module)
    generator = torch.Generator().manual_seed(0)
    exported = _export(module, torch.randn(shapes[0], dtype=torch.float64, generator=generator), training)
    state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    for shape in shapes:
        x = torch.randn(shape, dtype=torch.float64, generator=generator) * 3 + 1
        out, state = _run(exported, module, x, state)
        with torch.no_grad():
            torch.testing.assert_close(out, eager(x))
        for key, buffer in eager.named_buffers():
            torch.testing.assert_close(state[key], buffer, msg=lambda m, k=key: f"{k}: {m}")
    return exported


@pytest.mark.parametrize("momentum", [0.1, 0.7, None], ids=lambda m: f"momentum={m}")
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_batch_norm_writes_eagers_running_statistics(momentum, affine):
    """ONNX's momentum is the old statistic's weight, its variance the population's; eager updates
    with ``momentum`` (None: the cumulative average over ``num_batches_tracked``) and N - 1."""
    exported = _calls_match_eager(nn.BatchNorm2d(3, momentum=momentum, affine=affine),
                                  [(2, 3, 4, 5), (5, 3, 1, 2), (1, 3, 2, 2)])
    assert exported.written_buffers == STATISTICS


def test_batch_norm_1d_over_batch_and_length():
    _calls_match_eager(nn.BatchNorm1d(4), [(3, 4), (2, 4)])
    _calls_match_eager(nn.BatchNorm1d(4), [(3, 4, 5), (2, 4, 1)])


def test_instance_norm_averages_its_per_sample_updates():
    exported = _calls_match_eager(nn.InstanceNorm1d(3, affine=True, track_running_stats=True),
                                  [(2, 3, 5), (4, 3, 2)])
    assert exported.written_buffers == STATISTICS[:2]  # InstanceNorm never counts its batches


@pytest.mark.parametrize("module", [nn.BatchNorm1d(4, track_running_stats=False), nn.InstanceNorm1d(4)],
                         ids=["batch_norm", "instance_norm"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_statistics_without_running_statistics_write_nothing(module, training):
    assert _calls_match_eager(module, [(3, 4, 2), (2, 4, 3)], training).written_buffers == ()


@pytest.mark.parametrize("module", [nn.BatchNorm2d(3), nn.BatchNorm2d(3, affine=False),
                                    nn.InstanceNorm2d(3, track_running_stats=True)], ids=["affine", "plain", "instance"])
def test_eval_reads_the_running_statistics_without_writing_them(module):
    """Without affine parameters too (the exporter alone cannot, for a dynamic channel axis); in
    float64 as plain ops (BatchNormalization's epsilon is a float32 attribute: 2.5e-13 off)."""
    with torch.no_grad():
        module.running_mean.normal_()
        module.running_var.uniform_(0.5, 1.5)
    exported = _calls_match_eager(module, [(2, 3, 4, 5), (1, 3, 2, 2)], training=False)
    assert exported.written_buffers == () and "BatchNormalization" not in {n.op_type for n in exported.model.graph.node}
