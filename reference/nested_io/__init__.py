"""The nested_io stage (docs/architecture.md): nested inputs/outputs <-> (tensors, schema), on ``torch.utils._pytree``."""
from reference.nested_io.flatten import flatten, unflatten
from reference.nested_io.schema import Constant, GraphNumber, Schema, TensorSpec, TracedNumber

__all__ = ["flatten", "unflatten", "Schema", "TensorSpec", "Constant", "GraphNumber", "TracedNumber"]
