"""The module-semantics suite's refusal contract and its parent property, end to end: positive controls
(implementations built on eager that break one rule each) fail it, and the refusal the contract
allows passes."""
import json
import shutil
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = "suites/test_module_semantics.py"
FUNCTIONS = f"{SUITE}::test_custom_autograd_functions_inside_the_module"

CONFTEST = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
import torch
from ortcheck import impls
from ortcheck.impls.eager import EagerImpl
from ortcheck.models import semantics


class Refusal(RuntimeError):
    pass


class Refusing(torch.nn.Module):
    '''Runs the module eagerly; raises ``error`` at forward ``at`` (1-based) and after, if the
    module calls a custom autograd.Function.'''

    def __init__(self, module, error, at):
        super().__init__()
        self.module, self.error, self.at, self.calls = module, error, at, 0

    def forward(self, x):
        self.calls += 1
        if self.calls >= self.at and any(isinstance(m, semantics.FunctionBlock) for m in self.module.modules()):
            raise self.error("autograd.Function refused")
        return self.module(x)


def refusing(name, error, at, declared):
    class Impl(EagerImpl):
        def refusal_errors(self):
            return (Refusal,) if declared else ()

        def wrap(self, module, options=None):
            return Refusing(module, error, at)

    Impl.name = name
    impls.register(name, Impl)


refusing("refuses_first", Refusal, 1, declared=True)       # allowed: declared, at the first forward
refusing("refuses_later", Refusal, 2, declared=True)       # trains a step, then refuses
refusing("refuses_undeclared", RuntimeError, 1, declared=False)  # a generic error naming the Function


class Prefixed(torch.nn.Module):
    '''state_dict passes through, load_state_dict doesn't: inside a parent, the keys don't load back.'''

    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        return self.module(x)

    def state_dict(self, *args, **kwargs):
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        return self.module.load_state_dict(*args, **kwargs)


class PrefixesInParent(EagerImpl):
    name = "prefixes_in_parent"

    def wrap(self, module, options=None):
        return Prefixed(module)


impls.register(PrefixesInParent.name, PrefixesInParent)


import dataclasses, json
from ortcheck.report import ResultCollector

COLLECTOR = ResultCollector()  # what ``ortcheck run`` reports from, written to outcomes.json


def pytest_configure(config):
    config.pluginmanager.register(COLLECTOR, "ortcheck-collector")


def pytest_sessionfinish(session):
    with open("outcomes.json", "w") as out:
        json.dump([dataclasses.asdict(o) for o in COLLECTOR.outcomes], out)
"""


@pytest.fixture
def project(pytester):
    (pytester.path / "suites").mkdir()
    shutil.copy(REPO / SUITE, pytester.path / SUITE)
    pytester.makeconftest(textwrap.dedent(CONFTEST))
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    return pytester


def run(python, project, *args):
    return python.runpytest(project, "--hypothesis-profile", "dev", "-n", "0", *args)


def test_a_declared_refusal_at_the_first_forward_passes_as_refused(python, project):
    """Passes, as the contract allows, but the reports say ``refused`` with the refusal, never ``pass``."""
    run(python, project, FUNCTIONS, "--impl", "refuses_first").assert_outcomes(passed=5, skipped=5)
    outcomes = json.loads((project.path / "outcomes.json").read_text())
    cells = [cell for cell in outcomes if cell["impl"] == "refuses_first"]
    assert [cell["status"] for cell in cells].count("refused") == 5, cells
    assert all("autograd.Function refused" in cell["detail"] for cell in cells if cell["status"] == "refused")


@pytest.mark.parametrize("impl_name", ["refuses_later", "refuses_undeclared"])
def test_a_refusal_after_a_step_or_of_an_undeclared_type_fails(python, project, impl_name):
    result = run(python, project, FUNCTIONS, "--impl", impl_name)
    result.assert_outcomes(failed=5, skipped=5)
    result.stdout.fnmatch_lines(["*autograd.Function refused*"])


def test_a_wrapper_whose_keys_dont_load_inside_a_parent_fails(python, project):
    result = run(python, project, f"{SUITE}::test_wrapped_module_inside_a_parent_saves_and_loads_as_eager",
                 f"{SUITE}::test_copies_train_like_the_original", "--impl", "prefixes_in_parent")
    result.assert_outcomes(failed=1, passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*Missing key(s) in state_dict*inner.module.*"])
