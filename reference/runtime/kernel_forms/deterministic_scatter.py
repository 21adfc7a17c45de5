"""``ScatterND(reduction="add")`` along the first axis as a product with a one-hot matrix, for CUDA
sessions under torch's deterministic mode.

onnxruntime's CUDA ScatterND adds colliding updates with atomics (its source says so), so the order
of the sums, and the last bits of an embedding's gradient (every token of a batch adds into the
rows it looked up), change from run to run: recompute levels were not bitwise on an H200
(``word_embeddings.weight``, 899 of 2048 elements, up to 1814 ulp). ``use_deterministic_compute``
does not reach that kernel. Here, for indices addressing the first axis (``[..., 1]``, what the
reference's Gather and embedding gradients emit)::

    out = data + OneHot(indices)ᵀ @ updates      # [rows, N] @ [N, rest], summed in float64

a cuBLAS product, deterministic on one device, summing in float64 and rounding once (at least as
close to the exact sum as eager's float32 accumulation). It costs ``rows x N`` float64 of memory,
so it applies only where torch asked for determinism, and to float64 data, which the CUDA kernel
refuses to reduce at all. Indices of another depth are left alone.
"""
from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from reference.runtime.kernel_forms.nodes import int64_constant, rewrite_nodes, tensor_types


def _first_axis_scatters(model: onnx.ModelProto, elem_types: set[int] | None) -> set[str]:
    """Outputs of the ScatterND(add) nodes whose indices' last dimension is statically 1 (and whose
    data has one of ``elem_types``, None: any)."""
    if not any(node.op_type == "ScatterND" for node in model.graph.node):
        return set()
    types = tensor_types(model)
    found = set()
    for node in model.graph.node:
        if node.op_type == "ScatterND" and node.domain in ("", "ai.onnx") and _reduction(node) == "add":
            indices, data = types.get(node.input[1]), types.get(node.input[0])
            dims = indices.shape.dim if indices is not None and indices.HasField("shape") else []
            if (dims and dims[-1].HasField("dim_value") and dims[-1].dim_value == 1
                    and (elem_types is None or (data is not None and data.elem_type in elem_types))):
                found.add(node.output[0])
    return found


def _reduction(node: onnx.NodeProto) -> str:
    return next((helper.get_attribute_value(a).decode() for a in node.attribute if a.name == "reduction"), "none")


def scatter_add_as_products(model: onnx.ModelProto, elem_types: set[int] | None = None) -> onnx.ModelProto:
    """A copy of ``model`` whose first-axis ScatterND(add) nodes (of its top-level graph, where shapes
    are inferred) are one-hot products; ``model`` itself where it has none."""
    targets = _first_axis_scatters(model, elem_types)
    if not targets:
        return model

    def rewrite(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        return _as_product(graph, node) if node.output[0] in targets else None

    return rewrite_nodes(model, rewrite)


def _as_product(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    data, indices, updates = node.input[:3]
    out = node.output[0]
    v = lambda suffix: f"{out}__det_{suffix}"  # noqa: E731
    first, minus_one = int64_constant(graph, "__det_first", [0]), int64_constant(graph, "__det_minus_one", [-1])
    zero, one = int64_constant(graph, "__det_zero", 0), int64_constant(graph, "__det_one", 1)
    one_list, big = int64_constant(graph, "__det_one_list", [1]), int64_constant(graph, "__det_end", [2**62])
    make = helper.make_node
    return [
        make("Shape", [data], [v("shape")]),
        make("Gather", [v("shape"), first], [v("rows1")]),                      # [1]
        make("Squeeze", [v("rows1")], [v("rows")]),                              # scalar
        make("Slice", [v("shape"), one_list, big], [v("rest_dims")]),
        make("ReduceProd", [v("rest_dims")], [v("rest")], keepdims=1),          # [1]: 1 for a rank-1 data
        make("Reshape", [indices, minus_one], [v("ids_raw")]),                   # [N]
        make("Less", [v("ids_raw"), zero], [v("negative")]),
        make("Add", [v("ids_raw"), v("rows")], [v("ids_wrapped")]),
        make("Where", [v("negative"), v("ids_wrapped"), v("ids_raw")], [v("ids")]),
        make("Range", [zero, v("rows"), one], [v("row_ids")]),                   # [rows]
        make("Unsqueeze", [v("row_ids"), one_list], [v("row_col")]),
        make("Unsqueeze", [v("ids"), first], [v("id_row")]),
        make("Equal", [v("row_col"), v("id_row")], [v("hits")]),                 # [rows, N]
        make("Cast", [v("hits")], [v("onehot")], to=TensorProto.DOUBLE),
        make("Shape", [v("ids")], [v("n")]),
        make("Concat", [v("n"), v("rest")], [v("flat_updates_shape")], axis=0),
        make("Reshape", [updates, v("flat_updates_shape")], [v("flat_updates")], allowzero=1),  # [N, rest]
        make("Cast", [v("flat_updates")], [v("updates64")], to=TensorProto.DOUBLE),
        make("MatMul", [v("onehot"), v("updates64")], [v("summed")]),            # [rows, rest]
        make("Concat", [v("rows1"), v("rest")], [v("flat_data_shape")], axis=0),
        make("Reshape", [data, v("flat_data_shape")], [v("flat_data")], allowzero=1),
        make("Cast", [v("flat_data")], [v("data64")], to=TensorProto.DOUBLE),
        make("Add", [v("data64"), v("summed")], [v("total")]),
        make("Reshape", [v("total"), v("shape")], [v("total_shaped")], allowzero=1),  # a 0 is a size here
        make("CastLike", [v("total_shaped"), data], [out], name=f"{node.name}__deterministic"),
    ]


def double_scatter_add_as_products(model: onnx.ModelProto) -> onnx.ModelProto:
    """float64 ScatterND(add) as the product, on CUDA always: onnxruntime's CUDA ScatterND has no
    float64 reduction ("element_type 11 not implemented for ScatterND operator", 1.31.1 on an H100:
    the gradient of a float64 embedding or index_select)."""
    return scatter_add_as_products(model, {TensorProto.DOUBLE})
