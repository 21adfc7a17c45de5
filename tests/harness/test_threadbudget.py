"""A test process computes on cores / xdist workers threads, never above an explicit OMP_NUM_THREADS."""
import pytest
import torch

from ortcheck.pytest_plugin import threadbudget


@pytest.mark.parametrize("cores, workers, omp, expected", [
    (16, 6, None, 2), (16, 1, None, 16), (2, 4, None, 1), (16, 6, "1", 1), (16, 2, "32", 8), (16, 2, "", 8),
    (16, 2, "junk", 8),
])
def test_budget_is_the_process_share_of_the_cores(cores, workers, omp, expected):
    assert threadbudget.budget(cores, workers, omp) == expected


def test_the_plugin_gave_torch_this_process_budget(pytestconfig):
    assert torch.get_num_threads() == pytestconfig.ortcheck_threads
    assert 1 <= pytestconfig.ortcheck_threads <= threadbudget.cores()
