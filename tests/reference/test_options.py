"""The reference's ``Options`` parse the recompute config once, when built: a malformed entry or an
unreadable file fails there, and every stage after reads the parsed entries, never the file."""
import dataclasses
import json

import pytest
import torch

from reference import Options, ReferenceModule
from reference.recompute import RecomputeConfigError
from reference.recompute.config import Entry


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 2))


def test_a_malformed_entry_fails_when_the_options_are_built_naming_it():
    with pytest.raises(RecomputeConfigError, match="entry 'Gelu\\+:1' has 2 field\\(s\\); expected 3"):
        Options(memory_opt_config=("Gelu+:1:-1", "Gelu+:1"))


def test_the_entries_are_parsed_from_a_list_and_again_when_replaced():
    options = Options(memory_opt_config=["Gelu+:1:-1"])
    assert options.memory_opt_config == ("Gelu+:1:-1",) and options.memory_opt_entries == (Entry("Gelu+", 1, -1),)
    replaced = dataclasses.replace(options, memory_opt_config=("Gelu+:1:1",))
    assert replaced.memory_opt_entries == (Entry("Gelu+", 1, 1),)
    assert Options().memory_opt_entries == ()


def test_a_config_file_is_read_once_when_the_options_are_built(tmp_path):
    path = tmp_path / "plans.json"
    path.write_text(json.dumps(["Gelu+:1:-1"]))
    options = Options(memory_opt_config=str(path))
    path.unlink()  # whatever reads the config after construction would fail on the missing file
    wrapped = ReferenceModule(_mlp(), options)
    wrapped(torch.randn(2, 3)).sum().backward()
    assert {row.name: row.applied for row in wrapped.memory_report().plans}["Gelu+"] == 1
    with pytest.raises(RecomputeConfigError, match="cannot read recompute config file .*plans.json"):
        Options(memory_opt_config=str(path))
