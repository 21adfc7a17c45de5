"""Controls of the nested-I/O suites: flattening, schemas, and outputs through the module."""
from ortcheck.impls.eager import EagerImpl
from reference.nested_io import flatten, unflatten

from controls.base import Control


class ClonesTensors(Control, EagerImpl):
    """unflatten hands back copies instead of the caller's tensor objects."""
    caught_by = ("suites/test_io_roundtrip.py::test_roundtrip[clones_tensors-core]",)

    def unflatten(self, tensors, schema):
        return unflatten([t.detach().clone() for t in tensors], schema)


class SizeSensitiveSchema(Control, EagerImpl):
    """Treats tensor sizes as part of the schema (would re-export on every new batch size)."""
    caught_by = ("suites/test_io_schema.py::test_sizes_do_not_change_schema[size_sensitive_schema-core]",)

    def flatten(self, data):
        tensors, schema = flatten(data)
        return tensors, (schema, tuple(tuple(t.shape) for t in tensors))


class DtypeBlindSchema(Control, EagerImpl):
    """Ignores tensor dtypes when comparing schemas (would reuse a graph built for another dtype)."""
    caught_by = ("suites/test_io_schema.py::test_schema_sees_each_change[dtype_blind_schema-dtype]",)

    def same_schema(self, a, b):
        erase = lambda schema: [getattr(leaf, "rank", leaf) for leaf in schema.leaves]
        return a.tree == b.tree and erase(a) == erase(b)


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
