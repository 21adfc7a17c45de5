"""Loading torch's op_db leaves the process as it was (its import registers and loads hypothesis
profiles of its own, freezes torch.backends flags, wraps TorchScript calls and, in torch 2.4.1, draws
from torch's generator); the ids checked in for this torch are op_db's (collection reads them instead
of importing it). ort119 runs it too: torch 2.4.1's op_db is the one that draws."""
import subprocess
import sys

import pytest
from hypothesis import settings

from ortcheck import profiles  # noqa: F401  (registers the "ci" profile read below)
from ortcheck.strategies import opinfo

SCRIPT = """
import hypothesis, torch
from ortcheck import profiles  # registers ortcheck's profiles
hypothesis.settings.load_profile("ci")
torch.manual_seed(0)
before = (hypothesis.settings().max_examples, hypothesis.settings._current_profile, torch.backends.flags_frozen(),
          torch._C.ScriptFunction.__call__, torch.get_rng_state().tolist())
from ortcheck.strategies import opinfo
assert opinfo.in_scope()
after = (hypothesis.settings().max_examples, hypothesis.settings._current_profile, torch.backends.flags_frozen(),
         torch._C.ScriptFunction.__call__, torch.get_rng_state().tolist())
assert before == after, (before, after)
torch.backends.cudnn.deterministic = True  # raises where the flags stayed frozen
print("unchanged", after[:3])
"""


def test_loading_op_db_changes_nothing_else_in_the_process():
    """In a fresh interpreter: op_db is imported once per process, so this test must own one."""
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"unchanged ({settings.get_profile('ci').max_examples}, 'ci', False)" in result.stdout


def test_the_ids_checked_in_for_this_torch_are_op_dbs():
    if not opinfo.ids_file().is_file():
        pytest.skip(f"no ids are checked in for torch {opinfo.ids_file().stem}: collection imports op_db")
    assert opinfo.ids() == list(opinfo.in_scope()), (
        f"{opinfo.ids_file()} is not op_db's scope here: regenerate it with "
        f"python -c 'from ortcheck.strategies import opinfo; opinfo.write_ids()'")


def test_a_torch_without_checked_in_ids_reads_op_db(monkeypatch, tmp_path):
    monkeypatch.setattr(opinfo, "IDS", tmp_path)
    assert opinfo.ids() == list(opinfo.in_scope())


def test_an_id_op_db_lacks_here_names_the_list_to_regenerate():
    with pytest.raises(KeyError, match="regenerate it"):
        opinfo.lookup("no_such_op")
