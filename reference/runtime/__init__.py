"""The runtime stage (docs/architecture.md): onnxruntime sessions and the autograd bridge between them and torch."""
from reference.runtime.bridge import OrtGraphFunction, TrainingRunner
from reference.runtime.session import Session

__all__ = ["OrtGraphFunction", "Session", "TrainingRunner"]
