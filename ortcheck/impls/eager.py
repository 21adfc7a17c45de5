"""``eager``: the module itself. The oracle, and a sanity run of every property."""
from __future__ import annotations

import torch

from ortcheck.impls.eager_io import EagerIO
from ortcheck.impls.base import Capability, Implementation, Options


class EagerImpl(EagerIO, Implementation):
    """Eager PyTorch never flattens; the harness's own flatten (:mod:`.eager_io`) stands in so the I/O
    properties get a sanity run."""

    name = "eager"
    CAPABILITIES = frozenset({Capability.IO_ROUNDTRIP, Capability.IO_SCHEMA, Capability.IO_THROUGH_MODULE,
                              Capability.TRAINS, Capability.TRANSITIONS, Capability.MEM_EFFICIENT_GRAD,
                              Capability.CONVERGENCE, Capability.BNB4})

    def wrap(self, module: torch.nn.Module, options: Options = Options()) -> torch.nn.Module:
        return module.to(options.device)

    def reconfigure(self, wrapped: torch.nn.Module, options: Options) -> None:
        """Eager has no pipeline the options could change."""

