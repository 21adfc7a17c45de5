"""Ranks started by ``run_ranks`` (no launcher): forked from the rank server, each in a process of
its own with the caller's environment of the moment, and time-bounded."""
import importlib
import os
import textwrap

import pytest

from ortcheck.checks.ddp import run_ranks

# Rank targets must be importable by the ranks: a module on the path they are given, not this test file.
PROBE = """
import os, time

def where(rank, size, name):
    return {"rank": rank, "size": size, "pid": os.getpid(), "value": os.environ.get(name)}

def hang(rank, size):
    time.sleep(600)
"""


@pytest.fixture
def probe(tmp_path, monkeypatch):
    (tmp_path / "rank_probe.py").write_text(textwrap.dedent(PROBE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("rank_probe")


def test_ranks_run_apart_and_see_the_callers_environment_of_the_moment(probe, monkeypatch):
    first = run_ranks(probe.where, ("ORTCHECK_RANK_PROBE",), 2, 120, "probe")  # starts the rank server
    monkeypatch.setenv("ORTCHECK_RANK_PROBE", "set after the server started")
    found = run_ranks(probe.where, ("ORTCHECK_RANK_PROBE",), 2, 120, "probe")
    assert first["value"] is None and found["value"] == "set after the server started"
    assert found["rank"] == 0 and found["size"] == 2
    assert len({os.getpid(), first["pid"], found["pid"]}) == 3


def test_a_hanging_rank_fails_the_call_within_the_timeout(probe):
    with pytest.raises(TimeoutError, match="hang probe did not finish within 5s"):
        run_ranks(probe.hang, (), 2, 5, "hang probe")
