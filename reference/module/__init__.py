"""Stage 9 (DESIGN.md): the ORTModule-like wrapper."""
from reference.module.wrapper import ReferenceModule

__all__ = ["ReferenceModule"]
