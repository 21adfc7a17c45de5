"""The parts of ``ortcheck check`` share one forked child: each starts as it would in a child of its
own (the random state it was forked with), and one that dies, hangs or raises fails alone while the
parts after it still run."""
import os
import random
import signal
import subprocess
import sys
import time

import numpy
import pytest
import torch

from ortcheck.usercheck import check_model
from ortcheck.usercheck.checks import CHECKS
from ortcheck.usercheck.isolated import Crashed, Part, isolated, isolated_each
from tests.usercheck import targets


def _pid():
    return os.getpid()


def _segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


def _sleeps():
    time.sleep(30)


def _raises():
    raise ValueError("the part's own error")


def _draws():
    return torch.rand(3).tolist(), random.random(), numpy.random.rand()


def test_the_parts_share_one_child_of_their_own():
    results = isolated_each([Part("first", _pid), Part("second", _pid), Part("third", _pid)])
    assert [r.kind for r in results] == ["returned"] * 3
    assert len({r.value for r in results}) == 1
    assert results[0].value != os.getpid()


def test_a_part_that_crashes_fails_alone_and_the_rest_run_in_a_new_child():
    results = isolated_each([Part("before", _pid), Part("crash", _segfault), Part("after", _pid), Part("last", _pid)])
    assert [r.kind for r in results] == ["returned", "crashed", "returned", "returned"]
    with pytest.raises(Crashed, match=r"^the implementation crashed \(signal SIGSEGV\)$"):
        results[1].get()
    assert results[2].value == results[3].value != results[0].value


def test_a_part_that_hangs_is_killed_and_named_and_the_rest_run():
    started = time.monotonic()
    results = isolated_each([Part("check 'sleepy'", _sleeps), Part("after", _pid)], timeout=1)
    assert time.monotonic() - started < 10
    with pytest.raises(Crashed, match=r"^check 'sleepy' hung: no result within 1 s \(killed\)$"):
        results[0].get()
    assert results[1].kind == "returned"


def test_a_part_that_raises_gives_its_own_exception_and_the_rest_run():
    results = isolated_each([Part("raises", _raises), Part("after", _pid)])
    with pytest.raises(ValueError, match=r"^the part's own error$"):
        results[0].get()
    assert results[1].kind == "returned"


def test_each_part_draws_what_it_would_draw_in_a_child_of_its_own():
    """torch's generator as the parent left it; Python's and NumPy's, which a fork reseeds, as the child began."""
    alone = isolated(_draws)
    together = [r.get() for r in isolated_each([Part("first", _draws), Part("second", _draws), Part("third", _draws)])]
    assert together == [together[0]] * 3
    assert together[0][0] == alone[0] == torch.rand(3).tolist()


def test_the_checks_of_a_model_share_one_child(monkeypatch):
    """What the implementation builds for the model (gradient graphs, sessions) serves all its checks."""
    forks = []
    fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or fork())
    result = check_model(targets.mlp, targets.mlp_batch, targets.mean_loss, impl="reference", steps=2,
                         localize_failures=False)
    assert result.ok, result.format()
    assert len(result.outcomes) == len(CHECKS) and len(forks) == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the death signal is Linux's (prctl)")
def test_a_child_dies_with_its_parent(tmp_path):
    """A pytest worker the watchdog kills, or an ``ortcheck check`` killed from outside, leaves no child
    computing on."""
    pid_file, child = tmp_path / "child.pid", None
    parent = subprocess.Popen([sys.executable, "-c", (
        "import os, time, pathlib\n"
        "from ortcheck.usercheck.isolated import isolated\n"
        f"isolated(lambda: (pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())), time.sleep(120)))\n")],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))})
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        child = int(pid_file.read_text())
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child), "the child outlived its parent"
    finally:
        parent.kill()
        if child and _alive(child):
            os.kill(child, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by init, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
