"""The export stage (docs/architecture.md): a module and its flattened inputs -> an ONNX training graph."""
from reference.export.exporter import ExportedGraph, ExportError, export_module

__all__ = ["ExportedGraph", "ExportError", "export_module"]
