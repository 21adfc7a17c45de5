"""The export stage: parameters as inputs, dynamic axes, mode handling, clean-ups."""
import torch

from reference import nested_io
from reference.export import export_module


def _export(module, *args, training=True):
    tensors, schema = nested_io.flatten((args, {}))
    return export_module(module, tensors, schema, training=training)


def test_parameters_become_graph_inputs_named_by_their_keys():
    module = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    exported = _export(module, torch.randn(4, 3))
    assert set(exported.state_keys) == {k for k, _ in module.named_parameters()}
    graph_inputs = [value.name for value in exported.model.graph.input]
    assert graph_inputs[: len(exported.input_names)] == list(exported.input_names)
    assert not {t.name for t in exported.model.graph.initializer} & set(exported.state_names)


def test_every_input_dimension_is_dynamic():
    exported = _export(torch.nn.Linear(3, 2), torch.randn(4, 5, 3))
    dims = exported.model.graph.input[0].type.tensor_type.shape.dim
    assert all(d.dim_param and not d.dim_value for d in dims)


def test_zero_ratio_dropout_exports_as_identity_but_real_dropout_stays():
    no_dropout = _export(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.0)), torch.randn(2, 3))
    dropout = _export(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.1)), torch.randn(2, 3))
    assert "Dropout" not in {n.op_type for n in no_dropout.model.graph.node}
    assert "Dropout" in {n.op_type for n in dropout.model.graph.node}


def test_export_leaves_the_module_in_its_mode():
    module = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5)).eval()
    _export(module, torch.randn(2, 3), training=False)
    assert not module.training
