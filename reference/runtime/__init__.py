"""The runtime stage (docs/architecture.md): onnxruntime sessions fed without copies, and the
runner that feeds a gradient build's forward and backward graphs."""
from reference.runtime.runner import TrainingRunner
from reference.runtime.session import Session

__all__ = ["Session", "TrainingRunner"]
