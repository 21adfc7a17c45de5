"""Keep full garbage collections cheap in a long test process.

A full ``gc.collect()`` walks every live container object, and a pytest worker holds more with each
test (imported modules, collected items, hypothesis' per-test state). ORTModule collects at every
export (``_io.parse_outputs_for_onnx_export_and_extract_schema``), so the suites paid 0.14 s per
example in a fresh process and more as the worker aged: most of a layer property's time.

Between tests, what the earlier tests left reachable is moved to the collector's permanent
generation (``gc.freeze``) after one collection, so a collection inside a test walks only what that
test made. Objects are still freed by reference counting; only cycles that become garbage while
frozen wait until the next thaw, done every ``THAW_EVERY`` tests so memory stays bounded.

A process that starts frozen was frozen by its parent before a fork (the harness's own tests run
pytest in children of a server that imported torch once: ``tests/harness/conftest.py``). Thawing
would make the next collection walk, and copy, every page of the parent's heap (1.3 s of a
2-second pytest run there), so such a process is never thawed: it only freezes more.
"""
from __future__ import annotations

import gc

THAW_EVERY = 100


class FrozenHeap:
    """A pytest plugin object: freezes the heap before each test, thaws and collects every ``THAW_EVERY``."""

    def __init__(self, thaw_every: int = THAW_EVERY):
        self.thaw_every = thaw_every
        self.tests = 0
        self.thaws = gc.get_freeze_count() == 0  # not a process its parent froze (the module docstring)

    def pytest_runtest_setup(self, item) -> None:
        if self.thaws and self.tests % self.thaw_every == 0:
            gc.unfreeze()
        self.tests += 1
        gc.collect()
        gc.freeze()

    def pytest_unconfigure(self, config) -> None:
        if self.thaws:
            gc.unfreeze()
