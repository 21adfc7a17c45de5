"""Cheap clean-ups of the exported graph: none changes a number eager PyTorch computes.

``nn.Dropout(0.0)`` (a model configured without dropout) still exports as a training-mode
Dropout node, which makes onnxruntime draw and write a mask every step for nothing. Removing it
outright (rather than leaving an Identity) also lets recompute trace through where it stood.

``padding="same"`` exports as ``auto_pad=SAME_UPPER``, which onnxruntime refuses with a dilation
("Dilation not supported for AutoPadType::SAME_UPPER"). PyTorch allows "same" only with stride 1,
where the padding is ``dilation·(kernel - 1)`` whatever the input size, the odd one at the end:
explicit pads say the same and every kernel takes them.

PyTorch's ConvTranspose accepts an ``output_padding`` below the stride *or* the dilation;
onnxruntime only below the stride ("output_padding (1) may be too large for stride (1)"). Such
output padding only moves the end of the crop: it becomes a smaller end pad, and where it exceeds
the end pad, zeros appended by a Pad (before the bias, which the appended positions hold).

Integer arithmetic on constants (``Mod``, ``Reshape``... of shape pieces, as ``unflatten`` emits
in ``nn.MultiheadAttention``'s packed projection) is beyond ONNX's shape inference, which then
loses the rank of everything downstream; the export runs without constant folding (parameters
must stay inputs), so those small integer nodes are folded here.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper


def drop_zero_dropouts(model: onnx.ModelProto) -> None:
    """Remove Dropout nodes whose ratio is a constant 0 and whose mask nobody reads: their readers
    read the input instead (an Identity stays where the output is a graph output)."""
    graph = model.graph
    constants = _scalar_constants(graph)
    read = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    outputs = {o.name for o in graph.output}
    replaced: dict[str, str] = {}
    kept = []
    for node in graph.node:
        node.input[:] = [replaced.get(name, name) for name in node.input]
        zero = (node.op_type == "Dropout" and not node.domain and len(node.input) >= 2
                and constants.get(node.input[1]) == 0.0 and not (len(node.output) > 1 and node.output[1] in read))
        if zero and node.output[0] not in outputs:
            replaced[node.output[0]] = node.input[0]
            continue
        if zero:
            del node.input[1:]
            del node.output[1:]
            node.op_type = "Identity"
        kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)


def _scalar_constants(graph: onnx.GraphProto) -> dict[str, float]:
    found = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            found[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return {name: float(value.item()) for name, value in found.items() if value.size == 1 and value.dtype.kind == "f"}



def explicit_same_pads(model: onnx.ModelProto) -> None:
    """Rewrite Conv nodes padded SAME_UPPER/SAME_LOWER with unit strides to their explicit pads."""
    for node in model.graph.node:
        if node.op_type != "Conv" or node.domain:
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        mode = attrs.get("auto_pad", b"NOTSET").decode()
        kernel, strides = attrs.get("kernel_shape"), attrs.get("strides") or [1] * len(attrs.get("kernel_shape", []))
        if mode not in ("SAME_UPPER", "SAME_LOWER") or not kernel or any(s != 1 for s in strides):
            continue
        dilations = attrs.get("dilations") or [1] * len(kernel)
        totals = [d * (k - 1) for k, d in zip(kernel, dilations)]
        small = [t // 2 for t in totals]
        large = [t - h for t, h in zip(totals, small)]
        pads = small + large if mode == "SAME_UPPER" else large + small
        kept = [a for a in node.attribute if a.name != "auto_pad"]
        del node.attribute[:]
        node.attribute.extend(kept + [onnx.helper.make_attribute("pads", pads)])


def output_padding_as_pads(model: onnx.ModelProto) -> None:
    """Rewrite ConvTranspose nodes whose output_padding reaches a stride (onnxruntime refuses them)
    to the same output: end pads reduced by it, and a Pad of zeros for what the pads can't absorb."""
    graph, rewritten = model.graph, []
    for node in graph.node:
        rewritten.append(node)
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        extra = attrs.get("output_padding")
        spatial = len(extra or [])
        strides = attrs.get("strides") or [1] * spatial
        if node.op_type != "ConvTranspose" or node.domain or not extra or all(o < s for o, s in zip(extra, strides)):
            continue
        pads = attrs.get("pads") or [0] * (2 * spatial)
        ends = pads[spatial:]
        kept = [a for a in node.attribute if a.name not in ("output_padding", "pads")]
        del node.attribute[:]
        node.attribute.extend(kept + [helper.make_attribute("pads", pads[:spatial] + [max(e - o, 0) for e, o in
                                                                                        zip(ends, extra)])])
        zeros = [max(o - e, 0) for e, o in zip(ends, extra)]
        if any(zeros):  # appended positions hold the bias alone: pad before adding it
            output, bias = node.output[0], node.input[2] if len(node.input) > 2 and node.input[2] else None
            del node.input[2:]
            node.output[0] = f"{output}_before_output_padding"
            amounts, padded = f"{output}_output_padding", f"{output}_padded" if bias else output
            graph.initializer.append(numpy_helper.from_array(np.array([0] * (2 + spatial) + [0, 0] + zeros,
                                                                      dtype=np.int64), amounts))
            rewritten.append(helper.make_node("Pad", [node.output[0], amounts], [padded],
                                              name=f"{node.name}_output_padding"))
            if bias:
                shape = f"{output}_bias_shape"
                graph.initializer.append(numpy_helper.from_array(np.array([-1] + [1] * spatial, dtype=np.int64), shape))
                rewritten.append(helper.make_node("Reshape", [bias, shape], [f"{output}_bias"], name=f"{node.name}_bias"))
                rewritten.append(helper.make_node("Add", [padded, f"{output}_bias"], [output], name=f"{node.name}_add_bias"))
    del graph.node[:]
    graph.node.extend(rewritten)


