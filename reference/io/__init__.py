"""Stage 1 (DESIGN.md): nested inputs/outputs <-> (tensors, schema), on ``torch.utils._pytree``."""
from reference.io.flatten import flatten, unflatten
from reference.io.schema import Constant, Schema, TensorSpec

__all__ = ["flatten", "unflatten", "Schema", "TensorSpec", "Constant"]
