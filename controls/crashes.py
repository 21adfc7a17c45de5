"""Controls of the crash and time handling: implementations that die or never return. Each must
fail the one property it ran (xdist reports a crashed worker: ``-n 1``; a control's run has no test
left for a replacement worker, so none starts: ``--max-worker-restart 0``). That the run goes on
after a crash is tests/harness/test_plugin.py's to check."""
import ctypes
import os
import signal
import time

from ortcheck.impls import Options
from ortcheck.impls.eager import EagerImpl

from controls.base import Control

_DISTINCT = "suites/test_io_through_module.py::test_distinct_key_paths_stay_distinct"


class Segfaults(Control, EagerImpl):
    """Dies inside wrap, as native code can: the run must report the property and go on."""
    caught_by = (f"{_DISTINCT}[segfaults]",)
    run_with = ("-n", "1", "--max-worker-restart", "0")

    def wrap(self, module, options=Options()):
        os.kill(os.getpid(), signal.SIGSEGV)


class Hangs(Control, EagerImpl):
    """Never returns from wrap, as a deadlocked session would: the time bound must end it."""
    caught_by = (f"{_DISTINCT}[hangs]",)
    run_with = ("-n", "1", "--max-worker-restart", "0", "--impl-timeout", "5")

    def wrap(self, module, options=Options()):
        time.sleep(3600)


def hold_the_gil(seconds: int) -> None:
    """Sleep in native code without releasing the GIL (``ctypes.PyDLL`` keeps it across the call): no
    other thread of the process runs meanwhile, pytest-timeout's timer thread included. A handled
    signal ends libc's sleep early (it returns the seconds left: in an xdist worker it once returned
    at once), so it sleeps again for what is left."""
    left = seconds
    while left:
        left = ctypes.PyDLL(None).sleep(left)


class HoldsTheGil(Control, EagerImpl):
    """Never returns from wrap, stuck in native code holding the GIL (as ORTModule's run_backward was
    seen to): nothing inside the process can end it, only the watchdog outside."""
    caught_by = ("suites/test_numerics.py::test_layernorm_is_as_accurate_as_eager[holds_the_gil]",)
    run_with = ("-n", "1", "--max-worker-restart", "0", "--impl-timeout", "5")

    def wrap(self, module, options=Options()):
        while True:  # libc's sleep returns early when a signal is handled
            hold_the_gil(3600)
