"""Loading torch's op_db leaves the process as it was (its import registers and loads hypothesis
profiles of its own, freezes torch.backends flags and wraps TorchScript calls)."""
import subprocess
import sys

from hypothesis import settings

from ortcheck import profiles  # noqa: F401  (registers the "ci" profile read below)

SCRIPT = """
import hypothesis, torch
from ortcheck import profiles  # registers ortcheck's profiles
hypothesis.settings.load_profile("ci")
before = (hypothesis.settings().max_examples, hypothesis.settings._current_profile, torch.backends.flags_frozen(),
          torch._C.ScriptFunction.__call__)
from ortcheck.strategies import opinfo
assert opinfo.ids()
after = (hypothesis.settings().max_examples, hypothesis.settings._current_profile, torch.backends.flags_frozen(),
         torch._C.ScriptFunction.__call__)
assert before == after, (before, after)
torch.backends.cudnn.deterministic = True  # raises where the flags stayed frozen
print("unchanged", after[:3])
"""


def test_loading_op_db_changes_nothing_else_in_the_process():
    """In a fresh interpreter: op_db is imported once per process, so this test must own one."""
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"unchanged ({settings.get_profile('ci').max_examples}, 'ci', False)" in result.stdout
