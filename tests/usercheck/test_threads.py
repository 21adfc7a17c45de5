"""``ortcheck check`` from a plain shell, default threads: every check runs in a forked child, and a
child of a parent that ran OpenMP kernels on several threads used to wait forever in libgomp's barrier
(a user's run was killed after 657 s). Each part now runs its child on one thread, the command runs on one
thread from its start, and a child that hangs anyway is killed and reported naming its part."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from ortcheck.usercheck.isolated import Crashed, isolated

REPO = Path(__file__).resolve().parents[2]


def _conv_and_norm():
    x = torch.randn(8, 16, 32, 32)
    return float(torch.nn.functional.layer_norm(torch.nn.functional.conv2d(x, torch.randn(16, 16, 3, 3), padding=1), (32,)).sum())


def test_a_forked_part_runs_parallel_kernels_after_the_parent_ran_them_on_several_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        _conv_and_norm()  # the parent's OpenMP pool exists now
        started = time.monotonic()
        assert isinstance(isolated(_conv_and_norm, timeout=60), float)
        assert time.monotonic() - started < 60
    finally:
        torch.set_num_threads(before)


def _sleeps():
    time.sleep(30)


def test_a_part_that_hangs_is_killed_and_named():
    started = time.monotonic()
    with pytest.raises(Crashed, match=r"^check 'sleepy' hung: no result within 1 s \(killed\)$"):
        isolated(_sleeps, name="check 'sleepy'", timeout=1)
    assert time.monotonic() - started < 10


def test_the_cli_finishes_from_a_shell_with_default_threads():
    env = {key: value for key, value in os.environ.items() if key not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    run = subprocess.run([sys.executable, "-m", "ortcheck.cli", "check", "tests.usercheck.targets:conv_norm", "--steps", "2"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "trains like eager" in run.stdout or "PASS" in run.stdout, run.stdout
