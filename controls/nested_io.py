"""Controls of the nested-I/O suites: flattening, schemas, and outputs through the module."""
from ortcheck.impls.eager import EagerImpl
from ortcheck.impls.eager_io import EagerSchema, TensorSlot
from ortcheck.nested import map_leaves

from controls.base import Control


class ClonesTensors(Control, EagerImpl):
    """unflatten hands back copies instead of the caller's tensor objects."""
    caught_by = ("suites/test_io_roundtrip.py::test_roundtrip[clones_tensors-core]",)

    def unflatten(self, tensors, schema):
        return super().unflatten([t.detach().clone() for t in tensors], schema)


class SizeSensitiveSchema(Control, EagerImpl):
    """Treats tensor sizes as part of the schema (would re-export on every new batch size)."""
    caught_by = ("suites/test_io_schema.py::test_sizes_do_not_change_schema[size_sensitive_schema-core]",)

    def flatten(self, data):
        tensors, schema = super().flatten(data)
        return tensors, (schema, tuple(tuple(t.shape) for t in tensors))


class DtypeBlindSchema(Control, EagerImpl):
    """Ignores tensor dtypes when comparing schemas (would reuse a graph built for another dtype)."""
    caught_by = ("suites/test_io_schema.py::test_schema_sees_each_change[dtype_blind_schema-dtype]",)

    def same_schema(self, a, b):
        def dtype_erased(schema):
            return EagerSchema(map_leaves(schema.skeleton, lambda leaf: ("tensor of rank", leaf.spec[1])
                                          if isinstance(leaf, TensorSlot) else leaf), ())

        return dtype_erased(a) == dtype_erased(b)


class OutputsOffByOnePermille(Control, EagerImpl):
    """Outputs drift by a relative 1e-3: the through-module property must see it."""
    caught_by = ("suites/test_io_through_module.py::test_nested_io_through_module[outputs_off_by_one_permille-core]",)

    def wrap(self, module, options=None):
        original = module.forward

        def forward(*args, **kwargs):
            outputs = original(*args, **kwargs)
            outputs["x"] = outputs["x"] * 1.001
            return outputs

        module.forward = forward
        return module
