"""The transition contract and the reference pipeline use one vocabulary, each writing its own copy.

The contract is the independent specification (it shares no code with ``reference/``), so the two
copies are compared here instead of shared: the reasons a transition gives, and which options
rebuild the gradient graphs alone. Renaming a reason or adding a memory option on one side fails
here, not as a counter mismatch deep in a drawn sequence.
"""
import dataclasses

import pytest
import torch

from ortcheck import impls
from ortcheck.impls import Options
from ortcheck.stateful import contract
from reference import options as reference_options
from reference.transitions import state_machine

# Reasons only the reference gives, and why the contract predicts none of them.
REFERENCE_ONLY = {state_machine.SIZES_CHANGED: "the contract's subject returns a tensor only: no graph of it is keyed by sizes",
                  state_machine.LENGTH_CHANGED: "the contract's subject holds no recurrence: no graph of it unrolls one"}
# A value other than the default for each memory option.
CHANGED = {"memory_opt_level": 1, "memory_opt_config": ("Gelu+:1:-1",), "mem_efficient_grad": True}


def _reason_names(module) -> dict[str, str]:
    return {name: value for name, value in vars(module).items()
            if name.isupper() and isinstance(value, str) and value in module.REASONS}


def test_the_contract_names_each_reason_as_the_reference_does():
    contract_reasons, reference_reasons = _reason_names(contract), _reason_names(state_machine)
    assert set(contract_reasons.values()) == set(contract.REASONS)  # every reason has its constant
    assert {name: reference_reasons.get(name) for name in contract_reasons} == contract_reasons
    assert set(state_machine.REASONS) - set(contract.REASONS) == set(REFERENCE_ONLY)


def test_the_same_options_rebuild_the_gradient_graphs_alone():
    assert contract.MEMORY_OPTIONS == reference_options.MEMORY_OPTIONS
    assert set(contract.MEMORY_OPTIONS) <= {field.name for field in dataclasses.fields(Options)}
    assert set(reference_options.MEMORY_OPTIONS) <= {field.name for field in dataclasses.fields(reference_options.Options)}
    assert set(CHANGED) == set(contract.MEMORY_OPTIONS)


@pytest.mark.parametrize("option", sorted(CHANGED))
def test_a_changed_memory_option_rebuilds_the_gradient_graphs_of_the_reference_as_the_contract_says(option):
    impl = impls.get("reference")
    if impl.unavailable_reason():
        pytest.skip(impl.unavailable_reason())
    before, after = Options(), dataclasses.replace(Options(), **{option: CHANGED[option]})
    assert contract.memory_options(before) != contract.memory_options(after)
    torch.manual_seed(0)
    wrapped = impl.wrap(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 2)), before)
    wrapped(torch.randn(2, 3)).sum().backward()
    impl.reconfigure(wrapped, after)
    wrapped(torch.randn(2, 3)).sum().backward()
    observed = impl.observe(wrapped)
    assert (observed.last_reason, observed.exports, observed.gradient_builds) == (contract.MEMORY_OPTIONS_CHANGED, 1, 2)
