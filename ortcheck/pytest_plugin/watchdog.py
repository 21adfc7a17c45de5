"""A watchdog outside the test process: ends a test that outlives its time bound, whatever holds it.

pytest-timeout's ``thread`` method times a test from a thread of the process it guards, so a test
stuck in native code that holds the GIL starves the timer too (seen: an xdist worker 20 minutes in
ORTModule's ``run_backward``, bound 900 s). The watchdog is a small process of its own (this file
run as a script: standard library only, no import of the project), one per test process. The test
process tells it over a pipe when a test starts and its bound, each hypothesis example it draws,
and when the test ends; at the bound the watchdog needs nothing more from it:

1. it writes a *record* (the test, its bound, the last draw, how to replay) into the records
   folder first, so whoever sees the process die can read why;
2. it sends ``DUMP_SIGNAL``, on which :class:`Watchdog` registered ``faulthandler`` to write every
   thread's Python stack and then die of the signal (faulthandler writes from the signal handler,
   without the GIL; dying right after means the test can't run on and report afterwards, which
   would blame the next test for the kill);
3. after ``GRACE`` seconds it kills the process with SIGKILL if it still lives (the signal masked or
   handled elsewhere).

Under xdist the controller then reports the crash as that property's failure with the record
(``ortcheck.pytest_plugin.timebound``) and starts a new worker; without xdist the watchdog writes the record to
stderr and the run ends there.
"""
from __future__ import annotations

import contextlib
import faulthandler
import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

DUMP_SIGNAL = signal.SIGUSR1
GRACE = 5.0  # seconds from the stack dump's signal to SIGKILL
POLL = 1.0  # seconds between checks that the test process still lives
DRAW_CHARS = 2000


def record_path(records: Path, nodeid: str) -> Path:
    """Where the watchdog leaves its record of ending ``nodeid``."""
    return Path(records) / f"{hashlib.sha1(nodeid.encode()).hexdigest()[:20]}.json"


def read_record(records: Path, nodeid: str) -> dict | None:
    """The record of the watchdog that ended ``nodeid``, its stack dump included; None if none did."""
    path = record_path(records, nodeid)
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    stacks = Path(record["stacks"])
    record["stacks"] = stacks.read_text(errors="replace").strip() if stacks.exists() else ""
    return record


def describe(record: dict) -> str:
    """The record as one line: what ended, after how long, the draw, and the command replaying it."""
    draw = f"; last draw (example {record['examples']}): {record['draw']}" if record.get("draw") else \
        "; draw not reported (none yet, or the test's @given is inside its body: the seed replays it)"
    return (f"ortcheck watchdog: {record['nodeid']} ran past its time bound of {record['bound']:g} s and was killed "
            f"from outside its process (it may hold the GIL in native code){draw}; replay: {record['replay']}")


class Watchdog:
    """The test process's end: starts the watchdog process and tells it what runs."""

    def __init__(self, records: Path, announce: bool):
        """``announce``: the watchdog writes what it ended to stderr (no xdist controller reports it)."""
        self.records = Path(records)
        self.stacks_path = self.records / f"stacks-{os.getpid()}.txt"
        self._stacks = open(self.stacks_path, "w")
        faulthandler.register(DUMP_SIGNAL, file=self._stacks, all_threads=True, chain=True)  # chain: then die
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), str(os.getpid()),
                                         str(self.records), str(self.stacks_path), str(int(announce))], stdin=subprocess.PIPE)

    def start(self, nodeid: str, bound: float, replay: str) -> None:
        self._send(start=nodeid, bound=bound, replay=replay)

    def draw(self, text: str) -> None:
        self._send(draw=text[:DRAW_CHARS])

    def end(self) -> None:
        self._send(end=True)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)
        faulthandler.unregister(DUMP_SIGNAL)
        self._stacks.close()
        self.stacks_path.unlink(missing_ok=True)

    def _send(self, **message) -> None:
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()


def watch(worker: int, records: Path, stacks: Path, announce: bool, fd: int = 0) -> None:
    """The watchdog process's loop: until the worker closes the pipe or dies, or a test overruns.

    The pipe is read with ``os.read``, not a buffered file: ``select`` sees the descriptor, not a
    file's buffer, and a line left in a buffer would wait for the next one (a missed ``end`` would
    be a false kill)."""
    running, draw, examples, deadline, pending = None, None, 0, None, b""
    while True:
        timeout = POLL if deadline is None else max(0.0, min(POLL, deadline - time.monotonic()))
        ready, _, _ = select.select([fd], [], [], timeout)
        if os.getppid() != worker:
            return  # the test process is gone (we were handed to another parent)
        if ready:
            data = os.read(fd, 65536)
            if not data:
                return  # the test process closed its end: finished
            pending += data
            *complete, pending = pending.split(b"\n")
            for line in complete:
                message = json.loads(line)
                if "start" in message:
                    running, draw, examples = message, None, 0
                    deadline = time.monotonic() + message["bound"]
                elif "draw" in message:
                    draw, examples = message["draw"], examples + 1
                elif "end" in message:
                    running, deadline = None, None
        elif deadline is not None and time.monotonic() >= deadline:
            _end(worker, records, announce, {"nodeid": running["start"], "bound": running["bound"],
                                             "replay": running["replay"], "draw": draw, "examples": examples,
                                             "stacks": str(stacks)})
            return


def _end(worker: int, records: Path, announce: bool, record: dict) -> None:
    path = record_path(records, record["nodeid"])
    path.with_suffix(".tmp").write_text(json.dumps(record))
    path.with_suffix(".tmp").replace(path)  # whole, before anyone can see the worker die
    if announce:  # no xdist controller will report it: said before the test process dies, while its
        # stderr is still read (after the death it was lost); its stacks stay in their file
        print(f"\n{describe(record)}; stacks: {record['stacks']}", file=sys.stderr, flush=True)
    with contextlib.suppress(ProcessLookupError):
        os.kill(worker, DUMP_SIGNAL)
    given_up = time.monotonic() + GRACE
    while os.getppid() == worker and time.monotonic() < given_up:
        time.sleep(0.05)
    if os.getppid() == worker:
        os.kill(worker, signal.SIGKILL)


if __name__ == "__main__":
    watch(int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] == "1")
