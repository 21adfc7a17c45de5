"""The module stage (docs/architecture.md): the ORTModule-like wrapper."""
from reference.module.wrapper import ReferenceModule

__all__ = ["ReferenceModule"]