_FOLDED_OPS = {"Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Reshape", "Concat", "Unsqueeze", "Squeeze", "Slice",
               "Gather", "Cast", "Range", "Identity", "Max", "Min", "Equal", "Where", "Not", "Less", "Greater", "Shape",
               "Size", "ConstantOfShape", "Transpose", "Expand", "Tile", "Flatten", "ReduceProd", "ReduceSum"}
_MAX_FOLDED_ELEMENTS = 64


def fold_integer_constants(model: onnx.ModelProto) -> None:
    """Replace each node of :data:`_FOLDED_OPS` whose inputs are all small integer constants by a
    Constant holding its result (evaluated by onnx's reference evaluator), reading a size that
    shape inference knows (``Gather(Shape(x), i)``) as a constant too; then an ``If`` whose
    condition became constant is replaced by the branch it takes. No float value changes."""
    for _ in range(_MAX_FOLDING_PASSES):  # a folded pad or shape lets inference size what follows it
        if not _fold_once(model):
            break


_MAX_FOLDING_PASSES = 4


def _fold_once(model: onnx.ModelProto) -> bool:
    from onnx.reference import ReferenceEvaluator

    graph, folded = model.graph, False
    graph_inputs = {value.name for value in graph.input}
    known = {t.name: numpy_helper.to_array(t) for t in graph.initializer if t.name not in graph_inputs}
    shape_of = {node.output[0]: node.input[0] for node in graph.node if node.op_type == "Shape" and len(node.attribute) == 0}
    # shape inference over the whole graph, only where some Gather reads a Shape's output
    static_dims = _static_dims(model) if any(
        node.op_type == "Gather" and node.input[0] in shape_of for node in graph.node) else {}
    opsets = list(model.opset_import)
    for index, node in enumerate(graph.node):
        if node.op_type == "Constant" and not node.domain and node.attribute[0].name == "value":
            known[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
            continue
        value = _static_size(node, known, static_dims, shape_of)
        if value is None:
            inputs = [known.get(name) for name in node.input if name]
            if (node.op_type not in _FOLDED_OPS or node.domain or len(node.output) != 1 or not inputs
                    or any(v is None or v.dtype.kind not in "iub" or v.size > _MAX_FOLDED_ELEMENTS for v in inputs)):
                continue
            single = helper.make_model(helper.make_graph(
                [node], "fold", [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(known[name].dtype), None)
                                 for name in dict.fromkeys(n for n in node.input if n)],
                [helper.make_tensor_value_info(node.output[0], onnx.TensorProto.UNDEFINED, None)]), opset_imports=opsets)
            value = np.asarray(ReferenceEvaluator(single).run(None, {n: known[n] for n in node.input if n})[0])
        if value.dtype.kind not in "iub" or value.size > _MAX_FOLDED_ELEMENTS:
            continue
        known[node.output[0]] = value
        graph.node[index].CopyFrom(helper.make_node("Constant", [], [node.output[0]], name=node.name,
                                                    value=numpy_helper.from_array(value)))
        folded = True
    return _take_constant_branches(graph, known) or folded


def _static_dims(model: onnx.ModelProto) -> dict[str, list]:
    inferred = onnx.shape_inference.infer_shapes(model)
    return {value.name: [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]
            for value in [*inferred.graph.value_info, *inferred.graph.input] if value.type.tensor_type.HasField("shape")}


def _static_size(node, known, static_dims, shape_of) -> np.ndarray | None:
    """``Gather(Shape(x), i)`` where shape inference knows x's size along i (a constant i)."""
    if node.op_type != "Gather" or node.domain or node.input[0] not in shape_of or node.input[1] not in known:
        return None
    dims, index = static_dims.get(shape_of[node.input[0]]), known[node.input[1]]
    if dims is None or index.dtype.kind not in "iu":
        return None
    picked = [dims[int(i)] for i in index.reshape(-1)]
    return None if None in picked else np.array(picked, dtype=np.int64).reshape(index.shape)


def _take_constant_branches(graph: onnx.GraphProto, known: dict[str, np.ndarray]) -> bool:
    rewritten, taken = [], False
    for node in graph.node:
        condition = known.get(node.input[0]) if node.op_type == "If" and not node.domain else None
        if condition is None or condition.size != 1:
            rewritten.append(node)
            continue
        taken = True
        branch = next(a.g for a in node.attribute if a.name == ("then_branch" if condition.item() else "else_branch"))
        renamed = {output.name: name for output, name in zip(branch.output, node.output)}
        produced = {name for inner in branch.node for name in inner.output}
        for inner in branch.node:
            inner.output[:] = [renamed.get(name, name) for name in inner.output]
            rewritten.append(inner)
        rewritten += [helper.make_node("Identity", [output.name], [renamed[output.name]], name=f"{node.name}_taken")
                      for output in branch.output if output.name not in produced]  # an outer value passed on
    if taken:  # else the graph stays as it is, not copied node by node
        del graph.node[:]
        graph.node.extend(rewritten)
    return taken
