"""Pieces of --collect-findings (ortcheck/findings/drafts.py); end to end in test_plugin.py."""
import fnmatch

import pytest

from ortcheck.findings.drafts import glob_of, shrunk_example

LONGREPR = """\
    def test(impl):
>       drawn()
E           AssertionError: grad 6.07e-06 > bound 4.47e-06
E           Failing test case: drawn(
E               stack=LayerStack(input=Features(4),
E                blocks=(Activation('sigmoid'),)),
E               seed=0,
E           )
E           You can reproduce this example by temporarily adding @reproduce_failure(...)

suites/test_x.py:12: AssertionError"""


def test_the_shrunk_example_comes_out_without_the_gutter():
    assert shrunk_example(LONGREPR) == ("drawn(\n    stack=LayerStack(input=Features(4),\n     blocks=(Activation('sigmoid'),)),\n"
                                        "    seed=0,\n)")
    assert shrunk_example(LONGREPR.replace("Failing test case", "Falsifying example")).startswith("drawn(")
    assert shrunk_example("E   AssertionError: no example here") == ""


@pytest.mark.parametrize("nodeid", ["suites/a.py::t[ortmodule-x*y]", "suites/a.py::t[a?b-[c]]", "suites/a.py::plain"])
def test_the_glob_matches_exactly_its_test(nodeid):
    pattern = glob_of(nodeid)
    assert fnmatch.fnmatchcase(nodeid, pattern)
    assert not fnmatch.fnmatchcase(nodeid + "z", pattern) and not fnmatch.fnmatchcase(nodeid.replace("a", "b", 1), pattern)
