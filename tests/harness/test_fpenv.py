"""SubnormalsOn: a test that leaves flush-to-zero set does not hand it to the next one."""
import sys

import pytest
import torch

from ortcheck.pytest_plugin.fpenv import SubnormalsOn, subnormals_flushed


@pytest.fixture
def restored():
    yield
    torch.set_flush_denormal(False)


def test_flush_to_zero_set_by_an_earlier_test_is_cleared_before_the_next(restored):
    assert not subnormals_flushed()
    assert torch.set_flush_denormal(True), "this CPU cannot flush denormals: nothing to check"
    assert subnormals_flushed() and sys.float_info.min / 2.0 == 0.0
    SubnormalsOn().pytest_runtest_setup(None)
    assert not subnormals_flushed() and sys.float_info.min / 2.0 > 0.0
