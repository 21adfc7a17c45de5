"""Deliberately broken implementations: each suite must catch the defect it is about."""
import torch

from ortcheck.impls import Options
from ortcheck.impls.eager import EagerImpl
from ortcheck.impls.reference import ReferenceImpl
from reference.io import flatten, unflatten
from reference.transitions import Graphs


class ClonesTensors(EagerImpl):
    """unflatten hands back copies instead of the caller's tensor objects."""
    name = "clones_tensors"

    def unflatten(self, tensors, schema):
        return unflatten([t.detach().clone() for t in tensors], schema)


class SizeSensitiveSchema(EagerImpl):
    """Treats tensor sizes as part of the schema (would re-export on every new batch size)."""
    name = "size_sensitive"

    def flatten(self, data):
        tensors, schema = flatten(data)
        return tensors, (schema, tuple(tuple(t.shape) for t in tensors))


class DtypeBlindSchema(EagerImpl):
    """Ignores tensor dtypes when comparing schemas (would reuse a graph built for another dtype)."""
    name = "dtype_blind"

    def same_schema(self, a, b):
        erase = lambda schema: [getattr(leaf, "rank", leaf) for leaf in schema.leaves]
        return a.tree == b.tree and erase(a) == erase(b)


class OffByOneUlp(EagerImpl):
    """Outputs drift by a relative 1e-3: the through-module property must see it."""
    name = "drifting"

    def wrap(self, module, options=None):
        original = module.forward

        def forward(*args, **kwargs):
            outputs = original(*args, **kwargs)
            outputs["x"] = outputs["x"] * 1.001
            return outputs

        module.forward = forward
        return module


class GradientsOffByOnePermille(EagerImpl):
    """Parameter gradients scaled by 1.001 on their way back: grad parity must see it."""
    name = "grad_scaled"

    def wrap(self, module, options=None):
        for parameter in module.parameters():
            parameter.register_hook(lambda grad: grad * 1.001)
        return module


class ReexportsOnNewSizes(ReferenceImpl):
    """Re-exports whenever an input size changes, as if sizes were in the schema: outputs and gradients
    stay right, so only the transition counters can tell."""
    name = "reexports_on_new_sizes"

    def wrap(self, module, options=Options()):
        wrapped = super().wrap(module, options)
        prepare = wrapped._prepare

        def prepare_by_sizes(tensors, schema):
            sizes = [tuple(t.shape) for t in tensors]
            if wrapped.__dict__.setdefault("_last_sizes", sizes) != sizes:
                wrapped.__dict__["_graphs"] = Graphs()  # forget every graph: the next call exports anew
            wrapped.__dict__["_last_sizes"] = sizes
            prepare(tensors, schema)

        wrapped.__dict__["_prepare"] = prepare_by_sizes  # instance attribute, past the pass-through __setattr__
        return wrapped
