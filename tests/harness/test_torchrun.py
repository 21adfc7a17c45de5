"""The distributed cases under ``torchrun`` (torch's elastic launcher, c10d rendezvous, gloo on CPU):
the launched processes are the ranks (``ortcheck.checks.ddp``), nothing is spawned."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TORCHRUN = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
pytestmark = pytest.mark.skipif(TORCHRUN is None, reason="torchrun not installed beside this python")


def torchrun(*args, cwd=REPO, timeout=600):
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        environment.pop(name, None)
    return subprocess.run([TORCHRUN, "--standalone", "--nproc-per-node", "2", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=timeout)


# gloo's teardown at interpreter exit sometimes aborts a rank after its work is done and printed
# (torch 2.13; see _rank_main in ortcheck/checks/ddp.py): that, and only that, may end a launch
# whose every rank reported success.
TEARDOWN_ABORT = "terminate called without an active exception"


def assert_launch_succeeded(result: subprocess.CompletedProcess) -> None:
    """Exit 0, or every rank torchrun reports failed either aborted with that message (-6) or was
    stopped by torchrun after it (-15)."""
    output = result.stdout + result.stderr
    if result.returncode != 0:
        codes = [int(code) for code in re.findall(r"exitcode  : (-?\d+)", output)]  # the failure summary
        aborted = output.count(TEARDOWN_ABORT)
        assert aborted and codes.count(-6) == aborted and set(codes) <= {-6, -15}, output[-6000:]


def test_only_the_teardown_abort_excuses_a_failed_launch():
    ok = subprocess.CompletedProcess([], 1, "", f"{TEARDOWN_ABORT}\n  exitcode  : -6 (pid: 1)  (SIGABRT)\n")
    assert_launch_succeeded(ok)
    assert_launch_succeeded(subprocess.CompletedProcess([], 1, "", f"{TEARDOWN_ABORT}\n  exitcode  : -6\n  exitcode  : -15\n"))
    for stdout, stderr in (("", "  exitcode  : 1 (pid: 1)\n"), ("", f"{TEARDOWN_ABORT}\n  exitcode  : 1 (pid: 1)\n"),
                           ("", f"{TEARDOWN_ABORT}\n  exitcode  : -6\n  exitcode  : -6\n"),
                           ("", f"{TEARDOWN_ABORT}\n  exitcode  : -6\n  exitcode  : 1\n")):
        with pytest.raises(AssertionError):
            assert_launch_succeeded(subprocess.CompletedProcess([], 1, stdout, stderr))


def test_run_ranks_uses_the_launched_processes(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent("""
        import os
        from ortcheck.checks.ddp import launched, run_ranks, world_size

        def where(rank, size):
            return {"rank": rank, "size": size, "pid": os.getpid()}

        assert launched() and world_size(default=5) == 2
        found = run_ranks(where, (), 2, 60, "probe")
        assert found["size"] == 2 and found["rank"] == 0
        assert (found["pid"] == os.getpid()) == (os.environ["RANK"] == "0"), found   # rank 0's own process
        print("probe ok", os.environ["RANK"])
    """))
    result = torchrun(str(probe))
    assert_launch_succeeded(result)
    assert result.stdout.count("probe ok") == 2


def test_the_ddp_suite_and_the_ddp_convergence_cases_pass_under_torchrun():
    result = torchrun("-m", "pytest", "-q", "-p", "no:cacheprovider", "suites/test_ddp.py", "suites/test_convergence.py",
                      "--impl", "eager,reference", "-k", "gloo or ddp")
    assert_launch_succeeded(result)
    assert result.stdout.count(" passed") == 2 and " failed" not in result.stdout, result.stdout[-3000:]
