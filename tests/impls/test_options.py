"""The harness's ``Options``: validated on construction, and every option a pipeline's adapter does
not map refused by name, a field added to ``Options`` included, until an adapter maps it."""
from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from ortcheck import impls
from ortcheck.impls import Options, UnsupportedOptionError


@dataclasses.dataclass(frozen=True)
class GrownOptions(Options):
    """``Options`` as they are after someone adds a field no adapter maps yet."""

    new_knob: int = 0


def test_harness_options_are_validated_on_construction():
    with pytest.raises(ValueError, match="unknown device 'tpu'; valid: cpu, cuda"):
        Options(device="tpu")
    with pytest.raises(ValueError, match="memory_opt_level must be 0, 1 or 2"):
        Options(memory_opt_level=3)
    with pytest.raises(ValueError, match="unknown fallback policy 'sometimes'; valid: disable, auto"):
        Options(fallback="sometimes")


@pytest.mark.parametrize("name", ["reference", "ortmodule"])
def test_an_option_no_adapter_maps_is_refused_by_name_at_wrap_and_reconfigure(name):
    """Refused before the pipeline is even loaded: this runs where the pipeline is unavailable too."""
    impl = impls.get(name)
    refused = re.escape("does not implement Options(new_knob=1)")
    with pytest.raises(UnsupportedOptionError, match=refused):
        impl.wrap(torch.nn.Linear(2, 2), GrownOptions(new_knob=1))
    with pytest.raises(UnsupportedOptionError, match=refused):
        impl.reconfigure(torch.nn.Linear(2, 2), GrownOptions(new_knob=1))
