"""The export stage: parameters as inputs, dynamic axes, mode handling, clean-ups."""
import torch

from reference import nested_io
from reference.export import export_module
from reference.runtime import threads


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


def _runs_like_eager(module, x):
    """The exported graph's output in onnxruntime equals the module's; returns the export."""
    import onnxruntime

    exported = _export(module, x)
    options = threads.configure(onnxruntime.SessionOptions())  # the process's pool once the reference made one
    session = onnxruntime.InferenceSession(exported.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    state = dict(module.named_parameters())
    feeds = {session.get_inputs()[0].name: x.numpy(),
             **{name: state[key].detach().numpy() for name, key in zip(exported.state_names, exported.state_keys)}}
    torch.testing.assert_close(torch.from_numpy(session.run(None, feeds)[0]), module(x).detach())
    return exported


def _attrs(exported, op_type):
    import onnx

    node = next(node for node in exported.model.graph.node if node.op_type == op_type)
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def test_same_padding_exports_as_explicit_pads_that_onnxruntime_runs_with_a_dilation():
    """onnxruntime refuses SAME_UPPER with a dilation; torch's "same" (stride 1) is static padding."""
    exported = _runs_like_eager(torch.nn.Conv2d(2, 3, (4, 3), padding="same", dilation=(2, 3)), torch.randn(1, 2, 9, 7))
    attrs = _attrs(exported, "Conv")
    assert "auto_pad" not in attrs and attrs["pads"] == [3, 3, 3, 3]  # totals (6, 6): half before, half after


def test_output_padding_up_to_the_dilation_exports_as_pads_onnxruntime_runs():
    """torch allows output_padding < max(stride, dilation), onnxruntime only < stride."""
    for padding, pads in ((1, [1, 0]), (0, [0, 0])):  # the end pad absorbs it, or a Pad of zeros appends it
        module = torch.nn.ConvTranspose1d(2, 3, 3, stride=1, padding=padding, output_padding=1, dilation=2)
        exported = _runs_like_eager(module, torch.randn(1, 2, 4))
        assert "output_padding" not in _attrs(exported, "ConvTranspose") and _attrs(exported, "ConvTranspose")["pads"] == pads


def test_integer_shape_arithmetic_is_folded_so_shape_inference_keeps_every_rank():
    """MultiheadAttention's packed projection unflattens with Mod/Reshape of constants, beyond ONNX's
    shape inference: unfolded, every value after it had no rank (and the gradient needs ranks)."""
    import onnx

    class SelfAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = torch.nn.MultiheadAttention(4, 2)

        def forward(self, x):
            return self.attention(x, x, x, need_weights=False)[0]

    exported = _runs_like_eager(SelfAttention(), torch.randn(3, 2, 4))
    inferred = onnx.shape_inference.infer_shapes(exported.model, data_prop=True)
    typed = {v.name: v.type.tensor_type for v in [*inferred.graph.value_info, *inferred.graph.output]}
    unranked = [name for node in inferred.graph.node for name in node.output
                if name in typed and not typed[name].HasField("shape")]
    assert not unranked and not [n for n in exported.model.graph.node if n.op_type == "Mod"]


def test_sizes_shape_inference_knows_fold_and_decide_a_shape_only_if():
    """LocalResponseNorm squeezes an axis it unsqueezed: the exporter's If(size == 1) is decided at
    export (the size is static), so every value keeps a rank for the gradient builder."""
    import onnx

    exported = _runs_like_eager(torch.nn.LocalResponseNorm(2), torch.randn(3, 2, 4))
    assert not [node for node in exported.model.graph.node if node.op_type == "If"]
    inferred = onnx.shape_inference.infer_shapes(exported.model, data_prop=True)
    assert all(value.type.tensor_type.HasField("shape") for value in inferred.graph.value_info)
